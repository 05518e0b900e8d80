"""What the user sees of a run: live progress on a terminal, plain lines otherwise, JSON lines with --json."""

from __future__ import annotations

import json
import sys
import time


def _out(text: str, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n")
    stream.flush()


class JsonReporter:
    """One event a line on stdout: the scripting contract. Lines are written when the run is about to wait
    (see flush): a reader sees every event before the runner blocks, without a write per event."""

    def __init__(self):
        self.pending: list[str] = []

    def __call__(self, event: dict) -> None:
        self.write_line(json.dumps(event))

    def write_line(self, line: str) -> None:
        """An event already serialized (the run record did it): 10,000 cached steps need not be twice."""
        self.pending.append(line)

    def flush(self) -> None:
        if self.pending:
            sys.stdout.write("\n".join(self.pending) + "\n")
            self.pending.clear()
        sys.stdout.flush()

    def close(self) -> None:
        self.flush()


class PlainReporter:
    """Plain lines for logs and pipes: what ran, what failed (with its log's tail), the summary."""

    def __init__(self, verbose: bool = False):
        self.verbose = verbose
        self.total = 0
        self.done = 0

    def __call__(self, event: dict) -> None:
        kind = event["event"]
        if kind == "run_started":
            self.total = event["steps"]
        elif kind == "step_started" and self.verbose:
            _out(f"[{self.done}/{self.total}] run {event['intent']}: {'; '.join(event.get('reasons', []))}")
        elif kind == "step_finished":
            self.done += 1
            self.step_line(event)
        elif kind == "run_finished":
            _out(summary_line(event), err=event.get("status") != "ok")
        elif kind == "attempt_finished" and not event.get("ok"):
            first_line = (event.get("error") or "").splitlines()[0] if event.get("error") else ""
            _out(
                f"  {event['intent']}: attempt {event['attempt']} rejected ({event.get('kind')}): {first_line}",
                err=True,
            )
        elif kind == "recovered":
            _out(f"runner: {event['message']}", err=True)

    def step_line(self, event: dict) -> None:
        status, name = event["status"], event["intent"]
        if status == "ran":
            spent = f"; {spent_text(event)}" if "usage" in event else ""
            _out(f"[{self.done}/{self.total}] ran {name} ({event.get('duration', 0):.2f}s{spent})")
        elif status == "restored":
            _out(f"[{self.done}/{self.total}] restored {name} from cache")
        elif status == "failed":
            _out(failure_text(event), err=True)
        elif status == "blocked":
            _out(f"BLOCKED {name}: {event.get('error') or '; '.join(event.get('reasons', []))}", err=True)
        elif self.verbose:
            _out(f"[{self.done}/{self.total}] {status} {name}: {'; '.join(event.get('reasons', []))}")

    def close(self) -> None:
        pass


class LiveReporter(PlainReporter):
    """rich's live display on a terminal: done/total, what is running, elapsed."""

    def __init__(self, verbose: bool = False):
        super().__init__(verbose)
        from rich.console import Console  # only on a terminal with work to show
        from rich.live import Live

        self.console = Console(stderr=True)
        self.running: dict[str, float] = {}
        self.started = time.monotonic()
        self.live = Live(self._render(), console=self.console, refresh_per_second=8, transient=True)
        self.live.start()

    def _render(self):
        from rich.text import Text

        elapsed = time.monotonic() - self.started
        names = sorted(self.running, key=self.running.__getitem__)
        shown = ", ".join(names[:4]) + (f" +{len(names) - 4}" if len(names) > 4 else "")
        return Text(f"[{self.done}/{self.total}] {elapsed:5.1f}s  running: {shown or '-'}", style="bold")

    def __call__(self, event: dict) -> None:
        kind = event["event"]
        if kind == "step_started":
            self.running[event["intent"]] = time.monotonic()
        elif kind == "step_finished":
            self.running.pop(event["intent"], None)
        if kind == "run_finished":
            self.live.stop()
        super().__call__(event)
        if kind != "run_finished":
            self.live.update(self._render())

    def close(self) -> None:
        self.live.stop()


def failure_text(event: dict) -> str:
    from .excerpt import render_failure  # what the runner understood, the excerpt, the log's path

    return render_failure(event)


def summary_line(event: dict) -> str:
    parts = [
        f"{event.get(k, 0)} {k}" for k in ("ran", "cached", "restored", "failed", "blocked", "skipped") if event.get(k)
    ]
    what = ", ".join(parts) or "nothing selected"
    status = event.get("status", "")
    head = {
        "ok": "runner:",
        "failed": "runner: FAILED:",
        "interrupted": "runner: interrupted:",
        "blocked": "runner: BLOCKED:",
    }.get(status, "runner:")
    if status == "ok" and not event.get("ran") and not event.get("restored"):
        head = "runner: nothing to do:"
    line = f"{head} {what} in {event.get('duration', 0):.2f}s (run {event.get('run_id')})"
    if event.get("attempts"):
        line += f"\nagent steps spent {spent_text(event)}"
    if event.get("left"):
        line += f"\nnot done: {', '.join(event['left'])}"
    return line


def spent_text(event: dict) -> str:
    """What agent steps spent, from a step_finished or run_finished event: attempts, then tokens by kind."""
    u = event.get("usage") or {}
    n = event.get("attempts", 0)
    return (
        f"{n} attempt{'s' if n != 1 else ''}, {u.get('input_tokens', 0):,} input tokens "
        f"({u.get('cached_input_tokens', 0):,} cached), {u.get('output_tokens', 0):,} output tokens"
    )


def make_reporter(json_mode: bool, verbose: bool, terminal: bool):
    if json_mode:
        return JsonReporter()
    if terminal:
        return LiveReporter(verbose)
    return PlainReporter(verbose)
