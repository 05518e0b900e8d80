"""Prompt templates: render a template with the goal, acceptance, inputs and the last attempt's feedback."""

from __future__ import annotations

from pathlib import Path

from .spec import Intent

MAX_FILE_CHARS = 20_000
MAX_INPUT_CHARS = 120_000

DEFAULT_TEMPLATE = """# Task

{{goal}}

## Acceptance criteria

{{acceptance}}

## Files you may change

{{outputs}}

## Inputs

{{inputs}}
{{feedback}}"""


def _inputs_block(root: Path, files: list[str]) -> str:
    parts, total = [], 0
    for rel in files:
        path = root / rel
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            parts.append(f"### {rel}\n(binary or unreadable: not shown)\n")
            continue
        if len(text) > MAX_FILE_CHARS:
            text = text[:MAX_FILE_CHARS] + f"\n... ({len(text) - MAX_FILE_CHARS} more characters not shown)"
        if total + len(text) > MAX_INPUT_CHARS:
            parts.append(f"### {rel}\n(not shown: the prompt's input budget is spent; read the file)\n")
            continue
        total += len(text)
        parts.append(f"### {rel}\n```\n{text}\n```\n")
    return "\n".join(parts) or "(none)"


def feedback_block(feedback: str | None) -> str:
    if not feedback:
        return ""
    return (
        "\n## What the last attempt got wrong\n\nThe previous attempt was checked and rejected:\n\n"
        f"{feedback}\n\nFix exactly these problems; keep what already works.\n"
    )


def render(template: str | None, intent: Intent, root: Path, input_files: list[str], feedback: str | None) -> str:
    text = template if template is not None else DEFAULT_TEMPLATE
    acceptance = "\n".join(f"- {a}" for a in intent.acceptance) or "- the project's checks pass"
    outputs = "\n".join(f"- {o}" for o in intent.outputs) or "- (no declared outputs: stay within the policy's scope)"
    values = {
        "goal": intent.goal or "",
        "acceptance": acceptance,
        "outputs": outputs,
        "inputs": _inputs_block(root, input_files),
        "feedback": feedback_block(feedback),
        "intent": intent.name,
    }
    for name, value in values.items():
        text = text.replace("{{" + name + "}}", value)
    if "{{feedback}}" not in (template or DEFAULT_TEMPLATE) and feedback:
        text += feedback_block(feedback)  # a template that forgot the slot still gets the feedback
    return text
