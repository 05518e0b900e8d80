"""Agent steps through the real CLI with the fake codex: retry with feedback, scope refusals, the crash-safe
apply, approvals without a terminal, budgets and candidates."""

from __future__ import annotations

import json
import os
import re
import sys

import pytest
import racy
from agent_helpers import FAILING_TEST, FAKE_CODEX, PASSING_TEST

FEEDBACK = "What the last attempt got wrong"


def _retry_scenario(extra_fix: dict | None = None) -> dict:
    return {
        "by_prompt": [
            {"match": FEEDBACK, "files": {"tests/test_calc.py": PASSING_TEST, **(extra_fix or {})}},
            {"files": {"tests/test_calc.py": FAILING_TEST}},
        ]
    }


def test_failed_verification_is_retried_with_the_failing_test_named(agent):
    agent.spec(agent.fake_codex_worker(_retry_scenario()))
    result = agent.make()
    assert result.code == 0, result.err
    step = result.step("tests")
    assert step["status"] == "ran" and step["agent"]["attempts"] == 2
    assert (agent.root / "tests/test_calc.py").read_text() == PASSING_TEST
    first, second = agent.prompts()
    assert FEEDBACK not in first
    assert "tests/test_calc.py::test_mean" in second  # what the regex library extracted, not the log
    assert "Failing tests:" in second
    assert "assert 1.5 == 2" in second  # and why it failed: a name alone does not say what to fix
    attempts = [e for e in result.events() if e["event"] == "attempt_finished"]
    assert [(a["attempt"], a["ok"], a["kind"]) for a in attempts] == [(1, False, "logic"), (2, True, None)]


def test_a_second_make_and_a_restore_call_no_model(agent):
    agent.spec(agent.fake_codex_worker(_retry_scenario()))
    assert agent.make().code == 0
    calls = len(agent.prompts())
    again = agent.make()
    assert again.step("tests")["status"] == "cached"
    (agent.root / "tests/test_calc.py").unlink()
    restored = agent.make()
    assert restored.step("tests")["status"] == "restored"
    assert (agent.root / "tests/test_calc.py").read_text() == PASSING_TEST
    assert len(agent.prompts()) == calls
    assert not agent.leaks()


def _claim(path: str) -> list:
    return [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        {
            "type": "item.completed",
            "item": {
                "id": "i0",
                "type": "file_change",
                "status": "completed",
                "changes": [{"path": path, "kind": "add"}],
            },
        },
        {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 1}},
    ]


@pytest.mark.parametrize("case", ["parent", "absolute", "symlink", "git"])
def test_writes_outside_the_scope_are_refused_and_the_project_untouched(agent, tmp_path, case):
    outside = tmp_path / "outside.txt"
    scenario = {
        "parent": {
            "files": {"../escape.txt": "x", "tests/test_calc.py": PASSING_TEST},
            "lines": _claim("../escape.txt"),
        },
        "absolute": {"files": {str(outside): "x", "tests/test_calc.py": PASSING_TEST}, "lines": _claim(str(outside))},
        "symlink": {"symlinks": {"tests_link": "/etc"}, "files": {"tests/test_calc.py": PASSING_TEST}},
        "git": {"files": {".git/config": "[core]\n", "tests/test_calc.py": PASSING_TEST}},
    }[case]
    agent.spec(agent.fake_codex_worker(scenario))
    before = agent.files()
    result = agent.make()
    assert result.code == 1
    error = result.step("tests")["error"]
    expected = {
        "parent": "refused: ../escape.txt: outside the project (policy 'default')",
        "absolute": f"refused: {outside}: outside the project (policy 'default')",
        "symlink": "refused: tests_link: a symlink (-> /etc) is never applied: it could point outside the project "
        "(policy 'default')",
        "git": "refused: .git/config: inside .git/, which no step may write (policy 'default')",
    }[case]
    assert error == expected
    assert agent.files() == before
    assert len(agent.prompts()) == 1  # a policy refusal is not retried


def test_a_refusal_of_many_paths_names_five_and_counts_the_rest(agent):
    links = {f"link{i}": "/etc" for i in range(7)}
    agent.spec(agent.fake_codex_worker({"symlinks": links, "files": {"tests/test_calc.py": PASSING_TEST}}))
    error = agent.make().step("tests")["error"]
    named = "; ".join(
        f"link{i}: a symlink (-> /etc) is never applied: it could point outside the project (policy 'default')"
        for i in range(5)
    )
    assert error == f"refused: {named}; and 2 more (the attempt's diff.patch has them all)"


