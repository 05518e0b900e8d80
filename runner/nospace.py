"""A full disk in the user's words: which errors mean no space is left (ENOSPC, EDQUOT, sqlite's SQLITE_FULL), how
the write that failed is named, and whether a failed step's outputs met a full device."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

TYPE_CHECKING = False  # the no-op imports this module: typing for mypy only (runner/noop.py says why)
if TYPE_CHECKING:
    from .errors import NoSpaceError

NO_SPACE = frozenset((errno.ENOSPC, errno.EDQUOT))
_SQLITE_FULL = 13  # "database or disk is full": an extended result code keeps it in its low byte


def is_no_space(exc: BaseException) -> bool:
    """Whether `exc` says a write found no space: a full device, a spent quota, or sqlite saying either."""
    if isinstance(exc, OSError):
        return exc.errno in NO_SPACE
    code = getattr(exc, "sqlite_errorcode", None)  # a sqlite3.Error: not imported, a run may never open sqlite
    return isinstance(code, int) and code & 0xFF == _SQLITE_FULL


def shown(path: str, root: str) -> str:
    """`path` as the user finds it from the project root (as it is when outside the project)."""
    rel = os.path.relpath(path, root)
    return path if rel == ".." or rel.startswith("../") else rel


def words(path: str, root: str) -> str:
    """What a step that could not write `path` failed with."""
    return f"no space left on the device (writing {shown(path, root)})"


def full_output(root: str, outputs: Iterable[str]) -> str | None:
    """The first of a failed step's declared outputs whose device has no block (or no inode) left: its command
    most likely failed writing there. Asked only of a failed step; a quota (EDQUOT) leaves no such trace, and its
    step's log says it in the command's own words."""
    devices: set[int] = set()
    for rel in outputs:
        folder = os.path.dirname(os.path.join(root, rel))
        try:
            device = os.stat(folder).st_dev
            if device in devices:
                continue
            devices.add(device)
            st = os.statvfs(folder)
        except OSError:
            continue  # a folder the step never made: nothing was written there
        # a filesystem that counts no blocks or no inodes (a virtual one, btrfs' inodes) is never full by that count
        if (st.f_blocks and not st.f_bavail) or (st.f_files and not st.f_favail):
            return rel
    return None


def no_space_error(exc: BaseException, root: str, started: bool = True) -> NoSpaceError | None:
    """The user's error for `exc` if it says no space was left (None otherwise): the file it names, else the
    state folder; exit 1, or 2 when nothing could start (`started` false)."""
    if not is_no_space(exc):
        return None
    from .errors import EXIT_STEP_FAILED, EXIT_USER_ERROR, NoSpaceError  # errors.py imports typing

    path = getattr(exc, "filename", None) or os.path.join(root, ".runner")
    return NoSpaceError(shown(os.fsdecode(path), root), EXIT_STEP_FAILED if started else EXIT_USER_ERROR)


@contextmanager
def nothing_started(root: str) -> Iterator[None]:
    """A full disk inside is said as the user's error, exit 2: nothing could start."""
    try:
        yield
    except Exception as exc:
        error = no_space_error(exc, root, started=False)
        if error is None:
            raise
        raise error from None


def unwritten(write: Callable[[], object], path: str) -> str | None:
    """Call `write`; `path` if it found no space left (what it wrote stays as it was: the runner's files are
    replaced whole), None when it went well."""
    try:
        write()
    except Exception as exc:
        if not is_no_space(exc):
            raise
        return path
    return None
