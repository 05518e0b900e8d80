"""`runner audit [--since RUN]`: how the recorded runs went: parse success, cache hits, model calls and tokens
spent and saved, verify at the first attempt, approvals, the most frequent failure signatures, each with its trend
against the previous window of as many runs."""

from __future__ import annotations

from . import Command, Invocation, echo, option, print_json


def run(inv: Invocation, since: str | None, top: int) -> None:
    from ..learn.audit import audit, render
    from ..workspace import find_root

    report = audit(find_root(inv.directory), since=since, top=top)
    if inv.as_json:
        print_json(report)
    else:
        echo(render(report))


COMMAND = Command(
    "audit",
    "How the recorded runs went, beside the previous window of as many runs.",
    (
        option(
            "--since",
            dest="since",
            help="The runs from this one on (a run id, or its start: 20261125 is that day's first run).",
            metavar="RUN",
        ),
        option("--top", dest="top", help="Failure signatures to show (default: 10).", type=int, minimum=1, default=10),
    ),
    run,
)
