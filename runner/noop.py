"""The fast path: the warm no-op answers "nothing to do" from file stats alone, before anything heavy is imported.

It parses a plain `runner make`'s options, finds the project, checks the target's proof (runner/freshness.py,
shortcuts 6-8; the proof file is runner/proof.py's) and reports the proven steps. Anything the proof cannot vouch for,
or anything unusual on the command line, falls through to the full pipeline, which decides by the rule; what the
no-op read on the way is handed to it (proof.Missed), not read twice.

Only the console entry (runner/entry.py) imports this module (tests/test_house.py). The cheap-import rule, which
holds for this module and every runner module it imports, is here and nowhere else: what the no-op imports is
fenced (tests/core/test_console.py): the standard library's cheapest, and runner's proof, stat_cache,
project_root, names, keys, index_file, forked, record, nospace, report, events and summary (damaged, when a write
replaces an index). Those modules import no typing at run time: typing alone costs ~2-4 ms of a ~60 ms no-op at 10,000
steps, so they import it for mypy only (`TYPE_CHECKING = False` then `if TYPE_CHECKING:`). The other tricks the
no-op's figures rest on: the stats taken from the project's folder descriptor and half of them by a forked child
(proof.take_stats), the gc threshold and the plain argv parsing (entry.py).
"""

from __future__ import annotations

import json
import marshal
import os
import sys
import time
from collections import namedtuple

from .index_file import IndexFile
from .keys import content_digest, digest_file
from .names import typed
from .project_root import here, joined_directory, locate
from .proof import (
    Checked,
    Missed,
    ProofEntry,
    Taken,
    changed_stats,
    env_digest,
    joined,
    load_proofs,
    names_of,
    pieces_digest,
    proof_entry,
    proof_name,
    slot_of,
    take_stats,
    write_proofs,
)
from .stat_cache import NEVER, StatEntry, stat_is_file, stat_of, vouches

TYPE_CHECKING = False  # see above
if TYPE_CHECKING:
    from collections.abc import Mapping

