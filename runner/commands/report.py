"""`runner report [RUN] --html -o FILE`: one recorded run as a self-contained HTML file (no server, no network), what
a CI job keeps as an artifact: summary, graph by layer, timeline with the critical path, failures, agent attempts."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import UsageError
from . import Command, Invocation, argument, flag, option, print_json


def resolve_run(runs_dir: Path, what: str | None) -> str:
    """The run `what` names (its id, or a prefix of one only it has); the last run for None."""
    from ..record import list_runs

    runs = list_runs(runs_dir)
    if not runs:
        raise UsageError("error: no runs recorded yet in .runner/runs: run `runner make` first")
    if what is None:
        return runs[-1]
    if what in runs:
        return what
    matches = [r for r in runs if r.startswith(what)]
    if len(matches) > 1:
        raise UsageError(f"error: '{what}' starts {len(matches)} run ids; give more of one (`runner log --list`)")
    if not matches:
        raise UsageError(f"error: no run '{what}' (`runner log --list` lists the {len(runs)} recorded runs)")
    return matches[0]


def run(inv: Invocation, what: str | None, as_html: bool, output: str | None) -> None:
    from ..web import pages
    from ..web.run_data import load, project_view
    from ..workspace import Layout, find_root

    if not as_html or not output:
        raise UsageError("error: runner report writes HTML: `runner report [RUN] --html -o FILE`")
    layout = Layout(find_root(inv.directory))
    run_id = resolve_run(layout.runs_dir, what)
    graph, mask = project_view(layout.root)
    data = load(layout.runs_dir, run_id, graph, mask)
    page = pages.run_page(data, pages.Html(mask))
    path = Path(output) if Path(output).is_absolute() else inv.directory / output
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        from ..errors import NoSpaceError
        from ..nospace import is_no_space

        if is_no_space(exc):
            raise NoSpaceError(str(path), exit_code=2) from None
        raise UsageError(f"error: cannot write the report to {path}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
    if inv.as_json:
        print_json({"run_id": run_id, "report": str(path), "bytes": len(page.encode())})
        return
    print(f"runner: run {run_id} ({data.summary['status']}) reported in {path}", file=sys.stderr, flush=True)


COMMAND = Command(
    "report",
    "Write a recorded run (default: the last one) as one self-contained HTML file.",
    (
        argument("what", required=False),
        flag("--html", dest="as_html", help="Write HTML (the one format for now)."),
        option("-o", "--output", dest="output", help="The file to write.", metavar="FILE", complete="file"),
    ),
    run,
)
