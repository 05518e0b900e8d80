"""Versions of an agent intent's applied changes through the real CLI, the openai worker against the fake Responses
server: make then improve (the feedback in the logged request), history, show, rollback (version 1's bytes back,
the dependants out of date), a rollback a kill cut short, and the errors, word for word."""

from __future__ import annotations

import json
import re
import subprocess
import textwrap

import pytest
from agent_helpers import PASSING_TEST

FEEDBACK = "Also check that the mean of [2, 4] is 3"
SECOND_TEST = PASSING_TEST + "\n\ndef test_mean_even():\n    assert mean([2, 4]) == 3\n"


def _answer(text: str) -> str:
    summary = json.dumps({"summary": "tests"})
    return f"<<MIS:START>>\n<<MIS:FILE path=tests/test_calc.py>>\n{text}<<MIS:JSON>>\n{summary}\n<<MIS:END>>\n"


SCRIPT = [
    {
        "match": FEEDBACK,
        "steps": [{"message": _answer(SECOND_TEST), "usage": {"input_tokens": 40, "output_tokens": 9}}],
    },
    {"steps": [{"message": _answer(PASSING_TEST), "usage": {"input_tokens": 30, "output_tokens": 7}}]},
]

REPORT = """
[intent.report]
deps = ["tests"]
inputs = ["tests/test_calc.py"]
run = "wc -l < tests/test_calc.py > report.txt"
outputs = ["report.txt"]
"""


def _project(agent, server, policy: str = ""):
    srv = server(SCRIPT)
    worker = textwrap.dedent(f"""\
        [worker]
        kind = "openai"
        model = "gpt-5.5"
        base_url = "{srv.base_url}"
        env_key = "FAKE_KEY"
        timeout = 30
        """)
    agent.spec(worker, policy=policy)
    with open(agent.root / "intents.toml", "a") as f:
        f.write(REPORT)
    return srv


def _two_versions(agent, server, policy: str = ""):
    srv = _project(agent, server, policy)
    first = agent.make("tests")
    assert first.code == 0, first.err
    improved = agent.run("improve", "tests", "--feedback", FEEDBACK, "--json")
    assert improved.code == 0, improved.err
    return srv, first, improved


def test_improve_makes_version_2_with_the_feedback_in_the_request_and_history_lists_both(agent, server):
    srv, first, improved = _two_versions(agent, server)
    requests = srv.requests()
    assert len(requests) == 2
    sent = json.dumps(requests[1]["body"]["input"])
    assert FEEDBACK in sent and "## Improve version 1" in sent
    assert "+def test_mean():" in sent  # version 1's diff
    assert FEEDBACK not in json.dumps(requests[0]["body"])
    assert improved.step("tests")["status"] == "ran"
    assert improved.step("tests")["reasons"] == ["runner improve: run again with feedback"]
    assert (agent.root / "tests/test_calc.py").read_text() == SECOND_TEST

    history = agent.run("history", "tests", "--json")
    assert history.code == 0, history.err
    listed = json.loads(history.out)
    assert listed["intent"] == "tests"
    one, two = listed["versions"]
    runs = [first.events()[-1]["run_id"], improved.events()[-1]["run_id"]]
    assert [one["run"], two["run"]] == runs
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", two["time"])
    assert re.fullmatch(r"[0-9a-f]{64}", two["key"])
    assert two["key"] == one["key"]  # feedback is not part of the key: the next make finds version 2 up to date
    assert {
        k: two[k] for k in ("version", "kind", "improves", "feedback", "tokens", "attempts", "verified", "verify")
    } == {
        "version": 2,
        "kind": "improve",
        "improves": 1,
        "feedback": FEEDBACK,
        "tokens": 49,
        "attempts": 1,
        "verified": True,
        "verify": ["test"],
    }
    assert two["diffstat"] == {"files": 1, "insertions": 4, "deletions": 0}
    assert one["diffstat"] == {"files": 1, "insertions": len(PASSING_TEST.splitlines()), "deletions": 0}
    assert (one["version"], one["kind"], one["tokens"]) == (1, "make", 37)

    table = agent.run("history", "tests").out.splitlines()
    assert re.split(r"\s{2,}", table[0]) == ["VERSION", "TIME", "RUN", "KIND", "CHANGE", "TOKENS", "VERIFIED"]
    assert re.split(r"\s{2,}", table[2])[3:] == ["improve of 1", "1 file +4 -0", "49", "yes (test)"]
    assert len(table) == 3

    again = agent.make("report")
    assert again.code == 0 and again.step("tests")["status"] == "cached"
    assert again.step("report")["status"] == "ran"
    assert len(srv.requests()) == 2


