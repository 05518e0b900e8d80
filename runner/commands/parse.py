"""`runner parse`: what the runner understands of a saved log: counts, failing tests, diagnostics, cause, excerpt."""

from __future__ import annotations

import sys
from pathlib import Path

from ..adapters import Resolved, resolve
from ..errors import UsageError, UserError
from ..load import load_project_adapters
from . import Command, Invocation, argument, echo, option, print_json


def read_log(source: str | Path) -> str:
    """A saved log, or stdin for '-': UTF-8 or UTF-16 (findings.decode_log); undecodable bytes become U+FFFD."""
    from ..findings import decode_log

    if str(source) == "-":
        return decode_log(sys.stdin.buffer.read())
    path = Path(source)
    try:
        return decode_log(path.read_bytes())
    except FileNotFoundError:
        raise UsageError(f"no such log file: {path}") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a folder: give a log file, or '-' for stdin") from None


def _library(root: Path, folder: str = ""):
    """The library a log is read with: the built-in families, the root's regexes/, then those of the sub-project
    the command is typed in (libraries.py)."""
    from ..libraries import library_at

    return library_at(str(root), folder)


def families_for(
    root: Path,
    adapter: str | None = None,
    command: str | None = None,
    families: tuple[str, ...] = (),
    variants: tuple[str, ...] | None = None,
    folder: str = "",
) -> tuple[list[str], str]:
    """The family names to parse with, and where they came from (for the report); `folder`: the sub-project the
    command is typed in, whose adapters come first and are detected there."""
    if families and (adapter or command):
        raise UsageError("give either --family or --adapter/--command, not both")
    if families:
        return list(families), "--family"
    if not adapter and not command:
        from ..excerpt import GENERIC_FAMILIES

        return list(GENERIC_FAMILIES), "generic: no --adapter/--command or --family"
    if not adapter or not command:
        raise UsageError(
            "say how to parse the log: --adapter NAME --command CMD (e.g. --adapter python "
            "--command test), --family FAMILY, or neither for the generic families"
        )
    at = Path(root) / folder if folder else root
    res: Resolved = resolve(adapter, at, load_project_adapters(root, folder), variants=variants)
    cmd = res.command(command)
    if not cmd.parse:
        raise UsageError(
            f"command '{command}' of adapter '{res.adapter.name}' names no regex family "
            "(parse = [...]); use --family FAMILY"
        )
    flavour = f" ({'+'.join(res.variants)})" if res.variants else ""
    return list(cmd.parse), f"adapter {res.adapter.name}{flavour}, command {command}: {cmd.run}"


def parse_report(
    root: Path,
    text: str | None = None,
    adapter: str | None = None,
    command: str | None = None,
    families: tuple[str, ...] = (),
    variants: tuple[str, ...] | None = None,
    source: str | Path | None = None,
    baseline: str | Path | None = None,
    folder: str = "",
) -> tuple[str, dict]:
    """The regex library's findings for a log (its text, or its file or '-' as `source`): what the runner understood,
    and the excerpt: the lines that explain a failure (with `baseline`, a passing log of the same command).
    `folder`: the sub-project the command is typed in, whose own regexes/ come first ("" for the root).

    The options are checked before the log is read, so a wrong --adapter is reported as such even when reading
    stdin would block.
    """
    from ..excerpt import excerpt, render_excerpt
    from ..findings import parse_findings, render_findings

    names, origin = families_for(root, adapter, command, families, variants, folder)
    passing = read_log(baseline) if baseline is not None else None
    if text is None:
        text = read_log("-" if source is None else source)
    library = _library(root, folder)
    try:
        chosen = [library.family(n) for n in names]
    except UserError as exc:  # an unknown family is a usage mistake here, with parse.py's did-you-mean
        raise UsageError(str(exc)) from None
    if origin != "--family":  # the families named are the user's whole choice; else what the log shows adds
        from ..identify import read_with

        names = read_with(library, names, text)
        chosen = [library.family(n) for n in names]
    findings = parse_findings(text, chosen)
    ranges = excerpt(text, chosen, passing)
    head = f"parsed with {', '.join(names)} ({origin})"
    shown = sum(b - a + 1 for a, b in ranges)
    lines = [head, render_findings(findings)]
    if ranges:
        against = " (lines new since the baseline weigh more)" if passing is not None else ""
        lines.append(f"excerpt: {shown} of {len(text.splitlines())} lines{against}")
        lines += render_excerpt(text, ranges, indent="  ")
    return "\n".join(lines), {**findings.to_json(), "excerpt": ranges}


def run(
    inv: Invocation,
    log_file: str,
    adapter_name: str | None,
    command_name: str | None,
    families: tuple[str, ...],
    variants: tuple[str, ...],
    baseline: str | None = None,
) -> None:
    from ..project_root import here
    from ..workspace import find_root

    root = find_root(inv.directory)
    text, obj = parse_report(
        root,
        adapter=adapter_name,
        command=command_name,
        families=tuple(families),
        variants=tuple(variants) or None,
        source=log_file,
        baseline=baseline,
        folder=here(str(root), str(inv.directory)),
    )
    if inv.as_json:
        print_json(obj)
    else:
        echo(text)


COMMAND = Command(
    "parse",
    "What the runner understands of a saved log (FILE, or - for stdin): counts, failing tests, diagnostics, "
    "cause, and the excerpt of lines that explain a failure.",
    (
        argument("log_file", required=False, default="-"),
        option("--adapter", dest="adapter_name", help="Adapter whose command produced the log (or auto)."),
        option("--command", dest="command_name", help="The adapter command that produced the log (test, lint, ...)."),
        option("--family", dest="families", help="Parse with this regex family (repeatable).", multiple=True),
        option("--variant", dest="variants", help="Adapter variant (default: detected).", multiple=True),
        option(
            "--baseline",
            dest="baseline",
            help="A passing log of the same command: lines new in LOG weigh more in the excerpt.",
            metavar="PASSING_LOG",
        ),
    ),
    run,
)
