"""State under .runner/ that a disk or a person damaged, as the user's error: what stands where, and the command that
mends it. The caches of something else (the stat cache, the state index, the compiled spec, the proofs, the cache
database, the lock nobody holds) mend themselves where they are read and written; what reaches here is state the
runner cannot rebuild (the run records, the journals, an agent intent's versions) or cannot reach at all."""

from __future__ import annotations

import errno
import os

from .nospace import no_space_error

TYPE_CHECKING = False  # the no-op imports this module: typing for mypy only (runner/noop.py says why)
if TYPE_CHECKING:
    from .errors import UserError

STATE_DIR = ".runner"  # workspace.STATE_DIR (workspace imports this module)


def clear(path: str) -> None:
    """Remove what stands at `path` (a file, a link, a folder and all it holds), so the runner's own file can be
    written there again: only ever a path under .runner/ that the runner owns."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        import shutil  # here: it loads zlib, bz2 and lzma, which a no-op never needs

        shutil.rmtree(path)


def as_users_error(exc: BaseException, root: str) -> BaseException:
    """`exc` as the user's error when it says the disk is full, or names a path under `root`/.runner that is not
    what the runner keeps there (a folder for a file, a file for a folder) or that this user may not use; else
    `exc` itself."""
    full = no_space_error(exc, root)
    if full is not None:
        return full
    if not isinstance(exc, OSError) or not exc.filename:
        return exc
    state = os.path.join(root, STATE_DIR)
    # a rename names two paths, and the one in the way is the target (a folder where a version's copy goes) as
    # often as the source: each is judged, the target first
    named = (os.path.abspath(os.fsdecode(n)) for n in (exc.filename2, exc.filename) if n)
    paths = [path for path in named if path == state or path.startswith(state + os.sep)]
    if not paths:
        return exc
    if exc.errno == errno.EROFS:
        return read_only(root)
    if isinstance(exc, PermissionError):
        denied = next((at for path in paths for at in _down_to(state, path) if not _usable(at)), paths[-1])
        return unusable(denied, root, exc.strerror or "Permission denied")
    if exc.errno in (errno.ENOTDIR, errno.EISDIR, errno.EEXIST):
        return next(filter(None, (misplaced(path, state, root, exc.errno) for path in paths)), exc)
    return exc


def _down_to(state: str, path: str) -> list[str]:
    """.runner, then each path from it down to `path` (under it)."""
    chain = [state]
    if path != state:
        for part in os.path.relpath(path, state).split(os.sep):
            chain.append(os.path.join(chain[-1], part))
    return chain


def _usable(path: str) -> bool:
    """This user may read and write `path` (a folder: and walk into it); one that is not there is not in the way."""
    if not os.path.lexists(path):
        return True
    return os.access(path, os.R_OK | os.W_OK | (os.X_OK if os.path.isdir(path) else 0))


def shown(path: str, root: str) -> str:
    return os.path.relpath(path, root)


def unusable(path: str, root: str, why: str) -> UserError:
    """`path` under .runner/ that this user may not read or write (another user's, a `sudo runner make`'s)."""
    import pwd

    from .errors import UserError

    user = pwd.getpwuid(os.geteuid()).pw_name
    return UserError(
        f"error: {shown(path, root)} cannot be read or written ({why}): give .runner back to {user} "
        f"(`sudo chown -R {user} .runner && sudo chmod -R u+rwX .runner`), then run again"
    )


def read_only(root: str) -> UserError:
    """.runner/ on a file system mounted read-only: runner keeps its state beside the project."""
    from .errors import UserError

    return UserError(
        f"error: {shown(os.path.join(root, STATE_DIR), root)} cannot be written: the file system it is on is mounted "
        "read-only; run runner on a writable copy of the project, or mount it read-write"
    )


def misplaced(path: str, state: str, root: str, code: int | None) -> UserError | None:
    """The user's error for the first path from .runner down to `path` that is a file where the runner keeps a
    folder, or for `path` itself when `code` (the errno) says a folder stands where the runner keeps a file; None
    when neither is so."""
    from .errors import UserError

    for at in _down_to(state, path):
        if (at != path or code != errno.EISDIR) and os.path.lexists(at) and not os.path.isdir(at):
            where = shown(at, root)
            return UserError(
                f"error: {where} is a file, where runner keeps a folder: move it away (`mv {where} {where}.damaged`), "
                "then run again"
            )
    if code == errno.EISDIR and os.path.isdir(path):
        where = shown(path, root)
        return UserError(
            f"error: {where} is a folder, where runner keeps a file: remove it (`rm -r {where}`), then run again"
        )
    return None