def test_show_prints_a_version_s_diff_and_transcript(agent, server):
    _two_versions(agent, server)
    shown = agent.run("show", "tests@1")
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    assert re.fullmatch(r"tests version 1: make, run \S+, \S+", lines[0])
    assert "--- /dev/null\n+++ b/tests/test_calc.py\n" in shown.out
    transcript = lines.index("transcript (`--raw` for its JSON lines):")
    assert "+def test_mean():" in shown.out and "test_mean_even" not in "\n".join(lines[:transcript])
    assert "verified  yes (test)" in lines
    # a conversation: the answer once, then the tokens; no streaming JSON
    assert lines[transcript + 1] == "answer:" and lines[-1] == "tokens: 30 input (0 cached), 7 output"
    assert "response.completed" not in shown.out and shown.out.count("<<MIS:START>>") == 1
    raw = agent.run("show", "tests@1", "--raw").out
    assert "transcript (raw JSON lines):" in raw.splitlines() and "response.completed" in raw
    latest = json.loads(agent.run("show", "tests", "--json").out)
    assert latest["version"] == 2 and "+def test_mean_even():" in latest["diff"]
    assert latest["diff"].startswith("--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n")


def test_rollback_restores_version_1_bytes_and_the_dependants_are_out_of_date(agent, server):
    srv, _first, _improved = _two_versions(agent, server)
    assert agent.make("report").code == 0  # report made from version 2
    result = agent.run("rollback", "tests", "--json")
    assert result.code == 0, result.err
    done = json.loads(result.out)
    assert (done["version"], done["kind"], done["restores"]) == (3, "rollback", 1)
    assert (agent.root / "tests/test_calc.py").read_bytes() == PASSING_TEST.encode()

    status = agent.run("status", "report", "--json")
    assert status.code == 0, status.err
    steps = {s["intent"]: s for s in json.loads(status.out)["steps"]}
    assert steps["tests"]["action"] == "skip"  # the rolled-back bytes are its result: kept, not re-run
    assert steps["report"]["action"] == "run"
    assert steps["report"]["reasons"] == [
        "input tests/test_calc.py changed",
        "dependency tests produced new outputs",
    ]

    remade = agent.make("report")
    assert remade.step("tests")["status"] == "cached"
    assert remade.step("report")["status"] == "ran"
    assert (agent.root / "tests/test_calc.py").read_bytes() == PASSING_TEST.encode()
    assert len(srv.requests()) == 2  # no model call

    versions = json.loads(agent.run("history", "tests", "--json").out)["versions"]
    assert [(v["version"], v["kind"]) for v in versions] == [(1, "make"), (2, "improve"), (3, "rollback")]
    back = agent.run("rollback", "tests", "--to", "2")
    assert back.code == 0, back.err
    assert back.out.splitlines() == [
        "rolled tests back to version 2 as version 4: tests/test_calc.py",
        "its dependants are now out of date: `runner status` lists them, `runner make` brings them up to date",
    ]  # report depends on it
    assert (agent.root / "tests/test_calc.py").read_text() == SECOND_TEST
    assert not agent.leaks()


def test_a_dependant_made_from_the_restored_version_before_is_restored_from_the_cache(agent, server):
    """Early cutoff's other face: `report` was made from version 1's bytes once, so after the rollback its key
    matches that cached run again: out of date on disk, brought back without running."""
    _project(agent, server)
    assert agent.make("report").code == 0
    made_from_1 = (agent.root / "report.txt").read_bytes()
    assert agent.run("improve", "tests", "--feedback", FEEDBACK).code == 0
    assert agent.make("report").step("report")["status"] == "ran"
    assert agent.run("rollback", "tests").code == 0
    steps = {s["intent"]: s for s in json.loads(agent.run("status", "report", "--json").out)["steps"]}
    assert steps["report"]["reasons"] == [
        "inputs match an earlier cached run",
        "output report.txt changed: restore from cache",
    ]
    assert agent.make("report").step("report")["status"] == "restored"
    assert (agent.root / "report.txt").read_bytes() == made_from_1


