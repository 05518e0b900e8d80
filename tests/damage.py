"""Damage as a disk or a person does it, for the probes of runner's own state (tests/core/test_damaged_state_probe.py,
tests/agent/test_damaged_agent_state.py): a file replaced by a folder or by garbage, emptied; a folder replaced by a
file of garbage, emptied."""

from __future__ import annotations

import shutil
from pathlib import Path

GARBAGE = bytes((i * 151 + 7) % 256 for i in range(512))  # not UTF-8, not JSON, no format's header


def damage(path: Path, form: str) -> None:
    """`form`: folder (a file replaced by one), file (a folder replaced by one), garbage, or empty."""
    if form == "folder":
        path.unlink()
        path.mkdir()
        (path / "inside").write_bytes(GARBAGE)
    elif form == "file":
        shutil.rmtree(path)
        path.write_bytes(GARBAGE)
    elif form == "garbage":
        path.write_bytes(GARBAGE)
    elif path.is_dir():  # emptied
        shutil.rmtree(path)
        path.mkdir()
    else:
        path.write_bytes(b"")
