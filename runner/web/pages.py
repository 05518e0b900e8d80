"""A run's pages as HTML: the runs list, a run (summary, graph by layer, timeline on job slots with the critical path,
failures, agent attempts), a step's log; rendered here for `runner report --html` and `runner serve` alike, every
text masked (runner/redact.py) and escaped."""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from urllib.parse import quote

from ..names import stored
from ..redact import Mask
from . import assets
from .run_data import RunData, attempt_files

STATUSES = ("ran", "cached", "restored", "kept", "failed", "skipped", "blocked", "running")
OPEN_LAYER = 300  # a layer of more steps than this starts folded: a 10,000-step run stays quick to open
GRAPH_DRAWN = 150  # at most this many steps are drawn as a graph with edges; above, collapsed to its layers
COLLAPSED_LAYERS = 60  # a large run with more layers than this (a long chain) is listed by layer, not drawn
NARROW = 2.0  # pixels: a step's bar narrower than this, beside one of its outcome, is drawn with it
LISTED = 1000  # rows of the steps table; above, the failed and blocked ones, then the first in order
TIMELINE_WIDTH = 1000


class Html:
    """Text into HTML: masked, then escaped."""

    def __init__(self, mask: Mask):
        self.mask = mask

    def __call__(self, value: object) -> str:
        return html.escape(self.mask.text(str(value)), quote=True)


def document(title: str, body: str, t: Html, *, live: str | None = None, nav: str = "") -> str:
    """A whole page: its style and script inline, nothing fetched from anywhere."""
    live_attr = f' data-live="{t(live)}"' if live else ""
    return (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:; connect-src 'self'; form-action 'self'\">"
        f"<title>{t(title)}</title><style>{assets.CSS}</style></head>"
        f"<body{live_attr}><header><span class='brand'>runner</span>{nav}</header><main>{body}</main>"
        f"<script>{assets.JS}</script></body></html>\n"
    )


def badge(status: str, t: Html) -> str:
    return f"<span class='badge state s-{t(status)}'>{t(status)}</span>"


def seconds(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.2f} s" if value < 100 else f"{value / 60:.1f} min"


