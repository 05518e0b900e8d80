"""`runner show INTENT[@VERSION]`: one version of an agent intent, with its diff and the transcript behind it (as a
conversation; `--raw`: the worker's JSON lines)."""

from __future__ import annotations

from . import SPEC_FILE, Command, Invocation, argument, echo, flag, print_json


def run(inv: Invocation, ref: str, spec_file: str | None, no_transcript: bool, raw: bool = False) -> None:
    from ..pipeline import load_project
    from ..versions import agent_intent, details, parse_ref, pick, versions
    from .history import change_text, kind_text, verified_text

    name, number = parse_ref(ref)
    project = load_project(inv.directory, spec_file=spec_file)
    name = project.named(name)
    agent_intent(project.spec, name)
    shown = details(project.layout.state_dir, pick(versions(project.layout.state_dir, name), name, number))
    if inv.as_json:
        print_json(shown)
        return
    echo(f"{name} version {shown['version']}: {kind_text(shown, 'version ')}, run {shown['run']}, {shown['time']}")
    echo(f"key       {shown['key']}")
    echo(f"change    {change_text(shown['diffstat'])}")
    echo(f"tokens    {shown['tokens']} in {shown['attempts']} attempt{'s' if shown['attempts'] != 1 else ''}")
    echo(f"verified  {verified_text(shown)}")
    if shown.get("feedback"):
        echo(f"feedback  {shown['feedback']}")
    if shown.get("checkpoint"):
        echo(f"commit    {' '.join(shown['checkpoint'])}")
    echo("")
    echo(shown["diff"].rstrip("\n") or "(no textual change)")
    if not no_transcript:
        echo("")
        if shown["transcript"] is None:
            echo("(no transcript: this version was not made by a model call)")
        else:
            echo("transcript (raw JSON lines):" if raw else "transcript (`--raw` for its JSON lines):")
            if raw:
                echo(shown["transcript"].rstrip("\n"))
            else:
                from ..transcript import conversation

                for line in conversation(shown["transcript"]):
                    echo(line)


COMMAND = Command(
    "show",
    "Show a version of an agent intent (INTENT or INTENT@VERSION; the latest by default): its diff and transcript.",
    (
        argument("ref"),
        SPEC_FILE,
        flag("--no-transcript", dest="no_transcript", help="Leave out the worker's transcript."),
        flag("--raw", dest="raw", help="The transcript as the worker's JSON lines, not as a conversation."),
    ),
    run,
)
