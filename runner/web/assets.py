"""The pages' own style and script, inlined in every page (no request leaves a page: the report opens from file://)."""

from __future__ import annotations

CSS = """
:root { --ran:#2e9d4f; --cached:#9aa3ad; --restored:#2a9d9a; --kept:#7d5ab5; --failed:#d23c3c; --skipped:#d9dde2;
  --blocked:#e08a1e; --running:#2f6fd6; --ink:#1d232a; --muted:#5d6873; --line:#e3e7eb; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); margin: 0; }
header { background: #1d232a; color: #fff; padding: 10px 20px; display: flex; gap: 18px; align-items: baseline; }
header a { color: #cfe0ff; text-decoration: none; }
header .brand { font-weight: 700; color: #fff; }
main { padding: 16px 20px 40px; max-width: 1400px; }
h1 { font-size: 20px; margin: 4px 0 12px; }
h2 { font-size: 16px; margin: 26px 0 8px; border-bottom: 1px solid var(--line); }
table { border-collapse: collapse; }
td, th { padding: 3px 10px 3px 0; text-align: left; vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
tr + tr td { border-top: 1px solid var(--line); }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; padding: 0 7px; border-radius: 9px; color: #fff; font-size: 12px; }
.s-ran,.s-ok { background: var(--ran); }
.s-cached { background: var(--cached); }
.s-restored { background: var(--restored); }
.s-kept { background: var(--kept); }
.s-failed { background: var(--failed); }
.s-skipped { background: var(--skipped); color: #333; }
.s-blocked,.s-interrupted { background: var(--blocked); }
.s-running { background: var(--running); }
.chips { display: flex; flex-wrap: wrap; gap: 3px; margin: 6px 0; }
.chip { font: 12px ui-monospace, monospace; padding: 1px 6px; border-radius: 4px; color: #fff; text-decoration:
  none; }
.chip.s-skipped { color: #333; }
.chip.hidden, tr.hidden { display: none; }
.chip.crit { outline: 2px solid #111; }
details > summary { cursor: pointer; color: var(--muted); }
pre { background: #f5f7f9; border: 1px solid var(--line); padding: 8px; overflow-x: auto; font: 12px/1.4
  ui-monospace, monospace; max-height: 480px; white-space: pre-wrap; word-break: break-word; }
pre .add { color: #17692f; }
pre .del { color: #a32121; }
pre .hunk { color: #5b4bb7; }
.excerpt .n { color: var(--muted); user-select: none; }
.legend span { margin-right: 10px; }
.muted { color: var(--muted); }
input[type=search] { padding: 5px 8px; width: 320px; border: 1px solid #bcc5ce; border-radius: 4px; }
svg text { font: 11px system-ui, sans-serif; }
.attempt { border-left: 3px solid var(--line); padding-left: 10px; margin: 10px 0; }
.attempt.ok { border-color: var(--ran); }
.attempt.bad { border-color: var(--failed); }
form.inline { display: inline; }
button { padding: 4px 12px; cursor: pointer; }
button.approve { background: var(--ran); color: #fff; border: 0; border-radius: 4px; }
button.reject { background: var(--failed); color: #fff; border: 0; border-radius: 4px; }
.chart { display: inline-block; margin: 0 20px 10px 0; vertical-align: top; }
"""

# the search box filters the steps' chips and rows by name; on a served page whose steps table could not list every
# step (or was rendered for a search), the server is asked for the table of the steps the box finds (`?rows=1&q=`), the
# same the box's form asks for without script. On a live page the server sends the steps whose state
# changed, a batch per look at the run's files: each one's chip and row badge turn to its new state (found through a
# map built once, not a query per step), a step the page did not know gets a chip of its own, and a finished run
# reloads the page (everything else is in the HTML already)
JS = """
(function () {
  var box = document.getElementById('search'), form = document.getElementById('find'), asking = null;
  var shown = null;
  function filter() {
    var q = box.value.trim().toLowerCase();
    document.querySelectorAll('[data-name]').forEach(function (el) {
      var hit = !q || el.getAttribute('data-name').toLowerCase().indexOf(q) >= 0;
      el.classList.toggle('hidden', !hit);
      if (hit && q) { var d = el.closest('details'); if (d) d.open = true; }
    });
  }
  function ask() {
    var section = document.getElementById('steps-section'), q = box.value.trim();
    if (!form || !section || !(section.hasAttribute('data-more') || section.hasAttribute('data-q'))) return;
    fetch(location.pathname + '?rows=1&q=' + encodeURIComponent(q), {credentials: 'same-origin'})
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        var now = document.getElementById('steps-section');
        if (html && now && box.value.trim() === q) { now.outerHTML = html; shown = null; filter(); }
      });
  }
  if (box) box.addEventListener('input', function () {
    filter();
    clearTimeout(asking); asking = setTimeout(ask, 200);
  });
  var live = document.body.getAttribute('data-live');
  if (!live || !window.EventSource) return;
  function index() {
    shown = new Map();
    document.querySelectorAll('.chip[data-name], tr[data-name] .state').forEach(function (el) {
      var name = el.getAttribute('data-name') || el.closest('tr').getAttribute('data-name');
      if (!shown.has(name)) shown.set(name, []);
      shown.get(name).push(el);
    });
  }
  var source = new EventSource(live);
  source.addEventListener('steps', function (m) {
    if (shown === null) index();
    JSON.parse(m.data).forEach(function (step) {
      var name = step[0], state = step[1], els = shown.get(name);
      if (!els) {
        var chip = document.createElement('span');
        chip.className = 'chip s-' + state; chip.setAttribute('data-name', name); chip.textContent = name;
        var box = document.getElementById('live-chips'); if (box) box.appendChild(chip);
        els = [chip]; shown.set(name, els);
      }
      els.forEach(function (el) {
        el.className = el.className.replace(/\\bs-[a-z]+/, 's-' + state);
        if (el.classList.contains('state')) el.textContent = state;
      });
    });
  });
  source.addEventListener('log', function (m) {
    var pre = document.getElementById('log'); if (pre) { pre.textContent += m.data + '\\n'; }
  });
  source.addEventListener('finished', function () { source.close(); location.reload(); });
})();
"""
