"""The functions behind `runner adapters` and `runner parse`: their text, their JSON, their usage errors."""

import io
import json
import sys

import pytest
from adapter_helpers import FIXTURES, ROOT, copy_fixture

from runner.commands.adapters import adapters_report
from runner.commands.parse import families_for, parse_report, read_log
from runner.errors import EXIT_USER_ERROR, UsageError

LOGS = ROOT / "tests" / "parse" / "logs"
# corpus folder -> the adapter and variants whose `test` command produced such a log
FOLDERS = {
    "pytest": ("python", ()),
    "jest": ("node", ("jest",)),
    "vitest": ("node", ("vitest",)),
    "tap": ("node", ("script",)),  # the package's own scripts.test: node --test, tape
    "gotest": ("go", ()),
    "cargo": ("rust", ()),
    "surefire": ("maven", ()),
    "gradle": ("gradle", ()),
}
CASES = sorted(p for p in LOGS.glob("*/*.log") if p.parent.name in FOLDERS)


@pytest.mark.parametrize("log", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_parse_by_adapter_command_gives_the_corpus_findings(tmp_path, log):
    adapter, variants = FOLDERS[log.parent.name]
    expected = json.loads(log.with_name(log.stem + ".expected.json").read_text("utf-8"))
    text, obj = parse_report(tmp_path, read_log(log), adapter=adapter, command="test", variants=variants)
    ranges = obj.pop("excerpt")
    assert obj == expected
    assert text.startswith(f"parsed with {log.parent.name}, diagnostics, causes (adapter {adapter}")
    assert sum(b - a + 1 for a, b in ranges) <= 60 and all(1 <= a <= b for a, b in ranges)


def test_parse_by_family_and_from_stdin(tmp_path, monkeypatch):
    log = LOGS / "pytest" / "fail_default.log"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(log.read_bytes())))
    text, obj = parse_report(tmp_path, read_log("-"), families=("pytest",))
    assert obj["summary"]["failed"] >= 1 and obj["complete"] is True
    assert set(obj) == {"summary", "failed_tests", "diagnostics", "cause", "complete", "excerpt"}
    assert "failed tests" in text and text.startswith("parsed with pytest (--family)")


def test_the_variant_detected_in_the_project_picks_the_family(tmp_path):
    (tmp_path / "package.json").write_text('{"devDependencies": {"vitest": "^4"}}')
    names, origin = families_for(tmp_path, adapter="node", command="test")
    assert names == ["vitest", "diagnostics", "causes"] and "node (vitest)" in origin
    assert families_for(tmp_path, adapter="node", command="test", variants=("jest",))[0][0] == "jest"
    assert families_for(tmp_path, adapter="node", command="test", variants=())[0] == ["diagnostics", "causes"]


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"adapter": "pyton", "command": "test"}, "unknown adapter 'pyton' (did you mean 'python'?)"),
        ({"adapter": "python", "command": "tset"}, "has no command 'tset' (did you mean 'test'?)"),
        ({"families": ("pytset",)}, "unknown regex family 'pytset' (did you mean 'pytest'?)"),
        ({"families": ("pytest",), "adapter": "python"}, "either --family or --adapter/--command"),
        ({"adapter": "python"}, "--adapter NAME --command CMD"),
        ({"command": "test"}, "--adapter NAME --command CMD"),
        ({"adapter": "auto", "command": "test"}, "no toolchain detected"),
    ],
)
def test_usage_mistakes_exit_2_with_a_hint(tmp_path, kwargs, message):
    with pytest.raises(UsageError) as info:
        parse_report(tmp_path, "text", **kwargs)
    assert message in str(info.value)
    assert info.value.exit_code == EXIT_USER_ERROR


def test_a_missing_log_file_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no such log file"):
        read_log(tmp_path / "nope.log")
    with pytest.raises(UsageError, match="is a folder"):
        read_log(tmp_path)


def test_adapters_report_shows_detection_evidence_and_commands(tmp_path):
    root = copy_fixture(FIXTURES / "node-vitest", tmp_path / "web")
    (root / "pnpm-lock.yaml").write_text("lockfileVersion: '9.0'\n")
    text, obj = adapters_report(root)
    assert [d["adapter"] for d in obj["detected"]] == ["node"]
    node = obj["detected"][0]
    assert node["variant"] == "pnpm+vitest" and node["confidence"] == 0.9
    assert node["commands"]["test"] == {"run": "pnpm exec vitest run", "parse": ["vitest", "diagnostics", "causes"]}
    assert obj["adapters"]["python"]["detected"] is False
    assert "node (confidence 0.90, variant pnpm+vitest)" in text
    assert "  because pnpm-lock.yaml found: variant pnpm" in text
    assert "pnpm exec vitest run   [parsed by vitest, diagnostics, causes]" in text
    assert "not detected: go, gradle, maven, python, rust" in text
    json.dumps(obj)


def test_adapters_report_in_an_empty_folder(tmp_path):
    text, obj = adapters_report(tmp_path)
    assert obj["detected"] == [] and text.startswith("no toolchain detected in ")


def test_a_wrong_adapter_is_reported_before_the_log_is_read(tmp_path):
    with pytest.raises(UsageError, match="unknown adapter"):
        parse_report(tmp_path, adapter="pyton", command="test", source=tmp_path / "missing.log")
    _, obj = parse_report(tmp_path, families=("cargo",), source=LOGS / "cargo" / "fail.log")
    obj.pop("excerpt")
    assert obj == json.loads((LOGS / "cargo" / "fail.expected.json").read_text())
