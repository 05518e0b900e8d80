"""The command line: the click group, the options every command shares, and the one error boundary that turns
every error into a message and an exit code. The commands themselves are runner/commands/<verb>.py, declared
as data and built into click commands here, when the command line names them."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import __version__
from .commands import NAMES, Command, Invocation, Param, load
from .errors import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, RunnerError, UsageError, from_a_ctrl_c
from .project_root import directory_given, reads_intents, spec_file_given
from .report import asked_for_json, error_line

_directory = [Path(".")]  # the -C of the running command: where an internal error's traceback goes


def _remember_directory(ctx: click.Context, param: click.Parameter, value: Path) -> Path:
    _directory[0] = value = Path(directory_given(ctx, value))
    return value


_SHARED = (
    click.Option(
        ["-C", "--directory", "directory"],
        type=click.Path(file_okay=False, path_type=Path),
        default=Path("."),
        callback=_remember_directory,
        help="Run as if started in DIR (like make -C).",
    ),
    click.Option(["--json", "as_json"], is_flag=True, help="Machine-readable output on stdout."),
)


def _click_type(p: Param):
    if p.complete == "file":
        return click.Path(dir_okay=False)  # the shell completes file names
    if isinstance(p.type, tuple):
        return click.Choice(p.type)
    if p.minimum is not None:
        if p.type is int:
            return click.IntRange(min=int(p.minimum))
        return click.FloatRange(min=p.minimum, min_open=True, max=p.maximum)
    return p.type


def _complete_targets(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
    """The intents (with their descriptions, which zsh and fish show) and declared output paths that start
    with what was typed, from the project that -C and -f (as typed so far) name."""
    from click.shell_completion import CompletionItem

    from .commands.list import completions

    try:
        found = completions(ctx.params.get("directory") or Path("."), ctx.params.get("spec_file"), incomplete)
    except Exception:  # noqa: BLE001 - a broken spec completes nothing; a traceback would land in the shell
        return []
    return [CompletionItem(value, help=text or None) for value, text in found]


def completion_source(shell: str) -> str:
    """The script that makes `shell` complete runner's commands, options and targets (click's protocol: the
    shell calls runner back with _RUNNER_COMPLETE set)."""
    from click.shell_completion import get_completion_class

    how = get_completion_class(shell)
    assert how is not None  # the command offers only the shells click supports
    return how(cli, {}, "runner", "_RUNNER_COMPLETE").source()


def _click_param(p: Param) -> click.Parameter:
    complete = _complete_targets if p.complete == "targets" else None  # "file": click.Path's own
    if p.kind == "argument":
        # click 8.3 takes default=None as a value given: a required argument left out came as None (exit 4)
        default: dict = {} if p.default is None else {"default": p.default}
        return click.Argument(
            [p.dest],
            type=_click_type(p),
            required=p.required and p.nargs != -1,
            nargs=p.nargs,
            metavar=p.metavar,
            shell_complete=complete,
            **default,
        )
    decls = [*p.decls, p.dest]
    if p.kind == "flag":
        return click.Option(decls, is_flag=True, help=p.help)
    return click.Option(
        decls,
        type=_click_type(p),
        default=p.default,
        multiple=p.kind == "multiple",
        metavar=p.metavar,
        help=p.help,
        shell_complete=complete,
        callback=spec_file_given if p.dest == "spec_file" else None,
    )


def _ask(question: str, detail: str) -> bool:
    click.echo(detail, err=True)
    return click.confirm(question, default=False, err=True)


def _build(command: Command) -> click.Command:
    run = command.run

    def callback(directory: Path = Path("."), as_json: bool = False, **values) -> None:
        from .workspace import at_terminal

        ctx = click.get_current_context()
        if run is not None and not ctx.invoked_subcommand:
            asks = _ask if at_terminal() else None
            sys.exit(run(Invocation(directory, as_json, asks, ctx.find_root().obj), **values) or EXIT_OK)

    params = [_click_param(p) for p in command.params] + list(_SHARED) if run is not None else []
    if not command.subcommands:
        return click.Command(command.name, callback=callback, params=params, help=command.help)
    # a group that also runs with no subcommand named: `runner learn` is a pass, `runner learn status` a subcommand
    group = click.Group(command.name, help=command.help, params=params, invoke_without_command=run is not None)
    group.callback = callback if run is not None else None
    for sub in command.subcommands:
        group.add_command(_build(sub))
    return group


class _CtrlC(BaseException):
    """A Ctrl-C in a command (its resolving, its run), carried past click's main, which would write a blank line for
    it (into a log or a pipe as well) and make it an Abort: the boundary says it as one that lands anywhere else."""


class _Commands(click.Group):
    """`runner VERB` imports runner/commands/VERB.py alone; `runner --help` lists them all."""

    def list_commands(self, ctx) -> list[str]:
        return list(NAMES)

    def get_command(self, ctx, name: str) -> click.Command | None:
        return _build(load(name)) if name in NAMES else None

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            raise _CtrlC from exc


# before the command, as git, make and just take them: `runner -C proj status`, `runner -f other.toml list`
_LEADING = [
    click.Option(["-C", "--directory", "directory"], type=click.Path(file_okay=False), multiple=True, help="As -C."),
    click.Option(["-f", "--file", "spec_file"], metavar="FILE", help="As -f, for a command that reads the intents."),
]


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]}, params=_LEADING)
@click.version_option(__version__, prog_name="runner")
def cli(directory: tuple[str, ...], spec_file: str | None) -> None:
    """Make for coding agents: intents in TOML become a cached, content-hashed DAG of steps."""
    name = click.get_current_context().invoked_subcommand
    if spec_file is not None and name is not None and not reads_intents(load(name)):
        raise UsageError(f"error: -f {spec_file}: `runner {name}` reads no intents file; leave -f out")


# ---- the error boundary ----------------------------------------------------------------------


def main(argv: list[str] | None = None, missed: object = None) -> None:
    """`missed`: what the warm no-op read before it found the proof broken (proof.Missed), for `runner make`."""
    as_json = asked_for_json(sys.argv[1:] if argv is None else argv)
    try:
        cli.main(args=argv, prog_name="runner", standalone_mode=False, obj=missed)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        error_line(exc.exit_code, exc.format_message(), when=as_json)
        sys.exit(exc.exit_code)  # 2 for usage errors, as the user's mistake
    except (_CtrlC, click.exceptions.Abort):  # a Ctrl-C in a command, or one click caught: as the boundary says one
        sys.exit(exit_for(KeyboardInterrupt(), as_json=as_json))
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - the boundary: a message and an exit code
        sys.exit(exit_for(exc, as_json=as_json))
    sys.exit(EXIT_OK)


def exit_for(exc: BaseException, directory: Path | None = None, as_json: bool = False) -> int:
    """Say what went wrong on stderr (with `as_json` on stdout too) and return the exit code (called inside the
    except block: an internal error's traceback is saved from there). `directory`: -C, when click did not read it."""
    from .damaged import as_users_error
    from .errors import interrupted_line
    from .redact import current_mask
    from .workspace import find_root

    root = find_root(directory or _directory[0])
    exc = as_users_error(exc, str(root))  # a full disk, damaged state: the user's to fix, never a bug of ours
    mask = current_mask()  # a message may quote a value from the environment, a log or a worker's answer
    if isinstance(exc, RunnerError):
        message = mask.text(exc.render())
        click.echo(message if message.startswith("error") else f"error: {message}", err=True)
        error_line(exc.exit_code, message, getattr(exc, "problems", ()), when=as_json and not exc.answered_in_json)
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt) or from_a_ctrl_c(exc):
        click.echo(interrupted_line(), err=True, nl=False)
        error_line(EXIT_INTERRUPTED, "interrupted", when=as_json)
        return EXIT_INTERRUPTED
    if isinstance(exc, BrokenPipeError):
        return EXIT_OK
    path = _save_traceback(root / ".runner", mask)  # a bug of ours: keep the traceback for the report, show one line
    click.echo(mask.text(f"runner: internal error: {exc!r}; the traceback is in {path}. Please report it."), err=True)
    error_line(EXIT_INTERNAL, f"internal error: {exc!r}; the traceback is in {path}", when=as_json)
    return EXIT_INTERNAL


def _save_traceback(folder: Path, mask) -> str:
    import traceback

    try:
        folder.mkdir(exist_ok=True)
        path = folder / "last-error.log"
        path.write_text(mask.text(traceback.format_exc()))
        return str(path)
    except OSError:
        return "(could not write .runner/last-error.log)"
