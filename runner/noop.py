"""The warm no-op: `runner make` answers "nothing to do" from file stats alone, before importing anything heavy.

The proof is runner.freshness's shortcut 3 (`prove_target`); this module parses a plain `runner make`'s
options, finds the project and reports the proven steps. Anything the proof cannot vouch for, or anything
unusual on the command line, falls through to the full pipeline, which decides by the rule.
"""

from __future__ import annotations

import os
import sys
import time

from .freshness import proof_name, prove_target

# the options of a plain `runner make`, as the names runner.commands.make.make takes them
_FLAGS = {"-k": "keep_going", "--keep-going": "keep_going", "--no-wait": "no_wait", "--json": "as_json"}
_WITH_VALUE = {
    "-C": "directory",
    "--directory": "directory",
    "-f": "spec_file",
    "--file": "spec_file",
    "-j": "jobs",
    "--jobs": "jobs",
    "--timeout": "timeout",
}


_CACHED_BEFORE = '{"event": "step_finished", "intent": "'
_CACHED_AFTER = '", "status": "cached", "reasons": ["up to date"]}'


def cached_text(joined: str) -> str:
    """The `step_finished` lines of the steps reported up to date, the names `joined` by NULs (as a proof stores
    its order), joined by newlines. Intent names are [A-Za-z0-9_.-] (the schema says so), so the lines need no JSON
    encoder: a 10,000-step no-op or edit is mostly these. Made by one replace over the string, not a line per name
    (~2 ms for 100,000 names instead of ~20). No names: ""."""
    if not joined:
        return ""
    return _CACHED_BEFORE + joined.replace("\0", _CACHED_AFTER + "\n" + _CACHED_BEFORE) + _CACHED_AFTER


def _without(order: str, total: int, positions: tuple[int, ...]) -> str:
    """`order` (`total` names joined by NULs) less the names at `positions` (ascending). The usual aggregate, the
    target naming every step, comes last: cut off the end (a split and a join of 100,000 names is ~25 ms)."""
    last = total - 1
    rest = list(positions)
    while rest and rest[-1] == last:
        order = order.rpartition("\0")[0]
        rest.pop()
        last -= 1
    if not rest:
        return order
    names = order.split("\0")
    for position in reversed(rest):
        del names[position]
    return "\0".join(names)


def parse_plain_make(argv: list[str]) -> dict | None:
    """The options of a plain `runner make` (`-C DIR`, `-f FILE`, `-j N`, `-k`, `--no-wait`, `--timeout S`,
    `--json`, targets) as runner.commands.make.make's arguments; None for anything else, and for a value click
    would refuse (click says what is wrong with it)."""
    if not argv or argv[0] != "make":
        return None
    options: dict = {"directory": ".", "targets": []}
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in _FLAGS:
            options[_FLAGS[arg]] = True
        elif arg in _WITH_VALUE:
            if i + 1 >= len(argv):
                return None
            name, value = _WITH_VALUE[arg], argv[i + 1]
            if name in ("directory", "spec_file"):
                if not value:
                    return None  # -f "": click says what is wrong with it
                options[name] = value
            elif not _positive(value, integer=name == "jobs"):
                return None
            else:
                options[name] = int(value) if name == "jobs" else float(value)
            i += 1
        elif arg.startswith("--directory="):
            options["directory"] = arg.split("=", 1)[1]
        elif arg.startswith("--file=") and len(arg) > len("--file="):
            options["spec_file"] = arg.split("=", 1)[1]
        elif arg.startswith("-j") and _positive(arg[2:], integer=True):
            options["jobs"] = int(arg[2:])
        elif arg.startswith("-") or not arg:
            return None
        else:
            options["targets"].append(arg)
        i += 1
    return options


def _positive(value: str, integer: bool) -> bool:
    try:
        return (int(value) if integer else float(value)) > 0
    except ValueError:
        return False


def locate(directory: str, spec_file: str | None) -> tuple[str, str]:
    """(the project root, the intents file's name in it). With `-f FILE` the root is the folder holding FILE
    (relative to `directory`), whose paths are relative to it; else find_root's, and intents.toml."""
    if spec_file is None:
        return find_root(directory), "intents.toml"
    path = os.path.join(directory, spec_file)
    return os.path.realpath(os.path.dirname(path) or "."), os.path.basename(path)  # the folder resolved, as below


