"""What a finished step left in the project, for the scheduler: its outputs read and hashed (or a hermetic step's
restored from the cache), a failed step's removed, and the decision to run a step whose cached copy is gone."""

from __future__ import annotations

import os

from .confine import Folders, Refused, record_refusal, remove
from .globs import expand
from .keys import digest_bytes
from .names import split
from .plan import RUN, Decision, Planner


def hash_outputs(planner: Planner, folders: Folders, name: str) -> tuple[dict[str, str], dict[str, bytes], str | None]:
    """(path -> digest, digest -> bytes, what is wrong with the first output not produced or leading out of the
    project, or out of its sub-project's folder): each output is read once, never through a link out
    (confine.Folders.read)."""
    outputs, datas = {}, {}
    folder = split(name)[0]  # a sub-project's step: its outputs are read only inside its folder
    for rel in expand(planner.spec.root, planner.spec.intents[name].outputs):
        try:
            st, data = folders.read(rel, folder)
        except (FileNotFoundError, IsADirectoryError):
            return {}, {}, f"declared output {rel} was not produced"
        except Refused as exc:
            return {}, {}, f"declared output {rel} {exc}"
        digest = digest_bytes(data)
        planner.stat.remember(rel, st, digest, name)
        outputs[rel] = digest
        datas[digest] = data
    return outputs, datas, None


def restore_produced(planner: Planner, name: str, produced: dict[str, str]) -> tuple[dict[str, str], dict, str | None]:
    """A hermetic step's outputs written into the project from the cache (which reads through to the remote,
    checking each digest), atomically: as hash_outputs, with the blobs already stored."""
    root = planner.spec.root
    if refused := record_refusal(root, planner.spec.intents[name], produced):  # as any record: runner/confine.py
        return {}, {}, f"the worker's outputs refused: {refused}"
    for rel, digest in produced.items():
        try:
            if not planner.cache.restore(digest, root, rel, split(name)[0]):
                return {}, {}, f"declared output {rel} was not produced"
        except Refused as exc:
            return {}, {}, f"declared output {rel} not restored: it {exc}"
        planner.stat.remember(rel, os.stat(os.path.join(root, rel)), digest, name)  # the bytes just checked
    return dict(produced), {}, None


def remove_outputs(root: str, patterns, folder: str = "") -> None:
    """A step's declared outputs gone: never a half-written output left behind. A sub-project's step's (`folder`)
    are walked from its folder, so no link takes the removal out of it (another sub-project's files, the root's)."""
    for rel in expand(root, tuple(patterns)):
        if not folder or rel.startswith(f"{folder}/"):
            remove(root, rel, folder)  # never through a link out of the project (or its folder), nor a folder


def damaged_copy(decision: Decision, why: str | None = None) -> Decision:
    """The RUN decision for a step whose cached outputs could not be restored."""
    paths = ", ".join(decision.restore)
    return Decision(
        decision.intent,
        RUN,
        [why or f"the cached copy of {paths} is gone or damaged"],
        key=decision.key,
        inputs=decision.inputs,
        dep_digests=decision.dep_digests,
        inplace=decision.inplace,
        seen=decision.seen,
    )
