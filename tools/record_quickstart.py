#!/usr/bin/env python3
"""Re-record examples/quickstart/replays: the real Codex CLI against the fake Responses server, scripted.

Run from the repository root with the test extra installed: `.venv/bin/python tools/record_quickstart.py`.
The quickstart is copied to a temp folder, its [worker] pointed at codex and the fake server, `runner make
--record` writes the exchanges, and they are copied back. The scripted first attempt of `tests` expects the wrong
mean, so the recording shows a retry with the failing test named in the second prompt.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "quickstart"
SERVER = ROOT / "tests" / "fakes" / "fake_responses_server.py"

TEST_V1 = """import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from calc import add, mean  # noqa: E402


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_mean(self):
        self.assertEqual(mean([1, 2]), 2)

    def test_mean_of_empty_list_raises(self):
        with self.assertRaises(ValueError):
            mean([])


if __name__ == "__main__":
    unittest.main()
"""

DOCS = """# calc

A tiny calculator package.

## add(a, b)

Adds two numbers.

    >>> import sys; sys.path.insert(0, "src")
    >>> from calc import add, mean
    >>> add(2, 3)
    5

## mean(values)

The arithmetic mean of a non-empty list.

    >>> mean([1, 2, 3])
    2.0

An empty list is an error, not zero:

    >>> mean([])
    Traceback (most recent call last):
    ...
    ValueError: mean of an empty list
"""


def add_file(path: str, text: str) -> str:
    body = "".join("+" + line + "\n" for line in text.splitlines())
    return f"*** Begin Patch\n*** Add File: {path}\n{body}*** End Patch\n"


SCRIPT = [
    {
        "match": "What the last attempt got wrong",
        "steps": [
            {
                "patch": "*** Begin Patch\n*** Update File: tests/test_calc.py\n@@\n"
                "-        self.assertEqual(mean([1, 2]), 2)\n"
                "+        self.assertEqual(mean([1, 2]), 1.5)\n*** End Patch\n"
            },
            {"message": "The mean of [1, 2] is 1.5; fixed the expectation."},
        ],
    },
    {
        "match": "Document the calc package",
        "steps": [
            {"patch": add_file("docs/calc.md", DOCS)},
            {"message": "Documented add and mean in docs/calc.md with doctest examples."},
        ],
    },
    {
        "steps": [
            {"patch": add_file("tests/test_calc.py", TEST_V1)},
            {"message": "Wrote tests/test_calc.py: add, mean, and the empty-list error."},
        ]
    },
]


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="record-quickstart-"))
    project = work / "quickstart"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".runner", "build", "tests", "docs", "replays"))
    (work / "script.json").write_text(json.dumps(SCRIPT))
    server = subprocess.Popen(
        [sys.executable, str(SERVER), "--port", "0", "--script", str(work / "script.json")],
        stdout=subprocess.PIPE,
        text=True,
    )
    port = int(server.stdout.readline().split()[1])
    try:
        spec = (project / "intents.toml").read_text()
        live = (
            f'kind = "codex"\nbase_url = "http://127.0.0.1:{port}/v1"\nenv_key = "RECORDING_KEY"\n'
            f'extra = {{ codex_home = "{work}/codex-home", request_max_retries = 1 }}'
        )
        (project / "intents.toml").write_text(re.sub(r'^kind = "replay"$', live, spec, count=1, flags=re.M))
        env = dict(os.environ, RECORDING_KEY="sk-recording-dummy")
        result = subprocess.run([sys.executable, "-m", "runner", "make", "--record", "-j", "1"], cwd=project, env=env)
        if result.returncode != 0:
            return result.returncode
        shutil.rmtree(EXAMPLE / "replays", ignore_errors=True)
        shutil.copytree(project / "replays", EXAMPLE / "replays")
        print(f"recorded into {EXAMPLE / 'replays'}")
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
