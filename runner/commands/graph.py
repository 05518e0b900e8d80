"""`runner graph`: the DAG as text, DOT, Mermaid or JSON."""

from __future__ import annotations

from . import SPEC_FILE, Command, Invocation, echo, option, targets_argument


def run(inv: Invocation, targets: tuple[str, ...], spec_file: str | None, fmt: str) -> None:
    from ..graph import render
    from ..pipeline import load_project, select

    project = load_project(inv.directory, spec_file=spec_file)
    target, names = select(project, targets)
    echo(render(project.spec, names, "json" if inv.as_json else fmt, target))


COMMAND = Command(
    "graph",
    "Print the DAG (edges run from a dependency to its dependant).",
    (
        targets_argument(),
        SPEC_FILE,
        option("--format", dest="fmt", help="", type=("text", "dot", "mermaid", "json"), default="text"),
    ),
    run,
)
