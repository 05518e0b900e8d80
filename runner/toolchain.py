"""The toolchain in a step's key: the runtime commands a step uses (its adapter's, its own), what they print (run
once a run), the files whose stats vouch that they would print the same (the proof's witness), and the wording of
a change.

A step keys on what its runtime commands print (`python3 --version`, `python3 -m pytest --version`, `node
--version`, an intent's own `runtime = ["protoc --version"]`): switching from the system interpreter to a venv, or
upgrading pytest, runs its tests again. Running them at every no-op would cost more than the no-op (`pytest
--version` is ~0.3 s), so the target's proof stats a witness instead (freshness.py, shortcut 13): for each command,
the folders of PATH up to the one holding its program, and the program itself, with PATH's value among the
variables the proof keeps. Installing, upgrading or removing a program (or pip putting a package's scripts beside
a venv's interpreter) adds, removes or replaces a file in one of those folders, which changes the folder's stats.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from .keys import digest_value

TIMEOUT = 60.0  # seconds a version command may take; past it, it has failed
_SHOWN = 120  # characters of a version's first line a reason shows


def step_commands(intent, resolved) -> tuple[str, ...]:
    """The runtime commands step `intent` keys on, each once: its adapter's (`resolved`: adapters.Resolved, or
    None) for every command (the interpreter's), those of the adapter commands it runs (a shell step's `run`,
    an agent step's `verify`), then its own `runtime`. A shell line of the intent's own that starts as one of the
    adapter's commands runs (`python3 -m pytest -q` where no uv is installed for uv.lock's `uv run pytest`) keys on
    that command's, with the vars it was matched under."""
    found: list[str] = []
    if resolved is not None:
        variants = resolved.variants
        commands = [resolved.commands.get(name) for name in intent.verify]
        if intent.run and intent.run in resolved.commands:
            commands.append(resolved.commands[intent.run])
        elif intent.run:
            matched = _started_as(resolved.adapter, intent.run, variants)
            if matched is not None:
                variants, command = matched
                commands.append(command)
        found += resolved.adapter.runtime_of(variants)
        found += [line for command in commands if command is not None for line in command.runtime]
    found += intent.runtime
    return tuple(dict.fromkeys(found))


def _started_as(adapter, line: str, variants: tuple[str, ...]):
    """(the variants, the adapter command) a shell line starts as: under the detected variants, else the base."""
    for chosen in (variants, ()):
        for name in adapter.command_names(chosen):
            command = adapter.command(name, chosen)
            if command is not None and (line == command.run or line.startswith(command.run + " ")):
                return chosen, command
    return None


def static_part(intent, resolved, parts: dict, runtimes: dict) -> None:
    """A step's "toolchain" part of its static key (the digest of its runtime commands, where they run), and in
    `runtimes` (compiled.Compiled.runtimes) what that part stands for."""
    if runtime := step_commands(intent, resolved):
        entry = entry_of(intent, runtime)
        parts["toolchain"] = entry_digest(entry)
        runtimes[parts["toolchain"]] = entry


def entry_of(intent, commands: tuple[str, ...]) -> tuple[tuple[str, ...], str, str | None]:
    """What a step's runtime commands need to run as its command does: the commands, its cwd and the PATH its
    `env` gives it (None: runner's own)."""
    path = next((value for key, value in intent.env if key == "PATH"), None)
    return commands, intent.cwd, path


def entry_digest(entry: tuple) -> str:
    return digest_value([list(entry[0]), entry[1], entry[2]])


# ---- running them ---------------------------------------------------------------------------------


class Failed(Exception):
    """A runtime command that exited with a failure, was not found, or outlived TIMEOUT."""

    def __init__(self, command: str, why: str):
        super().__init__(command, why)
        self.command = command
        self.why = why


def _printed(data: bytes) -> str:
    """A version's text as the key holds it: decoded, colour escapes out, lines stripped, blank ones dropped."""
    import re

    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", data.decode("utf-8", "replace"))
    return "\n".join(line.rstrip() for line in text.strip().splitlines() if line.strip())


