"""The real-log corpus (tests/parse/real/) keeps its shape: indexed, sourced, labelled, split by source.

What runner makes of these logs is bench/parse.py's business, never a test's: these tests check only that the
corpus is what its README promises, so that a figure measured on it means what it says.
"""

import json
from collections import defaultdict
from pathlib import Path

import pytest

from runner.adapters import resolve
from runner.findings import decode_log
from runner.load import load_project_adapters

REAL = Path(__file__).parent / "real"
INDEX = json.loads((REAL / "INDEX.json").read_text("utf-8"))["logs"]
COUNTS = ("passed", "failed", "errors", "skipped", "total")
# licences that let an MIT repository hold a copy (permissive, or public-domain dedications)
LICENCES = {
    "MIT",
    "Apache-2.0",
    "BSD-3-Clause",
    "BSL-1.0",
    "Unlicense",
    "Apache-2.0 OR BSD-3-Clause",
    "Apache-2.0 OR BSD-2-Clause",
}


def source_of(item: dict) -> str:
    return item["source"].get("repo") or item["source"]["recorded"]


def truth_of(item: dict) -> dict:
    log = REAL / item["log"]
    return json.loads(log.with_name(log.stem + ".truth.json").read_text("utf-8"))


def test_the_corpus_is_large_and_varied_enough_to_judge_the_reading():
    assert len(INDEX) >= 200
    assert len({item["tool"] for item in INDEX}) >= 25
    assert len({source_of(item) for item in INDEX}) >= 20


def test_every_log_is_indexed_and_every_index_entry_has_its_log_and_truth():
    on_disk = {p.relative_to(REAL).as_posix() for p in REAL.glob("*/*.log")}
    indexed = [item["log"] for item in INDEX]
    assert len(indexed) == len(set(indexed))
    assert on_disk == set(indexed)
    labels = {p.relative_to(REAL).as_posix().removesuffix(".truth.json") for p in REAL.glob("*/*.truth.json")}
    assert labels == {name.removesuffix(".log") for name in indexed}


def test_every_log_is_named_in_sources_with_where_it_came_from():
    sources = (REAL / "SOURCES.md").read_text("utf-8")
    for item in INDEX:
        assert f"`{item['log']}`" in sources, item["log"]
        src = item["source"]
        assert src["licence"] in LICENCES, (item["log"], src["licence"])
        if "repo" in src:
            assert len(src["commit"]) == 40 and src["path"], item["log"]
            assert f"`{src['path']}`" in sources and src["commit"] in sources
        else:
            assert src["recorded"] and src["command"], item["log"]


@pytest.mark.parametrize("item", INDEX, ids=[item["log"] for item in INDEX])
def test_every_label_file_is_valid_against_its_log(item):
    truth = truth_of(item)
    assert set(truth) == {"tool", "format", "outcome", "counts", "failed_tests", "lines", "why"}
    assert truth["tool"] == item["tool"] and truth["format"] == item["format"]
    assert isinstance(truth["why"], str) and truth["why"].strip()
    if truth["counts"] is not None:
        assert set(truth["counts"]) == set(COUNTS)
        assert all(v is None or (isinstance(v, int) and v >= 0) for v in truth["counts"].values())
    assert all(isinstance(name, str) and name for name in truth["failed_tests"])
    assert len(truth["failed_tests"]) == len(set(truth["failed_tests"]))
    n = len(decode_log((REAL / item["log"]).read_bytes()).splitlines())
    previous = 0
    for a, b in truth["lines"]:
        assert previous < a <= b <= n, (item["log"], a, b, n)  # 1-based, in order, apart, inside the log
        previous = b
    # a failing log says which lines explain it; a passing one has none, and names no failing test
    assert truth["outcome"] == ("fail" if truth["lines"] else "pass")
    if truth["outcome"] == "pass":
        assert truth["failed_tests"] == []


def test_every_reader_is_an_adapter_command_that_parses_its_log():
    adapters = load_project_adapters(REAL)  # the built-in ones: the corpus folder adds none
    for item in INDEX:
        reader = item["reader"]
        if reader is None:
            continue
        resolved = resolve(reader["adapter"], REAL, adapters, variants=tuple(reader["variants"]))
        assert resolved.command(reader["command"]).parse, item["log"]


def test_the_split_is_by_source_and_the_held_part_is_at_least_a_third():
    parts = defaultdict(set)
    for item in INDEX:
        assert item["part"] in ("tuning", "held")
        parts[source_of(item)].add(item["part"])
    assert all(len(p) == 1 for p in parts.values()), {s: p for s, p in parts.items() if len(p) > 1}
    held = sum(item["part"] == "held" for item in INDEX)
    assert 3 * held >= len(INDEX)
    # both parts hold test runs and failures, so each figure has something to say in each part
    for part in ("tuning", "held"):
        chosen = [truth_of(item) for item in INDEX if item["part"] == part]
        assert sum(t["counts"] is not None for t in chosen) >= 20
        assert sum(t["outcome"] == "fail" for t in chosen) >= 20
        assert sum(t["outcome"] == "pass" for t in chosen) >= 10
