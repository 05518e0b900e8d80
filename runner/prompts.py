"""Prompt templates: render a template with the goal, the intent's memory, acceptance, inputs and the last
attempt's feedback."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from .memory import section as memory_section
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


def _one_call_block(root: Path, intent: Intent, input_files: list[str]) -> str:
    from .one_call import files_block

    return files_block(root, intent, input_files, MAX_FILE_CHARS, MAX_INPUT_CHARS)


def feedback_block(feedback: str | None) -> str:
    if not feedback:
        return ""
    return (
        "\n## What the last attempt got wrong\n\nThe previous attempt was checked and rejected:\n\n"
        f"{feedback}\n\nFix exactly these problems; keep what already works.\n"
    )


def improve_block(version: int, feedback: str, diff: str) -> str:
    """What `runner improve` adds to every prompt of its run: the reviewer's feedback on the applied version and
    that version's diff (the project already holds it)."""
    if len(diff) > MAX_FILE_CHARS:
        diff = diff[:MAX_FILE_CHARS] + f"\n... ({len(diff) - MAX_FILE_CHARS} more characters not shown)"
    return (
        f"\n## Improve version {version}\n\nVersion {version} of this step is applied: the project holds it. "
        f"A reviewer asks for this change:\n\n{feedback}\n\nChange the files accordingly; keep what already works.\n"
        f"\n### The diff of version {version}\n\n```diff\n{diff or '(no textual change)'}\n```\n"
    )


def render(
    template: str | None,
    intent: Intent,
    root: Path,
    input_files: list[str],
    feedback: str | None,
    one_call: bool = False,
) -> str:
    """The prompt; `one_call`: for a worker that answers in one call and reads nothing itself (runner/one_call.py)."""
    text = template if template is not None else DEFAULT_TEMPLATE
    if one_call:
        from .one_call import without_run_asks

        text = without_run_asks(text, intent.verify)
    memory = memory_section(intent)
    if memory and "{{memory}}" not in text:
        # a template without the slot (every one written before it) gets the memory right after the goal, or last;
        # an intent without memory leaves the prompt as it was, byte for byte
        text = text.replace("{{goal}}", "{{goal}}\n\n{{memory}}", 1) if "{{goal}}" in text else text + "\n{{memory}}\n"
    acceptance = "\n".join(f"- {a}" for a in intent.acceptance) or "- the project's checks pass"
    outputs = "\n".join(f"- {o}" for o in intent.outputs) or "- (no declared outputs: stay within the policy's scope)"
    values = {
        "goal": intent.goal or "",
        "memory": memory,
        "acceptance": acceptance,
        "outputs": outputs,
        "inputs": _one_call_block(root, intent, input_files) if one_call else _inputs_block(root, input_files),
        "feedback": feedback_block(feedback),
        "intent": intent.name,
    }
    for name, value in values.items():
        text = text.replace("{{" + name + "}}", value)
    if "{{feedback}}" not in (template or DEFAULT_TEMPLATE) and feedback:
        text += feedback_block(feedback)  # a template that forgot the slot still gets the feedback
    return text


# ---- candidates: variants of a template on their way through the learning loop's gate ------------------------

CANDIDATES_SUFFIX = ".candidates.toml"  # prompts/NAME.candidates.toml: the variants of prompts/NAME.md
CANDIDATE_STAGES = ("proposed", "canary", "active", "retired")


class PromptCandidate(NamedTuple):
    """A variant of a prompt template; `proposed` waits for `runner approve`, `canary` is used for its weight's
    slice of the agent steps that use the template."""

    prompt: str
    name: str
    stage: str
    weight: int
    text: str

    @property
    def ref(self) -> str:
        """How keys, events and the gate name it: prompt:TEMPLATE/NAME."""
        return f"prompt:{self.prompt}/{self.name}"


def candidates_file(root: str | Path, prompt: str) -> Path:
    """Beside the template: a sub-project's own (PATH:NAME) in PATH/prompts/."""
    folder, _colon, name = prompt.rpartition(":")
    return Path(root) / folder / "prompts" / f"{name}{CANDIDATES_SUFFIX}"


def read_candidates(root: str | Path, prompt: str) -> list[PromptCandidate]:
    """The variants of one template, as its candidates file lists them (none when it has no such file)."""
    from . import toml_read
    from .errors import UserError

    path = candidates_file(root, prompt)
    try:
        data = toml_read.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, toml_read.TOMLDecodeError) as exc:
        raise UserError(f"{path}: cannot be read ({exc})") from None
    found = []
    for i, table in enumerate(data.get("candidate", ())):
        where = f"{path} candidate[{i}]"
        name, stage, text = table.get("name"), table.get("stage", "proposed"), table.get("text")
        if not isinstance(name, str) or not name or not isinstance(text, str):
            raise UserError(f"{where}: a candidate needs a name and its text (text = '''...''')")
        if stage not in CANDIDATE_STAGES:
            raise UserError(f"{where}: stage {stage!r} is not one of {', '.join(CANDIDATE_STAGES)}")
        weight = (table.get("gate") or {}).get("weight", 0)
        found.append(PromptCandidate(prompt, name, stage, int(weight) if isinstance(weight, int) else 0, text))
    return found


def choose(root: str | Path, prompt: str | None, template: str | None, slice_key: str | None):
    """(the template an agent step uses, the candidate it is or None): a canary variant where the step falls in its
    slice (the same hash as a canary pattern's), else the template itself."""
    if not prompt or slice_key is None:
        return template, None
    from .keys import canary_slot

    for candidate in read_candidates(root, prompt):
        if candidate.stage == "canary" and canary_slot(slice_key, candidate.ref) < candidate.weight:
            return candidate.text, candidate
    return template, None
