"""The project's pages beyond a run: changes waiting for approval (with Approve and Reject), an agent intent's
versions, and the learning loop (each candidate's stage, the runs' figures over time as small charts)."""

from __future__ import annotations

from .pages import Html, badge, document, name_path

CHARTS = (
    ("parse success", "parse_success", "%"),
    ("cache hit rate", "hit_rate", "%"),
    ("tokens spent", "tokens", ""),
    ("tokens saved", "tokens_saved", ""),
    ("agent attempts", "attempts", ""),
    ("verified at the first attempt", "first_attempt", "%"),
    ("duration", "duration", " s"),
)


def approvals_page(
    views: list[dict], t: Html, *, csrf: str | None, nav: str = "", done: list[dict] | None = None
) -> str:
    """Each waiting change: its files, diff, verify result and drift; Approve and Reject unless read-only
    (`csrf` None). `done`: what the last Approve or Reject did."""
    out = ["<h1>Waiting for approval</h1>"]
    for d in done or ():
        detail = d.get("error") or ", ".join(d.get("files", []))
        out.append(
            f"<p class='done' data-intent='{t(d['intent'])}'><b>{t(d['action'])} {t(d['intent'])}</b>: {t(detail)}</p>"
        )
    if not views:
        out.append("<p class='muted'>Nothing waits for approval.</p>")
    for v in views:
        name = v["intent"]
        out.append(f"<section class='waiting' data-intent='{t(name)}'><h2>{t(name)}</h2>")
        out.append(
            f"<p>A verified change to {len(v['files'])} file(s), run {t(v['run_id'])}, policy "
            f"<code>{t(v['policy'])}</code>: {t(', '.join(v['files']))}</p>"
        )
        verify = ", ".join(v["verify"]["commands"]) or "no verify commands"
        out.append(f"<p>verify: {badge('ok', t)} passed ({t(verify)})</p>")
        for drift in v["drift"]:
            out.append(f"<p><b>drift:</b> {t(drift.get('message', ''))}</p>")
        if v["edited"]:
            out.append(
                f"<p><b>edited since it was drafted:</b> {t(', '.join(v['edited']))} (approving would be refused)</p>"
            )
        diff = "\n".join(
            f"<span class='{'add' if line.startswith('+') else 'del' if line.startswith('-') else ''}'>{t(line)}</span>"
            for line in v["diff"].rstrip("\n").splitlines()
        )
        out.append(f"<pre class='diff'>{diff}</pre>")
        if csrf is not None:
            for action in ("approve", "reject"):
                out.append(
                    f"<form class='inline' method='post' action='/approvals/{name_path(name)}/{action}'>"
                    f"<input type='hidden' name='csrf' value='{t(csrf)}'>"
                    f"<button class='{action}' type='submit'>{action.title()}</button></form> "
                )
        out.append(f"<p class='muted'>the same as <code>runner approve {t(name)}</code> (or <code>--reject</code>)</p>")
        out.append("</section>")
    return document("runner: waiting for approval", "".join(out), t, nav=nav)


def history_page(name: str, versions: list[dict], t: Html, *, nav: str = "") -> str:
    out = [f"<h1>{t(name)}: versions</h1>"]
    if not versions:
        out.append("<p class='muted'>No version applied yet.</p>")
    else:
        out.append(
            "<table><tr><th>version</th><th>kind</th><th>run</th><th>time</th><th>change</th><th>tokens</th></tr>"
        )
        for v in versions:
            stat = v.get("diffstat") or {}
            change = f"{stat.get('files', 0)} files +{stat.get('insertions', 0)} -{stat.get('deletions', 0)}"
            out.append(
                f"<tr><td>{t(v.get('version'))}</td><td>{t(v.get('kind'))}</td><td>{t(v.get('run') or '')}</td>"
                f"<td>{t(v.get('time') or '')}</td><td>{t(change)}</td>"
                f"<td class='num'>{t(v.get('tokens') or 0)}</td></tr>"
            )
        out.append("</table>")
    return document(f"runner: {name} history", "".join(out), t, nav=nav)


