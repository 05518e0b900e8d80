"""Helpers of the agent tests: the project an agent step edits, the fakes' paths, a CLI run's events.

A module of its own (not conftest.py) so that tests import it by a unique name: `from conftest import ...`
picks whichever conftest pytest imported last, which breaks as soon as another folder is collected too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import runner_cli

FAKES = Path(__file__).resolve().parents[1] / "fakes"
FAKE_CODEX = FAKES / "fake_codex.py"
FAKE_SERVER = FAKES / "fake_responses_server.py"

CALC = """\
def mean(values):
    if not values:
        raise ValueError("empty")
    return sum(values) / len(values)
"""

FAILING_TEST = """\
import sys, pathlib
sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "src"))
from calc import mean

def test_mean():
    assert mean([1, 2]) == 2
"""

PASSING_TEST = FAILING_TEST.replace("mean([1, 2]) == 2", "mean([1, 3]) == 2")


@dataclass
class Run:
    code: int
    out: str
    err: str

    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.out.splitlines() if line.startswith("{")]

    def step(self, name: str) -> dict:
        return [e for e in self.events() if e.get("event") == "step_finished" and e["intent"] == name][-1]


class AgentProject:
    def __init__(self, root: Path, home: Path):
        self.root = root
        self.home = home  # scenario, call records, codex home: outside the project
        self.key = "sk-test-" + uuid.uuid4().hex
        root.mkdir(parents=True)
        (root / "src").mkdir()
        (root / "src/calc.py").write_text(CALC)
        (root / "adapters").mkdir()
        (root / "adapters/local.toml").write_text(
            textwrap.dedent(f"""\
            name = "local"
            [commands.test]
            run = "{sys.executable} -m pytest -q -p no:cacheprovider"
            parse = ["pytest"]
            """)
        )

    def spec(
        self, worker: str, policy: str = "", intent_extra: str = "", outputs: str = '["tests/test_calc.py"]'
    ) -> None:
        (self.root / "intents.toml").write_text(
            textwrap.dedent(f"""\
            [project]
            name = "agentic"
            {worker}
            {policy}
            [intent.tests]
            goal = "Write pytest tests for src/calc.py"
            acceptance = ["mean of [1, 3] is 2"]
            inputs = ["src/calc.py"]
            outputs = {outputs}
            prompt = "write-tests"
            adapter = "local"
            verify = ["test"]
            {intent_extra}
            """)
        )

    def fake_codex_worker(self, scenario: dict, extra: str = "") -> str:
        (self.home / "scenario.json").write_text(json.dumps(scenario))
        os.chmod(FAKE_CODEX, 0o755)
        return textwrap.dedent(f"""\
            [worker]
            kind = "codex"
            binary = "{FAKE_CODEX}"
            timeout = 60
            {extra}
            """)

    def env(self) -> dict:
        return dict(
            os.environ,
            FAKE_CODEX_SCENARIO=str(self.home / "scenario.json"),
            FAKE_CODEX_RECORD=str(self.home / "calls.jsonl"),
            OPENAI_API_KEY=self.key,
            CODEX_API_KEY=self.key,
            FAKE_KEY=self.key,
        )

    def calls(self) -> list[dict]:
        path = self.home / "calls.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def prompts(self) -> list[str]:
        return [c["argv"][-1] for c in self.calls() if "--version" not in c["argv"]]

    def run(self, *args: str, env: dict | None = None, timeout: float = 180) -> Run:
        proc = runner_cli.run(args, self.root, env or self.env(), timeout)
        return Run(proc.returncode, proc.stdout, proc.stderr)

    def make(self, *args: str, **kw) -> Run:
        return self.run("make", "--json", *args, **kw)

    def files(self) -> dict[str, bytes]:
        """Everything in the project but the runner's own state: to prove a step left it untouched."""
        out = {}
        for p in sorted(self.root.rglob("*")):
            rel = p.relative_to(self.root)
            if rel.parts[0] == ".runner":
                continue
            out[str(rel)] = p.read_bytes() if p.is_file() and not p.is_symlink() else b"<dir>"
        return out

    def leaks(self) -> list[str]:
        hits = []
        for base in (self.root, self.home):
            for p in base.rglob("*"):
                if p.is_file() and not p.is_symlink() and self.key.encode() in p.read_bytes():
                    hits.append(str(p))
        return hits


def verify_that_waits(agent: AgentProject) -> Path:
    """The `test` verify command of agent's adapter, made to wait at its start while `hold` is in the folder this
    returns (outside the project: the command runs in the attempt's copy), until `go` is there."""
    gate = agent.home
    wait = f"if [ -e {gate}/hold ]; then : > {gate}/started; while [ ! -e {gate}/go ]; do sleep 0.01; done; fi"
    (agent.root / "adapters/local.toml").write_text(
        f'name = "local"\n[commands.test]\nrun = "{wait}; rm -f {gate}/hold; {sys.executable} -m pytest -q '
        f'-p no:cacheprovider"\nparse = ["pytest"]\n'
    )
    return gate


def make_held_in_verify(agent: AgentProject, gate: Path) -> subprocess.Popen:
    """`runner make --json` started and seen to wait in its verify command (verify_that_waits): the agent's change
    is made, its verification under way. Write gate/go to let it go on."""
    (gate / "hold").write_text("")
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "make", "--json"],
        cwd=agent.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=agent.env(),
    )
    deadline = time.monotonic() + 120
    while not (gate / "started").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    return proc


@dataclass
class Server:
    proc: subprocess.Popen
    port: int
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def requests(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []


# ---- the quickstart, offline ------------------------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
MINE = "\n# a case the agent missed, added by hand\n"


class Quickstart:
    """A copy of examples/quickstart (what a run makes left out), driven through the CLI with no key: its agent
    steps are served by the replay worker. `root`: a project already there (a git clone of one) instead."""

    def __init__(self, tmp_path: Path, root: Path | None = None):
        self.root = tmp_path / "quickstart" if root is None else root
        if root is not None:
            return
        generated = {".runner", "build", "tests", "docs"}  # what a run makes at the top (not replays/tests)
        shutil.copytree(
            EXAMPLE, self.root, ignore=lambda d, names: generated & set(names) if Path(d) == EXAMPLE else set()
        )

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess:
        # no key anywhere: nothing can call a model
        environ = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(self.root), **env}
        command = [sys.executable, "-m", "runner", *args]
        return subprocess.run(command, cwd=self.root, capture_output=True, text=True, env=environ, timeout=300)

    def make(self, *args: str, **env: str) -> tuple[subprocess.CompletedProcess, dict[str, dict]]:
        result = self.run("make", "--json", *args, **env)
        events = [json.loads(line) for line in result.stdout.splitlines()]
        return result, {e["intent"]: e for e in events if e["event"] == "step_finished"} | {"": events[-1]}

    def history(self) -> list[dict]:
        return json.loads(self.run("history", "tests", "--json").stdout)["versions"]

    def plan(self, *args: str) -> dict[str, list[str]]:
        steps = json.loads(self.run("status", "--json", *args).stdout)["steps"]
        return {s["intent"]: s["reasons"] for s in steps if s["action"] == "run" or s["reasons"] != ["up to date"]}
