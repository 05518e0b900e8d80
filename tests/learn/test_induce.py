"""runner.learn.induce: the grouping and patterns of a made-up tool's log (snapshot), determinism, and the
properties every induction keeps on random logs: RE2 compiles, each line matched by its own pattern, no pattern
matching another event's lines."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner import parse
from runner.learn.induce import Induction, induce, template_of

ROOT = Path(__file__).resolve().parents[2]

# `kilnd`, a made-up artefact-cache daemon: no built-in regex family knows its format
KILND = """\
kilnd[412]: fetched artefact libfoo-1.2.3.tar.gz in 231ms from mirror=eu-west-2
kilnd[412]: fetched artefact zlib-1.3.1.tar.gz in 88ms from mirror=us-east-1
kilnd[977]: fetched artefact openssl-3.0.13.tar.gz in 1402ms from mirror=eu-west-2
cache hit key=7f3a9c21d4e5b6a7 size=1048576 age=3d
cache hit key=0a1b2c3d4e5f6789 size=2048 age=12h
cache miss key=deadbeef00112233 size=0 age=0s

worker 3 picked job #1842 (priority high) on 10.0.4.17:7000
worker 12 picked job #77 (priority low) on 10.0.4.9:7000
worker 3 picked job #1850 () on 10.0.4.17:7001
evicted 2 blobs: sha256:91ab0c sha256:77de10
evicted 4 blobs: sha256:0011aa sha256:ff0e12 sha256:4242ab sha256:9c9c9c
evicted 1 blobs: sha256:123abc
lease renewed for node carbon-04 until Tue Nov 25 10:00:00 2026
lease renewed for node carbon-11 until Wed Nov 26 09:30:12 2026
store /var/lib/kilnd/blobs is 81.5% full
store /srv/cache/kilnd is 12.0% full
shutting down: signal SIGTERM
shutting down: signal SIGINT
"""


def render(lines: list[str], result: Induction) -> str:
    """What a reviewer reads: each pattern with its lines, in the induction's order."""
    out = []
    for p in result.patterns:
        out += [
            f"{p.name} (support {p.support})",
            f"  template: {p.template}",
            f"  regex:    {p.regex}",
            f"  fields:   {', '.join(p.fields)}",
        ]
        out += [f"  line:     {line}" for line, name in zip(lines, result.assignments, strict=True) if name == p.name]
    out.append("blank: " + ", ".join(str(i) for i, name in enumerate(result.assignments) if name is None))
    return "\n".join(out) + "\n"


def test_a_made_up_tools_log_groups_into_its_events(snapshot):
    lines = KILND.splitlines()
    result = induce(lines, "kilnd")
    assert render(lines, result) == snapshot
    names = {line: name for line, name in zip(lines, result.assignments, strict=True)}
    # a plain word that differs is an event of its own; data that differs is not
    assert (
        names["cache hit key=7f3a9c21d4e5b6a7 size=1048576 age=3d"]
        != names["cache miss key=deadbeef00112233 size=0 age=0s"]
    )
    assert names["shutting down: signal SIGTERM"] != names["shutting down: signal SIGINT"]
    assert len({names[line] for line in lines if line.startswith("evicted")}) == 1  # a list of 1, 2 or 4 values
    assert (
        names["worker 3 picked job #1842 (priority high) on 10.0.4.17:7000"]
        != names["worker 12 picked job #77 (priority low) on 10.0.4.9:7000"]
    )
    assert (
        names["lease renewed for node carbon-04 until Tue Nov 25 10:00:00 2026"]
        == names["lease renewed for node carbon-11 until Wed Nov 26 09:30:12 2026"]
    )


def test_every_pattern_compiles_and_matches_its_lines_and_examples():
    lines = KILND.splitlines()
    result = induce(lines, "kilnd")
    by_name = {p.name: p for p in result.patterns}
    for p in result.patterns:
        assert parse.re2_error(p.regex) is None, p.regex
        assert p.regex.startswith("^") and p.regex.endswith("$")
        assert 1 <= len(p.examples) <= 5 and len(set(p.examples)) == len(p.examples)
        for example in p.examples:
            assert parse.re2_fullmatch(p.regex, example) is not None, (p.regex, example)
    for line, name in zip(lines, result.assignments, strict=True):
        if name is not None:
            assert parse.re2_fullmatch(by_name[name].regex, line) is not None, (by_name[name].regex, line)


def test_fields_are_named_from_their_context():
    lines = [
        "connect session=0x1f2e user_id=42 port 8080 retries: 3 took 12ms",
        "connect session=0x77aa user_id=7 port 9090 retries: 0 took 480ms",
    ]
    (p,) = induce(lines, "net").patterns
    assert p.fields == ("session", "user_id", "port", "retries", "took")
    assert p.template == "connect session=<*> user_id=<*> port <*> retries: <*> took <*>"
    assert parse.re2_fullmatch(p.regex, lines[0]) == {
        "session": "0x1f2e",
        "user_id": "42",
        "port": "8080",
        "retries": "3",
        "took": "12ms",
    }


