"""Mining the recordings in replays/: a recorded exchange's transcript read by its worker's family, and each
command the agent ran that is one of its step's adapter commands, read by that command's families."""

from __future__ import annotations

import json
import re
import shlex
from datetime import datetime
from pathlib import Path

from .mine import Miss, Reader, section_misses

_SHELL_WRAP = re.compile(r"^(?:\S*/)?(?:ba|z|da)?sh\s+-l?c\s+(.+)$", re.DOTALL)
WORKER_FAMILIES = {"codex": "codex"}  # the family that reads a worker's transcript


def _unwrap(command: str) -> str:
    """`/bin/bash -lc 'pytest -q'` as the line the shell ran: `pytest -q`."""
    m = _SHELL_WRAP.match(command.strip())
    if not m:
        return command.strip()
    try:
        parts = shlex.split(m.group(1))
    except ValueError:
        return m.group(1)
    return parts[0] if len(parts) == 1 else m.group(1)


def recording_misses(reader: Reader, path: Path, doc: dict) -> list[Miss]:
    """A recorded exchange: its transcript read by its worker's family, and each command the agent ran that is
    one of its step's adapter commands, read by that command's families."""
    from runner.findings import clean_log

    step = str(doc.get("intent") or path.parent.name)
    transcript = doc.get("transcript") or []
    if isinstance(transcript, str):
        transcript = transcript.splitlines()
    transcript = [str(line) for line in transcript]
    log = reader.rel(path)
    out: list[Miss] = []
    family = WORKER_FAMILIES.get(str(doc.get("recorded_worker") or doc.get("worker")))
    if family and family in reader.library_for(step).families and transcript:
        section = reader.section(
            transcript,
            1,
            (family,),
            run_id=None,
            step=step,
            adapter=None,
            command=None,
            run=f"{doc.get('worker')} worker",
            log=log,
            failed=not doc.get("ok"),
            part=f"attempt {doc.get('attempt')}",
        )
        out += section_misses(section, doc.get("error"))
    adapter, commands = reader.adapter_commands(step)
    for line in transcript:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        item = event.get("item") if isinstance(event, dict) else None
        if event.get("type") != "item.completed" or not isinstance(item, dict):
            continue
        if item.get("type") != "command_execution" or not isinstance(item.get("command"), str):
            continue
        ran = _unwrap(item["command"])
        cmd = max(
            (c for c in commands.values() if " ".join(c.run.split()) in " ".join(ran.split())),
            key=lambda c: len(c.run),
            default=None,
        )
        if cmd is None:
            continue  # a command of the agent's own (cat, ls, sed): no family is meant to read it
        output = clean_log(str(item.get("aggregated_output") or ""))
        lines = output[:-1].split("\n") if output.endswith("\n") else output.split("\n") if output else []
        section = reader.section(
            lines,
            1,
            reader.families(cmd.parse, step),
            run_id=None,
            step=step,
            adapter=adapter,
            command=cmd.name,
            run=ran,
            log=log,
            failed=item.get("exit_code") not in (0, None),
            part=str(item.get("id")),
        )
        out += section_misses(section)
    return out


def recordings_since(reader: Reader, since: float | None) -> list[tuple[Path, dict]]:
    folder = reader.root / reader.spec.worker.replays_dir
    found = []
    for path in sorted(folder.glob("*/*.json")) if folder.is_dir() else ():
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict):
            continue
        if since is not None:
            try:
                if datetime.fromisoformat(str(doc.get("recorded_at"))).timestamp() < since:
                    continue
            except ValueError:
                pass  # a recording with no time of its own is kept
        found.append((path, doc))
    return found
