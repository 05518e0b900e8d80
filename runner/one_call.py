"""What a one-call worker's prompt (the `openai` worker: one Responses call, no tool, no command) shows of the
project: the files the intent names in full first (its literal inputs and outputs, each whole if the budget holds
it), then the files its globs matched, smallest first; what did not fit is listed with how to get it, and the
template's asks that one call cannot do (run the tests) give way to what happens instead."""

from __future__ import annotations

import os
import re
from pathlib import Path

from .globs import GLOB_CHARS
from .spec import Intent

# a template's sentence asking the agent to run something before it answers: a one-call worker runs nothing
RUN_ASK = re.compile(r"\s*\bRun (?:the|all|your) (?:tests|checks|linters?)\b[^.]*\.")


def ordered(root: Path, intent: Intent, input_files: list[str]) -> tuple[list[str], list[str]]:
    """(the files the intent names in full that exist, in its order; the other inputs, smallest first)."""
    named: list[str] = []
    for rel in (*intent.inputs, *intent.outputs):
        if GLOB_CHARS.isdisjoint(rel) and rel not in named and os.path.isfile(root / rel):
            named.append(rel)
    others = [rel for rel in input_files if rel not in named]
    others.sort(key=lambda rel: (_size(root / rel), rel))
    return named, others


def files_block(root: Path, intent: Intent, input_files: list[str], file_chars: int, prompt_chars: int) -> str:
    """The files the prompt shows, within `prompt_chars` in all and `file_chars` for a file a glob matched (the
    prompt's budgets, prompts.py's), and what it left out."""
    named, others = ordered(root, intent, input_files)
    parts: list[str] = []
    left_out: list[str] = []
    total = 0
    for rel in named + others:
        try:
            text = (root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            left_out.append(f"- {rel}: binary or unreadable")
            continue
        room = prompt_chars - total
        cap = room if rel in named else min(file_chars, room)
        if cap <= 0:
            left_out.append(f"- {rel}: not shown ({len(text):,} characters)")
            continue
        if len(text) > cap:
            left_out.append(f"- {rel}: cut after {cap:,} of {len(text):,} characters")
            text = text[:cap] + f"\n... ({len(text) - cap} more characters not shown)"
        total += min(len(text), cap)
        parts.append(f"### {rel}\n```\n{text}\n```\n")
    block = "\n".join(parts) or "(none)"
    if left_out:
        block += (
            f"\n### Left out\n\nThis prompt shows at most {prompt_chars:,} characters of the project: the files "
            f"the intent names in full first, then the files its globs matched, smallest first. Not shown:\n\n"
            + "\n".join(left_out)
            + "\n\nYou cannot read files in this answer. If the task needs one of them, answer with <<MIS:ERR>> "
            "naming it: the intent can then name it in full in its inputs, which puts it first.\n"
        )
    return block


def without_run_asks(text: str, verify: tuple[str, ...]) -> str:
    """The template less what one call cannot do, and what happens instead."""
    if not RUN_ASK.search(text):
        return text
    instead = (
        f" You cannot run commands here: once you answer, runner runs the verify commands ({', '.join(verify)}) "
        "on your change, and a failure comes back to you as feedback for another attempt."
        if verify
        else " You cannot run commands here: answer with the files as they should be."
    )
    return RUN_ASK.sub(instead, text, count=1)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