def learning_page(candidates: list[dict], runs: list[dict], audit_text: str, t: Html, *, nav: str = "") -> str:
    """`learn status` as a table; the recorded runs' figures, oldest to newest, as small charts; the audit."""
    out = ["<h1>Learning</h1><h2>Candidates</h2>"]
    if not candidates:
        out.append("<p class='muted'>No candidates: <code>runner learn</code> proposes them from what runs missed.</p>")
    else:
        out.append("<table><tr><th>pattern</th><th>stage</th><th>runs</th><th>failed checks</th><th>next</th></tr>")
        for c in candidates:
            stage = f"canary {c['weight']}%" if c["stage"] == "canary" else c["stage"]
            out.append(
                f"<tr><td>{t(c['pattern'])}</td><td>{t(stage)}</td><td class='num'>{c['runs']}</td>"
                f"<td class='num'>{c['failed_checks']}</td><td>{t(c['next'] or c['reason'] or '')}</td></tr>"
            )
        out.append("</table>")
    out.append(f"<h2>The runs over time ({len(runs)})</h2>")
    for title, key, unit in CHARTS:
        out.append(_chart(title, key, [r.get(key) for r in runs], unit, t))
    out.append(f"<h2>Audit</h2><pre>{t(audit_text)}</pre>")
    return document("runner: learning", "".join(out), t, nav=nav)


def _chart(title: str, key: str, values: list, unit: str, t: Html) -> str:
    """A small line chart of one figure per run (a gap where a run has none); `data-last` holds the last run's
    figure that has one, unrounded."""
    points = [(i, float(v)) for i, v in enumerate(values) if v is not None]
    width, height = 260, 60
    if not points:
        return f"<div class='chart' data-chart='{key}'><b>{t(title)}</b><p class='muted'>no figure yet</p></div>"
    top = max(v for _i, v in points) or 1.0
    span = max(len(values) - 1, 1)
    at = [(4 + i / span * (width - 8), height - 4 - v / top * (height - 8)) for i, v in points]
    xy = " ".join(f"{x:.1f},{y:.1f}" for x, y in at)
    dots = "".join(f"<circle cx='{x:.1f}' cy='{y:.1f}' r='2.5' fill='#2f6fd6'/>" for x, y in at)
    last = points[-1][1]
    plain = int(last) if last.is_integer() else round(last, 4)
    return (
        f"<div class='chart' data-chart='{key}' data-last='{plain}'>"
        f"<b>{t(title)}</b>: {last:,.0f}{t(unit)} last, {top:,.0f}{t(unit)} at most<br>"
        f"<svg width='{width}' height='{height}' role='img' aria-label='{t(title)} per run'>"
        f"<polyline fill='none' stroke='#2f6fd6' stroke-width='2' points='{xy}'/>{dots}</svg></div>"
    )


def run_figures(summary: dict, events: list[dict], audited: dict | None = None) -> dict:
    """The figures a learning chart draws for one run, from its summary and events; `audited`: the run's own
    figures as `runner audit` counts them (learn.audit.audit's `each`), for parse success (its failed steps' logs
    that today's library explains) and the tokens the cache saved (its agent steps served from the cache, at what
    their result cost when it was made)."""
    decided = summary["ran"] + summary["cached"] + summary["restored"]
    firsts = [e for e in events if e.get("event") == "attempt_finished" and e.get("attempt") == 1]
    parse = (audited or {}).get("parse_success_rate", {}).get("value")
    return {
        "parse_success": None if parse is None else 100.0 * parse,
        "hit_rate": 100.0 * (summary["cached"] + summary["restored"]) / decided if decided else None,
        "tokens": summary["tokens"],
        "tokens_saved": (audited or {}).get("saved_tokens", {}).get("value"),
        "attempts": summary["attempts"],
        "first_attempt": 100.0 * sum(1 for e in firsts if e.get("ok")) / len(firsts) if firsts else None,
        "duration": summary["duration"],
    }
