"""A monorepo through the CLI (issue 41): a Python library, a Node service built from its output, a Go tool and an
agent intent in the library's sub-project, one DAG under the root's intents.toml, driven from the root and from
inside each sub-project; `--affected` against the fixture's real git history."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import runner_cli
from ci import need_tools

pytestmark = pytest.mark.toolchain  # node and go build the service and the tool (CONTRIBUTING: the lanes)
PY = sys.executable
ROOT_SPEC = """
[project]
name = "mono"
include = ["libs/*", "services/*", "tools/*"]
default = "all"

[intent.all]
description = "everything the repository ships"
deps = ["libs/pycore:test", "services/web:test", "tools/gen:test"]
"""
PYCORE_SPEC = f"""
[project]
default = "test"

[intent.build]
description = "the library's version, for its users"
run = "mkdir -p dist && {PY} version.py > dist/version.json"
inputs = ["pycore/*.py", "version.py"]
outputs = ["dist/version.json"]

[intent.test]
run = "{PY} -m unittest -q"
inputs = ["pycore/*.py", "test_*.py"]

[intent.tests]
goal = "Write unit tests for pycore"
acceptance = ["greet('x') is 'hello x'"]
inputs = ["pycore/__init__.py"]
outputs = ["test_extra.py"]
prompt = "unit"
adapter = "local"
verify = ["test"]
"""
WEB_SPEC = """
[intent.bundle]
run = "mkdir -p dist && node build.js"
deps = ["libs/pycore:build"]
inputs = ["build.js", "../../libs/pycore/dist/version.json"]
outputs = ["dist/bundle.js"]

[intent.test]
run = "node test.js"
deps = ["bundle"]
inputs = ["test.js", "dist/bundle.js"]
"""
GEN_SPEC = """
[intent.build]
run = "go build -o bin/gen ."
inputs = ["go.mod", "*.go"]
outputs = ["bin/gen"]