# ---- the runs page ------------------------------------------------------------------------------------------
def _n(count: int, noun: str) -> str:
    """`1 step`, `2 steps`, `10,000 steps`."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def name_path(name: str) -> str:
    """An intent's name as one part of a URL's path: a sub-project's PATH:NAME as names.stored writes it (its '/'
    would split the path), percent-encoded; a plain name as it is."""
    return quote(stored(name), safe="")


def runs_page(rows: list[dict], t: Html, *, run_href: Callable[[str], str], nav: str = "") -> str:
    body = ["<h1>Runs</h1>"]
    if not rows:
        body.append("<p class='muted'>No run recorded yet: run <code>runner make</code>.</p>")
    else:
        body.append(
            "<table id='runs'><tr><th>run</th><th>status</th><th>started (UTC)</th><th class='num'>duration</th>"
            + "".join(
                f"<th class='num'>{k}</th>" for k in ("ran", "cached", "restored", "failed", "attempts", "tokens")
            )
            + "</tr>"
        )
        for r in rows:
            body.append(
                f"<tr data-run='{t(r['run_id'])}'><td><a href='{t(run_href(r['run_id']))}'>{t(r['run_id'])}</a></td>"
                f"<td>{badge(r['status'], t)}</td><td>{t((r['started'] or '').replace('T', ' ')[:19])}</td>"
                f"<td class='num'>{seconds(r['duration'])}</td><td class='num'>{r['ran']}</td>"
                f"<td class='num'>{r['cached']}</td><td class='num'>{r['restored']}</td>"
                f"<td class='num'>{r['failed']}</td><td class='num'>{r['attempts']}</td>"
                f"<td class='num'>{r['tokens']:,}</td></tr>"
            )
        body.append("</table>")
    return document("runner: runs", "".join(body), t, nav=nav)


# ---- a run's page -------------------------------------------------------------------------------------------
def run_page(
    data: RunData,
    t: Html,
    *,
    step_href: Callable[[str], str] | None = None,
    live: str | None = None,
    nav: str = "",
    full_attempts: bool = True,
    query: str | None = None,
) -> str:
    """The run's page. `step_href`: where a step's name leads (None: its section on this page, the report);
    `live`: the server's event stream for a run still going; `query`: the search box's text as the server was asked
    it (`?q=`): the graph shows and the steps table lists the steps whose name holds it, whichever they are."""
    href = step_href or (lambda name: f"#row-{quote(name)}")
    s = data.summary
    served = step_href is not None
    parts = [f"<h1>Run {t(data.run_id)} {badge(s['status'], t)}</h1>", _summary(data, t)]
    parts.append(_graph(data, t, href, query, served))
    parts.append(_timeline(data, t, href))
    parts.append(_failures(data, t))
    parts.append(_agents(data, t, full_attempts, served=served))
    parts.append(steps_section(data, t, href, query))
    title = f"runner: run {data.run_id} ({s['status']})"
    return document(title, "".join(parts), t, live=live if data.live else None, nav=nav)


def _summary(data: RunData, t: Html) -> str:
    s = data.summary
    counts = " · ".join(f"{k} {s[k]:,}" for k in ("ran", "cached", "restored", "kept", "failed", "skipped", "blocked"))
    rows = [
        ("status", badge(s["status"], t)),
        ("started (UTC)", t((s["started"] or "").replace("T", " ").rstrip("Z"))),
        ("duration", seconds(s["duration"]) or ("running" if data.live else "")),
        ("steps", f"{s['steps'] or 0:,} on {s['jobs'] or 1} job slots"),
        ("outcome", t(counts)),
        ("agent attempts", f"{s['attempts']:,}, {s['tokens']:,} tokens"),
    ]
    if s.get("target") is not None:
        target = s["target"] if isinstance(s["target"], str) else " ".join(s["target"])
        rows.insert(1, ("target", t(target)))
    if data.critical:
        rows.append(("critical path", t(" → ".join(data.critical))))
    return "<table id='summary'>" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def _legend(t: Html) -> str:
    return "<p class='legend'>" + "".join(f"<span>{badge(s, t)}</span>" for s in STATUSES) + "</p>"


def found(name: str, query: str | None) -> bool:
    """Whether the search box's `query` finds the step `name` (its text anywhere in the name, any case)."""
    return not query or query.strip().lower() in name.lower()


def _graph(data: RunData, t: Html, href: Callable[[str], str], query: str | None = None, served: bool = False) -> str:
    """The steps coloured by outcome, by layer (each layer a step deeper in the graph than the one before); a
    small run drawn with its edges, a large one collapsed to its layers and the dependencies between them. A large
    layer starts folded; the search box finds a step in any (served: a form, `?q=`, that works without script)."""
    total = len(data.outcomes)
    query = (query or "").strip() or None
    out = [f"<h2 id='graph'>Graph ({_n(total, 'step')}, {_n(len(data.layers), 'layer')})</h2>", _legend(t)]
    box = (
        f"<input type='search' id='search' name='q' value='{t(query or '')}' placeholder='find a step by name' "
        "aria-label='find a step'>"
    )
    if served:
        out.append(f"<form id='find' method='get' role='search'>{box} <button type='submit'>Find</button></form>")
    else:
        out.append(f"<p>{box}</p>")
    if not data.deps and total > 1:
        out.append("<p class='muted'>The spec did not load: the steps are shown without their layers.</p>")
    if 1 < total <= GRAPH_DRAWN and data.deps:
        out.append(_drawn(data, t, href))
    elif total > GRAPH_DRAWN and data.deps and 1 < len(data.layers) <= COLLAPSED_LAYERS:
        out.append(_collapsed(data, t))
    critical = set(data.critical)
    for depth, layer in enumerate(data.layers):
        counts: dict[str, int] = {}
        for name in layer:
            counts[data.outcomes[name]] = counts.get(data.outcomes[name], 0) + 1
        said = ", ".join(f"{n:,} {k}" for k, n in sorted(counts.items()))
        if query:  # the layers that hold a step the search found are opened, the others folded
            opened = " open" if any(found(n, query) for n in layer) else ""
        else:
            opened = " open" if len(layer) <= OPEN_LAYER or any(data.outcomes[n] == "failed" for n in layer) else ""
        chips = "".join(
            f"<a class='chip s-{t(data.outcomes[n])}{' crit' if n in critical else ''}"
            f"{'' if found(n, query) else ' hidden'}' data-name='{t(n)}' href='{t(href(n))}'>{t(n)}</a>"
            for n in layer
        )
        out.append(
            f"<details class='layer' id='layer-{depth + 1}'{opened}><summary>layer {depth + 1}: "
            f"{_n(len(layer), 'step')} ({t(said)})</summary><div class='chips'>{chips}</div></details>"
        )
    if data.live:
        out.append("<div class='chips' id='live-chips'></div>")  # the steps the run reports from now on
    return "".join(out)


