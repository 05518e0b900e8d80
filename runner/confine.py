"""Where a step may write: inside the project, never its root, .git/ or .runner/, nor through a link that leads out.

One rule for every place that could break it: the spec's paths (load.py), a shell step's start and the outputs
read after it (execute.py), and what a record from the cache database, the shared cache or a hermetic worker may
restore (only the outputs its step declares). Writes and removals walk the project's folders from its root one
name at a time with O_NOFOLLOW, following a link only while it stays inside, so a link swapped in after a check
cannot carry them out of the project. A sub-project's step is kept to its own folder the same way: its start,
its outputs read after it (Folders.fence), their removal and their restore (walked from its folder, `within`);
what it reads of another sub-project's declared files, before it starts, to the folder they lie in.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .globs import GLOB_CHARS, expand, matches
from .names import split
from .spec import STEP_SHELL, Intent

if TYPE_CHECKING:
    from .ignore import IgnoreRules

# .git anywhere (a nested checkout's too: its hooks run code), .runner at the project's top
PROTECTED = {".git": "git's own folder", ".runner": "the runner's own folder"}
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_LINKS = 40  # links followed on one path, as the kernel allows before ELOOP
_DIGEST = re.compile(r"[0-9a-f]{64}")

# what any of the checks below looks for, besides a leading /: \, :, .., ** or [ (one search, not five)
_GLOB_SUSPECTS = re.compile(r"\\|:|\.\.|\*\*|\[")
NAME_MAX = 255  # bytes in one file name (Linux, macOS)
PATH_MAX = 4096  # bytes in a path (Linux)


class Refused(Exception):
    """A path no step may write there: the message says why, as a clause after the path."""


def check_glob(pattern: str) -> str | None:
    """Why a path pattern is unusable, or None."""
    short = len(pattern) <= NAME_MAX // 4 or (len(pattern) <= NAME_MAX and pattern.isascii())  # <= NAME_MAX bytes
    if short and not pattern.startswith("/") and _GLOB_SUSPECTS.search(pattern) is None:
        return None  # the common case, decided without splitting: a spec may hold 30,000 patterns
    if pattern.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", pattern):
        return "must be relative to the project root, not absolute"
    parts = pattern.replace("\\", "/").split("/")
    if ".." in parts:
        return "must not leave the project root ('..')"
    if len(pattern.encode()) > PATH_MAX:
        return f"is {len(pattern.encode())} bytes long; a path holds at most {PATH_MAX}"
    longest = max(parts, key=lambda part: len(part.encode()))
    if len(longest.encode()) > NAME_MAX:
        return f"has a name of {len(longest.encode())} bytes; a file name holds at most {NAME_MAX}"
    for part in parts:
        if "**" in part and part != "**":
            return "puts '**' inside a name: '**' must stand alone between slashes, as in src/**/*.py"
    depth = 0
    for ch in pattern:
        if ch == "[":
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
    if depth:
        return "has an unclosed '[' (write [[] to match a literal '[')"
    return None


def output_problem(pattern: str) -> str | None:
    """Why no step may write what an output (a pattern, or a path a record names) names: the project root, or
    something in .git/ or .runner/ (a glob part that could match one too); None."""
    names = [part for part in pattern.split("/") if part not in ("", ".")]
    if not names:
        return "names the project root, not a file a step writes"
    for i, part in enumerate(names):
        if part[0] != ".":
            continue  # only a part starting with '.' names or matches a hidden name (runner/globs.py)
        for place, whose in PROTECTED.items():
            if (i == 0 or place == ".git") and matches(place, part):
                if GLOB_CHARS.isdisjoint(part):
                    return f"must stay out of {place}/, {whose}"
                return f"could name {place}/, {whose}: name the hidden files it writes instead"
    return None


def record_refusal(root: str, intent: Intent, outputs: object) -> str | None:
    """Why a record's outputs (path -> digest, from the cache database, the shared cache or a hermetic worker)
    must not be restored for `intent`, or None. Each path must be one the step declares (a literal output, or
    one its globs match), with a digest, and land, links followed, on a file (or nothing) inside the project,
    out of .git/ and .runner/. A shell step's record names each literal output it declares, with its digest:
    a run that left one out failed, so no record of it lacks one (an agent's change may leave one unwritten)."""
    if not isinstance(outputs, Mapping):
        return "its outputs are not a map of paths to digests"
    shell = intent.kind == STEP_SHELL
    declared = intent.outputs
    for rel, digest in outputs.items():
        why = path_problem(rel)
        if why is None and not any(matches(rel, pattern) for pattern in declared):
            why = "is not one of the step's declared outputs"
        valid = _DIGEST.fullmatch(digest) is not None if isinstance(digest, str) else digest is None and not shell
        if why is None and not valid:
            why = "has no valid digest"
        if why is None:
            why = _landing(root, rel)
        if why is not None:
            return f"{shown(rel)} {why}"
    if shell:
        for pattern in declared:
            if GLOB_CHARS.isdisjoint(pattern) and pattern not in outputs:
                return f"it does not name the declared output {shown(pattern)}"
    return None


def refused_record(planner, name: str, key: str, outputs: object) -> str | None:
    """record_refusal for the record found under `key` for step `name`, counted by the cache (and the remote,
    when it came from there) and worded as the step's reason to run."""
    why = record_refusal(planner.root, planner.spec.intents[name], outputs)
    if why is None:
        return None
    why = f"cached record refused: {why}"
    planner.cache.refuse(key, name, why)
    return why


def shown(path: object) -> str:
    """A path from elsewhere in a message: quoted, printable (a hostile name holds no escape codes), cut short."""
    text = path if isinstance(path, str) and path.isprintable() else repr(path).strip("'\"")
    return f"'{text}'" if len(text) <= 120 else f"'{text[:100]}...' ({len(text)} characters)"


def path_problem(rel: object) -> str | None:
    """Why a path a record names is no project path a step may write, before looking at the disk (the shared
    cache's first look at a record, runner/stores/remote.py, and record_refusal's); None."""
    if not isinstance(rel, str) or not rel or "\0" in rel:
        return "is not a path"
    if rel.startswith("/"):
        return "is absolute"
    if ".." in rel.split("/"):
        return "leaves the project ('..')"
    return output_problem(rel)


def _landing(root: str, rel: str) -> str | None:
    """Why `rel`, as the disk stands now, is no place to restore a file to: it leads out of the project, or into
    .git/ or .runner/, once links are followed, or a folder (or anything but a file) stands there."""
    real = os.path.realpath(os.path.join(root, rel))
    why = _outside(os.path.realpath(root), real)
    if why is not None:
        return why
    try:
        mode = os.stat(real).st_mode
    except OSError:
        return None  # nothing there: restored as a new file
    if stat.S_ISDIR(mode):
        return "is a folder in this project"
    return None if stat.S_ISREG(mode) else "is not a regular file in this project"


def _outside(real_root: str, real: str) -> str | None:
    """Why the real path `real` is no place for a step's file: outside the project, or in .git/ or .runner/."""
    top = real_root.rstrip("/") + "/"
    if real == real_root:
        return None
    if not real.startswith(top):
        return f"leads outside the project once links are followed (to {real})"
    names = real[len(top) :].split("/")
    for place, whose in PROTECTED.items():
        if names[0] == place or (place == ".git" and place in names):
            return f"leads into {place}/, {whose}, once links are followed"
    return None


class Folders:
    """Where a project's paths lead once links are followed, each folder worked out once (a spec names a few
    folders for thousands of outputs): the spec's check, and a run's checks of each shell step before it starts
    (folders as the run first saw them) and of each output read after it (what was opened, looked at each time).
    A sub-project's step is also kept to its own folder (`fence`), as the spec's check of it keeps it."""

    def __init__(self, root: str, subprojects: tuple[tuple[str, str | None], ...] = (), within: str | None = None):
        self.root = root
        # the sub-projects' folders (Spec.subprojects): which one's folder a file one reads of another's lies in
        self.subprojects = tuple(folder for folder, _default in subprojects)
        self.real = os.path.realpath(root)
        self.within = within  # a sub-project's fence: its folder as messages name it; only leaving it counts
        self._seen: dict[str, str | None] = {}
        self._fences: dict[str, Folders] = {}
        self._ignore: IgnoreRules | None = None  # what git ignores, read once, for `reached`

    def _why(self, real: str) -> str | None:
        if self.within is None:
            return _outside(self.real, real)
        if real == self.real or real.startswith(self.real.rstrip("/") + "/"):
            return None
        return f"leads outside {self.within} once links are followed (to {real})"

    def fence(self, folder: str) -> Folders:
        """Where the paths of the sub-project in `folder` lead, relative to its folder, worked out once a run (its
        folder's own links followed too): only leaving that folder counts."""
        found = self._fences.get(folder)
        if found is None:
            found = self._fences[folder] = Folders(os.path.join(self.root, folder), within=f"{folder}/")
        return found

    def folder(self, folder: str) -> str | None:
        """Why project folder `folder` (its part that exists) leads out of the project, or into .git/ or .runner/,
        once links are followed; None."""
        try:
            return self._seen[folder]
        except KeyError:
            if "\0" in folder:
                return None  # no path at all: the spec's check of NUL characters says so (load.py)
            why = self._seen[folder] = self._why(os.path.realpath(os.path.join(self.root, folder)))
            return why

    def output(self, pattern: str, fence: Folders | None = None, cut: int = 0) -> str | None:
        """Why an output pattern leads out (or into .git/ or .runner/): the folder it names up to its first
        wildcard, or, for a literal path, the file itself when it is a link; None. With `fence`, the sub-project's
        whose folder is the first `cut` characters of the pattern: why it leads out of that folder."""
        if not GLOB_CHARS.isdisjoint(pattern):
            parts = pattern.split("/")
            end = next(i for i, part in enumerate(parts) if not GLOB_CHARS.isdisjoint(part))
            folder = "/".join(parts[:end])
            why = self.folder(folder) if end else None
            return why if why is not None or fence is None else fence.folder(folder[cut:])
        folder = pattern.rpartition("/")[0]  # a literal path: its folder, then the file itself if it is a link
        why = self.folder(folder) if folder else None
        if why is None and fence is not None:
            why = fence.folder(folder[cut:])
        if why is None and "\0" not in pattern:
            try:
                if stat.S_ISLNK(os.lstat(os.path.join(self.root, pattern)).st_mode):
                    real = os.path.realpath(os.path.join(self.root, pattern))
                    why = self._why(real)
                    if why is None and fence is not None:
                        why = fence._why(real)
            except OSError:
                pass  # not there yet: nothing to lead anywhere
        return why

    def before_start(self, intent: Intent) -> str | None:
        """Why a shell step must not start: its cwd or one of its outputs leads out of the project (or into .git/
        or .runner/), or a sub-project's out of its folder, once links are followed, through a link made since
        the spec was checked; None."""
        folder = split(intent.name)[0]
        fence = self.fence(folder) if folder else None
        cut = len(folder) + 1  # a sub-project's paths, made the root's, all start with its folder (subprojects.py)
        if intent.cwd != "." and (why := self.folder(intent.cwd)) is not None:
            return f"its folder (cwd) {shown(intent.cwd)} {why}: a step runs only inside the project (remove the link)"
        if fence is not None and (why := fence.folder(intent.cwd[cut:])) is not None:
            return (
                f"its folder (cwd) {shown(intent.cwd)} {why}: a step of {folder}/ runs only inside its folder "
                "(remove the link)"
            )
        for pattern in intent.outputs:
            why = self.output(pattern, fence, cut)
            if why is not None:
                whose = "a step writes only inside the project"
                if fence is not None and why.startswith(f"leads outside {folder}/ "):
                    whose = f"a step of {folder}/ writes only inside its folder"
                return f"output {shown(pattern)} {why}: {whose} (remove the link, or declare another output)"
        return None if fence is None else self.read_of_another(intent, folder)

    def read_of_another(self, intent: Intent, folder: str) -> str | None:
        """Why a step of the sub-project in `folder` must not start: an input of another's files (a dependency's
        declared file, runner/subprojects.py) leads out of the folder it lies in, through a link made since the
        spec was checked; None."""
        for pattern in intent.inputs:
            if pattern.startswith(folder + "/"):
                continue
            why = self.reached(pattern, intent.exclude)
            if why is not None:
                return (
                    f"input {shown(pattern)} {why}: a step of {folder}/ reads another's files only where they lie "
                    "(remove the link)"
                )
        return None

    def reached(self, pattern: str, exclude: tuple[str, ...] = ()) -> str | None:
        """Why what an input of another's files names leads out of the folder it lies in (the innermost
        sub-project's holding it, else the project) once links are followed, as a clause; None. The folder it
        names up to its first wildcard, a literal file that is a link, and each link its expansion follows (less
        `exclude` and what git ignores, as the step's own expansion leaves them out) are looked at."""
        owner = max((f for f in self.subprojects if pattern.startswith(f + "/")), key=len, default="")
        fence = self.fence(owner) if owner else None
        why = self.output(pattern, fence, len(owner) + 1)
        if why is not None or GLOB_CHARS.isdisjoint(pattern):
            return why
        if self._ignore is None:
            from .ignore import IgnoreRules

            self._ignore = IgnoreRules(self.root)
        followed: list[str] = []
        expand(self.root, (pattern,), self._ignore, exclude, links=followed)
        for rel in followed:
            real = os.path.realpath(os.path.join(self.root, rel))
            why = self._why(real) or (fence._why(real) if fence is not None else None)
            if why is not None:
                return f"goes through {shown(rel)}, which {why}"
        return None

    def read(self, rel: str, folder: str = "") -> tuple[os.stat_result, bytes]:
        """An output's stat and bytes from one open, as it is after its step: its size tells how much to read (a
        small output costs open, fstat, readlink, read and close), the stat is the opened file's own, and what
        was opened is where the kernel says it is (/proc/self/fd), so a link out of the project, or out of the
        folder of the sub-project whose step it is (`folder`), is never read (Refused). A folder raises
        IsADirectoryError, as absence raises FileNotFoundError."""
        fd = os.open(os.path.join(self.root, rel), os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)  # a FIFO: no wait
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                if stat.S_ISDIR(st.st_mode):
                    raise IsADirectoryError(errno.EISDIR, "a folder", rel)
                raise Refused("is not a regular file (a step's outputs are files)")
            try:
                real = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:  # no /proc: the path's own resolution
                real = os.path.realpath(os.path.join(self.root, rel))
            why = self._why(real)
            if why is None and folder:
                why = self.fence(folder)._why(real)
            if why is not None:
                raise Refused(why)
            data = os.read(fd, st.st_size + 1)
            if len(data) > st.st_size or len(data) >= 0x7FFFF000:  # grown since, or one read's cap (2 GiB): the rest
                parts = [data]
                while chunk := os.read(fd, 1 << 24):
                    parts.append(chunk)
                data = b"".join(parts)
            return st, data
        finally:
            os.close(fd)


def _start(root: str, rel: str, sub: str) -> tuple[str, list[str], str, str | None]:
    """Where a walk to project path `rel` starts, the folder names it then takes, the file's name, and the folder it
    must not leave: a path of a sub-project's step (`sub`, its folder) from that folder, any other from the root."""
    within = None
    if sub and rel.startswith(f"{sub}/"):
        root, rel, within = os.path.join(root, sub), rel[len(sub) + 1 :], f"{sub}/"
    *parts, name = rel.split("/")
    return root, parts, name, within


def write(root: str, rel: str, data: bytes, sub: str = "") -> None:
    """Put `data` at project path `rel` atomically: a temporary file beside it, synced, then renamed over it (a
    link standing there is replaced, never written through). The folder is opened as _open_folder does, missing
    ones made. Refused: a link on the way leads out of the project or into .git/ or .runner/ (or out of `sub`, the
    folder of the sub-project whose step's output it is), a file stands where a folder should, or a folder stands
    where the file goes."""
    root, parts, name, within = _start(root, rel, sub)
    folder, at_root = _open_folder(root, parts, create=True, within=within)
    try:
        _final(name, at_root)
        tmp = f".{name}.runner-{os.getpid()}-{time.monotonic_ns()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=folder)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException as exc:
            try:
                os.unlink(tmp, dir_fd=folder)
            except OSError:
                pass
            if isinstance(exc, IsADirectoryError):
                raise Refused("is a folder in this project") from None
            raise
    finally:
        os.close(folder)


def remove(root: str, rel: str, sub: str = "") -> None:
    """Delete project file `rel` (a link itself, never what it points to; never a folder) through folders opened
    as _open_folder does: a failed step's outputs. Gone already, a folder, or out of reach: left as it is. `sub`:
    as write's."""
    root, parts, name, within = _start(root, rel, sub)
    try:
        folder, at_root = _open_folder(root, parts, create=False, within=within)
    except (Refused, OSError):
        return
    try:
        _final(name, at_root)
        os.unlink(name, dir_fd=folder)
    except (Refused, OSError):
        pass
    finally:
        os.close(folder)


def _final(name: str, at_root: bool) -> None:
    """Refuse a last name that is no file's: empty, '.', '..', or .git / .runner where they are protected."""
    if name in ("", ".", ".."):
        raise Refused("names no file")
    if name == ".git" or (name == ".runner" and at_root):
        raise Refused(f"must stay out of {name}/, {PROTECTED[name]}")


def _open_folder(root: str, parts: list[str], create: bool, within: str | None = None) -> tuple[int, bool]:
    """An open descriptor of the project folder that `parts` name, and whether that is the root itself. Each
    folder is opened from the one above it with O_NOFOLLOW, so the kernel follows no link; a link met on the way
    is read and followed here while it stays inside the project, and one leading out of it (or into .git/ or
    .runner/) is Refused. With `create`, a missing folder is made where the walk stands (os.mkdir with dir_fd,
    never through a link). `within`: `root` is that sub-project's folder (as messages name it), whose walk
    stays inside it; its own top holds no .runner/ of the runner's."""
    place = within or "the project"
    fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
    names: list[str] = []  # the folders open below the root, as the disk names them
    todo = parts[::-1]
    links = 0
    via = "'..' above its root"  # the last link followed, for the words of a '..' that climbs out through it
    try:
        while todo:
            name = todo.pop()
            if name in ("", "."):
                continue
            where = "/".join([*names, name])
            if name == "..":
                if not names:
                    raise Refused(f"leads outside {place} once links are followed ({via})")
                os.close(fds.pop())
                names.pop()
                continue
            if name == ".git" or (name == ".runner" and not names and within is None):
                raise Refused(f"leads into {name}/, {PROTECTED[name]}")
            entered = _enter(fds[-1], name, create, where)
            if isinstance(entered, int):
                fds.append(entered)
                names.append(name)
                continue
            links += 1
            via = f"{where} -> {entered}"
            if links > _MAX_LINKS:
                raise Refused(f"cannot be reached: too many links on the way ({where})")
            if entered.startswith("/"):
                inside = _within(root, entered)
                if inside is None:
                    raise Refused(f"leads outside {place} once links are followed ({where} -> {entered})")
                while len(fds) > 1:
                    os.close(fds.pop())
                names.clear()
                todo.extend(inside.split("/")[::-1])
            else:
                todo.extend(entered.split("/")[::-1])
        return fds.pop(), not names and within is None
    finally:
        for fd in fds:
            os.close(fd)


def _enter(folder: int, name: str, create: bool, where: str) -> int | str:
    """The folder `name` in the open `folder`, opened without following a link (made first when missing, with
    `create`), or the target of the link that stands there."""
    for made in (False, True):
        try:
            return os.open(name, _FOLDER, dir_fd=folder)
        except FileNotFoundError:
            if not create or made:
                raise
            try:
                os.mkdir(name, 0o777, dir_fd=folder)
            except FileExistsError:
                pass  # made meanwhile: the open again says what it is
        except OSError as exc:
            if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                raise
            try:
                return os.readlink(name, dir_fd=folder)
            except OSError:
                raise Refused(f"cannot be written: {where} is a file, not a folder") from None
    raise AssertionError("unreachable: the second open returned or raised")


def _within(root: str, target: str) -> str | None:
    """An absolute link target as a path from the project root ('' for the root), if it names a place inside
    the project (by the root's path as given or as the kernel resolves it); None."""
    for top in {root.rstrip("/"), os.path.realpath(root).rstrip("/")}:
        if target == top:
            return ""
        if target.startswith(top + "/"):
            return target[len(top) + 1 :]
    return None