def test_scope_allows_more_than_the_outputs(agent):
    scenario = {"files": {"tests/test_calc.py": PASSING_TEST, "notes/why.md": "because\n"}}
    agent.spec(agent.fake_codex_worker(scenario), policy="[policy.default]\nscope = ['notes/*.md']")
    assert agent.make().code == 0
    assert (agent.root / "notes/why.md").read_text() == "because\n"


def _refused_in_project(agent, scope: str, written: str) -> str:
    """Run an attempt that writes its output and `written`; assert nothing was applied; return the error."""
    scenario = {"files": {"tests/test_calc.py": PASSING_TEST, written: "x = 1\n"}}
    agent.spec(agent.fake_codex_worker(scenario), policy=f"[policy.default]\nscope = ['{scope}']")
    before = agent.files()
    result = agent.make()
    assert result.code == 1
    assert agent.files() == before
    assert not (agent.root / written).exists()
    assert len(agent.prompts()) == 1  # a policy refusal is not retried
    return result.step("tests")["error"]


def test_a_write_inside_the_project_outside_scope_and_outputs_is_refused(agent):
    error = _refused_in_project(agent, "tests/**", "src/other.py")
    assert error == (
        "refused: src/other.py: outside the scope of policy 'default' and the intent's outputs "
        "(tests/**, tests/test_calc.py)"
    )


def test_a_scope_star_does_not_reach_into_subfolders(agent):
    error = _refused_in_project(agent, "notes/*.md", "notes/deep/er/evil.md")
    assert error == (
        "refused: notes/deep/er/evil.md: outside the scope of policy 'default' and the intent's outputs "
        "(notes/*.md, tests/test_calc.py)"
    )


def test_write_files_never_refuses_even_a_change_to_the_declared_outputs(agent):
    agent.spec(
        agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}),
        policy='[policy.default]\nwrite_files = "never"',
    )
    before = agent.files()
    result = agent.make()
    assert result.code == 1
    assert result.step("tests")["error"] == "refused: policy 'default' forbids writing files (write_files = \"never\")"
    assert agent.files() == before


def test_a_committed_apply_is_rolled_forward_including_files_in_scope_that_are_not_outputs(agent):
    # the cache restores a declared output whatever the journal's fate; a file the scope allowed is in the
    # journal alone, so only rolling the journal forward brings it back (into folders that do not exist yet)
    scenario = {"files": {"tests/test_calc.py": PASSING_TEST, "notes/drafts/why.md": "because\n"}}
    agent.spec(agent.fake_codex_worker(scenario), policy="[policy.default]\nscope = ['notes/**']")
    crashed = agent.make(env=dict(agent.env(), RUNNER_TEST_CRASH_AT="journaled"))
    assert crashed.code == -9  # SIGKILL right after the commit point, before any file was moved
    assert not (agent.root / "notes/drafts/why.md").exists()
    calls = len(agent.prompts())
    result = agent.make()
    assert result.code == 0, result.err
    assert (agent.root / "notes/drafts/why.md").read_text() == "because\n"
    assert (agent.root / "tests/test_calc.py").read_text() == PASSING_TEST
    recovered = [e["message"] for e in result.events() if e.get("event") == "recovered"]
    assert len(recovered) == 1 and recovered[0].startswith("completed the interrupted apply "), recovered
    assert recovered[0].endswith(" (2 files)")
    assert len(agent.prompts()) == calls


@pytest.mark.parametrize("point", ["staged", "journaled", "file:1", "file:2", "replaced"])
def test_a_crash_at_any_point_of_the_apply_leaves_all_or_nothing(agent, point):
    second = "def test_more():\n    assert True\n"
    scenario = {"files": {"tests/test_calc.py": PASSING_TEST, "tests/test_more.py": second}}
    agent.spec(agent.fake_codex_worker(scenario), outputs='["tests/test_calc.py", "tests/test_more.py"]')
    crashed = agent.make(env=dict(agent.env(), RUNNER_TEST_CRASH_AT=point))
    assert crashed.code == -9  # SIGKILL, mid-apply
    present = {p: (agent.root / p).exists() for p in ("tests/test_calc.py", "tests/test_more.py")}
    assert len(set(present.values())) == 1 or point.startswith("file:"), present
    calls = len(agent.prompts())
    result = agent.make()
    assert result.code == 0, result.err
    assert (agent.root / "tests/test_calc.py").read_text() == PASSING_TEST
    assert (agent.root / "tests/test_more.py").read_text() == second
    assert len(agent.prompts()) == calls  # recovered from the journal and the cache, not from the model
    assert not (agent.root / ".runner/apply").exists() or not any((agent.root / ".runner/apply").iterdir())