class Versions:
    """What each runtime command printed in this run, run once per (command, folder, environment): a command that
    1,000 steps share runs once. A failure is kept as its text (`exit 1: No module named pytest`): an adapter's
    command whose tool is missing here keys the step on that, and the step says so when it runs; `run` raises
    Failed for the commands a caller must not key on a failure of (an intent's own).

    What a command printed is kept between runs (.runner/toolchain) with the stats of its witness taken before it
    ran, and used again while they are the same and vouch (stat_cache.vouches): a target whose globs leave it
    without a proof decides its steps at every run, and ran `python3 -m pytest --version` each time (shortcut 13's
    invariant, where the proof's rests)."""

    def __init__(self, root: str, trust_kept: bool = True):
        self.root = root
        self.trust_kept = trust_kept  # False under -B: every command runs again
        self._done: dict[tuple, tuple[str, bool]] = {}  # (command, cwd, env) -> (printed, succeeded)
        self._file = os.path.join(root, ".runner", "toolchain")
        self._kept: dict | None = None  # the file's entries: key -> (witness, stats, taken_ns, printed, succeeded)

    def run(
        self, commands: Iterable[str], cwd: str, env: Mapping[str, str], strict: Iterable[str] = ()
    ) -> list[tuple[str, str]]:
        """[(command, what it printed)] in order, the commands not run yet started side by side."""
        commands = list(commands)
        frozen = tuple(sorted(env.items()))
        todo = [c for c in dict.fromkeys(commands) if (c, cwd, frozen) not in self._done]
        if todo:
            folder = os.path.normpath(os.path.join(self.root, cwd))
            environ = {**os.environ, **env}
            todo = self._known(todo, cwd, frozen, folder, environ) if self.trust_kept else todo
        if todo:
            import time

            taken = time.time_ns()  # before the stats: a change while they are taken is inside the window
            witnesses = {c: _command_witness(c, environ.get("PATH", os.defpath), folder, environ) for c in todo}
            stats = {c: _stats(w) for c, w in witnesses.items()}
            if len(todo) == 1:
                self._done[(todo[0], cwd, frozen)] = _one(todo[0], folder, environ)
            else:
                from concurrent.futures import ThreadPoolExecutor

                with ThreadPoolExecutor(len(todo)) as pool:
                    for command, done in zip(todo, pool.map(lambda c: _one(c, folder, environ), todo), strict=True):
                        self._done[(command, cwd, frozen)] = done
            kept = self._load()
            for c in todo:
                kept[_kept_key(c, cwd, frozen, environ)] = (
                    witnesses[c],
                    stats[c],
                    taken,
                    *self._done[(c, cwd, frozen)],
                )
            _save(self._file, kept)
        strict = set(strict)
        out = []
        for command in commands:
            printed, ok = self._done[(command, cwd, frozen)]
            if not ok and command in strict:
                raise Failed(command, printed)
            out.append((command, printed))
        return out

    def _known(self, todo: list[str], cwd: str, frozen: tuple, folder: str, environ: Mapping[str, str]) -> list[str]:
        """The commands of `todo` whose output a run before kept with a witness that still vouches: their output
        taken as this run's; the others, still to run."""
        from .stat_cache import vouches

        kept = self._load()
        left = []
        for command in todo:
            entry = kept.get(_kept_key(command, cwd, frozen, environ))
            if isinstance(entry, tuple) and len(entry) == 5:
                witness, stats, taken, printed, ok = entry
                same = witness == _command_witness(command, environ.get("PATH", os.defpath), folder, environ)
                if same and stats == _stats(witness) and all(s is None or vouches(s, taken) for s in stats):
                    self._done[(command, cwd, frozen)] = (printed, ok)
                    continue
            left.append(command)
        return left

    def _load(self) -> dict:
        if self._kept is None:
            import marshal

            try:
                with open(self._file, "rb") as f:
                    loaded = marshal.loads(f.read())
            except (OSError, EOFError, ValueError, TypeError):
                loaded = {}
            self._kept = loaded if isinstance(loaded, dict) else {}
        return self._kept


def _kept_key(command: str, cwd: str, frozen: tuple, environ: Mapping[str, str]) -> tuple:
    """What a kept output stands for: the command, where and with what step env it ran, and the variables the
    witness does not show (PATH, the version managers'). The values as a digest: a step's env may hold a secret,
    which is never written."""
    shown = [list(frozen), [environ.get(n, "") for n in ("PATH", *MANAGER_VARIABLES)]]
    return (command, cwd, digest_value(shown))


def _stats(paths: list[str]) -> list:
    out: list = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    return out


def _save(path: str, kept: dict) -> None:
    from .index_file import write_marshal

    if not os.path.isdir(os.path.dirname(path)):
        return  # a command that only reads leaves no .runner behind
    try:
        write_marshal(path, kept)
    except OSError:
        pass  # a read-only state folder: the commands run again next time


