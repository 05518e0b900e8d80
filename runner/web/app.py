"""`runner serve`'s server: the pages over the project's `.runner/` (read from the files a run writes, never under
the project lock but for Approve and Reject), its guard (the token, the Host check, CSRF), the live streams; the
one importer of starlette, sse-starlette and uvicorn (the `web` extra)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import json
import re
import secrets
import socket
from collections.abc import AsyncIterator, Callable
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import parse_qs

import uvicorn
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from ..names import stored, unstored
from ..redact import Mask
from . import pages, project_pages, run_data

RUN_ID = re.compile(r"^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$")
# an intent's name (PATH:NAME in a sub-project): in a URL as names.stored writes it, percent-encoded (pages.name_path)
INTENT = re.compile(r"^(?:[^:\x00]+:)?[A-Za-z0-9][A-Za-z0-9_.-]*$")
POLL = 0.5  # seconds between looks at a live run's files: reading them never slows or locks the build
LOOPBACK = ("127.0.0.1", "::1", "localhost")


class Guard:
    """Every request: a Host this server answers on (no DNS rebinding), then the token (the printed URL's
    ?token=, which sets a cookie, or that cookie); a POST also its form's CSRF token. Refused with 403 or 401,
    never a redirect to a login page."""

    def __init__(self, app, token: str, host_ok: Callable[[str], bool], cookie: str):
        self.app = app
        self.token = token.encode()
        self.host_ok = host_ok
        self.cookie = cookie

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        if not self.host_ok(host):
            return await _refuse(send, 403, f"forbidden: this server does not answer to the Host {host!r}\n")
        given = (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token") or [""])[0]
        jar = SimpleCookie()
        try:
            jar.load(headers.get("cookie", ""))
        except Exception:
            pass  # a cookie header this parser cannot read: as if there were none
        kept = jar[self.cookie].value if self.cookie in jar else ""
        if given and hmac.compare_digest(given.encode(), self.token):
            return await self.app(scope, receive, self._setting_cookie(send))
        if kept and hmac.compare_digest(kept.encode(), self.token):
            return await self.app(scope, receive, send)
        return await _refuse(send, 401, "unauthorized: open the URL `runner serve` printed (it holds ?token=)\n")

    def _setting_cookie(self, send):
        value = f"{self.cookie}={self.token.decode()}; HttpOnly; SameSite=Strict; Path=/"

        async def sending(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", value.encode())]}
            await send(message)

        return sending


async def _refuse(send, status: int, text: str) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def host_rule(host: str, port: int) -> Callable[[str], bool]:
    """Which Host headers the server answers: its own address and port (localhost too when it is the loopback);
    bound to every address (0.0.0.0), any IP literal or this machine's name, never another name, which a DNS
    rebinding page would send."""
    names = {host}
    if host in LOOPBACK:
        names.update(LOOPBACK)
    wildcard = host in ("0.0.0.0", "::")
    if wildcard:
        names.update({socket.gethostname(), socket.getfqdn()})

    def ok(value: str) -> bool:
        name, _, given_port = value.rpartition(":") if not value.endswith("]") else (value, "", "")
        if not name or given_port != str(port):
            return False
        name = name.strip("[]")
        if name in names:
            return True
        if wildcard:
            try:
                ipaddress.ip_address(name)
                return True
            except ValueError:
                return False
        return False

    return ok


class Site:
    """What the pages read: the project's runs and state, the spec's graph and mask (loaded again when the spec
    file changes)."""

    def __init__(self, root: Path, token: str, read_only: bool):
        self.root = root
        self.runs_dir = root / ".runner" / "runs"
        self.state_dir = root / ".runner"
        self.read_only = read_only
        self.csrf = hmac.new(token.encode(), b"csrf", hashlib.sha256).hexdigest()
        self._view: tuple[float, object, Mask] | None = None

    def view(self) -> tuple[dict | None, Mask]:
        spec = self.root / "intents.toml"
        try:
            stamp = spec.stat().st_mtime_ns
        except OSError:
            stamp = -1
        if self._view is None or self._view[0] != stamp:
            graph, mask = run_data.project_view(self.root)
            self._view = (stamp, graph, mask)
        return self._view[1], self._view[2]  # type: ignore[return-value]

    def nav(self, t: pages.Html) -> str:
        links = [("/", "Runs"), ("/approvals", "Approvals"), ("/learning", "Learning")]
        said = "".join(f"<a href='{href}'>{name}</a>" for href, name in links)
        return said + (" <span class='muted'>read-only</span>" if self.read_only else "")


def create_app(root: Path, token: str, host_ok: Callable[[str], bool], read_only: bool = False, cookie: str = "runner"):
    site = Site(root, token, read_only)

    def html(page: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(page, status_code=status, headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY"})

    def runs(request: Request) -> Response:
        _graph, mask = site.view()
        t = pages.Html(mask)
        return html(pages.runs_page(run_data.runs(site.runs_dir), t, run_href=lambda r: f"/runs/{r}", nav=site.nav(t)))

    def run(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        if not RUN_ID.match(run_id) or not (site.runs_dir / run_id / "events.jsonl").is_file():
            return PlainTextResponse(f"no run {run_id} in {site.runs_dir}\n", status_code=404)
        graph, mask = site.view()
        t = pages.Html(mask)
        offset = _size(site.runs_dir / run_id / "events.jsonl")  # before reading: a line after it is streamed
        data = run_data.load(site.runs_dir, run_id, graph, mask)
        query = request.query_params.get("q", "")[:200] or None  # the search box: any step of the run, by name
        href = lambda name: f"/runs/{run_id}/steps/{pages.name_path(name)}"  # noqa: E731 - one line, used twice
        if request.query_params.get("rows"):  # the box's script asks for the steps table alone
            return html(pages.steps_section(data, t, href, query))
        live = f"/runs/{run_id}/events?from={offset}"
        return html(pages.run_page(data, t, step_href=href, live=live, nav=site.nav(t), query=query))

    def step(request: Request) -> Response:
        run_id, intent = request.path_params["run_id"], unstored(request.path_params["intent"])
        if not RUN_ID.match(run_id) or not INTENT.match(intent) or not (site.runs_dir / run_id).is_dir():
            return PlainTextResponse(f"no step {intent} in run {run_id}\n", status_code=404)
        _graph, mask = site.view()
        t = pages.Html(mask)
        from ..record import step_runs

        events = step_runs(site.runs_dir, run_id, intent)
        finished = next((e for e in events if e.get("event") == "step_finished"), None)
        status = finished["status"] if finished else "running" if events else "not run"
        log_path = site.runs_dir / run_id / "logs" / f"{stored(intent)}.log"
        offset = _size(log_path)
        log, cut = run_data.step_log(site.runs_dir / run_id, intent, mask)
        live = (
            f"/runs/{run_id}/steps/{pages.name_path(intent)}/log?from={offset}" if finished is None and events else None
        )
        return html(pages.step_page(run_id, intent, status, log, cut, t, live=live, nav=site.nav(t)))

    async def run_events(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        if not RUN_ID.match(run_id):
            return PlainTextResponse("no such run\n", status_code=404)
        path = site.runs_dir / run_id / "events.jsonl"
        start = _offset(request)
        _graph, mask = site.view()
        return EventSourceResponse(_run_stream(path, start, mask, request))

    async def step_log(request: Request) -> Response:
        run_id, intent = request.path_params["run_id"], unstored(request.path_params["intent"])
        if not RUN_ID.match(run_id) or not INTENT.match(intent):
            return PlainTextResponse("no such step\n", status_code=404)
        _graph, mask = site.view()
        run_dir = site.runs_dir / run_id
        return EventSourceResponse(_log_stream(run_dir, intent, _offset(request), mask, request))

    def approvals(request: Request, done: list[dict] | None = None, status: int = 200) -> Response:
        from ..pipeline import load_project
        from ..waiting import views

        _graph, mask = site.view()
        t = pages.Html(mask)
        project = load_project(site.root)
        shown = views(project.spec, project.layout.state_dir, [])
        csrf = None if site.read_only else site.csrf
        return html(project_pages.approvals_page(shown, t, csrf=csrf, nav=site.nav(t), done=done), status)

    async def decide(request: Request) -> Response:
        if site.read_only:
            return PlainTextResponse("forbidden: runner serve --read-only takes no action\n", status_code=403)
        # the form read here: starlette's own form parser needs python-multipart, for two urlencoded fields
        form = parse_qs((await request.body())[:4096].decode("latin-1"))
        given = (form.get("csrf") or [""])[0]
        if not hmac.compare_digest(given.encode(), site.csrf.encode()):
            return PlainTextResponse("forbidden: the form's CSRF token is missing or wrong\n", status_code=403)
        intent, action = unstored(request.path_params["intent"]), request.path_params["action"]
        if not INTENT.match(intent) or action not in ("approve", "reject"):
            return PlainTextResponse("no such action\n", status_code=404)
        from starlette.concurrency import run_in_threadpool

        from ..approvals import decide as approve_or_reject
        from ..errors import RunnerError

        try:
            done = await run_in_threadpool(approve_or_reject, site.root, None, (intent,), action == "reject")
        except RunnerError as exc:
            return PlainTextResponse(f"{exc}\n", status_code=409)
        if done is None:
            done = [{"intent": intent, "action": "nothing waits", "files": []}]
        return await run_in_threadpool(approvals, request, done)

    def history(request: Request) -> Response:
        from ..versions import versions

        name = unstored(request.path_params["intent"])
        if not INTENT.match(name):
            return PlainTextResponse("no such intent\n", status_code=404)
        _graph, mask = site.view()
        t = pages.Html(mask)
        return html(project_pages.history_page(name, versions(site.state_dir, name), t, nav=site.nav(t)))

    def learning(request: Request) -> Response:
        from ..learn.audit import audit, render
        from ..learn.status import status_rows
        from ..record import read_events

        _graph, mask = site.view()
        t = pages.Html(mask)
        recorded = list(reversed(run_data.runs(site.runs_dir)))
        audited: dict[str, dict] = {}  # each run's figures as the audit's one walk counts them
        try:
            audit_text = render(audit(site.root, each=audited.__setitem__)) if recorded else "no run recorded yet"
        except (OSError, ValueError) as exc:
            audit_text = f"the audit could not be read: {exc}"
        figures = [
            project_pages.run_figures(r, read_events(site.runs_dir, r["run_id"]), audited.get(r["run_id"]))
            for r in recorded
        ]
        page = project_pages.learning_page(status_rows(site.root), figures, audit_text, t, nav=site.nav(t))
        return html(page)

    routes = [
        Route("/", runs),
        Route("/runs/{run_id}", run),
        Route("/runs/{run_id}/events", run_events),
        Route("/runs/{run_id}/steps/{intent}", step),
        Route("/runs/{run_id}/steps/{intent}/log", step_log),
        Route("/approvals", approvals),
        Route("/approvals/{intent}/{action}", decide, methods=["POST"]),
        Route("/intents/{intent}", history),
        Route("/learning", learning),
    ]
    return Guard(Starlette(routes=routes), token, host_ok, cookie)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _offset(request: Request) -> int:
    try:
        return max(0, int(request.query_params.get("from", "0")))
    except ValueError:
        return 0


async def _run_stream(path: Path, offset: int, mask: Mask, request: Request) -> AsyncIterator[dict]:
    """The run's events after `offset`, as the run writes them: each step's start and end, then the run's end."""
    pending = b""
    while not await request.is_disconnected():
        data = await asyncio.to_thread(_read_from, path, offset)
        offset += len(data)
        pending += data
        *lines, pending = pending.split(b"\n")
        changed: dict[str, str] = {}  # one message a look: a build of 10,000 steps is not 20,000 messages
        finished = None
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            kind = event.get("event")
            if kind == "step_started":
                changed[event["intent"]] = "running"
            elif kind == "step_finished":
                changed[event["intent"]] = event["status"]
            elif kind == "run_finished":
                finished = event
        if changed:
            yield {"event": "steps", "data": mask.text(json.dumps(list(changed.items())))}
        if finished is not None:
            yield {"event": "finished", "data": json.dumps({"status": finished.get("status")})}
            return
        await asyncio.sleep(POLL)


