"""`runner completion SHELL`: the script that makes bash, zsh or fish complete runner's commands, options and
target names (the intents of the project the command line is in, with their descriptions)."""

from __future__ import annotations

from . import Command, Invocation, Param, echo

SHELLS = ("bash", "zsh", "fish")
HOW = {
    "bash": 'eval "$(runner completion bash)"    # in ~/.bashrc',
    "zsh": 'eval "$(runner completion zsh)"     # in ~/.zshrc',
    "fish": "runner completion fish | source     # in ~/.config/fish/config.fish",
}


def run(inv: Invocation, shell: str) -> None:
    from ..cli import completion_source  # click's protocol, and click has one importer

    source = completion_source(shell)
    if inv.as_json:
        from . import print_json

        print_json({"shell": shell, "install": HOW[shell], "script": source})
    else:
        echo(source.rstrip("\n"))


COMMAND = Command(
    "completion",
    "Print the shell completion script for SHELL (bash, zsh or fish): commands, options and target names.\n\n"
    + "\n".join(f"  {line}" for line in HOW.values()),
    (Param(("shell",), "shell", "argument", type=SHELLS, required=True),),
    run,
)