def _drawn(data: RunData, t: Html, href: Callable[[str], str]) -> str:
    """A small run's graph as SVG: a column per layer, an edge per dependency."""
    col, row, box_w, box_h = 170, 28, 150, 20
    where: dict[str, tuple[int, int]] = {}
    for x, layer in enumerate(data.layers):
        for y, name in enumerate(layer):
            where[name] = (10 + x * col, 10 + y * row)
    width = 20 + len(data.layers) * col
    height = 20 + max(len(layer) for layer in data.layers) * row
    parts = [f"<svg id='dag' width='{width}' height='{height}' role='img' aria-label='the run as a graph'>"]
    for name, deps in data.deps.items():
        x2, y2 = where[name]
        for d in deps:
            x1, y1 = where[d]
            parts.append(
                f"<line x1='{x1 + box_w}' y1='{y1 + box_h // 2}' x2='{x2}' y2='{y2 + box_h // 2}' stroke='#9aa3ad'/>"
            )
    critical = set(data.critical)
    for name, (x, y) in where.items():
        status = data.outcomes[name]
        stroke = " stroke='#111' stroke-width='2'" if name in critical else ""
        label = name if len(name) <= 22 else name[:21] + "…"
        parts.append(
            f"<a href='{t(href(name))}'><g class='node' data-name='{t(name)}'><title>{t(name)}: {t(status)}</title>"
            f"<rect class='chip s-{t(status)}' x='{x}' y='{y}' width='{box_w}' height='{box_h}' rx='4'"
            f" fill='var(--{t(status)})'{stroke}/><text x='{x + 6}' y='{y + 14}' fill='#fff'>{t(label)}</text></g></a>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _collapsed(data: RunData, t: Html) -> str:
    """A large run's graph collapsed to its layers: a box per layer, its steps' outcomes as shares of it, and a line
    for the dependencies from one layer to another, thicker the more there are; a box leads to its layer's steps."""
    col, gap, box_h, top = 96, 44, 120, 10
    depth = {name: d for d, layer in enumerate(data.layers) for name in layer}
    between: dict[tuple[int, int], int] = {}
    for name, deps in data.deps.items():
        for dep in deps:
            key = (depth[dep], depth[name])
            between[key] = between.get(key, 0) + 1
    width = 20 + len(data.layers) * (col + gap)
    height = 2 * top + box_h + 30
    parts = [f"<svg id='dag-layers' width='{width}' height='{height}' role='img' aria-label='the run by layers'>"]
    for (a, b), n in sorted(between.items()):
        x1, x2 = 10 + a * (col + gap) + col, 10 + b * (col + gap)
        lift = 0 if b == a + 1 else min(box_h // 2, 12 * (b - a - 1))  # a line over a layer bends above it
        bend = top + box_h // 2 - lift
        parts.append(
            f"<path class='between' d='M{x1},{top + box_h // 2} C{x1 + gap // 2},{bend} {x2 - gap // 2},{bend} "
            f"{x2},{top + box_h // 2}' fill='none' stroke='#9aa3ad' stroke-width='{1 + math.log10(n):.1f}'>"
            f"<title>{n:,} dependencies of layer {b + 1} on layer {a + 1}</title></path>"
        )
    for d, layer in enumerate(data.layers):
        x = 10 + d * (col + gap)
        counts: dict[str, int] = {}
        for name in layer:
            counts[data.outcomes[name]] = counts.get(data.outcomes[name], 0) + 1
        shares, y = [], float(top)
        for status in STATUSES:
            if counts.get(status):
                h = box_h * counts[status] / len(layer)
                shares.append(
                    f"<rect x='{x}' y='{y:.1f}' width='{col}' height='{h:.1f}' fill='var(--{status})'>"
                    f"<title>{counts[status]:,} {status}</title></rect>"
                )
                y += h
        parts.append(
            f"<a href='#layer-{d + 1}'><g class='layer-node' data-layer='{d + 1}' data-steps='{len(layer)}'>"
            + "".join(shares)
            + f"<text x='{x + col // 2}' y='{top + box_h + 16}' text-anchor='middle'>layer {d + 1}: "
            f"{len(layer):,}</text></g></a>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _timeline(data: RunData, t: Html, href: Callable[[str], str]) -> str:
    """The steps that ran on their job slots against time; the critical path outlined."""
    tl = data.timeline
    out = ["<h2 id='timeline'>Timeline</h2>"]
    if tl.untimed:
        return out[0] + "<p class='muted'>This run was recorded before runner timed its steps.</p>"
    if not tl.steps:
        return out[0] + "<p class='muted'>No step ran: every step was up to date.</p>"
    span = max(tl.duration, max((s.end or s.start) for s in tl.steps.values()), 0.001)
    lane = 22
    slots = max(tl.jobs, 1 + max(s.slot for s in tl.steps.values()))
    height = 24 + slots * lane
    parts = [
        f"<svg id='timeline-svg' viewBox='0 0 {TIMELINE_WIDTH + 60} {height}' width='100%' role='img' "
        f"aria-label='steps on their job slots against time'>"
    ]
    for slot in range(slots):
        parts.append(f"<text x='0' y='{16 + slot * lane + 14}'>slot {slot}</text>")
    digits = 2 if span < 2 else 1 if span < 20 else 0
    for tick in range(0, 11):
        x = 60 + tick * TIMELINE_WIDTH / 10
        parts.append(
            f"<line x1='{x:.1f}' y1='12' x2='{x:.1f}' y2='{height}' stroke='#eef1f4'/>"
            f"<text x='{x:.1f}' y='10' text-anchor='middle'>{span * tick / 10:.{digits}f}s</text>"
        )
    critical = set(data.critical)
    linked = len(tl.steps) <= LISTED  # a large run's bars are found by the search box and the graph's links
    merged: dict[int, list] = {}  # slot -> the bar of narrow steps being merged: [x, end x, status, count]
    for step in sorted(tl.steps.values(), key=lambda s: s.start):
        end = step.end if step.end is not None else span
        x = 60 + step.start / span * TIMELINE_WIDTH
        w = (end - step.start) / span * TIMELINE_WIDTH
        y = 16 + step.slot * lane
        if w < NARROW and step.intent not in critical and not linked:
            # 10,000 steps on 1,000 pixels: a bar of their own each is a fraction of a pixel, and 10,000 SVG
            # elements slow the page; neighbours of one outcome on one slot are drawn as one bar, as they look
            run = merged.get(step.slot)
            if run is not None and run[2] == step.status and x - run[1] < NARROW:
                run[1], run[3] = x + w, run[3] + 1
                continue
            if run is not None:
                parts.append(_merged_bar(run, 16 + step.slot * lane, lane, t))
            merged[step.slot] = [x, x + w, step.status, 1]
            continue
        stroke = " stroke='#111' stroke-width='2'" if step.intent in critical else ""
        bar = (
            f"<rect class='bar' data-name='{t(step.intent)}' x='{x:.1f}' y='{y}' width='{max(w, 1.0):.1f}' "
            f"height='{lane - 4}' fill='var(--{t(step.status)})'{stroke}>"
            f"<title>{t(step.intent)} {step.start:.2f}-{end:.2f}s</title></rect>"
        )
        parts.append(f"<a href='{t(href(step.intent))}'>{bar}</a>" if linked else bar)
    for slot, run in merged.items():
        parts.append(_merged_bar(run, 16 + slot * lane, lane, t))
    parts.append("</svg>")
    if data.critical:
        took = sum((tl.steps[n].end or 0) - tl.steps[n].start for n in data.critical if tl.steps[n].end is not None)
        out.append(
            f"<p>Critical path ({_n(len(data.critical), 'step')}, {seconds(took)} of the run's "
            f"{seconds(tl.duration)}): {t(' → '.join(data.critical))}</p>"
        )
    return "".join(out + parts)


def _merged_bar(run: list, y: int, lane: int, t: Html) -> str:
    x, end, status, count = run
    return (
        f"<rect class='bars' x='{x:.1f}' y='{y}' width='{max(end - x, 1.0):.1f}' height='{lane - 4}' "
        f"fill='var(--{t(status)})'><title>{_n(count, 'step')} {t(status)}</title></rect>"
    )


def _failures(data: RunData, t: Html) -> str:
    if not data.failures:
        return ""
    out = [f"<h2 id='failures'>Failures ({len(data.failures)})</h2>"]
    for f in data.failures:
        out.append(
            f"<section class='failure' id='step-{t(quote(f.intent))}'><h3>{t(f.intent)} {badge('failed', t)}</h3>"
        )
        out.append(f"<p>{t(f.error.splitlines()[0] if f.error else '')}")
        if f.exit_code is not None:
            out.append(f" <span class='muted'>(exit {f.exit_code})</span>")
        out.append("</p>")
        if f.cause:
            out.append(f"<p><b>cause:</b> {t(f.cause)}</p>")
        if f.failed_tests:
            out.append(
                "<p><b>failed tests:</b></p><ul>" + "".join(f"<li>{t(x)}</li>" for x in f.failed_tests) + "</ul>"
            )
        if f.excerpt:
            lines = "\n".join((f"<span class='n'>{k:>5}</span>  " if k else "") + t(line) for k, line in f.excerpt)
            out.append(f"<pre class='excerpt'>{lines}</pre>")
        if f.log:
            out.append(f"<p class='muted'>log: {t(f.log)}</p>")
        out.append("</section>")
    return "".join(out)


def _agents(data: RunData, t: Html, full: bool, served: bool = False) -> str:
    if not data.agents:
        return ""
    out = ["<h2 id='agents'>Agent steps</h2>"]
    for step in data.agents:
        out.append(
            f"<section class='agent' id='step-{t(quote(step.intent))}'>"
            f"<h3>{t(step.intent)} {badge(step.status, t)}</h3>"
            + (
                f"<p><a href='/intents/{name_path(step.intent)}'>its versions (runner history)</a></p>"
                if served
                else ""
            )
        )
        for drift in step.drift:
            out.append(f"<p><b>drift:</b> {t(drift.get('message', ''))}</p>")
        for a in step.attempts:
            verdict = "verified" if a.ok else f"rejected ({a.kind})"
            out.append(
                f"<div class='attempt {'ok' if a.ok else 'bad'}'><b>candidate {a.candidate}, attempt {a.number}</b>: "
                f"{t(verdict)}, {a.tokens:,} tokens, {seconds(a.end - a.start)}"
            )
            if a.error:
                out.append(f"<pre>{t(a.error)}</pre>")
            for v in a.verify:
                ok = "passed" if v.exit_code == 0 else f"exit {v.exit_code}"
                out.append(
                    f"<p class='muted'>verify {t(v.name)}: <code>{t(v.command)}</code> {t(ok)}, "
                    f"{seconds(v.end - v.start)}</p>"
                )
            if full:
                files = attempt_files(a, t.mask)
                out.append(_diff(files["diff.patch"], t))
                for name, label in (
                    ("prompt.md", "prompt"),
                    ("transcript.jsonl", "transcript"),
                    ("verify.log", "verify log"),
                ):
                    if files[name]:
                        out.append(f"<details><summary>{label}</summary><pre>{t(files[name])}</pre></details>")
            out.append("</div>")
        out.append("</section>")
    return "".join(out)


def _diff(text: str, t: Html) -> str:
    if not text.strip():
        return "<p class='muted'>no change</p>"
    lines = []
    for line in text.splitlines():
        kind = (
            "add"
            if line.startswith("+")
            else "del"
            if line.startswith("-")
            else "hunk"
            if line.startswith("@@")
            else ""
        )
        lines.append(f"<span class='{kind}'>{t(line)}</span>" if kind else t(line))
    return "<details open><summary>diff</summary><pre class='diff'>" + "\n".join(lines) + "</pre></details>"


def steps_section(data: RunData, t: Html, href: Callable[[str], str], query: str | None = None) -> str:
    """The steps table: every step that did something (a cached step is only counted), in the order it was
    reported; with `query`, every step of the run whose name holds it, cached ones too. At most LISTED rows (a
    10,000-step run: the failed and blocked first); the server answers the search box for the rest
    (`?q=...&rows=1`: this section alone, which the page's script swaps in)."""
    query = (query or "").strip() or None
    rows = []
    steps = data.timeline.steps
    if query:
        shown = [n for n in data.outcomes if found(n, query)]
    else:
        shown = [n for n, status in data.outcomes.items() if status != "cached"]
    total = len(shown)
    if total > LISTED:  # the table that matters is the one that went wrong
        first = [n for n in shown if data.outcomes[n] in ("failed", "blocked", "running")]
        picked = set(first)
        shown = first + [n for n in shown if n not in picked][: max(0, LISTED - len(first))]
    left = total - len(shown)
    for name in shown:
        status = data.outcomes[name]
        step = steps.get(name)
        when = f"{step.start:.2f}s" if step else ""
        took = seconds((step.end - step.start) if step and step.end is not None else None)
        slot = str(step.slot) if step else ""
        rows.append(
            f"<tr id='row-{t(quote(name))}' data-name='{t(name)}'><td><a href='{t(href(name))}'>{t(name)}</a></td>"
            f"<td>{badge(status, t)}</td>"
            f"<td class='num'>{slot}</td><td class='num'>{when}</td><td class='num'>{took}</td></tr>"
        )
    if query:
        title = f"Steps whose name holds “{t(query)}” ({total:,})"
        more = f"and {left:,} more: a longer search finds fewer" if left else ""
        if not total:
            more = "no step of this run has that in its name"
    else:
        title = "Steps that ran"
        more = f"and {left:,} more: the graph above lists every step, the search box finds any" if left else ""
    marks = (f" data-more='{left}'" if left else "") + (f" data-q='{t(query)}'" if query else "")
    return (
        f"<section id='steps-section'{marks}><h2 id='steps'>{title}</h2><table><thead><tr><th>step</th>"
        "<th>status</th><th class='num'>slot</th><th class='num'>start</th><th class='num'>duration</th></tr></thead>"
        f"<tbody id='worked'>{''.join(rows)}</tbody></table>"
        + (f"<p class='muted' id='steps-more'>{more}</p>" if more else "")
        + "</section>"
    )


def step_page(
    run_id: str, intent: str, status: str, log: str | None, cut: bool, t: Html, *, live: str | None, nav: str = ""
) -> str:
    """A step's log (its end, when long), streaming while the step runs."""
    head = (
        f"<h1>{t(intent)} {badge(status, t)}</h1><p class='muted'>run <a href='/runs/{t(run_id)}'>{t(run_id)}</a></p>"
    )
    if cut:
        head += "<p class='muted'>the log's start is left out: its end is shown</p>"
    body = head + f"<pre id='log'>{t(log) if log is not None else ''}</pre>"
    if log is None and not live:
        body += "<p class='muted'>It printed nothing.</p>"
    return document(f"runner: {intent} in {run_id}", body, t, live=live, nav=nav)
