"""The learning tests' project: a tool (tally) whose output no built-in family knows, driven through the CLI."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import runner_cli

TALLY = '''\
"""tally: an in-house test tool whose output no built-in family knows."""
import pathlib, sys
checks = [c.split("=", 1) for c in pathlib.Path("src/checks.txt").read_text().split() if "=" in c]
print(f"tally 2.1 -- collecting {len(checks)} checks")
failed = 0
for name, result in checks:
    if result == "ok":
        print(f"CHECK {name} {'.' * (20 - len(name))} ok (3ms)")
    else:
        failed += 1
        print(f"CHECK {name} {'.' * (20 - len(name))} FAILED (5ms)")
        print(f"  at src/{name.split('_')[0]}.py:{len(name)}: {result}")
print(f"TALLY: {len(checks) - failed} ok, {failed} failed, 0 skipped")
sys.exit(1 if failed else 0)
'''

FAMILY = """\
# Patterns for tally's output. This comment, and the order below, are ours: runner learn keeps them.
family = "tally"
description = "tally, our in-house test tool"
"""

INTENTS = """\
[project]
name = "tally-demo"
default = "test"

# the gate, fast: two runs in shadow, then canary at 50% (one run that uses it), then at 99%, then promoted
[learn]
shadow_runs = 2
canary_steps = [50, 99]
canary_runs = 1
max_failed_checks = 2

[intent.test]
run = "test"
adapter = "tally"
inputs = ["src/checks.txt"]
"""


class Tally:
    def __init__(self, root: Path):
        self.root = root
        self.edits = 0
        (root / "adapters").mkdir(parents=True)
        (root / "regexes").mkdir()
        (root / "src").mkdir()
        (root / "tally.py").write_text(TALLY)
        (root / "adapters" / "tally.toml").write_text(
            textwrap.dedent(
                """\
                name = "tally"
                description = "our in-house test tool"
                [detect]
                files = ["tally.py"]
                [commands.test]
                run = "python3 tally.py"
                parse = ["tally"]
                """
            )
        )
        (root / "regexes" / "tally.toml").write_text(FAMILY)
        (root / "intents.toml").write_text(INTENTS)

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return runner_cli.run(args, self.root, timeout=120)

    def checks(self, *results: str) -> None:
        """A new src/checks.txt (so the test step runs again): one check per result, plus a fresh passing one."""
        self.edits += 1
        checks = [f"check{i}_{self.edits}={r}" for i, r in enumerate(results)]
        (self.root / "src" / "checks.txt").write_text(" ".join(checks) + "\n")

    def make(self, *results: str) -> subprocess.CompletedProcess:
        self.checks(*results)
        return self.run("make")

    def learn(self) -> dict:
        done = self.run("learn", "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def status(self) -> dict[str, dict]:
        done = self.run("learn", "status", "--json")
        assert done.returncode == 0, done.stderr
        return {c["pattern"]: c for c in json.loads(done.stdout)["candidates"]}

    def family(self) -> str:
        return (self.root / "regexes" / "tally.toml").read_text()

    def findings(self, log: str) -> dict:
        path = self.root / "log.txt"
        path.write_text(log)
        done = self.run("parse", "--adapter", "tally", "--command", "test", "--json", str(path))
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)