async def _log_stream(run_dir: Path, intent: str, offset: int, mask: Mask, request: Request) -> AsyncIterator[dict]:
    """A running step's log after `offset`, line by line as it prints, until its step_finished is written."""
    from ..record import step_runs

    path = run_dir / "logs" / f"{stored(intent)}.log"
    pending = b""
    while not await request.is_disconnected():
        data = await asyncio.to_thread(_read_from, path, offset)
        offset += len(data)
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield {"event": "log", "data": mask.text(line.decode("utf-8", "replace"))}
        if not data:
            events = await asyncio.to_thread(step_runs, run_dir.parent, run_dir.name, intent)
            if any(e.get("event") == "step_finished" for e in events):
                if pending:
                    yield {"event": "log", "data": mask.text(pending.decode("utf-8", "replace"))}
                yield {"event": "finished", "data": "{}"}
                return
        await asyncio.sleep(POLL)


def _read_from(path: Path, offset: int, most: int = 1 << 20) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(most)
    except OSError:
        return b""


def serve(root: Path, host: str, port: int, read_only: bool, announce: Callable[[str], None]) -> None:
    """Bind `host`:`port` (0: a free port), say the URL with its token, serve until interrupted."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(24)
    app = create_app(root, token, host_rule(host, port), read_only, cookie=f"runner_token_{port}")
    shown = f"[{host}]" if ":" in host else host
    announce(f"http://{shown}:{port}/?token={token}")
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
