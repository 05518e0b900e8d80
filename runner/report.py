"""What the user sees of a run: live progress on a terminal, plain lines otherwise, JSON lines with --json."""

from __future__ import annotations

import json
import sys
import time

from .events import error, step_cached

TYPE_CHECKING = False  # the no-op imports this module: typing for mypy only (runner/noop.py says why)
if TYPE_CHECKING:
    from rich.live import Live


def _out(text: str, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    try:
        stream.write(text + "\n")
        stream.flush()
    except BrokenPipeError:
        reader_gone(stream)


def reader_gone(stream) -> None:
    """Whoever read this stream went away (`runner make --json | head -1`): the run goes on, its record whole,
    and what it would still print goes to /dev/null (Python's advice for a broken pipe) instead of raising in
    every thread that reports."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, stream.fileno())
    os.close(devnull)


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
        try:
            if self.pending:
                sys.stdout.write("\n".join(self.pending) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:
            reader_gone(sys.stdout)
        self.pending.clear()

    def close(self) -> None:
        self.flush()


class PlainReporter:
    """Plain lines for logs and pipes: what ran, what failed (with its log's tail), the summary; with -v also
    what each step prints, line by line as it prints it, after the step's name (`NAME | line`).

    `[N/M]` counts the steps shown: N those shown so far, M those the run may still show (its steps less the
    ones that finished unshown, cached steps without -v), so the numbers go up by one a line and end equal."""

    def __init__(self, verbose: bool = False):
        self.verbose = verbose
        self.total = 0  # the run's steps
        self.shown = 0  # steps whose end was shown
        self.unshown = 0  # steps that ended without a line (cached, skipped: shown with -v only)
        self.replayed = False  # agent steps served from recordings (the replay worker): nothing was spent

    @property
    def counter(self) -> str:
        return f"[{self.shown}/{self.total - self.unshown}]"

    def __call__(self, event: dict) -> None:
        kind = event["event"]
        if kind == "run_started":
            self.total = event["steps"]
        elif kind == "step_started" and self.verbose:
            _out(f"run {event['intent']}: {'; '.join(event.get('reasons', []))}")
        elif kind == "step_finished":
            self.replayed = self.replayed or bool((event.get("agent") or {}).get("replayed"))
            if self.verbose or event["status"] not in _QUIET:
                self.shown += 1
                self.step_line(event)
            else:
                self.unshown += 1
        elif kind == "run_finished":
            _out(summary_line(event, self.replayed), err=event.get("status") != "ok")
        elif kind == "attempt_finished" and not event.get("ok"):
            first_line = (event.get("error") or "").splitlines()[0] if event.get("error") else ""
            _out(
                f"  {event['intent']}: attempt {event['attempt']} rejected ({event.get('kind')}): {first_line}",
                err=True,
            )
        elif kind == "recovered":
            _out(f"runner: {event['message']}", err=True)

    def cached_steps(self, names: list[str]) -> None:
        """Steps proven up to date before anything starts (pipeline._Sink.cached): without -v nothing is shown
        of them, so 100,000 of them are one count, not 100,000 events."""
        if self.verbose:
            for name in names:
                self(step_cached(name))
        else:
            self.unshown += len(names)

    def output(self, intent: str, lines: list[str]) -> None:
        """What a shell step printed (-v): each line after the step's name, as docker compose shows services."""
        _out("\n".join(f"{intent} | {line}" for line in lines))

    def step_line(self, event: dict) -> None:
        status, name = event["status"], event["intent"]
        if status == "ran":
            replayed = "replayed " if (event.get("agent") or {}).get("replayed") else ""
            spent = f"; {replayed}{spent_text(event)}" if "usage" in event else ""
            spent += f" on {event['worker']}" if event.get("worker") else ""  # a step run on a Dask worker
            # an input that changed while it ran: the last reason says which, and that nothing was cached
            moved = f": {event['reasons'][-1]}" if event.get("inputs_changed") else ""
            _out(f"{self.counter} ran {name} ({event.get('duration', 0):.2f}s{spent}){moved}")
        elif status == "restored":
            _out(f"{self.counter} restored {name} from the {'remote ' if event.get('remote') else ''}cache")
        elif status == "failed":
            _out(failure_text(event) + (f"\n  (on {event['worker']})" if event.get("worker") else ""), err=True)
        elif status == "blocked":
            _out(f"BLOCKED {name}: {event.get('error') or '; '.join(event.get('reasons', []))}", err=True)
        else:
            _out(f"{self.counter} {status} {name}: {'; '.join(event.get('reasons', []))}")
        if event.get("drift"):  # under the step's own line, on the same stream
            _out(drift_text(event), err=status in ("failed", "blocked"))

    def close(self) -> None:
        pass


_QUIET = frozenset(("cached", "skipped"))  # statuses shown with -v only


class LiveReporter(PlainReporter):
    """The plain lines, and under them rich's live progress line on a terminal: the steps shown of those
    the run may show, the time since the first step started, what is running. It appears when the first
    step starts (a run with nothing to run shows none) and shows nothing while no step runs.

    Every line is printed whole: the console soft-wraps (rich never cuts a line at the terminal's width, so
    a path stays one line to copy), and the progress line is cut to the width with an ellipsis instead."""

    def __init__(self, verbose: bool = False):
        super().__init__(verbose)
        from rich.console import Console  # only on a terminal

        self.console = Console(stderr=True, soft_wrap=True)
        self.running: dict[str, float] = {}
        self.started = 0.0
        self.live: Live | None = None

    def __rich_console__(self, console, options):
        """The progress line, made anew at each refresh (8 a second): its timer ticks while steps run."""
        running = list(self.running.items())  # copied at once: the scheduler's thread changes it meanwhile
        if not running:
            return
        from rich.text import Text

        names = [name for name, _since in sorted(running, key=lambda item: item[1])]
        shown = ", ".join(names[:4]) + (f" +{len(names) - 4}" if len(names) > 4 else "")
        line = Text(f"{self.counter} {time.monotonic() - self.started:5.1f}s  running: {shown}", style="bold")
        line.truncate(options.max_width, overflow="ellipsis")
        yield line

    def __call__(self, event: dict) -> None:
        kind = event["event"]
        if kind == "step_started":
            if self.live is None:
                self._start()
            self.running[event["intent"]] = time.monotonic()
        elif kind == "step_finished":
            self.running.pop(event["intent"], None)
        elif kind == "run_finished":
            self.close()
        super().__call__(event)

    def _start(self) -> None:
        from rich.live import Live

        self.started = time.monotonic()
        # lines printed meanwhile (ours, through sys.stdout and sys.stderr) go above the progress line
        self.live = Live(self, console=self.console, refresh_per_second=8, transient=True)
        self.live.start(refresh=True)

    def asking(self, ask):
        """`ask` with the progress line out of the way: a question is a line without its end, which would
        wait under the live display (and behind its redraws) instead of showing."""

        def paused(question: str, detail: str) -> bool:
            live = self.live
            if live is None:
                return ask(question, detail)
            live.stop()
            try:
                return ask(question, detail)
            finally:
                live.start(refresh=True)

        return paused

    def close(self) -> None:
        if self.live is not None:
            self.running.clear()  # its last frame is empty: no "running" left on the screen
            self.live.stop()
            self.live = None


def failure_text(event: dict) -> str:
    from .failure import render_failure  # what the runner understood, the excerpt, the log's path

    return render_failure(event)


LEFT_SHOWN = 10  # the steps a summary names as not done; the rest it counts


def summary_line(event: dict, replayed: bool = False) -> str:
    parts = [
        f"{event.get(k, 0)} {k}"
        for k in ("ran", "cached", "restored", "kept", "failed", "blocked", "skipped")
        if event.get(k)
    ]
    what = ", ".join(parts) or "nothing selected"
    status = event.get("status", "")
    head = {
        "ok": "runner:",
        "failed": "runner: FAILED:",
        "interrupted": "runner: interrupted:",
        "blocked": "runner: BLOCKED:",
    }.get(status, "runner:")
    if status == "ok" and not event.get("ran") and not event.get("restored") and not event.get("kept"):
        head = "runner: nothing to do:"
    line = f"{head} {what} in {event.get('duration', 0):.2f}s (run {event.get('run_id')})"
    if event.get("attempts") and replayed:  # recorded answers: what they cost once, not what this run spent
        line += f"\nagent steps replayed {spent_text(event)} from recordings (no model was called)"
    elif event.get("attempts"):
        line += f"\nagent steps spent {spent_text(event)}"
    if event.get("left"):
        left = event["left"]
        more = len(left) - LEFT_SHOWN
        named = ", ".join(left[:LEFT_SHOWN])
        # a stop early in a 100,000-step build left every step: one line of 700 KB said it (--json has them all)
        line += f"\nnot done: {named}" + (f" and {more} more (`runner status` lists them)" if more > 0 else "")
    if event.get("drift"):
        line += f"\ndrift flagged: {', '.join(event['drift'])} (`runner log STEP` shows what)"
    if event.get("refused"):  # each step's own line says which path, and why
        line += f"\ncached records refused, naming what their steps may not write: {', '.join(event['refused'])}"
    if event.get("inputs_changed"):
        names = ", ".join(event["inputs_changed"])
        line += f"\nnot cached, an input changed while it ran: {names} (the next `runner make` runs it again)"
    if event.get("remote"):
        line += "\n" + remote_text(event["remote"])
    return line


def remote_text(remote: dict) -> str:
    """The shared cache's part of a run (run_finished's `remote`): hits, uploads, what failed or was refused."""
    parts = [f"{remote['hits']} hit{'s' if remote['hits'] != 1 else ''}", f"{remote['uploaded']} uploaded"]
    if remote.get("refused"):
        parts.append(f"{remote['refused']} refused (damaged, unsigned or naming what a step may not write)")
    if remote.get("upload_failed"):
        parts.append(f"{remote['upload_failed']} upload{'s' if remote['upload_failed'] != 1 else ''} FAILED")
    line = f"remote cache {remote['url']} ({remote['mode']}): {', '.join(parts)}"
    if remote.get("down"):
        line += f"\nremote cache unavailable, local cache only: {remote['down']}"
    return line


def drift_text(event: dict) -> str:
    """A step's drift flags, one a line, under its step line."""
    return "\n".join(f"  DRIFT {event['intent']}: {d['message']}" for d in event["drift"])


def spent_text(event: dict) -> str:
    """What agent steps spent, from a step_finished or run_finished event: attempts, then tokens by kind."""
    u = event.get("usage") or {}
    n = event.get("attempts", 0)
    return (
        f"{n} attempt{'s' if n != 1 else ''}, {u.get('input_tokens', 0):,} input tokens "
        f"({u.get('cached_input_tokens', 0):,} cached), {u.get('output_tokens', 0):,} output tokens"
    )


def asked_for_json(argv: list[str]) -> bool:
    """Whether the command line asks for --json, read from its words (before a `--`): click may refuse them
    before it reads that option, and the error must be said in JSON all the same."""
    return "--json" in (argv[: argv.index("--")] if "--" in argv else argv)


def error_line(code: int, message: str, problems=(), when: bool = True) -> None:
    """With `when` (--json): a command that cannot do its work says why on stdout too, in one line a script
    reads as it reads the command's results, `{"event": "error", "code": N, "message": ..., "problems": [...]}`
    (runner/schemas/events.json; `problems` a spec error's, each located), masked as stderr is."""
    if not when:
        return
    from .redact import current_mask  # not at the top: the fast no-op imports this module

    mask = current_mask()
    message = mask.text(message.removeprefix("error: ").removeprefix("Error: "))
    line = json.dumps(error(code, message, mask.obj([p.to_json() for p in problems])))
    try:
        _out(line)
    except (BrokenPipeError, OSError):
        pass  # nobody reads stdout any more: stderr and the exit code still say it


def make_reporter(json_mode: bool, verbose: bool, terminal: bool):
    if json_mode:
        return JsonReporter()
    if terminal:
        return LiveReporter(verbose)
    return PlainReporter(verbose)
