"""`runner graph`: the DAG as text, DOT, Mermaid or JSON."""

from __future__ import annotations

from . import Command, Invocation, argument, echo, option


def run(inv: Invocation, target: str | None, fmt: str) -> None:
    from ..graph import render
    from ..pipeline import load_project, select

    project = load_project(inv.directory)
    target, names = select(project, target)
    echo(render(project.spec, names, "json" if inv.as_json else fmt, target))


COMMAND = Command(
    "graph",
    "Print the DAG (edges run from a dependency to its dependant).",
    (
        argument("target", required=False),
        option("--format", dest="fmt", help="", type=("text", "dot", "mermaid", "json"), default="text"),
    ),
    run,
)
