"""`runner serve`'s contract over HTTP, against the real server process: the one printed line, the token (query,
then cookie), 401/403 never a redirect, the Host check, CSRF on Approve and Reject (runner approve's code path),
--read-only, the pages rendered on the server with the run ids, step names and outcomes in the HTML, nothing a run
masked."""

from __future__ import annotations

import re
import socket
import subprocess
import sys

from web_helpers import events, runner, waiting_change

SECRET = "s3cr3t-served-value-9031"

BUILD = """
[intent.a]
run = "echo building a"
inputs = ["x"]

[intent.b]
run = "echo the token is $MY_API_TOKEN; exit 1"
inputs = ["x"]
deps = ["a"]
"""


def built(project) -> str:
    project.spec(BUILD)
    project.write("x", "1")
    result = project.make("-k", env={"MY_API_TOKEN": SECRET})
    assert result.returncode == 1, result.stderr
    return events(result.stdout)[0]["run_id"]


def test_the_token_then_its_cookie_and_every_refusal_without_a_redirect(project, serve):
    run_id = built(project)
    served = serve(project.root)
    assert served.proc.stderr.readline() == "runner: serving the project's runs; Ctrl-C stops it\n"
    # nothing without the token, and no redirect to a login page
    status, headers, body = served.get("/", token=False)
    assert (status, body) == (401, "unauthorized: open the URL `runner serve` printed (it holds ?token=)\n")
    assert "location" not in {k.lower() for k in headers}
    status, _h, _b = served.get(f"/runs/{run_id}", token=False)
    assert status == 401
    wrong = served.get("/?token=" + "x" * 32, token=False)
    assert wrong[0] == 401
    # a Host other than the address served: refused even with the token (a DNS-rebinding page sends its own)
    status, headers, body = served.get("/", host=f"attacker.example:{served.port}")
    assert (status, body) == (
        403,
        f"forbidden: this server does not answer to the Host 'attacker.example:{served.port}'\n",
    )
    assert "location" not in {k.lower() for k in headers}
    assert served.get("/", host=f"127.0.0.1:{served.port + 1}")[0] == 403
    assert served.get("/", host=f"localhost:{served.port}")[0] == 200
    # the token in the URL sets the cookie, which is enough from then on
    status, headers, body = served.get("/")
    assert status == 200
    assert headers["set-cookie"] == f"runner_token_{served.port}={served.token}; HttpOnly; SameSite=Strict; Path=/"
    status, _h, body = served.get("/", cookie=True)
    assert status == 200 and f"data-run='{run_id}'" in body
    assert "<span class='badge state s-failed'>failed</span>" in body


def test_a_run_s_page_is_rendered_on_the_server_and_masks_what_the_run_masked(project, serve):
    run_id = built(project)
    served = serve(project.root, env={"MY_API_TOKEN": SECRET})
    status, _h, page = served.get(f"/runs/{run_id}", cookie=True)
    assert status == 200
    assert re.search(r"class='chip s-ran[^']*' data-name='a'", page)
    assert re.search(r"class='chip s-failed[^']*' data-name='b'", page)
    assert f"href='/runs/{run_id}/steps/b'" in page and "<rect class='bar' data-name='b'" in page
    assert "<body data-live" not in page  # a finished run: nothing to stream
    status, _h, log = served.get(f"/runs/{run_id}/steps/b", cookie=True)
    assert status == 200 and "the token is [REDACTED:MY_API_TOKEN]" in log and SECRET not in log
    # a secret in a log written before it was known (here: put there since) is masked as the page reads it
    path = project.root / ".runner" / "runs" / run_id / "logs" / "b.log"
    path.write_text(path.read_text().replace("[REDACTED:MY_API_TOKEN]", SECRET))
    status, _h, log = served.get(f"/runs/{run_id}/steps/b", cookie=True)
    assert "the token is [REDACTED:MY_API_TOKEN]" in log and SECRET not in log
    assert served.get("/runs/20990101-000000-abcdef", cookie=True)[0] == 404
    assert served.get("/runs/..%2F..%2Fetc", cookie=True)[0] == 404


