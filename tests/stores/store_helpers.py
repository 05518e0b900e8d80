"""Helpers of the shared-cache tests: a project and its clones driven through the real CLI, the remote's objects
as files, and where Azurite is (a unique module name: conftests collide)."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path

import runner_cli


@dataclass
class Run:
    code: int
    out: str
    err: str

    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.out.splitlines() if line.startswith("{")]

    def finished(self) -> dict:
        return self.events()[-1]

    def remote(self) -> dict:
        return self.finished()["remote"]

    def statuses(self) -> dict[str, str]:
        return {e["intent"]: e["status"] for e in self.events() if e["event"] == "step_finished"}


def wide(steps: int = 50, width: int = 5) -> str:
    """`steps` shell steps in layers `width` wide (each reads its own input and its dependency's output in the
    layer before), and `all` over them."""
    parts = ['[project]\nname = "wide"\ndefault = "all"\n']
    for i in range(steps):
        dep = f"s{i - width}" if i >= width else None
        reads = f"src/{i}.txt" + (f" out/{dep}.txt" if dep else "")
        parts.append(
            textwrap.dedent(f"""\
            [intent.s{i}]
            run = "cat {reads} > out/s{i}.txt && echo {i} >> out/s{i}.txt"
            inputs = [{", ".join(json.dumps(p) for p in reads.split())}]
            outputs = ["out/s{i}.txt"]
            {f'deps = ["{dep}"]' if dep else ""}
            """)
        )
    parts.append(f"[intent.all]\ndeps = [{', '.join(json.dumps(f's{i}') for i in range(steps))}]\n")
    return "\n".join(parts)


class Clone:
    """One checkout of a project: the files a team keeps in git, and its own .runner/."""

    def __init__(self, root: Path, env: dict | None = None):
        self.root = root
        self.env = dict(os.environ, **(env or {}))

    def write(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def clone(self, root: Path) -> Clone:
        """A fresh checkout: everything but .runner/ and the declared outputs under out/."""
        shutil.copytree(self.root, root, ignore=shutil.ignore_patterns(".runner", "out"))
        (root / "out").mkdir(exist_ok=True)
        return Clone(root, self.env)

    def run(self, *args: str, env: dict | None = None, timeout: float = 120) -> Run:
        proc = runner_cli.run(args, self.root, dict(self.env, **(env or {})), timeout)
        return Run(proc.returncode, proc.stdout, proc.stderr)

    def make(self, *args: str, **kw) -> Run:
        return self.run("make", "--json", *args, **kw)

    def outputs(self) -> dict[str, bytes]:
        return {str(p.relative_to(self.root)): p.read_bytes() for p in sorted((self.root / "out").rglob("*"))}


def objects(folder: Path) -> dict[str, Path]:
    """The remote's objects under a file:// folder, by their path under the prefix (v1/blobs/.., v1/records/..)."""
    return {str(p.relative_to(folder)): p for p in sorted(folder.rglob("*")) if p.is_file()}


def blobs(folder: Path) -> list[Path]:
    return [p for rel, p in objects(folder).items() if "/blobs/" in rel]


def records(folder: Path) -> list[Path]:
    return [p for rel, p in objects(folder).items() if "/records/" in rel]


# Azurite's well-known development account: public in its documentation, the same on every machine
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
AZURITE_VERSION = "3.37.0"  # as .ci/run installs it
AZURITE = Path(__file__).resolve().parents[2] / ".ci" / "node" / "node_modules" / ".bin" / "azurite-blob"


def azurite_connection(port: int) -> str:
    """A connection string for Azurite's account at 127.0.0.1:PORT, as a user points az:// at any endpoint."""
    return (
        f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
        f"BlobEndpoint=http://127.0.0.1:{port}/{AZURITE_ACCOUNT};"
    )