def test_a_value_with_no_name_before_it_is_numbered():
    lines = ["of 12 in 3", "of 40 in 5"]
    (p,) = induce(lines, "x").patterns
    assert p.fields == ("f1", "f2")
    assert p.name == "x-of-in"


def test_camel_case_keys_become_snake_case_fields_and_repeated_names_are_numbered():
    lines = ["totalSteps=12 totalSteps=4", "totalSteps=9 totalSteps=1"]
    (p,) = induce(lines, "x").patterns
    assert p.fields == ("total_steps", "total_steps_2")


def test_blank_lines_get_no_pattern():
    result = induce(["", "   ", "job 1 done", "\t", "job 2 done"], "x")
    assert result.assignments == (None, None, "x-job-done", None, "x-job-done")
    assert [p.support for p in result.patterns] == [2]


def test_no_lines_no_patterns():
    assert induce([], "x") == Induction((), ())


def test_names_are_the_family_and_the_leading_constant_words_deduplicated():
    lines = ["Job 1 done", "Job 2 done", "Job done 7", "job done 8", "0x1f 12"]
    names = [p.name for p in induce(lines, "My Tool").patterns]
    # by support, then template: "<*> <*>" (no constant word: "line") sorts before "Job done <*>"
    assert names == ["my-tool-job-done", "my-tool-line", "my-tool-job-done-2", "my-tool-job-done-3"]
    assert all(parse.re2_fullmatch(r"[a-z0-9][a-z0-9_.-]*", n) is not None for n in names)


def test_data_stays_data_even_when_every_line_has_the_same_value():
    # the pattern is for the lines to come: the next proxy may listen on another port
    lines = ["open through proxy SOCKS5 port 5070", "open through proxy SOCKS5 port 5070"]
    (p,) = induce(lines, "x").patterns
    assert p.template == "open through proxy SOCKS5 port <*>"
    assert p.examples == ("open through proxy SOCKS5 port 5070",)
    assert p.support == 2


def test_a_timestamp_is_one_value_and_a_literal_that_fits_a_masked_token_joins_it():
    lines = [
        "connection from 10.0.0.1 (24-54-76-216.example.net) at Fri Jun 17 07:07:00 2005",
        "connection from 10.0.0.2 () at Sat Jun 18 17:00:01 2005",
        "connection from 10.0.0.3 (mail.example.org) at Sun Jul  3 01:02:03 2005",
    ]
    (p,) = induce(lines, "x").patterns
    assert p.template == "connection from <*> (<*>) at <*>"
    assert p.fields == ("f1", "f2", "f3")  # "from" and "at" name nothing
    assert parse.re2_fullmatch(p.regex, lines[1]) == {"f1": "10.0.0.2", "f2": "", "f3": "Sat Jun 18 17:00:01 2005"}


def test_template_of_masks_data_alone():
    assert template_of("fetched 12 files from /var/cache/x in 0.5s") == "fetched <*> files from <*> in <*>"
    assert template_of("peer 10.1.2.3:8080 sent id=0xdeadbeef ok=true") == "peer <*> sent id=<*> ok=<*>"
    assert template_of("job 9b2f6c1e-0a4d-4c1e-9a8f-2f0d2c4b5e6a (user=alice)") == "job <*> (user=alice)"
    assert template_of("  spaced   out\ttext  ") == "spaced out text"
    assert template_of("removing device node '/udev/vcsa2' (mode 'rw').") == "removing device node '<*>' (mode '<*>')."


# ---------------------------------------------------------------------------------------------------------------
# Determinism


def test_shuffled_input_gives_the_same_patterns():
    lines = KILND.splitlines()
    result = induce(lines, "kilnd")
    for seed in range(5):
        order = list(range(len(lines)))
        random.Random(seed).shuffle(order)
        shuffled = induce([lines[i] for i in order], "kilnd")
        assert shuffled.patterns == result.patterns
        assert [shuffled.assignments[k] for k in sorted(range(len(order)), key=order.__getitem__)] == list(
            result.assignments
        )


def test_the_hash_seed_changes_nothing():
    script = (
        "import json, sys\n"
        "from dataclasses import asdict\n"
        "from runner.learn.induce import induce\n"
        "r = induce(sys.stdin.read().splitlines(), 'kilnd')\n"
        "print(json.dumps([[asdict(p) for p in r.patterns], r.assignments]))\n"
    )
    outputs = set()
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [sys.executable, "-c", script], input=KILND, capture_output=True, text=True, env=env, check=True
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1
    assert json.loads(outputs.pop())[0]


