"""An agent intent's memory: its fields in a fixed order, the compact prompt section they render to, the bound on
that section, and the key parts it adds (so editing a fact re-runs the step, and the reason names the field)."""

from __future__ import annotations

from .keys import digest_value
from .spec import Intent

# the order they render in, whatever order the TOML holds them in: the same fields give the same bytes
FIELDS = ("anchor", "facts", "non_goals", "constraints", "open_questions", "scope")
# the memory section and the acceptance criteria together, in UTF-8 bytes of the prompt: a few KB keeps the
# memory a summary the agent reads whole, not a second copy of the inputs
MAX_BYTES = 4096
PART_PREFIX = "memory."  # key parts: memory.facts, memory.non_goals, ...

_HEADINGS = {
    "facts": "Facts (true of this project; rely on them):",
    "non_goals": "Non-goals (out of bounds: do not do these):",
    "constraints": "Constraints (must hold after your change):",
    "open_questions": "Open questions (not settled: do not decide them; say what you assumed):",
    "scope": "Also in scope (files you may change besides the outputs):",
}


def compact(text: str) -> str:
    """One line, single-spaced: how a field's text enters the prompt and the key (re-wrapping a fact in the TOML
    changes neither)."""
    return " ".join(text.split())


def fields(intent: Intent) -> list[tuple[str, list[str]]]:
    """The intent's non-empty memory fields, in FIELDS order, each as its compacted items."""
    found = []
    for name in FIELDS:
        value = getattr(intent, name)
        items = [compact(value)] if isinstance(value, str) else [compact(v) for v in value]
        items = [item for item in items if item]
        if items:
            found.append((name, items))
    return found


def _render_field(name: str, items: list[str]) -> str:
    if name == "anchor":
        return f"Anchor (what this intent is for): {items[0]}"
    return "\n".join([_HEADINGS[name]] + [f"- {item}" for item in items])


def section(intent: Intent) -> str:
    """The prompt's memory section ('' for an intent without memory, whose prompt is then what it always was)."""
    parts = [_render_field(name, items) for name, items in fields(intent)]
    return "## Intent memory\n\n" + "\n\n".join(parts) if parts else ""


def sizes(intent: Intent) -> dict[str, int]:
    """Bytes each field takes in the prompt (the acceptance criteria too: they are part of what the intent
    remembers, rendered in their own section), for the bound and its message."""
    out = {name: len(_render_field(name, items).encode()) + 2 for name, items in fields(intent)}
    if intent.acceptance:
        out["acceptance"] = sum(len(f"- {a}\n".encode()) for a in intent.acceptance)
    return out


def too_big(intent: Intent) -> tuple[str, str] | None:
    """(the largest field, what to do) when the memory is over MAX_BYTES; None when it fits."""
    by_field = sizes(intent)
    total = sum(by_field.values()) + (len(b"## Intent memory\n\n") if fields(intent) else 0)
    if total <= MAX_BYTES:
        return None
    largest = max(by_field, key=lambda name: (by_field[name], name))
    return largest, (
        f"the intent's memory takes {total:,} bytes of its prompt, more than the {MAX_BYTES:,} allowed; its "
        f"largest field is '{largest}' ({by_field[largest]:,} bytes): keep what the agent must know, and move long "
        "material into a file listed in 'inputs'"
    )


def key_parts(intent: Intent) -> dict[str, str]:
    """A key part per non-empty field (none for an intent without memory, so its key stays what it was)."""
    return {PART_PREFIX + name: digest_value(items) for name, items in fields(intent)}
