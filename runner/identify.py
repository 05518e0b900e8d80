"""Which families read a log: those its command names, and every test runner whose identifying lines it holds.

A log from `npm test`, `make test`, `tox`, a plain `run` line or a saved file names no test runner: what it runs is
only known from what it printed (jest's `Test Suites:` line, pytest's `test session starts`, go's `=== RUN`). Each
family may declare such lines (`identify = [...]` in regexes/FAMILY.toml); a family a log identifies is read beside
the ones its command declares, ahead of the generic ones (diagnostics, causes), whose causes and locations rank
last.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .parse import Family, Library, LineSet

GENERIC = ("diagnostics", "causes")  # what any log is read with: they come after the tools' own families


def identified(library: Library, text: str) -> list[str]:
    """The families whose identifying lines the log holds, in the library's order (one pass over the text)."""
    from .findings import clean_log

    held: tuple[LineSet, list[str]] | None = getattr(library, "_identify", None)
    if held is None:  # every family's identifying regexes as one RE2 set, made once per library
        from .parse import LineSet

        owners = [name for name, fam in library.families.items() for _rx in fam.identify]
        held = (LineSet("(?m)" + rx for fam in library.families.values() for rx in fam.identify), owners)
        library._identify = held  # type: ignore[attr-defined]
    found, owners = held
    if not owners:
        return []
    hits = set(found.match(clean_log(text)))
    return list(dict.fromkeys(owners[k] for k in sorted(hits)))


def read_with(library: Library, names: list[str] | tuple[str, ...], text: str) -> list[str]:
    """The names of the families to read a log with: the declared ones, and those the log identifies, placed
    before the generic families."""
    names = [n for n in names if n in library.families]
    extra = [n for n in identified(library, text) if n not in names]
    if not extra:
        return names
    at = next((i for i, n in enumerate(names) if n in GENERIC), len(names))
    return names[:at] + extra + names[at:]


def families(library: Library, names: list[str] | tuple[str, ...], text: str) -> list[Family]:
    """read_with's families themselves."""
    return [library.family(n) for n in read_with(library, names, text)]


# ---------------------------------------------------------------------------------------------------------------
# A plain `run` line's own family: named after the tool it runs, so that what `runner learn` makes for its output
# is read wherever that tool runs (regexes/NAME.toml, made by the learning pass with its first pattern).

_PRELUDE = {"cd", "export", "set", "source", ".", "echo", "mkdir", "rm", "true", "cp", "mv", "touch", "unset"}
_WRAPPERS = {"npx", "pnpx", "bunx", "uvx", "exec", "time", "nice", "env", "sudo", "xargs", "command", "timeout"}
_RUNNERS = {
    "uv": "run",
    "poetry": "run",
    "pipenv": "run",
    "pdm": "run",
    "hatch": "run",
    "bundle": "exec",
    "pipx": "run",
}
_INTERPRETERS = {"python", "python3", "py", "node", "bash", "sh", "zsh", "dash", "ruby", "perl", "php", "deno", "bun"}
_TASKS = {"npm", "yarn", "pnpm", "make", "just", "rake", "task"}  # their first word names the task they run


def tool_name(run: str) -> str | None:
    """The tool a shell line runs, as a family name: `python3 -m unittest -v` -> unittest, `node --test` ->
    node-test, `shellcheck scripts/*.sh` -> shellcheck, `./scripts/check.sh` -> check, `npm run lint` ->
    npm-lint; None for a line that names no program."""
    import re
    import shlex

    for part in re.split(r"&&|\|\||;|\|", run):
        try:
            words = shlex.split(part)
        except ValueError:
            words = part.split()
        words = [w for w in words if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w)]
        while words and (words[0] in _WRAPPERS or (words[0] == "timeout" and len(words) > 1)):
            words = words[1:]
            while words and (words[0].startswith("-") or words[0][:1].isdigit()):
                words = words[1:]  # a wrapper's own options and arguments (timeout 60, nice -n 5)
        if not words or words[0] in _PRELUDE:
            continue
        program = words[0].rsplit("/", 1)[-1]
        rest = words[1:]
        if _RUNNERS.get(program) and rest[:1] == [_RUNNERS[program]]:
            return tool_name(" ".join(shlex.quote(w) for w in rest[1:]))
        base = re.sub(r"\d+(?:\.\d+)*$", "", program)
        if base in _INTERPRETERS:
            if rest[:1] == ["-m"] and len(rest) > 1:
                return _slug(rest[1].split(".")[0])
            flags = [w for w in rest if w.startswith("--")]
            script = next((w for w in rest if not w.startswith("-")), None)
            if script is not None and "." in script.rsplit("/", 1)[-1]:
                return _slug(script.rsplit("/", 1)[-1].rsplit(".", 1)[0])
            if flags:
                return _slug(f"{base}-{flags[0][2:]}")
            return _slug(base)
        if program in _TASKS:
            task = [w for w in rest if not w.startswith("-")]
            if task[:1] == ["run"] and len(task) > 1:
                task = task[1:]
            return _slug(f"{program}-{task[0]}" if task else program)
        return _slug(program.rsplit(".", 1)[0] if "." in program[1:] else program)
    return None


def _slug(text: str) -> str | None:
    import re

    name = re.sub(r"[^a-z0-9_-]+", "-", text.lower()).strip("-_")
    if not name or not name[0].isalnum():
        return None
    return f"{name}-tool" if name in GENERIC else name


def own_family(root, run: str | None, folder: str = "") -> str | None:
    """The project's family named after the tool a shell line runs, when regexes/NAME.toml exists at the root or
    in `folder`, the sub-project the line runs for (`runner learn` makes it, with its first pattern, from what that
    tool's output showed); else None."""
    from .libraries import has_own_family

    name = tool_name(run) if run else None
    return name if name is not None and has_own_family(root, folder, name) else None


def with_own_family(root, run: str | None, names: tuple[str, ...], folder: str = "") -> tuple[str, ...]:
    """A command's families with the project's family of its tool (own_family) placed before the generic ones."""
    own = own_family(root, run, folder)
    if own is None or own in names:
        return names
    at = next((i for i, n in enumerate(names) if n in GENERIC), len(names))
    return names[:at] + (own,) + names[at:]


def own_families(root, runs, folder: str = "") -> set[str]:
    """The own families (own_family) of these shell lines that the project has (the root's, or `folder`'s own)."""
    return {name for run in runs if (name := own_family(root, run, folder)) is not None}