def _one(command: str, folder: str, environ: Mapping[str, str]) -> tuple[str, bool]:
    import subprocess

    try:
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            cwd=folder,
            env=dict(environ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"did not finish within {TIMEOUT:.0f} s", False
    except OSError as exc:
        return f"could not start: {exc.strerror}", False
    printed = _printed(done.stdout)
    if done.returncode != 0:
        last = printed.splitlines()[-1] if printed else "no output"
        return f"exit {done.returncode}: {last}", False
    return printed, True


def runtime_failed(spec, name: str, index: int, command: str, why: str):
    """The error for a runtime command of an intent's own that failed: where it is declared, what it said."""
    from .errors import UsageError
    from .load import located, toml_path

    where = toml_path(["intent", name, "runtime", index])
    problem = located(spec, [(where, "", None)])[0]
    at = f"{problem.file}:{problem.line}" if problem.line else problem.file
    return UsageError(
        f"error: {at}: {where}: '{command}' failed ({why}); step {name} keys on what it prints: install the "
        "tool it names, or fix the command"
    )


# ---- the witness ----------------------------------------------------------------------------------


def _program(command: str) -> str | None:
    """The program a shell line starts (past `NAME=value` assignments), or None when it cannot be told."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for word in words:
        if "=" in word and not word.startswith("=") and word.split("=", 1)[0].isidentifier():
            continue
        return word
    return None


def _resolution(program: str, path: str, folder: str) -> list[str]:
    """The files and folders whose stats say where `program` resolves and what it is: each folder of PATH searched
    up to the one holding it (a program put in an earlier one would be found first), then the program."""
    if "/" in program:
        return [os.path.normpath(os.path.join(folder, program))]
    seen = []
    for entry in path.split(os.pathsep):
        place = os.path.normpath(os.path.join(folder, entry or "."))
        seen.append(place)
        candidate = os.path.join(place, program)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            seen.append(candidate)
            real = os.path.realpath(candidate)  # a venv's python3 is a link to its base interpreter, whose folder
            seen.append(os.path.dirname(real))  # gets the scripts of what pip installs there
            break
    return seen


# what a version manager's shims and proxies (pyenv, nodenv, asdf, rustup) read to pick a version: the files in
# the folder a command runs in and its parents, the global choice in the home folder, and the variables (in the
# proof's env, MANAGER_VARIABLES)
_PICKED_BY = (".python-version", ".node-version", ".tool-versions", "rust-toolchain", "rust-toolchain.toml")
MANAGER_VARIABLES = ("PYENV_VERSION", "NODENV_VERSION", "RUSTUP_TOOLCHAIN")


def _manager_files(folder: str, environ: Mapping[str, str]) -> list[str]:
    home = environ.get("HOME", os.path.expanduser("~"))
    found = []
    while True:
        found += [os.path.join(folder, name) for name in _PICKED_BY]
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    found.append(os.path.join(environ.get("PYENV_ROOT", os.path.join(home, ".pyenv")), "version"))
    found.append(os.path.join(environ.get("NODENV_ROOT", os.path.join(home, ".nodenv")), "version"))
    found.append(os.path.join(home, ".tool-versions"))
    found.append(os.path.join(environ.get("RUSTUP_HOME", os.path.join(home, ".rustup")), "settings.toml"))
    return found


def witness(root: str, entries: Iterable[tuple], environ: Mapping[str, str] | None = None) -> list[str]:
    """The paths the proof stats for the runtime commands of `entries` (entry_of): each once, in a fixed order."""
    from .spec import expand_env

    environ = os.environ if environ is None else environ
    found: list[str] = []
    for commands, cwd, path_template in entries:
        try:
            path = environ.get("PATH", os.defpath) if path_template is None else expand_env(path_template, environ)
        except KeyError:
            continue  # a variable it reads is not set: the run says so before anything runs
        folder = os.path.normpath(os.path.join(root, cwd))
        for command in commands:
            found += _command_witness(command, path, folder, environ)
    return list(dict.fromkeys(found))


def _command_witness(command: str, path: str, folder: str, environ: Mapping[str, str]) -> list[str]:
    """One command's witness: where its program resolves, and what a version manager would read."""
    program = _program(command)
    return (_resolution(program, path, folder) if program else []) + _manager_files(folder, environ)


# ---- wording --------------------------------------------------------------------------------------


def _first(text: str | None) -> str:
    line = (text or "").splitlines()[0] if text else "nothing"
    # a long line keeps its end, where a failure says what is wrong (`...: No module named pytest`)
    return line if len(line) <= _SHOWN else line[:40] + "..." + line[43 - _SHOWN :]


def changed(before: Mapping[str, str] | None, now: Mapping[str, str]) -> str:
    """`toolchain changed: python3 -m pytest --version: pytest 9.0.3 -> pytest 9.2.0` (each command whose output
    differs; a record made before runner keyed on the toolchain says so)."""
    if before is None:
        return "toolchain changed: its versions were not recorded before"
    moves = [
        f"{command}: {_first(before.get(command)) if command in before else '(not run)'} -> {_first(printed)}"
        for command, printed in now.items()
        if before.get(command) != printed
    ]
    moves += [f"{command}: no longer run" for command in before if command not in now]
    return "toolchain changed: " + "; ".join(moves) if moves else "toolchain changed"
