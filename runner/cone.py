"""Shortcuts 9 and 10 of the rule (runner/freshness.py): the edit's cone. Against the target's last proof, which
steps a run must decide (the ones downstream of what changed) and which stand as that run found them."""

from __future__ import annotations

import marshal
import time
from collections.abc import Iterable

from .keys import content_digest
from .proof import (
    Missed,
    ProofEntry,
    changed_stats,
    env_digest,
    load_proofs,
    names_of,
    proof_entry,
    stat_pieces,
    take_stats,
)


class FirstLook:
    """What the declared files looked like as a run began, against the last good run of its target."""

    __slots__ = (
        "changed",
        "differ",
        "order",
        "paths",
        "stats",
        "taken",
        "kept",
        "proofs",
        "aggregates",
        "stored",
        "edited",
    )

    def __init__(self, proofs: dict):
        self.proofs = proofs  # the proof file as read under the project lock, for record_proof
        self.changed: set[str] | None = None  # paths that differ from the proof; None: all (a spec file did)
        self.differ: set[str] | None = None  # paths that differ from the proof; None: there was none to compare
        self.order: list[str] | None = None  # the target's steps, as the last good run had them
        self.paths: list[str] | None = None  # the files the target's proof stats (proof.snapshot_paths)
        self.stats: list = []  # the stat of each of `paths` as the run began
        self.taken = 0  # when those stats were taken
        self.kept: dict[str, str] = {}  # the last proof's digests of bytes its stats could not vouch for
        self.aggregates: tuple[int, ...] = ()  # the positions of the aggregates in `order`, as the proof has them
        self.stored: tuple = ((), ())  # `paths` and `order` as the proof stores them (proof.joined)
        # the last proof, made from the compilation an edit of the spec replaced (after_edit): its entry
        self.edited: ProofEntry | None = None

    def stat_paths(self, root: str, paths: list[str] | None) -> None:
        """No usable proof: take the stats of the target's files as the run begins, for the next proof."""
        self.paths = paths
        self.taken = time.time_ns()
        self.stats = [] if paths is None else take_stats(root, paths).stats

    def after_edit(self, root: str, sources: list[str], n_spec: int, order: list[str]) -> set[str] | None:
        """After stat_paths, when the spec was edited since the last proof (`edited`): the paths that differ
        from that proof (`differ`, `changed`), and the steps of `order` it says nothing of (None: no cone, every
        step to decide). The spec files' own changes are left out of `changed`: what they changed for a step is
        in its fingerprint, which the caller compares (compiled.edited_since)."""
        if self.edited is None or self.paths is None:
            return None
        edited = self.edited
        names, values = edited.env
        if names and env_digest(names) != values:
            return None
        old_paths = names_of(edited.paths)
        try:
            old_stats = [s for piece in edited.stats_bytes for s in marshal.loads(piece)]
        except (EOFError, ValueError, TypeError):
            return None
        if len(old_stats) != len(old_paths):
            return None
        was = dict(zip(old_paths, old_stats, strict=True))
        missing = object()  # a path the last proof did not stat: differs
        differ = {rel for rel, now in zip(self.paths, self.stats, strict=True) if was.get(rel, missing) != now}
        kept = edited.kept
        differ.update(rel for rel, want in kept.items() if rel not in differ and content_digest(root, rel) != want)
        changed = _step_paths(differ, sources, n_spec)
        if changed is None:
            return None
        self.differ, self.kept, self.changed = differ, kept, changed
        old_order = set(names_of(edited.order))
        return {name for name in order if name not in old_order}