def test_rollback_does_not_need_the_cache(agent, server):
    _two_versions(agent, server)
    assert agent.run("cache", "clear").code == 0
    assert agent.run("rollback", "tests").code == 0
    assert (agent.root / "tests/test_calc.py").read_bytes() == PASSING_TEST.encode()


def killed_tx(agent) -> str:
    (journal,) = (agent.root / ".runner/apply").iterdir()  # <time>-<txid>.journal: one file holds the change
    return journal.name.removesuffix(".journal").split("-", 1)[1]


def test_a_rollback_killed_after_its_commit_point_is_completed_by_the_next_start(agent, server):
    _two_versions(agent, server)
    killed = agent.run("rollback", "tests", env=dict(agent.env(), RUNNER_TEST_CRASH_AT="journaled"))
    assert killed.code == -9
    tx = killed_tx(agent)
    assert (agent.root / "tests/test_calc.py").read_text() == SECOND_TEST  # not yet rolled forward
    remade = agent.make("report")
    assert remade.code == 0, remade.err
    assert [e["message"] for e in remade.events() if e["event"] == "recovered"] == [
        f"completed the interrupted apply {tx} (1 files)"
    ]
    assert (agent.root / "tests/test_calc.py").read_bytes() == PASSING_TEST.encode()
    assert remade.step("tests")["status"] == "cached"  # its state came with the same journal
    versions = json.loads(agent.run("history", "tests", "--json").out)["versions"]
    assert [v["kind"] for v in versions] == ["make", "improve", "rollback"]


def test_a_rollback_killed_before_its_commit_point_leaves_everything_as_it_was(agent, server):
    _two_versions(agent, server)
    killed = agent.run("rollback", "tests", env=dict(agent.env(), RUNNER_TEST_CRASH_AT="staged"))
    assert killed.code == -9
    remade = agent.make("report")
    assert remade.code == 0, remade.err
    assert remade.step("tests")["status"] == "cached"
    assert (agent.root / "tests/test_calc.py").read_text() == SECOND_TEST
    versions = json.loads(agent.run("history", "tests", "--json").out)["versions"]
    assert [v["kind"] for v in versions] == ["make", "improve"]


# ---- errors, word for word --------------------------------------------------------------------------------------


def test_improve_and_rollback_of_an_intent_that_never_ran_are_clear_errors(agent, server):
    srv = _project(agent, server)
    improve = agent.run("improve", "tests", "--feedback", FEEDBACK)
    assert improve.code == 2
    assert improve.err == (
        "error: agent intent 'tests' has never been applied, so there is no version to improve: "
        "run `runner make tests` first\n"
    )
    rollback = agent.run("rollback", "tests")
    assert (rollback.code, rollback.err) == (
        2,
        "error: agent intent 'tests' has no version yet: `runner make tests` applies its first change\n",
    )
    history = agent.run("history", "tests")
    assert (history.code, history.out) == (
        0,
        "tests has no version yet: `runner make tests` applies its first change\n",
    )
    assert srv.requests() == []


def test_version_errors_name_the_known_versions(agent, server):
    _two_versions(agent, server)
    cases = {
        ("rollback", "tests", "--to", "7"): "error: agent intent 'tests' has no version 7; its versions: 1, 2\n",
        ("rollback", "tests", "--to", "2"): "error: version 2 is the latest version of 'tests': nothing to roll back; "
        "its versions: 1, 2\n",
        ("show", "tests@9"): "error: agent intent 'tests' has no version 9; its versions: 1, 2\n",
        ("show", "tests@one"): "error: 'tests@one': a version is a number from 1 (INTENT@VERSION, as tests@1)\n",
        ("history", "test"): "error: no intent 'test' (did you mean 'tests'?); the agent intents: tests\n",
        ("history", "report"): "error: 'report' is not an agent step: only an agent intent's changes have versions\n",
        ("improve", "tests", "--feedback", " "): "error: --feedback is empty: say what the next version should do "
        "differently\n",
    }
    for args, expected in cases.items():
        result = agent.run(*args)
        assert (result.code, result.err) == (2, expected), args


