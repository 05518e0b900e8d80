"""A command's required argument left out is the user's mistake: click's usage message and exit 2, never an
internal error (click 8.3 took a declared default of None as a value given: `runner history` reached its command
with no intent and ended in exit 4)."""

from __future__ import annotations

import json

import pytest

from runner.commands import NAMES, load


def _required() -> list[tuple[str, str]]:
    found = []
    for name in NAMES:
        for param in load(name).params:
            if param.kind == "argument" and param.required and param.nargs != -1:
                found.append((name, param.dest.upper()))
    return found


def test_the_commands_with_a_required_argument_are_found():
    assert {"history", "show", "rollback", "improve"} <= {name for name, _ in _required()}


@pytest.mark.parametrize(("command", "argument"), _required())
def test_a_required_argument_left_out_is_a_usage_error(project, command, argument):
    project.spec('[project]\nname = "p"\n[intent.a]\nrun = "true"\n')
    done = project.run(command)
    assert (done.code, done.out) == (2, ""), done.err
    said = json.loads(project.run(command, "--json").out)
    assert said["code"] == 2 and said["message"].startswith("Missing argument '"), said
    if command in ("history", "show", "rollback", "improve"):  # the versions' commands: the message in full
        assert done.err.endswith(f"Error: Missing argument '{argument}'.\n"), done.err
        assert said["message"] == f"Missing argument '{argument}'."