def first_look(
    root: str,
    target: str | None,
    token: str,
    sources: list[str],
    missed: Missed | None = None,
    previous: str | None = None,
    n_spec: int = 0,
) -> FirstLook:
    """Compare the declared files of `target` with its last good run's proof, made from the same compiled
    spec (`token`) and spec files (`sources`): that run's order and paths hold, and `changed` says which
    paths differ. `missed`: what a failed no-op read and took in this process, which the caller knows still
    stands (no other runner held the lock since). Without such a proof, `order` and `paths` stay None, for the
    caller to work out. `previous`: the token of the compilation this one replaced; a proof made from that one is
    kept in `edited`, for after_edit. The first `n_spec` sources are the compiled spec's own files: under the same
    token, one that differs from the proof reads as that compilation read it (it was reused by content,
    compiled._unchanged: the same bytes after a touch, the same document after a comment), so it changes no
    step; any other source (a worker's file) that differs leaves every step to decide."""
    if missed is not None and missed.root != root:
        missed = None
    checked = missed.checked if missed is not None else None
    look = FirstLook(missed.proofs if missed is not None else load_proofs(root))
    entry = proof_entry(root, look.proofs, target)
    if entry is None:
        return look
    if entry.token != token:
        if entry.token == previous:
            look.edited = entry
        return look
    if entry.n_sources != len(sources):
        return look
    if checked is not None and checked.stored_paths != entry.paths:
        checked = None  # the no-op stat'ed another proof's paths
    paths = checked.paths if checked is not None else names_of(entry.paths)
    if paths[: entry.n_sources] != sources:
        return look
    if checked is not None and checked.changed is not None and checked.stats_bytes == entry.stats_bytes:
        stats, look.taken = checked.stats, checked.taken_at  # the failed no-op compared them: not decoded twice
        changed = checked.changed
    else:
        if checked is not None:
            stats, look.taken = checked.stats, checked.taken_at
            now_bytes = stat_pieces(stats)
        else:
            look.taken = time.time_ns()
            taken = take_stats(root, paths)
            stats, now_bytes = taken.stats, taken.pieces
        found = changed_stats(entry.stats_bytes, now_bytes)
        if found is None:  # damaged: no proof, rather than half of one
            return look
        changed = found
    kept = entry.kept
    differ = {paths[i] for i, _was in changed}
    differ.update(rel for rel, want in kept.items() if rel not in differ and content_digest(root, rel) != want)
    look.order, look.paths, look.stats, look.kept, look.differ = names_of(entry.order), paths, stats, kept, differ
    look.aggregates, look.stored = entry.aggregates, (entry.paths, entry.order)
    names, values = entry.env
    env_changed = bool(names) and env_digest(names) != values  # no path shows which steps read a variable
    look.changed = None if env_changed else _step_paths(differ, sources, n_spec)
    return look


def _step_paths(differ: set[str], sources: list[str], n_spec: int) -> set[str] | None:
    """The paths of `differ` that say which steps to decide: None when a worker's file (a source past the first
    `n_spec`, the compiled spec's own) differs, since no path shows which steps read it; the spec files left out,
    since what they changed for a step is in its fingerprint (after_edit), or nothing at all under the same
    compilation (first_look)."""
    if not differ.isdisjoint(sources[n_spec:]):
        return None
    return differ.difference(sources[:n_spec])


def doubtful_steps(
    compiled, order: list[str], changed: set[str] | None, has_state, edited: Iterable[str] = ()
) -> set[str] | None:
    """The steps the rule must decide (None: all of them), given the paths `changed` since the last good run
    of this target (None if unknown): those that declare a changed path, agent steps (their key also holds
    the worker's version, which no file here shows), steps with no last result to report (aggregates), and
    everything downstream of these; `edited`: steps whose key an edit of the spec may have changed.
    Found from the changed paths out, it costs the cone, not the graph."""
    if changed is None:
        return None
    declared_by, dependants = compiled.declared_by, compiled.dependants
    pending = [name for path in changed for name in declared_by.get(path, ())]
    pending += compiled.agents.intersection(order)
    pending += [name for name in order if name not in has_state]
    pending += edited
    doubtful: set[str] = set()
    while pending:
        name = pending.pop()
        if name not in doubtful:
            doubtful.add(name)
            pending += dependants[name]
    return doubtful