def test_the_search_is_answered_by_the_server_escaped_and_masked(project, serve):
    """`?q=` (the search box's form) and `?q=...&rows=1` (its script): the steps whose name holds the text, what was
    asked escaped and masked where the page says it back."""
    run_id = built(project)
    served = serve(project.root, env={"MY_API_TOKEN": SECRET})
    status, _h, page = served.get(f"/runs/{run_id}?q=B", cookie=True)
    assert status == 200 and "<tr id='row-b' data-name='b'>" in page and "data-name='a'><td>" not in page
    assert re.search(r"class='chip s-ran[^']*hidden' data-name='a'", page)
    assert "value='B'" in page and "<h2 id='steps'>Steps whose name holds “B” (1)</h2>" in page
    status, headers, rows = served.get(f"/runs/{run_id}?q=a&rows=1", cookie=True)
    assert status == 200 and rows.startswith("<section id='steps-section' data-q='a'>") and "<html" not in rows
    assert "<tr id='row-a' data-name='a'>" in rows and "data-name='b'" not in rows
    hostile = "%27%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E"  # '><script>alert(1)</script>
    status, _h, page = served.get(f"/runs/{run_id}?q={hostile}", cookie=True)
    assert status == 200 and "<script>alert(1)" not in page and "&#x27;&gt;&lt;script&gt;alert(1)" in page
    status, _h, page = served.get(f"/runs/{run_id}?q={SECRET}", cookie=True)
    assert SECRET not in page and "no step of this run has that in its name" in page


def test_approve_needs_its_csrf_token_and_applies_the_change_as_runner_approve_does(tmp_path, serve):
    root = waiting_change(tmp_path)
    served = serve(root)
    status, _h, page = served.get("/approvals")
    assert status == 200 and "<section class='waiting' data-intent='docs'>" in page
    assert "+++ b/docs/calc.md" in page
    csrf = re.search(r"name='csrf' value='([0-9a-f]+)'", page).group(1)
    # without the form's token, or without the cookie: refused, nothing applied
    status, _h, body = served.post("/approvals/docs/approve", {})
    assert (status, body) == (403, "forbidden: the form's CSRF token is missing or wrong\n")
    status, _h, _b = served.post("/approvals/docs/approve", {"csrf": csrf}, cookie=False)
    assert status == 401
    assert not (root / "docs" / "calc.md").exists()
    status, _h, page = served.post("/approvals/docs/approve", {"csrf": csrf})
    assert status == 200, page
    assert "<b>applied docs</b>: docs/calc.md" in page and "Nothing waits for approval." in page
    assert (root / "docs" / "calc.md").is_file()
    assert runner(root, "approve", "--show").stdout == "nothing waits for approval\n"


def test_reject_drops_the_change_and_read_only_takes_no_action(tmp_path, serve):
    root = waiting_change(tmp_path)
    read_only = serve(root, "--read-only")
    status, _h, page = read_only.get("/approvals")
    assert status == 200 and "<form" not in page and "read-only" in page
    status, _h, body = read_only.post("/approvals/docs/approve", {"csrf": "anything"})
    assert (status, body) == (403, "forbidden: runner serve --read-only takes no action\n")
    served = serve(root)
    csrf = re.search(r"name='csrf' value='([0-9a-f]+)'", served.get("/approvals")[2]).group(1)
    status, _h, page = served.post("/approvals/docs/reject", {"csrf": csrf})
    assert status == 200 and "<b>rejected docs</b>" in page
    assert not (root / "docs" / "calc.md").exists()
    shown = runner(root, "approve", "--show")
    assert shown.stdout == "nothing waits for approval\n"


