"""The README's main command: `runner make` on examples/quickstart, offline, served by the replay worker."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


def _copy(tmp_path: Path) -> Path:
    dest = tmp_path / "quickstart"
    generated = {".runner", "build", "tests", "docs"}  # what a run makes at the top (not replays/tests)
    shutil.copytree(
        EXAMPLE, dest, ignore=lambda folder, names: generated & set(names) if Path(folder) == EXAMPLE else set()
    )
    return dest


def _make(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(root)}  # no key anywhere: nothing can call a model
    return subprocess.run(
        [sys.executable, "-m", "runner", "make", "--json", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_quickstart_runs_offline_from_recordings(tmp_path):
    root = _copy(tmp_path)
    result = _make(root)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    finished = {e["intent"]: e for e in events if e["event"] == "step_finished"}
    assert {n: e["status"] for n, e in finished.items()} == {
        "docs": "ran",
        "tests": "ran",
        "check": "ran",
    }  # and `all`, an aggregate, is no step of its own: neither reported nor counted
    assert finished["tests"]["agent"]["attempts"] == 2  # the recorded retry: a failing test, then the fix
    attempts = [e for e in events if e["event"] == "attempt_finished" and e["intent"] == "tests"]
    assert "test_mean" in attempts[0]["error"]
    assert (root / "tests/test_calc.py").is_file() and (root / "docs/calc.md").is_file()
    assert (root / "build/report.txt").read_text().endswith("docs: ok\n")
    again = _make(root)
    assert json.loads(again.stdout.splitlines()[-1])["ran"] == 0


def test_quickstart_recordings_still_match_the_example(tmp_path):
    """If the example's sources or intents change, the recordings must be made again
    (tools/record_quickstart.py); this fails first, naming the missing recording."""
    root = _copy(tmp_path)
    (root / "src/calc/__init__.py").write_text((root / "src/calc/__init__.py").read_text() + "\n# edited\n")
    result = _make(root, "tests")
    assert result.returncode == 1
    error = [json.loads(line) for line in result.stdout.splitlines()][-2]["error"]
    assert "no recording" in error and "runner make --record" in error


def _replay(root: Path, run_id: str) -> tuple[int, dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "runner", "replay", run_id, "--json"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, json.loads(proc.stdout)


def test_runner_replay_reexecutes_a_run_and_flags_what_no_longer_matches(tmp_path):
    root = _copy(tmp_path)
    run_id = json.loads(_make(root).stdout.splitlines()[-1])["run_id"]
    code, report = _replay(root, run_id)
    assert code == 0
    assert {s["intent"]: s["status"] for s in report["steps"]} == {"docs": "same", "tests": "same"}

    recording = next((root / "replays/docs").glob("*.json"))
    doc = json.loads(recording.read_text())
    doc["files"]["docs/calc.md"] += "\nAn extra line the original run did not write.\n"
    recording.write_text(json.dumps(doc))
    code, report = _replay(root, run_id)
    assert code == 1
    docs = next(s for s in report["steps"] if s["intent"] == "docs")
    assert docs == {"intent": "docs", "status": "differs", "detail": "outputs differ: docs/calc.md"}

    (root / "src/calc/__init__.py").write_text((root / "src/calc/__init__.py").read_text() + "\n# edited\n")
    code, report = _replay(root, run_id)
    assert code == 1
    assert {s["status"] for s in report["steps"]} == {"unmatched"}


def _log(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "runner", "log", *args], cwd=root, capture_output=True, text=True, timeout=60
    )


def test_runner_log_shows_each_agent_attempt_with_its_tokens_and_folder(tmp_path):
    """The quickstart's `tests` step took two recorded attempts (a failing test, then the fix): `runner log`
    lists both with their verdicts, tokens and artefact folders, and the run's total; `runner log tests`
    the step's own."""
    root = _copy(tmp_path)
    first = [json.loads(line) for line in _make(root).stdout.splitlines()]
    run_id = first[-1]["run_id"]
    attempts = [e for e in first if e["event"] == "attempt_finished"]
    view = _log(root, run_id)
    assert view.returncode == 0, view.stderr
    folder = root / ".runner/runs" / run_id / "attempts/tests"
    lines = view.stdout.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("  ran      tests")))
    first, second = lines[at + 1], lines[at + 2]
    assert first.startswith("           attempt 1 of candidate 1: rejected (logic), ") and first.endswith(
        f"{folder}/c1-a1"
    )
    assert second.startswith("           attempt 2 of candidate 1: verified, ") and second.endswith(f"{folder}/c1-a2")
    assert (folder / "c1-a1" / "prompt.md").is_file() and (folder / "c1-a2" / "diff.patch").is_file()
    as_json = json.loads(_log(root, run_id, "--json").stdout)
    tests = next(s for s in as_json["steps"] if s["intent"] == "tests")
    assert [a["tokens"] for a in tests["attempts"]] == [a["tokens"] for a in attempts if a["intent"] == "tests"]
    assert tests["tokens"] == sum(a["tokens"] for a in tests["attempts"]) > 0
    assert as_json["tokens"] == sum(a["tokens"] for a in attempts) and f"; {as_json['tokens']:,} tokens" in view.stdout
    # the step's own: its attempts from the last run that started it (a no-op since started nothing)
    assert json.loads(_make(root).stdout.splitlines()[-1])["cached"] > 0
    step = _log(root, "tests")
    assert step.returncode == 0, step.stderr
    assert step.stdout.splitlines()[0].startswith("attempt 1 of candidate 1: rejected (logic): ")
    assert step.stdout.splitlines()[-1].endswith(f"{run_id}/attempts/tests/c1-a2")


def test_a_reader_that_goes_away_stops_nothing(tmp_path):
    """`runner make --json | head -1`: the run goes on to the end, quietly (no traceback from the threads that
    report agent attempts), and its record is whole."""
    root = _copy(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "make", "--json"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(root)},  # no key: nothing can call a model
    )
    first = json.loads(proc.stdout.readline())
    proc.stdout.close()  # as head does after its line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    last = (root / ".runner" / "runs" / first["run_id"] / "events.jsonl").read_text().splitlines()[-1]
    assert json.loads(last)["event"] == "run_finished" and json.loads(last)["status"] == "ok"


def test_an_offline_run_says_it_replayed_the_recorded_tokens_never_that_it_spent_them(tmp_path):
    root = _copy(tmp_path)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(root)}
    result = subprocess.run(
        [sys.executable, "-m", "runner", "make"], cwd=root, capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert "spent" not in result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("[") and " ran tests (" in line and "; replayed 2 attempts, " in line for line in lines)
    assert lines[-1].startswith("agent steps replayed 3 attempts, ")
    assert lines[-1].endswith(" output tokens from recordings (no model was called)")
    assert (EXAMPLE / "intents.toml").read_text().startswith("# The quickstart shows a retry on purpose: ")
    # the recorded transcript as a conversation: the path Codex reported in its copy of the project, as the
    # project names it
    shown = subprocess.run(
        [sys.executable, "-m", "runner", "show", "tests"], cwd=root, capture_output=True, text=True, env=env, timeout=60
    ).stdout.splitlines()
    transcript = shown[shown.index("transcript (`--raw` for its JSON lines):") + 1 :]
    assert transcript[0] == "changed tests/test_calc.py (update)" and transcript[1] == "agent:"