[intent.test]
run = "./bin/gen > gen.txt && grep -q generated gen.txt"
deps = ["build"]
inputs = ["bin/gen"]
outputs = ["gen.txt"]
"""
FILES = {
    "intents.toml": ROOT_SPEC,
    "libs/pycore/intents.toml": PYCORE_SPEC,
    "libs/pycore/pycore/__init__.py": 'VERSION = "1.0"\n\n\ndef greet(name):\n    return f"hello {name}"\n',
    "libs/pycore/test_greet.py": (
        "import unittest\n\nimport pycore\n\n\nclass T(unittest.TestCase):\n"
        "    def test_greet(self):\n        self.assertEqual(pycore.greet('a'), 'hello a')\n"
    ),
    # its own adapter and prompt: a sub-project's folder is looked in first
    "libs/pycore/adapters/local.toml": f'name = "local"\n[commands.test]\nrun = "{PY} -m unittest -q"\n',
    "libs/pycore/prompts/unit.md": "Write tests.\n\n{{goal}}\n{{acceptance}}\n{{outputs}}\n{{inputs}}\n{{feedback}}\n",
    "libs/pycore/version.py": "import json\n\nimport pycore\n\nprint(json.dumps({'version': pycore.VERSION}))\n",
    "services/web/intents.toml": WEB_SPEC,
    "services/web/build.js": textwrap.dedent("""\
        const fs = require("fs");
        const { version } = JSON.parse(fs.readFileSync("../../libs/pycore/dist/version.json", "utf8"));
        fs.writeFileSync("dist/bundle.js", `module.exports = { version: ${JSON.stringify(version)} };\\n`);
        """),
    "services/web/test.js": 'const assert = require("assert");\nassert.ok(require("./dist/bundle.js").version);\n',
    "tools/gen/intents.toml": GEN_SPEC,
    "tools/gen/go.mod": "module gen\n\ngo 1.19\n",
    "tools/gen/main.go": 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("generated") }\n',
    ".gitignore": ".runner/\ndist/\nbin/\ngen.txt\n__pycache__/\n",
}


@dataclass
class Result:
    code: int
    out: str
    err: str

    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.out.splitlines() if line.startswith("{")]

    def statuses(self) -> dict[str, str]:
        return {e["intent"]: e["status"] for e in self.events() if e["event"] == "step_finished"}


class Mono:
    def __init__(self, root: Path):
        self.root = root

    def write(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def run(self, *args: str, where: str = "", env: dict | None = None) -> Result:
        """`runner ARGS` typed in the folder `where` (relative to the root)."""
        proc = runner_cli.run(args, self.root / where, dict(os.environ, **(env or {})), 300)
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def ran(self, *args: str, where: str = "") -> dict[str, str]:
        made = self.run("make", "--json", *args, where=where)
        assert made.code == 0, made.err
        return made.statuses()


@pytest.fixture
def mono(tmp_path) -> Mono:
    need_tools("node", "go", how="the monorepo fixture builds a Node service and a Go tool")
    repo = Mono(tmp_path / "mono")
    for rel, text in FILES.items():
        repo.write(rel, text)
    return repo


def _git(root: Path, *args: str) -> str:
    who = ["-c", "user.name=t", "-c", "user.email=t@t"]
    return subprocess.run(["git", *who, *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


def test_one_dag_driven_from_the_root_and_from_inside_each_sub_project(mono, snapshot):
    listed = mono.run("list")
    assert listed.out.splitlines() == [
        "Targets of mono (intents.toml); `runner make TARGET` builds one:",
        "  all                  everything the repository ships (default)",
        "  libs/pycore:build    the library's version, for its users",
        "  libs/pycore:test     (default of libs/pycore/)",  # its sub-project's default, not the root's
        "  libs/pycore:tests",
        "  services/web:bundle",
        "  services/web:test",
        "  tools/gen:build",
        "  tools/gen:test",
    ]
    assert mono.run("graph", "--format", "dot").out == snapshot
    # from the root: [project] default, every sub-project's steps it needs, one .runner/ at the root
    assert mono.ran() == dict.fromkeys(
        [
            "libs/pycore:build",
            "libs/pycore:test",
            "services/web:bundle",
            "services/web:test",
            "tools/gen:build",
            "tools/gen:test",
        ],
        "ran",
    )
    assert (mono.root / "services/web/dist/bundle.js").read_text() == 'module.exports = { version: "1.0" };\n'
    assert sorted(p.name for p in mono.root.rglob(".runner")) == [".runner"]
    # from inside each: its [project] default, or all of its own intents; its bare names are its own
    assert mono.ran(where="libs/pycore") == {"libs/pycore:test": "cached"}
    assert mono.ran("build", where="libs/pycore") == {"libs/pycore:build": "cached"}
    assert mono.ran(where="tools/gen") == {"tools/gen:build": "cached", "tools/gen:test": "cached"}
    assert mono.ran("test", ":all", where="services/web/dist")["tools/gen:test"] == "cached"  # a folder below
    status = mono.run("status", where="services/web")
    assert status.out.splitlines() == [
        "skip  libs/pycore:build    up to date",
        "skip  services/web:bundle  up to date",
        "skip  services/web:test    up to date",
        "0 to run, 3 up to date (targets services/web:bundle, services/web:test)",
    ]
    # the library changed: the service's own `runner make` rebuilds what it reads of it, by its key
    mono.write("libs/pycore/pycore/__init__.py", FILES["libs/pycore/pycore/__init__.py"].replace("1.0", "2.0"))
    assert mono.ran(where="services/web") == {
        "libs/pycore:build": "ran",
        "services/web:bundle": "ran",
        "services/web:test": "ran",
    }
    assert (mono.root / "services/web/dist/bundle.js").read_text() == 'module.exports = { version: "2.0" };\n'
    assert mono.ran(where="libs/pycore") == {"libs/pycore:test": "ran"}  # its input changed too
    # the warm no-op, from the root and from inside, each its own target
    assert mono.run("make").out.startswith("runner: nothing to do: 6 cached")
    assert mono.run("make", where="services/web").out.startswith("runner: nothing to do: 3 cached")
    assert mono.run("make", "test", where="libs/pycore").out.startswith("runner: nothing to do: 1 cached")
    explained = json.loads(mono.run("explain", "bundle", "--json", where="services/web").out)
    assert (explained["intent"], explained["action"]) == ("services/web:bundle", "skip")


def test_affected_against_the_fixture_git_history(mono):
    _git(mono.root, "init", "-q", "-b", "main")
    _git(mono.root, "add", "-A")
    _git(mono.root, "commit", "-q", "-m", "base")
    base = _git(mono.root, "rev-parse", "HEAD")
    assert mono.run("make").code == 0
    mono.write("libs/pycore/pycore/__init__.py", FILES["libs/pycore/pycore/__init__.py"] + "# edited\n")
    said = mono.run("status", "--affected", "main")
    assert said.out.splitlines() == [
        "in    libs/pycore:build  input changed: libs/pycore/pycore/__init__.py",
        "in    libs/pycore:test  input changed: libs/pycore/pycore/__init__.py",
        "in    services/web:bundle  depends on libs/pycore:build, affected",
        "in    services/web:test  depends on services/web:bundle, affected",
        "out   tools/gen:build  nothing it reads changed since main",
        "out   tools/gen:test  nothing it reads changed since main",
        "in    all  depends on libs/pycore:test, services/web:test, affected",
        f"5 affected, 2 not, since main ({base[:12]})",
    ]
    # a sub-project's table, and from inside the sub-project: its own intents only
    mono.write("tools/gen/intents.toml", GEN_SPEC.replace("grep -q generated", "grep -q -F generated"))
    inside = mono.run("make", "--affected", "main", "--json", where="tools/gen")
    assert inside.code == 0, inside.err
    affected = inside.events()[0]
    assert [(i["intent"], i["reasons"]) for i in affected["intents"] if i["affected"]] == [
        ("tools/gen:test", ["tools/gen/intents.toml: [intent.test] changed"])
    ]
    assert inside.statuses() == {"tools/gen:build": "cached", "tools/gen:test": "ran"}


@pytest.mark.parametrize("whose", ["root", "own"])
def test_an_agent_intent_in_a_sub_project(mono, tmp_path, whose):
    """Served by the root's [worker], or by one its sub-project declares (the root's then a codex worker with no
    key, which would fail the step)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agent"))
    from agent_helpers import FAKE_SERVER

    written = "import unittest\n\nimport pycore\n\n\nclass X(unittest.TestCase):\n    def test_x(self):\n"
    written += "        self.assertEqual(pycore.greet('x'), 'hello x')\n"
    message = f"<<MIS:START>>\n<<MIS:FILE path=libs/pycore/test_extra.py>>\n{written}<<MIS:JSON>>\n"
    message += json.dumps({"summary": "tests"}) + "\n<<MIS:END>>\n"
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"steps": [{"message": message, "usage": {"input_tokens": 9}}]}]))
    log = tmp_path / "requests.jsonl"
    server = subprocess.Popen(
        [PY, str(FAKE_SERVER), "--port", "0", "--script", str(script), "--log", str(log)],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        port = int(server.stdout.readline().split()[1])  # type: ignore[union-attr]
        worker = f'[worker]\nkind = "openai"\nbase_url = "http://127.0.0.1:{port}/v1"\nenv_key = "FAKE_KEY"\n'
        if whose == "root":
            mono.write("intents.toml", ROOT_SPEC + worker)
        else:
            mono.write("libs/pycore/intents.toml", PYCORE_SPEC + worker)
            status = mono.run("status", "tests", where="libs/pycore", env={"FAKE_KEY": "sk-test"})
            assert "agent set-up (openai worker): ok" in status.out.splitlines(), status.out + status.err
            assert "libs/pycore/'s openai worker: FAKE_KEY is set" in status.out
        made = mono.run("make", "--json", "tests", where="libs/pycore", env={"FAKE_KEY": "sk-test"})
        assert made.code == 0, made.err
        assert made.statuses() == {"libs/pycore:tests": "ran"}
        assert (mono.root / "libs/pycore/test_extra.py").read_text() == written
        (request,) = [json.loads(line) for line in log.read_text().splitlines()]
        assert "libs/pycore/test_extra.py" in json.dumps(request)  # the sub-project's own prompt, its paths
        # its versions under .runner/, one file name for PATH:NAME; the same intent by either name
        assert (mono.root / ".runner/versions/libs%2Fpycore%3Atests/1/version.json").is_file()
        inside = json.loads(mono.run("history", "tests", "--json", where="libs/pycore").out)
        outside = json.loads(mono.run("history", "libs/pycore:tests", "--json").out)
        assert inside == outside and inside["intent"] == "libs/pycore:tests"
        assert [v["version"] for v in inside["versions"]] == [1]
        shown = json.loads(mono.run("show", "tests@1", "--json", where="libs/pycore").out)
        assert (shown["intent"], shown["version"]) == ("libs/pycore:tests", 1)
    finally:
        server.terminate()
        server.wait(10)
    shutil.rmtree(mono.root / ".runner")