# A proof that holds: the target's steps in order (joined by NULs, as the proof stores them) and the positions of
# its aggregates among them
Proved = namedtuple("Proved", "order aggregates")

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
    would refuse (click says what is wrong with it). `-C DIR` and `-f FILE` may also come before the command, as
    git, make and just take them (`runner -C proj make`); a `-C` after it is then taken from the one before."""
    leading, i = _leading(argv)
    if leading is None or i >= len(argv) or argv[i] != "make":
        return None
    options = _make_options(argv[i + 1 :])
    if options is None:
        return None
    if "directory" in leading:
        options["directory"] = joined_directory(leading["directory"], options["directory"])
    if "spec_file" in leading:
        options.setdefault("spec_file", leading["spec_file"])
    return options


def _leading(argv: list[str]) -> tuple[dict | None, int]:
    """The `-C DIR` and `-f FILE` before the command, and where the command is; None for anything else there."""
    found: dict = {}
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        arg = argv[i]
        if arg.startswith("--") and "=" in arg:
            name, _eq, value = arg.partition("=")
        elif i + 1 < len(argv):
            name, value = arg, argv[i + 1]
            i += 1
        else:
            return None, i
        where = _WITH_VALUE.get(name)
        if where not in ("directory", "spec_file") or not value:
            return None, i  # another option, or -f "": click says what is wrong with it
        found[where] = joined_directory(found.get(where, "."), value) if where == "directory" else value
        i += 1
    return found, i


def _make_options(argv: list[str]) -> dict | None:
    options: dict = {"directory": ".", "targets": []}
    i = 0
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


def try_noop(parsed: dict) -> tuple[int | None, Missed | None]:
    """(exit code 0, None) after reporting a proven no-op of the plain `runner make` `parsed`
    (parse_plain_make); else (None, what the proof check read, if it got that far) for the full pipeline."""
    started = time.monotonic()
    root, spec_file = locate(parsed["directory"], parsed.get("spec_file"))
    if _unsettled(root):
        return None, None  # the pipeline recovers first (and waits for a run holding the lock)
    folder = here(root, parsed["directory"]) if parsed.get("spec_file") is None else ""
    targets = typed(parsed["targets"], folder) if folder else parsed["targets"]  # as the pipeline names them
    proved = prove_target(root, proof_name(targets, spec_file))
    if isinstance(proved, Missed):
        return None, proved
    _report(root, proved, {**parsed, "targets": targets}, started)
    return 0, None


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


def _report(root: str, proved: Proved, parsed: dict, started: float) -> None:
    """The events of the full pipeline's no-op, key for key (runner/schemas/events.json), with "fast": true.
    The aggregates (at their positions in the proved order) are no steps: neither reported nor counted."""
    from .events import cached_text, run_finished, run_started_fast
    from .record import new_run_id, utc_stamp
    from .report import summary_line
    from .summary import CACHED, no_counts

    run_id = new_run_id()
    order, aggregates = proved
    jobs = parsed.get("jobs") or os.cpu_count() or 1  # as make_command.run defaults it
    total = order.count("\0") + 1 if order else 0
    count = total - len(aggregates)
    steps = [cached_text(_without(order, total, aggregates))] if count else []
    stamp = utc_stamp(time.time() - (time.monotonic() - started))  # the wall clock when the no-op began
    lines = [run_started_fast(run_id, count, jobs, stamp)]
    lines += steps
    finished = run_finished(run_id, parsed["targets"], "ok", {**no_counts(), CACHED: count}, time.monotonic() - started)
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


# ---- the proof check (freshness.py, shortcuts 6-8) --------------------------------------------------------


def prove_target(root: str, target: str | None) -> Proved | Missed:
    """The steps of `target` in order (joined) and the positions of its aggregates among them, if its last good
    run's proof holds now (nothing to do); else what was read and checked, for the pipeline (Missed)."""
    proofs = load_proofs(root)
    entry = proof_entry(root, proofs, target)
    if entry is None:
        return Missed(root, proofs, None)
    names, values = entry.env
    if names and env_digest(names) != values:  # a variable an `env` value reads changed: keys may differ
        return Missed(root, proofs, None)
    paths = names_of(entry.paths)
    taken_at = time.time_ns()
    taken = take_stats(root, paths)
    kept, touched = entry.kept, False
    now_bytes = taken.pieces
    now_digest = entry.digest
    if now_bytes != entry.stats_bytes:
        # the pieces differ: so do their digests, but for a proof of the layout before (its stats one piece)
        now_digest = pieces_digest(now_bytes)
    if now_digest != entry.digest:
        changed = changed_stats(entry.stats_bytes, now_bytes)
        proved = None if changed is None else _touched(root, paths, taken, entry, changed)
        if proved is None:  # the pipeline, next in this process, asks which paths changed
            return Missed(root, proofs, Checked(entry.paths, paths, taken.stats, taken_at, entry.stats_bytes, changed))
        kept, touched = proved, True
    folders: set[str] = set()
    for rel, want in kept.items():  # the stats did not vouch for these bytes: check them
        if content_digest(root, rel, folders) != want:
            return Missed(root, proofs, None)
    if kept or touched:
        # a kept digest whose file is now past the racy window is vouched for by its stats alone
        now = time.time_ns()
        position = {rel: i for i, rel in enumerate(paths)} if kept else {}
        still = {rel: d for rel, d in kept.items() if (s := taken[position[rel]]) is None or not vouches(s, now)}
        if still != kept or touched:
            # the touched files' new stats stand for the same bytes from now on: the next no-op is stats only
            renewed = entry._replace(kept=still)
            if touched:
                renewed = renewed._replace(stats_bytes=now_bytes, digest=now_digest)
            proofs[slot_of(root, target)] = tuple(renewed)  # marshal stores plain tuples
            write_proofs(root, proofs)
            # what the dropped digests said goes to the stat cache, so a later touch of the file finds its bytes
            dropped = {rel: (taken[position[rel]], taken_at, d) for rel, d in kept.items() if rel not in still}
            _vouched(root, {rel: found for rel, found in dropped.items() if rel not in folders}, read_after=True)
    return Proved(joined(entry.order), entry.aggregates)  # a proof of the layout before holds a list