def test_ask_without_a_terminal_blocks_then_approve_applies_without_a_model(agent):
    agent.spec(
        agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}),
        policy='[policy.default]\nwrite_files = "ask"',
    )
    before = agent.files()
    blocked = agent.make()
    assert blocked.code == 3
    step = blocked.step("tests")
    assert step["status"] == "blocked"
    assert "`runner approve tests` applies it" in step["error"]
    assert blocked.events()[-1]["left"] == ["tests"]
    assert agent.files() == before
    calls = len(agent.prompts())
    again = agent.make()
    assert again.code == 3 and again.step("tests")["status"] == "blocked"
    approved = agent.run("approve", "tests", "--json")
    assert approved.code == 0, approved.err
    assert json.loads(approved.out)["done"] == [
        {"intent": "tests", "action": "applied", "files": ["tests/test_calc.py"]}
    ]
    assert (agent.root / "tests/test_calc.py").read_text() == PASSING_TEST
    assert agent.make().step("tests")["status"] == "cached"
    assert len(agent.prompts()) == calls


def test_reject_drops_the_pending_change(agent):
    agent.spec(agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}))
    assert agent.make("--halt-on", "write_files").code == 3
    rejected = agent.run("approve", "--reject")
    assert rejected.code == 0 and rejected.out.startswith("rejected tests")
    assert not (agent.root / "tests/test_calc.py").exists()
    assert agent.run("approve").out.strip() == "nothing waits for approval"


def test_token_budget_stops_with_exit_3_and_says_what_was_spent(agent):
    agent.spec(
        agent.fake_codex_worker({"files": {"tests/test_calc.py": FAILING_TEST}}),
        policy="[policy.default]\nbudget = { tokens = 5 }",
    )
    result = agent.make()
    assert result.code == 3
    step = result.step("tests")
    assert step["status"] == "blocked"
    assert re.fullmatch(
        r"stopped before attempt 2: the step's token budget \(5, policy 'default'\) is spent: "
        r"13 tokens, \d+s, 1 attempt",
        step["error"],
    ), step["error"]
    assert len(agent.prompts()) == 1


def test_candidates_run_side_by_side_and_the_losers_are_kept(agent):
    agent.spec(agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}), intent_extra="candidates = 2")
    result = agent.make()
    assert result.code == 0, result.err
    details = result.step("tests")["agent"]
    assert [c["verified"] for c in details["candidates"]] == [True, True]
    assert details["chosen"] in (1, 2)
    run_dir = agent.root / ".runner/runs" / result.events()[-1]["run_id"] / "attempts/tests"
    assert sorted(p.name for p in run_dir.iterdir()) == ["c1-a1", "c2-a1"]
    assert (run_dir / "c2-a1/prompt.md").is_file() and (run_dir / "c2-a1/diff.patch").is_file()


def test_permanent_worker_failure_is_not_retried(agent):
    lines = [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        {"type": "turn.failed", "error": {"message": "unexpected status 403 Forbidden: no access to the model"}},
    ]
    agent.spec(agent.fake_codex_worker({"lines": lines, "exit": 1}))
    result = agent.make()
    assert result.code == 1
    assert result.step("tests")["error"].startswith("the codex worker failed (permanent):")
    assert len(agent.prompts()) == 1


def test_manual_approval_without_a_terminal_asks_before_the_call_and_before_the_apply(agent):
    agent.spec(
        agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}),
        policy='[policy.default]\napproval = "manual"',
    )
    first = agent.make()
    assert first.code == 3
    assert first.step("tests")["error"] == (
        "policy 'default' (approval = manual) asks before every agent step: "
        "`runner approve tests` allows its next run (no terminal to ask here)"
    )
    assert agent.prompts() == []  # nothing was asked of any model
    allowed = agent.run("approve", "tests")
    assert allowed.out.strip() == "allowed tests: its next `runner make` may call the model once"
    second = agent.make()
    assert second.code == 3 and "waits for approval" in second.step("tests")["error"]
    assert len(agent.prompts()) == 1
    assert agent.run("approve", "tests").code == 0
    assert (agent.root / "tests/test_calc.py").read_text() == PASSING_TEST
    assert len(agent.prompts()) == 1


def test_run_shell_ask_blocks_before_verification(agent):
    agent.spec(
        agent.fake_codex_worker({"files": {"tests/test_calc.py": PASSING_TEST}}),
        policy='[policy.default]\nrun_shell = "ask"',
    )
    result = agent.make()
    assert result.code == 3
    assert result.step("tests")["error"].startswith(
        "policy 'default' asks before running shell commands (verify: test)"
    )
    assert agent.prompts() == []