def test_rollback_refuses_to_lose_an_edit_made_since_the_latest_version(agent, server):
    _two_versions(agent, server)
    (agent.root / "tests/test_calc.py").write_text(SECOND_TEST + "# mine\n")
    refused = agent.run("rollback", "tests")
    assert refused.code == 2
    assert refused.err == (
        "error: tests/test_calc.py changed since version 2 of 'tests' was applied; a rollback would lose that "
        "change: keep it elsewhere, or pass --force\n"
    )
    assert (agent.root / "tests/test_calc.py").read_text() == SECOND_TEST + "# mine\n"
    assert agent.run("rollback", "tests", "--force").code == 0
    assert (agent.root / "tests/test_calc.py").read_bytes() == PASSING_TEST.encode()


def test_only_one_version_means_nothing_to_roll_back_to(agent, server):
    _project(agent, server)
    assert agent.make("tests").code == 0
    result = agent.run("rollback", "tests")
    assert (result.code, result.err) == (
        2,
        "error: agent intent 'tests' has only version 1: there is no earlier version "
        "(`runner rollback tests --to 0` puts the files back as they were before it)\n",
    )


@pytest.fixture
def git_env(agent):
    env = dict(
        agent.env(),
        GIT_AUTHOR_NAME="Tester",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="Tester",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    return env


def _git(agent, env, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=agent.root, env=env, capture_output=True, text=True, check=True).stdout


CHECKPOINT = '[policy.default]\ncheckpoint = "commit"'


def _git_project(agent, server, git_env):
    agent.root.mkdir(parents=True, exist_ok=True)
    _git(agent, git_env, "init", "-q")
    (agent.root / ".gitignore").write_text(".runner/\n")
    srv = _project(agent, server, policy=CHECKPOINT)
    _git(agent, git_env, "add", "-A")
    _git(agent, git_env, "commit", "-qm", "start")
    return srv


def test_checkpoints_commit_only_the_applied_files_and_rollback_reverts_them(agent, server, git_env):
    _git_project(agent, server, git_env)
    (agent.root / "notes.txt").write_text("mine, staged\n")
    _git(agent, git_env, "add", "notes.txt")
    (agent.root / "src/calc.py").write_text((agent.root / "src/calc.py").read_text() + "# unstaged edit\n")
    assert agent.make("tests", env=git_env).code == 0
    assert agent.run("improve", "tests", "--feedback", FEEDBACK, env=git_env).code == 0

    log = _git(agent, git_env, "log", "--format=%s", "-3").splitlines()
    one, two = json.loads(agent.run("history", "tests", "--json").out)["versions"]
    assert log == [
        f"runner: tests version 2 (run {two['run']})",
        f"runner: tests version 1 (run {one['run']})",
        "start",
    ]
    assert _git(agent, git_env, "show", "--name-only", "--format=", "HEAD").split() == ["tests/test_calc.py"]
    assert two["checkpoint"] == [_git(agent, git_env, "rev-parse", "HEAD").strip()]
    # the user's staged and unstaged changes are theirs still, and in no checkpoint
    assert _git(agent, git_env, "status", "--porcelain").splitlines() == ["A  notes.txt", " M src/calc.py"]

    rolled = agent.run("rollback", "tests", "--json", env=git_env)
    assert rolled.code == 2  # git revert will not run over the staged notes.txt
    assert rolled.err == (
        "error: cannot roll 'tests' back to version 1: git revert refused: error: your local changes would be "
        "overwritten by revert.; the tree is as it was: resolve that, then run the rollback again\n"
    )
    assert (agent.root / "tests/test_calc.py").read_text() == SECOND_TEST
    assert _git(agent, git_env, "status", "--porcelain").splitlines() == ["A  notes.txt", " M src/calc.py"]

    _git(agent, git_env, "commit", "-qm", "notes")
    rolled = agent.run("rollback", "tests", "--json", env=git_env)
    assert rolled.code == 0, rolled.err
    done = json.loads(rolled.out)
    assert (agent.root / "tests/test_calc.py").read_bytes() == PASSING_TEST.encode()
    subject = _git(agent, git_env, "log", "--format=%s", "-1").strip()
    assert subject == f'Revert "runner: tests version 2 (run {two["run"]})"'
    assert done["checkpoint"] == [_git(agent, git_env, "rev-parse", "HEAD").strip()]
    assert _git(agent, git_env, "status", "--porcelain").splitlines() == [" M src/calc.py"]
    steps = {s["intent"]: s["action"] for s in json.loads(agent.run("status", "report", "--json").out)["steps"]}
    assert steps == {"tests": "skip", "report": "run"}


def test_a_checkpoint_revert_that_conflicts_leaves_the_tree_as_it_was(agent, server, git_env):
    _git_project(agent, server, git_env)
    assert agent.make("tests", env=git_env).code == 0
    assert agent.run("improve", "tests", "--feedback", FEEDBACK, env=git_env).code == 0
    (agent.root / "tests/test_calc.py").write_text(SECOND_TEST + "# reviewed\n")
    _git(agent, git_env, "commit", "-qam", "a later edit of the same lines")
    head = _git(agent, git_env, "rev-parse", "HEAD")
    rolled = agent.run("rollback", "tests", "--to", "1", "--force", env=git_env)
    assert rolled.code == 2
    assert "CONFLICT (content): Merge conflict in tests/test_calc.py" in rolled.err
    assert rolled.err.endswith("; the tree is as it was: resolve that, then run the rollback again\n")
    assert _git(agent, git_env, "rev-parse", "HEAD") == head
    assert _git(agent, git_env, "status", "--porcelain") == ""
    assert (agent.root / "tests/test_calc.py").read_text() == SECOND_TEST + "# reviewed\n"
    assert [v["kind"] for v in json.loads(agent.run("history", "tests", "--json").out)["versions"]] == [
        "make",
        "improve",
    ]


def test_a_checkpoint_outside_a_git_repository_is_a_validate_error(agent, server):
    _project(agent, server, policy=CHECKPOINT)
    result = agent.run("validate")
    assert result.code == 2
    assert result.err == (
        "error: 1 problem in the spec\n"
        f'  intents.toml:11: policy.default.checkpoint: checkpoint = "commit" needs a git repository, and '
        f"{agent.root.resolve()} is not in one: run `git init` there, or drop checkpoint\n"
    )


def test_a_change_approved_later_is_a_version_of_the_run_that_made_it(agent, server):
    _project(agent, server, policy='[policy.default]\nwrite_files = "ask"')
    blocked = agent.make("tests")
    assert blocked.code == 3
    assert json.loads(agent.run("history", "tests", "--json").out)["versions"] == []
    assert agent.run("approve", "tests").code == 0
    (one,) = json.loads(agent.run("history", "tests", "--json").out)["versions"]
    assert (one["version"], one["run"], one["applied_by"], one["tokens"]) == (
        1,
        blocked.events()[-1]["run_id"],
        "runner approve",
        37,
    )
    assert "response.completed" in json.loads(agent.run("show", "tests", "--json").out)["transcript"]


def test_a_checkpoint_git_refuses_leaves_the_change_applied_and_says_why(agent, server, git_env):
    _git_project(agent, server, git_env)
    env = {k: v for k, v in git_env.items() if not k.startswith(("GIT_AUTHOR", "GIT_COMMITTER", "EMAIL"))}
    env |= {
        "HOME": str(agent.home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "user.useConfigOnly",
        "GIT_CONFIG_VALUE_0": "true",
    }
    result = agent.make("tests", env=env)
    assert result.code == 0, result.err
    assert (agent.root / "tests/test_calc.py").read_text() == PASSING_TEST
    assert result.err.startswith("runner: tests version 1 is applied but not committed: git commit-tree failed: "), (
        result.err
    )
    (one,) = json.loads(agent.run("history", "tests", "--json").out)["versions"]
    assert one["checkpoint"] == [] and one["checkpoint_error"].startswith("git commit-tree failed: ")
    assert _git(agent, git_env, "log", "--format=%s").splitlines() == ["start"]


def test_a_make_killed_after_the_apply_s_commit_point_has_its_version_recorded_at_the_next_start(agent, server):
    srv = _project(agent, server)
    killed = agent.make("tests", env=dict(agent.env(), RUNNER_TEST_CRASH_AT="journaled"))
    assert killed.code == -9
    assert json.loads(agent.run("history", "tests", "--json").out)["versions"] == []  # not applied yet
    again = agent.make("tests")
    assert again.code == 0 and again.step("tests")["status"] == "cached"
    (one,) = json.loads(agent.run("history", "tests", "--json").out)["versions"]
    assert (one["version"], one["run"], one["tokens"]) == (1, killed.events()[0]["run_id"], 37)
    assert (agent.root / "tests/test_calc.py").read_text() == PASSING_TEST
    assert len(srv.requests()) == 1
