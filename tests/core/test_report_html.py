"""`runner report [RUN] --html -o FILE`: one self-contained HTML file of a recorded run, through the CLI on real
runs: its summary, graph by layer, timeline with the critical path, failures with their excerpts, agent attempts with
their diffs; nothing the run masked; nothing fetched from anywhere."""

from __future__ import annotations

import json
import re

SECRET = "s3cr3t-value-in-a-log-4412"

BUILD = """
[intent.a]
run = "echo building a; sleep 0.2; echo a > a.txt"
inputs = ["x"]
outputs = ["a.txt"]

[intent.b]
run = "echo the token is $MY_API_TOKEN; sleep 0.4; echo b > b.txt"
inputs = ["x"]
outputs = ["b.txt"]

[intent.c]
run = "echo compiling; echo \\"error: c.c:3: broke with $MY_API_TOKEN\\" >&2; exit 2"
deps = ["a", "b"]
inputs = ["x"]

[intent.all]
deps = ["c"]
"""


def self_contained(page: str) -> None:
    """Nothing a browser would fetch: no src, no link, no url(), no absolute address in an attribute."""
    assert not re.search(r"\bsrc\s*=", page) and "<link" not in page and "url(" not in page
    assert not re.search(r"""(href|action)=['"](https?:)?//""", page)


def test_a_failed_run_reported_with_its_graph_timeline_and_excerpt_and_no_secret(project):
    project.spec(BUILD)
    project.write("x", "1")
    env = {"MY_API_TOKEN": SECRET}
    built = project.make("-j", "2", "-k", env=env)
    assert built.code == 1, built.err
    run_id = built.events()[0]["run_id"]
    result = project.run("report", "--html", "-o", "report.html", env=env)
    assert result.code == 0, result.err
    assert result.err == f"runner: run {run_id} (failed) reported in report.html\n"
    page = (project.root / "report.html").read_text()
    self_contained(page)
    assert page.startswith("<!doctype html>") and f"Run {run_id}" in page
    # the graph: every step by its outcome, in its layer (a and b, then c), the aggregate no step
    assert re.search(r"class='chip s-ran[^']*' data-name='a'", page)
    assert re.search(r"class='chip s-failed[^']*' data-name='c'", page)
    assert "layer 1: 2 steps (2 ran)" in page and "layer 2: 1 step (1 failed)" in page
    assert "data-name='all'" not in page
    # the timeline: a bar per step on its slot; the critical path is b (the longer) then c
    assert len(re.findall(r"<rect class='bar'", page)) == 3
    assert "Critical path (2 steps" in page and "b → c" in page
    # the failure with its excerpt, masked
    assert "command exited with code 2" in page and "error: c.c:3: broke with [REDACTED:MY_API_TOKEN]" in page
    assert SECRET not in page
    # a secret in a log the run wrote before the secret was known (here: put there since) is masked as read
    log = project.root / ".runner" / "runs" / run_id / "logs" / "c.log"
    log.write_text(log.read_text().replace("[REDACTED:MY_API_TOKEN]", SECRET))
    assert SECRET in log.read_text()
    again = project.run("report", run_id[:15], "--html", "-o", "again.html", env=env)
    assert again.code == 0, again.err
    page = (project.root / "again.html").read_text()
    assert SECRET not in page and "broke with [REDACTED:MY_API_TOKEN]" in page


def test_the_quickstart_s_agent_attempts_with_their_diffs_and_verify_results(quickstart):
    root, runner = quickstart

    assert runner("make", "-j", "2").returncode == 0
    reported = runner("report", "--json", "--html", "-o", "r.html")
    assert reported.returncode == 0, reported.stderr
    said = json.loads(reported.stdout)
    page = (root / "r.html").read_text()
    assert said["report"] == "r.html" and said["bytes"] == len(page.encode())
    self_contained(page)
    assert "<h2 id='agents'>Agent steps</h2>" in page
    assert "<b>candidate 1, attempt 1</b>: rejected (logic)" in page
    assert "<b>candidate 1, attempt 2</b>: verified" in page
    assert "verify test: <code>python3 -m unittest discover -s tests -v</code> exit 1" in page
    assert "<span class='add'>+++ b/tests/test_calc.py</span>" in page
    assert "<summary>transcript</summary>" in page and "<summary>prompt</summary>" in page


def test_a_large_layer_starts_folded_and_every_step_is_findable(project):
    steps = "".join(f'[intent.s{i:03d}]\nrun = "true"\n\n' for i in range(320))
    project.spec(steps + '[intent.top]\nrun = "true"\ndeps = [' + ", ".join(f'"s{i:03d}"' for i in range(320)) + "]\n")
    assert project.make("-j", "2", "top").code == 0
    assert project.run("report", "--html", "-o", "big.html").code == 0
    page = (project.root / "big.html").read_text()
    assert "<details class='layer' id='layer-1'><summary>layer 1: 320 steps (320 ran)</summary>" in page  # folded
    assert "<details class='layer' id='layer-2' open><summary>layer 2: 1 step (1 ran)</summary>" in page
    assert "id='search'" in page and page.count("class='chip s-ran") == 321
    # too many to draw with edges: the graph collapsed to its two layers, one line of 320 dependencies between
    assert "<svg id='dag'" not in page
    nodes = re.findall(r"<g class='layer-node' data-layer='(\d+)' data-steps='(\d+)'>", page)
    assert nodes == [("1", "320"), ("2", "1")]
    assert "<title>320 dependencies of layer 2 on layer 1</title>" in page


def test_what_a_report_cannot_be_made_of(chain):
    none = chain.run("report", "--html", "-o", "r.html")
    assert (none.code, none.err) == (2, "error: no runs recorded yet in .runner/runs: run `runner make` first\n")
    assert chain.make().code == 0
    no_html = chain.run("report", "-o", "r.html")
    assert (no_html.code, no_html.err) == (
        2,
        "error: runner report writes HTML: `runner report [RUN] --html -o FILE`\n",
    )
    unknown = chain.run("report", "1999", "--html", "-o", "r.html")
    assert (unknown.code, unknown.err) == (2, "error: no run '1999' (`runner log --list` lists the 1 recorded runs)\n")
    nowhere = chain.run("report", "--html", "-o", "no/such/r.html")
    assert nowhere.code == 2
    assert nowhere.err == "error: cannot write the report to no/such/r.html: No such file or directory\n"
    assert not (chain.root / "r.html").exists()