def test_another_address_only_with_a_warning_and_a_busy_port_said(project):
    project.spec(BUILD)
    busy = socket.socket()
    busy.bind(("0.0.0.0", 0))
    busy.listen()
    port = busy.getsockname()[1]
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "runner", "serve", "--host", "0.0.0.0", "--port", str(port)],
            cwd=project.root,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        busy.close()
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        "runner: warning: serving on 0.0.0.0, not only this machine: whoever can reach it and holds the URL's token "
        "sees the project's runs and logs and may approve changes\n"
        f"error: cannot serve on 0.0.0.0:{port}: Address already in use\n"
    )


def test_without_the_web_extra_it_says_which_extra_to_install(project):
    """uvicorn absent (an install without the `web` extra; here made absent in the runner's own process)."""
    project.spec(BUILD)
    code = (
        "import sys; sys.modules['uvicorn'] = None; sys.argv = ['runner', 'serve']; "
        "from runner.entry import console; console()"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=project.root, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        "error: runner serve needs the web extra (uvicorn is not installed): pip install 'intent-runner[web]'\n"
    )


# a unittest run that fails: a log the built-in library reads (parse success)
BROKEN_TEST = """

[intent.broken]
run = "python3 -m unittest test_broken"
"""
FAILING = "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_one(self):\n        self.assertEqual(1, 2)\n"


def _chart(page: str, key: str) -> str | None:
    """A learning chart's last figure (its data-last), None when it has none yet."""
    found = re.search(rf"<div class='chart' data-chart='{key}'(?: data-last='([^']*)')?>", page)
    assert found, f"no chart {key}"
    return found.group(1)


def test_the_learning_page_charts_parse_success_and_tokens_saved_per_run(tmp_path, serve):
    """The quickstart (replay worker) with a failing unittest step: its log explained (parse success 100%); then
    docs made (tokens spent), its output removed and restored from the cache (those tokens saved), the last run
    with no failed step (parse success's chart keeps the last run that has one)."""
    from web_helpers import quickstart

    root = quickstart(tmp_path)
    (root / "intents.toml").write_text((root / "intents.toml").read_text() + BROKEN_TEST)
    (root / "test_broken.py").write_text(FAILING)
    assert runner(root, "make", "broken").returncode == 1
    made = runner(root, "make", "--json", "docs")
    assert made.returncode == 0, made.stderr
    usage = events(made.stdout)[-1]["usage"]
    spent = usage["input_tokens"] + usage["output_tokens"]
    (root / "docs" / "calc.md").unlink()
    restored = runner(root, "make", "--json", "docs")
    assert [e["status"] for e in events(restored.stdout) if e["event"] == "step_finished"] == ["restored"]
    served = serve(root)
    status, _headers, page = served.get("/learning")
    assert status == 200
    assert _chart(page, "parse_success") == "100"
    assert "<b>parse success</b>: 100% last" in page
    assert _chart(page, "tokens_saved") == str(spent) and spent > 0
    assert f"<b>tokens saved</b>: {spent:,}" in page
    assert _chart(page, "tokens") == "0"  # the last run spent nothing: the cache served it


def test_a_sub_project_s_step_has_a_page_of_its_own(project, serve):
    """PATH:NAME in a URL: one part of its path (names.stored, percent-encoded), never a folder of it."""
    project.spec('[project]\nname = "m"\ninclude = ["services/api"]\n')
    (project.root / "services/api").mkdir(parents=True)
    project.write("services/api/intents.toml", '[intent.test]\nrun = "echo testing the api"\n')
    result = project.make()
    assert result.returncode == 0, result.stderr
    run_id = events(result.stdout)[0]["run_id"]
    served = serve(project.root)
    status, _h, page = served.get(f"/runs/{run_id}", cookie=True)
    assert status == 200 and f"href='/runs/{run_id}/steps/services%252Fapi%253Atest'" in page
    status, _h, log = served.get(f"/runs/{run_id}/steps/services%252Fapi%253Atest", cookie=True)
    assert status == 200 and "testing the api" in log
    assert served.get(f"/runs/{run_id}/steps/services/api:test", cookie=True)[0] == 404
