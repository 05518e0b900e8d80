"""`runner new GOAL`: the model (the openai worker, with [worker]'s model, key and base_url) drafts intents for a
goal from what the repository holds; the change to intents.toml is shown as a diff and written when there is no
intents.toml yet or with `--yes`, `--json` prints the draft and writes nothing. With no model configured: one
intent for the goal, said on stderr."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import SpecError, UsageError, UserError
from . import SPEC_FILE, Command, Invocation, Param, echo, flag, print_json


def _no_model(data: dict, spec, shown: str) -> str | None:
    """Why no model can draft here (None: one can): [worker] names no model, or the openai worker's set-up
    check (its key variable, base_url) fails. Checked without calling a model."""
    worker = data.get("worker")
    if spec is None or not isinstance(worker, dict) or not worker.get("model"):
        return f"{shown} has no [worker] model"
    from ..workers import config_for, get_worker

    config = config_for(spec, "openai")
    problems = [c.detail for c in get_worker(config).check(config, os.environ, []) if not c.ok]
    return "; ".join(problems) or None


def _loads(root: Path, text: str, shown: str):
    """The spec `text` would be, loaded as `runner validate` loads it (from a file beside the state, removed
    after); a UserError listing its problems when it does not load."""
    from ..load import load_spec
    from ..toml_write import replace_file

    rel = f".runner/new-draft-{os.getpid()}.toml"
    replace_file(root / rel, text.encode("utf-8"))
    try:
        return load_spec(root, rel)
    except SpecError as exc:
        lines = [p._replace(file=shown).render() for p in exc.problems]
        raise UserError("the draft does not load, nothing written:\n" + "\n".join("  " + x for x in lines)) from None
    finally:
        (root / rel).unlink(missing_ok=True)


def run(inv: Invocation, goal: str, yes: bool, spec_file: str | None) -> None:
    from ..load import load_spec
    from ..roadmap.draft import ask, checked, fallback, ground, prompt, text_with
    from ..roadmap.intents import diff_text
    from ..toml_read import TOMLDecodeError, loads

    goal = goal.strip()
    if not goal:
        raise UsageError('error: the goal is empty; say what to build: runner new "Add rate limiting to the API"')
    intents_path = inv.directory / (spec_file or "intents.toml")
    root = intents_path.parent.resolve()
    shown = os.path.relpath(intents_path, inv.directory) if intents_path.is_absolute() else str(intents_path)
    shown = Path(shown).as_posix()
    old = intents_path.read_text(encoding="utf-8") if intents_path.exists() else None
    data: dict = {}
    spec = None
    if old is not None:
        try:
            data = loads(old)
        except TOMLDecodeError as exc:
            raise UserError(f"{shown}: not valid TOML ({exc}); fix it, then draft again") from None
        spec = load_spec(root, intents_path.name)  # a file with problems: they are said, nothing is drafted
    g = ground(root, data)
    why = _no_model(data, spec, shown)
    if why is None:
        answer, _tokens = ask(spec, prompt(goal, g), root)
        drafted = checked(answer, g)
    else:
        drafted = fallback(goal, g, shown)
        print(
            f"no model configured ({why}): one intent drafted for the goal, a step that fails until it has a "
            "recipe; set [worker] model and its key for a plan the model drafts",
            file=sys.stderr,
            flush=True,
        )
    new = text_with(old, drafted, g.project)
    _loads(root, new, shown)
    if inv.as_json:
        print_json({"file": shown, "model": why is None, "intents": drafted})
        return
    n = len(drafted)
    summary = f"{n} intent{'s' if n != 1 else ''} drafted for the goal"
    echo(diff_text(old, new, shown).rstrip("\n"))
    if old is not None and not yes:
        print(f"{summary}; {shown} exists: not written (again with --yes to write it)", file=sys.stderr, flush=True)
        return
    from ..toml_write import replace_file

    replace_file(intents_path, new.encode("utf-8"))
    echo(f"wrote {shown}: {summary}")


COMMAND = Command(
    "new",
    "Draft intents for a goal with the model, grounded in the repository.\n\n"
    "Uses the openai worker with [worker]'s model, key and base_url; shows the change to intents.toml as a diff "
    "and writes it when there is none yet, or with --yes. --json prints the draft and writes nothing. With no "
    "model configured it drafts one intent for the goal and says so.",
    (
        Param(("goal",), "goal", "argument", metavar="GOAL"),
        flag("-y", "--yes", dest="yes", help="Write the draft into an existing intents.toml."),
        SPEC_FILE._replace(help="Write the intents into FILE instead of intents.toml (the project root: its folder)."),
    ),
    run,
)