def _vouched(root: str, found: Mapping[str, tuple], index: IndexFile | None = None, read_after: bool = False) -> None:
    """Stat cache entries (shortcut 1) for files whose bytes were checked just now: each was read after its stats
    were taken at `taken`, and only stats that vouch at that moment are written (a write after it moves them).
    `index`: the stat cache as the caller looked into it already. `read_after`: every path is a file (no folder,
    whose digest is of its names) read after its stats were taken, and none is stated again: a write since those
    stats, which vouched (their ctime older than `taken` by the racy window), gave the file a later ctime, so
    their entry is never matched (at 100,000 steps the first no-op after a clean build made ~0.5 s of stats)."""
    entries = {}
    for rel, (st, taken, d) in found.items():
        if st is None or not vouches(st, taken):
            continue
        if read_after:
            entries[rel] = StatEntry._make((*st, taken, d))
            continue
        try:
            now = os.stat(rel if rel[0] == "/" else root + "/" + rel)
        except OSError:
            continue
        if stat_is_file(now) and stat_of(now) == st:  # a folder's kept digest is of its names, not bytes
            entries[rel] = StatEntry._make((*st, taken, d))
    if not entries:
        return
    index = index or _stat_cache(root)
    try:
        index.update({rel: marshal.dumps(tuple(entry)) for rel, entry in entries.items()})
    except OSError:
        pass  # a cache: the pipeline hashes the file again


_TOUCHED_AT_MOST = 64  # more changed stats than this: an edit or a checkout, for the pipeline's cone to sort out


def _touched(root: str, paths: list[str], stats: Taken, entry: ProofEntry, changed: list) -> dict[str, str] | None:
    """Shortcut 7, the touch: the few declared files whose stats differ from the proof's but whose bytes are the
    ones the proof vouched for (a `touch`, a checkout that rewrote a file as it was). The new kept digests
    (`kept`, and each touched file's digest while its new stats are too fresh to vouch for it) if every
    changed path is such a file, else None. What the proof vouched for: a kept digest, or else the stat
    cache's digest of a file with exactly the recorded stats, hashed when they vouched for it (shortcut 1); for a
    spec file, the digest of the bytes its loader read (`spec_read`: the compiled spec is reused for those same
    bytes, compiled.load_compiled), and none for a spec folder, prompt, regex or worker file, whose stats must hold."""
    n_sources, kept, spec_read = entry.n_sources, entry.kept, entry.spec_read
    if len(changed) > _TOUCHED_AT_MOST:
        return None  # an edit or a checkout, for the pipeline's cone to sort out
    if any(i < n_sources and paths[i] not in spec_read for i, _was in changed):
        return None  # a spec or worker file the loader did not read itself: the keys rest on more than its bytes
    if any(was is not None and (now := stats[i]) is not None and was[0] != now[0] for i, was in changed):
        return None  # a new size is new bytes: an edit, told without reading the stat cache
    index: IndexFile | None = None
    new_kept = dict(kept)
    vouched: dict[str, tuple] = {}
    for i, was in changed:
        rel, now = paths[i], stats[i]
        if was is None or now is None or tuple(was) == NEVER:
            return None  # made, deleted, or seen in two states: the rule decides
        want = kept.get(rel) or (spec_read.get(rel) if i < n_sources else None)
        if want is None:
            index = index or _stat_cache(root)
            encoded = index.lookup(rel)
            cached = StatEntry.decoded(encoded) if encoded is not None else None
            if cached is None or cached.stat != tuple(was) or not vouches(was, cached.hashed_at):
                return None  # nobody can say which bytes the recorded stats stood for
            want = cached.digest
        full = rel if rel[0] == "/" else root + "/" + rel
        hashed_at = time.time_ns()
        try:
            st = os.stat(full)
            if not stat_is_file(st) or stat_of(st) != now:
                return None  # a folder, or a file written since the stats were taken
            have = digest_file(full)
        except OSError:
            return None
        if have != want:
            return None  # an edit
        if vouches(now, hashed_at):
            new_kept.pop(rel, None)
            if i >= n_sources:  # a spec file's bytes are the proof's to vouch for (spec_read), not the stat cache's
                vouched[rel] = (now, hashed_at, have)
        else:
            new_kept[rel] = have  # too fresh for its stats to vouch for these bytes: checked by digest next time
    # the new stats stand for these bytes in the stat cache too: else the next touch of the file, finding there
    # only the stats from before this one, could not tell its bytes, and every other touch ran the pipeline
    _vouched(root, vouched, index)
    return new_kept


def _stat_cache(root: str) -> IndexFile:
    return IndexFile(os.path.join(root, ".runner", "stat"))