@pytest.mark.parametrize("top", ["project", "above"], ids=["the project", "a folder above the project"])
def test_in_a_git_repository_the_attempt_is_a_worktree_with_uncommitted_changes(agent, top):
    import subprocess

    repository = agent.root if top == "project" else agent.root.parent

    def git(*args):
        subprocess.run(
            ["git", *args],
            cwd=repository,
            check=True,
            capture_output=True,
            env=dict(
                os.environ,
                GIT_AUTHOR_NAME="t",
                GIT_AUTHOR_EMAIL="t@t",
                GIT_COMMITTER_NAME="t",
                GIT_COMMITTER_EMAIL="t@t",
            ),
        )

    test = PASSING_TEST + "\nfrom calc import median\n\ndef test_median():\n    assert median([3, 1, 2]) == 2\n"
    agent.spec(agent.fake_codex_worker({"files": {"tests/test_calc.py": test}}))
    spec = (agent.root / "intents.toml").read_text().replace('verify = ["test"]', 'verify = ["test", "history"]')
    (agent.root / "intents.toml").write_text(spec)
    with open(agent.root / "adapters/local.toml", "a") as f:  # only a worktree has the history to show
        f.write('[commands.history]\nrun = "git log --oneline -1 | grep -q start"\n')
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "start")
    # uncommitted: the attempt must see the working tree, not HEAD
    (agent.root / "src/calc.py").write_text(
        (agent.root / "src/calc.py").read_text() + "\n\ndef median(v):\n    return sorted(v)[len(v) // 2]\n"
    )
    result = agent.make()
    assert result.code == 0, result.err + json.dumps(result.events()[-3:])
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=repository, capture_output=True, text=True).stdout
    assert len(worktrees.strip().splitlines()) == 1, worktrees  # the attempt's worktree is gone


def test_a_new_codex_binary_is_not_a_no_op(agent, tmp_path):
    """An agent step's key holds the worker's version: the stat-only no-op proof must look at the binary."""
    import shutil

    binary = tmp_path / "bin" / "codex"
    binary.parent.mkdir()
    shutil.copy(FAKE_CODEX, binary)
    binary.chmod(0o755)
    (agent.home / "scenario.json").write_text(json.dumps({"files": {"tests/test_calc.py": PASSING_TEST}}))
    agent.spec(f'[worker]\nkind = "codex"\nbinary = "{binary}"\ntimeout = 60\n')
    assert agent.make().code == 0
    for path in [*agent.root.rglob("*"), binary]:  # out of the racy window
        if ".runner" not in path.parts and path.is_file():
            os.utime(path, (path.stat().st_mtime - 5, path.stat().st_mtime - 5))
    racy.wait_out()  # utime moved ctime to now: wait out the racy window (runner.stat_cache.vouches)
    agent.make()
    assert agent.make().events()[0].get("fast") is True
    binary.write_text(binary.read_text() + "\n# upgraded\n")
    after = agent.make()
    assert after.code == 0 and "fast" not in after.events()[0]
    with_replay = agent.make("--worker", "replay")  # another worker's keys: no proof for the plain target
    assert "fast" not in with_replay.events()[0]
    assert "fast" not in agent.make().events()[0]


def test_a_verify_output_no_family_reads_is_retried_with_its_excerpt_not_its_tail(agent):
    # the check prints why it failed first, then a hundred lines of noise: a tail of 60 lines would miss it
    noise = "; ".join(f"echo 'checked module {i}'" for i in range(100))
    why = "echo 'error: tests/test_calc.py is wrong'"
    check = f"{sys.executable} -m pytest -q -p no:cacheprovider > /dev/null 2>&1 || {{ {why}; {noise}; exit 1; }}"
    (agent.root / "adapters/local.toml").write_text(f'name = "local"\n[commands.test]\nrun = "{check}"\n')
    agent.spec(agent.fake_codex_worker(_retry_scenario()))
    result = agent.make()
    assert result.code == 0, result.err
    first, second = agent.prompts()
    assert "The lines of the output that explain the failure" in second
    assert "error: tests/test_calc.py is wrong" in second
    # the budget the error's line leaves goes to the output's last lines, as a tail shows them; the noise between
    # is left out (the command line the feedback quotes names every module, each followed by its quote)
    assert "checked module 99\n" in second and "checked module 41\n" in second
    assert "checked module 40\n" not in second
