"""An agent step's artefacts (prompt, transcript, diff, verify log, result, recording) and the feedback sent to the
model never hold a secret value; the change the agent made to a declared output keeps it byte for byte."""

from __future__ import annotations

import sys
import textwrap
import uuid

from agent_helpers import FAILING_TEST, PASSING_TEST

FEEDBACK = "What the last attempt got wrong"


def test_attempt_artefacts_recordings_and_feedback_are_masked_and_the_applied_change_is_not(agent):
    secret = "s3cr3t-" + uuid.uuid4().hex
    # the verify command prints the secret on an error line; no family reads this adapter's output, so the excerpt
    # of its output (which holds that line) becomes the feedback of the next attempt
    (agent.root / "adapters/local.toml").write_text(
        textwrap.dedent(f"""\
        name = "local"
        [commands.test]
        run = "echo \\"error: verify sees $MY_SERVICE_TOKEN\\"; {sys.executable} -m pytest -q -p no:cacheprovider"
        """)
    )
    said = {
        "type": "item.completed",
        "item": {"id": "m", "type": "agent_message", "text": "using ${ENV:MY_SERVICE_TOKEN}"},
    }
    turn = [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        said,
        {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 1}},
    ]
    kept = PASSING_TEST + f"# {secret}\n"
    scenario = {
        "by_prompt": [
            {"match": FEEDBACK, "files": {"tests/test_calc.py": kept}, "lines": turn},
            {"files": {"tests/test_calc.py": FAILING_TEST}, "lines": turn},
        ]
    }
    # an input holding the secret: the model is shown the user's file as it is, the prompt's record is masked
    (agent.root / "src/calc.py").write_text(f"# deployed with {secret}\n" + (agent.root / "src/calc.py").read_text())
    agent.spec(agent.fake_codex_worker(scenario))
    result = agent.make("--record", env=dict(agent.env(), MY_SERVICE_TOKEN=secret))
    assert result.code == 0, result.err
    assert result.step("tests")["agent"]["attempts"] == 2

    assert (agent.root / "tests/test_calc.py").read_text() == kept  # the applied change: the user's bytes
    first, second = agent.prompts()
    assert "verify sees [REDACTED:MY_SERVICE_TOKEN]" in second  # the feedback sent to the model
    assert "The lines of the output that explain the failure" in second  # the excerpt: no family reads it
    assert f"# deployed with {secret}" in first  # the input, as the user wrote it
    attempts = agent.root / ".runner/runs" / result.events()[-1]["run_id"] / "attempts/tests"
    assert "verify sees [REDACTED:MY_SERVICE_TOKEN]" in (attempts / "c1-a1/verify.log").read_text()
    assert "[REDACTED:MY_SERVICE_TOKEN]" in (attempts / "c1-a2/diff.patch").read_text()
    assert "using [REDACTED:MY_SERVICE_TOKEN]" in (attempts / "c1-a2/transcript.jsonl").read_text()
    assert "# deployed with [REDACTED:MY_SERVICE_TOKEN]" in (attempts / "c1-a1/prompt.md").read_text()
    assert secret not in result.out and secret not in result.err
    holding = [
        str(p)
        for folder in (agent.root / ".runner", agent.root / "replays")
        for p in folder.rglob("*")
        # the user's own bytes: the cache's blobs, and a version's copies of its files (what a rollback restores)
        if p.is_file() and secret.encode() in p.read_bytes() and p.parent.name not in ("cache", "blobs")
    ]
    assert list((agent.root / "replays").rglob("*.json")), "--record wrote no recording"
    version = agent.root / ".runner/versions/tests/1"
    assert "[REDACTED:MY_SERVICE_TOKEN]" in (version / "diff.patch").read_text()
    assert "using [REDACTED:MY_SERVICE_TOKEN]" in (version / "transcript.jsonl").read_text()
    assert holding == []
