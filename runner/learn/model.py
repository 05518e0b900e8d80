"""The model's turn in a learning pass: for lines the deterministic proposer could not turn into a pattern that
scores, one Responses call through the openai worker (the [worker] table's model, key and base_url) asks for
RE2 patterns, with what the rejected ones got wrong as feedback. Its answer is only a proposal: every pattern
is scored like an induced one, and one that RE2 refuses or that could backtrack is dropped with the reason.

Every answer is kept in .runner/learn/answers/ by the digest of its prompt before it is read: a pass that stops
after paying for a call (its answer unreadable, an interrupt, a crash) finds it there the next time, and the
same question is never paid for twice."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from .propose import Candidate

ANSWER_FILE = "patterns.json"
KINDS = {
    "summary": "counts of a finished run; fields named passed, failed, skipped, errors",
    "failed_test": "one failing test; field name",
    "diagnostic": "an error at a place; fields file, line, column (optional), message",
}

PROMPT = """\
You write patterns for a build tool's regex library. Each pattern reads one whole line of a tool's output.
Rules: Google RE2 syntax only (no lookaround, no backreferences), anchored with ^ and $, named groups
(?P<name>...) for exactly the fields listed; kinds and their fields:
{kinds}

The tool is `{command}`. These lines of its output were read by no pattern:
{lines}
{feedback}
Answer with one FILE block, path={answer}, holding JSON:
{{"patterns": [{{"name": "lowercase-with-dashes", "regex": "^...$", "kind": "summary|failed_test|diagnostic",
"fields": ["..."]}}]}}
"""


@dataclass
class Asked:
    """One call: what came back, what it cost, and why nothing came back if so."""

    candidates: list[Candidate]
    tokens: int
    error: str | None = None
    reused: bool = False  # the answer of an earlier pass's call, read back: nothing paid now


@dataclass
class _Answer:
    ok: bool
    tokens: int
    error: str | None
    files: dict
    reused: bool = False


def _call(spec, prompt: str, intent: str) -> _Answer:
    """One Responses call through the openai worker, with the project's [worker] model, key and base_url; or the
    answer kept from an earlier call with the same prompt and model."""
    import hashlib
    from pathlib import Path

    from ..toml_write import replace_file
    from ..workers import ask

    key = hashlib.sha256(f"{spec.worker.model}\0{prompt}".encode()).hexdigest()[:32]
    kept = Path(spec.root) / ".runner" / "learn" / "answers" / f"{key}.json"
    try:
        got = json.loads(kept.read_text(encoding="utf-8"))
        return _Answer(bool(got["ok"]), 0, got.get("error"), dict(got.get("files") or {}), reused=True)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    result = ask(spec, prompt, intent, "learn")
    answer = _Answer(bool(result.ok), result.usage.total, result.error, dict(result.files or {}))
    if answer.ok:  # paid for: kept before anything reads it
        kept.parent.mkdir(parents=True, exist_ok=True)
        record = {"ok": True, "error": None, "files": answer.files, "tokens": answer.tokens}
        replace_file(kept, json.dumps(record).encode("utf-8"))
    return answer


def ask(spec, command: str, lines: Sequence[str], rejected: Sequence[tuple[str, str]], family: str) -> Asked:
    """One proposal call. `rejected`: (regex, why) of the candidates that did not score, as feedback."""
    feedback = ""
    if rejected:
        feedback = "\nThese patterns were tried and rejected; do better:\n" + "\n".join(
            f"- {regex}  ({why})" for regex, why in rejected
        )
    prompt = PROMPT.format(
        kinds="\n".join(f"- {k}: {v}" for k, v in KINDS.items()),
        command=command,
        lines="\n".join(f"  {line}" for line in lines[:40]),
        feedback=feedback,
        answer=ANSWER_FILE,
    )
    result = _call(spec, prompt, f"learn-{family}")
    tokens = result.tokens
    if not result.ok:
        return Asked([], tokens, result.error or "the model gave no answer", result.reused)
    try:
        answer = json.loads((result.files or {}).get(ANSWER_FILE) or "")
        proposed = answer["patterns"]
    except (ValueError, KeyError, TypeError):
        return Asked([], tokens, f"the answer has no {ANSWER_FILE} with a patterns list", result.reused)
    found = []
    for item in proposed if isinstance(proposed, list) else []:
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("name", "regex", "kind")):
            continue
        fields = tuple(f for f in item.get("fields") or () if isinstance(f, str))
        name = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in item["name"].lower()).strip("-.") or "model"
        found.append(
            Candidate(
                name=f"{family}-{name}" if not name.startswith(family) else name,
                regex=item["regex"],
                kind=item["kind"] if item["kind"] in KINDS else "event",
                fields=fields,
                template="",
                lines=list(lines),
                source="model",
            )
        )
    return Asked(found, tokens, reused=result.reused)


PROMPT_FOR_PROMPT = """\
You improve a prompt template that a build tool gives a coding agent. The template's placeholders
({{{{goal}}}}, {{{{acceptance}}}}, {{{{outputs}}}}, {{{{inputs}}}}, {{{{feedback}}}}) are filled in for each task; keep
every one the template has.

The template, prompts/{name}.md:
----
{template}
----

Agent steps given this template failed their verification at the first attempt; what the checks said:
{failures}

Answer with one FILE block, path={answer}, holding the whole improved template.
"""
PROMPT_ANSWER_FILE = "template.md"


def ask_for_template(
    spec, name: str, template: str, failures: Sequence[str]
) -> tuple[str | None, int, str | None, bool]:
    """One call for a variant of a prompt template: (its text or None, tokens spent, why none came back, whether
    the answer was an earlier call's)."""
    prompt = PROMPT_FOR_PROMPT.format(
        name=name,
        template=template,
        failures="\n".join(f"  {line}" for line in failures[:40]) or "  (no lines recorded)",
        answer=PROMPT_ANSWER_FILE,
    )
    result = _call(spec, prompt, f"learn-{name}")
    tokens, reused = result.tokens, result.reused
    if not result.ok:
        return None, tokens, result.error or "the model gave no answer", reused
    text = (result.files or {}).get(PROMPT_ANSWER_FILE)
    if not text or not text.strip():
        return None, tokens, f"the answer has no {PROMPT_ANSWER_FILE}", reused
    missing = [p for p in ("{{goal}}", "{{feedback}}") if p in template and p not in text]
    if missing:
        return None, tokens, f"the proposed template drops {', '.join(missing)}", reused
    return text, tokens, None, reused
