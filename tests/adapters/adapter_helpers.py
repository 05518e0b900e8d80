"""Helpers of the adapter tests: fixture copies, toolchain checks, running an adapter command for real."""

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FIXTURES = Path(__file__).parent / "fixtures"
PARSE_FIXTURES = ROOT / "tests" / "parse" / "fixtures"
VENV_BIN = ROOT / ".venv" / "bin"
_BUILD_LEFTOVERS = shutil.ignore_patterns(
    "node_modules",
    "target",
    "build",
    ".gradle",
    "package-lock.json",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
)


def builtin_adapters():
    from runner.adapters import load_adapters
    from runner.load import BUILTIN_DIR, _Reader

    reader = _Reader(ROOT)
    adapters = load_adapters([BUILTIN_DIR / "adapters"], reader.read_toml, reader.validate, reader.problem)
    assert not reader.problems, [p.render() for p in reader.problems]
    return adapters


def copy_fixture(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, ignore=_BUILD_LEFTOVERS, symlinks=True)
    return dest


@dataclass
class Ran:
    command: str
    code: int
    output: str
    findings: object

    def __repr__(self) -> str:  # what a failing assert shows: the command and the tail of its output
        findings = self.findings.to_json()
        return f"Ran({self.command!r}, exit {self.code}, findings={findings}, output=...{self.output[-3000:]})"


def run_adapter_command(
    project: Path, adapter, name: str, library, env: dict | None = None, timeout: float = 900
) -> Ran:
    """Run one of the adapter's commands (variants detected in the project) for real and parse its output."""
    from runner.adapters import resolve
    from runner.findings import parse_findings

    cmd = resolve(adapter, project).command(name)
    full_env = dict(os.environ)
    full_env["PATH"] = f"{VENV_BIN}{os.pathsep}{full_env.get('PATH', '')}"  # as in an activated venv
    full_env.pop("PYTEST_ADDOPTS", None)
    full_env.update(env or {})
    proc = subprocess.run(
        ["/bin/sh", "-c", cmd.run],
        cwd=project,
        env=full_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=timeout,
    )
    text = proc.stdout.decode("utf-8", errors="replace")
    return Ran(cmd.run, proc.returncode, text, parse_findings(text, [library.family(f) for f in cmd.parse]))