# ---------------------------------------------------------------------------------------------------------------
# Properties on random logs

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=7)
_VALUES = {
    "int": st.integers(0, 10**9).map(str),
    "float": st.floats(0, 1e6, allow_nan=False).map(lambda f: f"{f:.3f}"),
    "hex": st.integers(0, 2**48).map(lambda n: f"0x{n:x}"),
    "ip": st.tuples(*[st.integers(0, 255)] * 4, st.integers(1, 65535)).map(
        lambda t: ".".join(map(str, t[:4])) + f":{t[4]}"
    ),
    "path": st.lists(_WORD, min_size=1, max_size=4).map(lambda parts: "/" + "/".join(parts)),
    "keyed": st.integers(0, 999).map(lambda n: f"n={n}"),
}


@st.composite
def event_logs(draw):
    """Lines of several events; each event has a word of its own (EVENTA...) among shared words and typed data,
    and some events hold all the words of another."""
    n_events = draw(st.integers(1, 5))
    shared = draw(st.lists(_WORD, min_size=1, max_size=4))
    templates: list[list[str]] = []
    for e in range(n_events):
        if templates and draw(st.booleans()):
            # another event's words with more inserted: its pattern must not swallow the extra words as data
            parts = list(draw(st.sampled_from(templates)))
            parts.insert(draw(st.integers(0, len(parts))), draw(st.sampled_from(sorted(_VALUES))))
        else:
            parts = draw(st.lists(st.one_of(st.sampled_from(shared), st.sampled_from(sorted(_VALUES))), max_size=6))
        parts.insert(draw(st.integers(0, len(parts))), "EVENT" + "ABCDE"[e])
        templates.append(parts)
    lines, events = [], []
    for _ in range(draw(st.integers(1, 30))):
        e = draw(st.integers(0, n_events - 1))
        line = " ".join(draw(_VALUES[p]) if p in _VALUES else p for p in templates[e])
        lines.append(line)
        events.append(e)
    return lines, events


def _check_invariants(lines: list[str], result: Induction) -> None:
    by_name = {p.name: p for p in result.patterns}
    assert len(by_name) == len(result.patterns)
    assert len(result.assignments) == len(lines)
    for line, name in zip(lines, result.assignments, strict=True):
        assert (name is None) == (not line.strip())
        if name is not None:
            assert parse.re2_fullmatch(by_name[name].regex, line) is not None, (by_name[name].regex, line)
    for p in result.patterns:
        assert parse.re2_error(p.regex) is None, p.regex
        assert p.support == sum(name == p.name for name in result.assignments)
        assert p.fields == tuple(re.findall(r"\(\?P<(\w+)>", p.regex))
        if not any("<*>" in e for e in p.examples):  # a line's own "<*>" shows in its template as it is
            assert p.template.count("<*>") == len(p.fields)
        for example in p.examples:
            assert parse.re2_fullmatch(p.regex, example) is not None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(event_logs())
def test_random_event_logs_keep_events_apart_and_every_pattern_precise(log):
    lines, events = log
    result = induce(lines, "rand")
    _check_invariants(lines, result)
    by_name = {p.name: p for p in result.patterns}
    event_of_group: dict[str, int] = {}
    for name, e in zip(result.assignments, events, strict=True):
        assert event_of_group.setdefault(name, e) == e, "two events in one group"
    for line, e in zip(lines, events, strict=True):
        for name, other in event_of_group.items():
            if other != e:
                assert parse.re2_fullmatch(by_name[name].regex, line) is None, (by_name[name].regex, line)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40), max_size=20))
def test_any_text_at_all_keeps_the_invariants(lines):
    result = induce(lines, "any")
    _check_invariants(lines, result)
    assert induce(list(reversed(lines)), "any").patterns == result.patterns


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet="ab01x:=/.,;#()[]{}<>'\"-_ \t", max_size=30), max_size=30))
def test_log_like_noise_keeps_the_invariants(lines):
    """Digits, separators and brackets in every arrangement: the masking, merging and list rules at their edges."""
    result = induce(lines, "noise")
    _check_invariants(lines, result)
    assert induce(sorted(lines), "noise").patterns == result.patterns


def test_a_word_after_a_naming_word_is_data_when_it_varies_and_an_event_word_never_is():
    """Issue 37, point 6: how a token varies within what is otherwise one event makes it a variable, not only its
    shape: three users after `user` are one event; three states after `VM` stay three; two users stay two
    (fewer than `word_values`); `word_values=0` keeps every word a constant."""
    users = [f"session opened for user {u} by (uid=0)" for u in ("cyrus", "news", "test", "news")]
    states = [f"[instance: 1f2e] VM {s} (Lifecycle Event)" for s in ("Paused", "Started", "Resumed")]
    found = induce(users + states, "sys")
    templates = sorted(p.template for p in found.patterns)
    assert "session opened for user <*> by (uid=<*>)" in templates
    assert sum("VM" in t for t in templates) == 3
    (opened,) = [p for p in found.patterns if p.template.startswith("session")]
    assert parse.re2_fullmatch(opened.regex, "session opened for user alice by (uid=0)") is not None
    assert len(induce(users[:2], "sys").patterns) == 2
    assert len(induce(users, "sys", word_values=0).patterns) == 3