def find_root(directory: str) -> str:
    """The nearest folder at or above `directory` holding intents.toml (as git finds .git). Symlinks resolved, as
    the working folder always is (`cd LINK && runner make` runs in the real folder): named through a link (`-C
    LINK`) or not, a project is one root, and its compiled spec and proofs serve both (a 100,000-step project
    named both ways in turn was compiled and decided whole each time, ~30 s)."""
    start = folder = os.path.realpath(directory)
    while not os.path.isfile(os.path.join(folder, "intents.toml")):
        parent = os.path.dirname(folder)
        if parent == folder:
            return start
        folder = parent
    return folder


def try_noop(argv: list[str]) -> int | None:
    """Exit code 0 after reporting a proven no-op, or None to run the full pipeline."""
    parsed = parse_plain_make(argv)
    if parsed is None:
        return None
    started = time.monotonic()
    root, spec_file = locate(parsed["directory"], parsed.get("spec_file"))
    if _unsettled(root):
        return None  # the pipeline recovers first (and waits for a run holding the lock)
    proved = prove_target(root, proof_name(parsed["targets"], spec_file))
    if proved is None:
        return None
    _report(root, *proved, parsed, started)
    return 0


def _unsettled(root: str) -> bool:
    """A killed run left processes to stop (a non-empty in-flight journal: a settled run empties it) or an apply
    to finish (`.runner/apply/` holding a journal), which the pipeline's start recovers: not for the fast path
    to answer over. Two syscalls when there is none; a live run holding the lock has its journal in use, and
    does not stop the fast path answering for its own proof as before."""
    state = os.path.join(root, ".runner")
    if not (
        _holds(os.path.join(state, "inflight"), lambda p: os.stat(p).st_size)
        or _holds(os.path.join(state, "apply"), os.listdir)
    ):
        return False
    import fcntl

    try:
        fd = os.open(os.path.join(state, "lock"), os.O_RDONLY)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return True  # nobody holds the lock: what the journals name was left by a run that is gone
    except OSError:
        return False  # a runner is at work: its journal is live
    finally:
        os.close(fd)


def _holds(path: str, measure) -> bool:
    """Whether the file or folder at `path` holds anything by `measure` (its size, its entries); not there: no."""
    try:
        return bool(measure(path))
    except OSError:
        return False


def _report(root: str, order: str, aggregates: tuple[int, ...], parsed: dict, started: float) -> None:
    """The events of the full pipeline's no-op, key for key (runner/schemas/events.json), with "fast": true.
    `order`: the steps' names joined by NULs. The aggregates (at their `aggregates` positions in it) are no
    steps: neither reported nor counted."""
    from .record import new_run_id
    from .report import summary_line

    run_id = new_run_id()
    targets = parsed["targets"]
    jobs = parsed.get("jobs") or os.cpu_count() or 1  # as make_command.run defaults it
    total = order.count("\0") + 1 if order else 0
    count = total - len(aggregates)
    steps = [cached_text(_without(order, total, aggregates))] if count else []
    lines = [f'{{"event": "run_started", "run_id": "{run_id}", "steps": {count}, "jobs": {jobs}, "fast": true}}']
    lines += steps
    finished = {
        "event": "run_finished",
        "run_id": run_id,
        # as named: the proof never loads the spec to learn [project] default, nor what an output path names
        "target": None if not targets else targets[0] if len(targets) == 1 else targets,
        "status": "ok",
        "ran": 0,
        "cached": count,
        "restored": 0,
        "kept": 0,
        "failed": 0,
        "skipped": 0,
        "blocked": 0,
        "attempts": 0,
        "usage": {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0},
        "duration": round(time.monotonic() - started, 3),
    }
    import json

    lines.append(json.dumps(finished))
    text = "\n".join(lines) + "\n"
    run_dir = os.path.join(root, ".runner", "runs", run_id)
    try:
        os.makedirs(os.path.join(run_dir, "logs"))
        with open(os.path.join(run_dir, "events.jsonl"), "w") as f:
            f.write(text)
    except OSError:
        pass
    sys.stdout.write(text if parsed.get("as_json") else summary_line(finished) + "\n")
    sys.stdout.flush()
