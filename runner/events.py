"""Every event `runner make --json` writes (runner/schemas/events.json), built here: the scheduler's, the pipeline's,
an agent step's attempts', the fast no-op's, `make -n`'s plan, the roadmap's and a command's error object, so that
each event has one spelling and one place to add a key.

The events a big build writes thousands of times (a step started, a shell step that ran, the cached steps) come
with their JSON line made by hand, which the record writes as is (an encoder call each is ~5 us a step). Intent
names need no escaping in a line ([A-Za-z0-9_.-], the schema says so); the reasons are encoded once per distinct
list (json_list). A builder's `more` keys (a run's clock, a job slot) go into the event and its line alike.

Imported by the warm no-op (runner/noop.py): json alone, no typing (noop.py's cheap-import rule).
"""

from __future__ import annotations

import json

_encoded_lists: dict[tuple[str, ...], str] = {}


def json_list(items: list[str]) -> str:
    """json.dumps(items), kept for the few lists that repeat over thousands of events (a step's reasons)."""
    key = tuple(items)
    line = _encoded_lists.get(key)
    if line is None:
        line = json.dumps(items)
        if len(_encoded_lists) < 256:
            _encoded_lists[key] = line
    return line


def _tail(more: dict) -> str:
    """The `more` keys of an event, as they end its hand-made line."""
    return "".join(f', "{key}": {json.dumps(value)}' for key, value in more.items())


# ---- the run ----------------------------------------------------------------------------------------------------
def run_started(run_id: str, steps: int, jobs: int, started: str) -> dict:
    """The run's first event: its id, the steps it counts (aggregates are none), its slots and when it began (UTC,
    record.utc_stamp)."""
    return {"event": "run_started", "run_id": run_id, "steps": steps, "jobs": jobs, "started": started}


def run_started_fast(run_id: str, steps: int, jobs: int, started: str) -> str:
    """The fast no-op's run_started line, key for key the pipeline's, with "fast": true."""
    return (
        f'{{"event": "run_started", "run_id": "{run_id}", "steps": {steps}, "jobs": {jobs}, '
        f'"started": "{started}", "fast": true}}'
    )


def named(targets) -> str | list[str] | None:
    """The targets as events and JSON results show them: None, the one name, or the list of them."""
    return None if not targets else targets[0] if len(targets) == 1 else list(targets)


def run_finished(
    run_id: str,
    targets,
    status: str,
    counts: dict[str, int],
    duration: float,
    attempts: int = 0,
    usage=None,
    **more,
) -> dict:
    """The run's last event, the fast no-op's too. `targets`: as named on the command line (the no-op never loads
    the spec to learn [project] default); `more`: what only a run that ran steps can say (left, drift, refused,
    inputs_changed, remote), each given only when there is something to say."""
    return {
        "event": "run_finished",
        "run_id": run_id,
        "target": named(targets),
        "status": status,
        **counts,
        "attempts": attempts,
        "usage": usage or {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0},
        "duration": round(duration, 3),
        **more,
    }


def recovered(message: str) -> dict:
    """What the run's start put right of a run a kill cut short (an apply finished or undone, a child stopped)."""
    return {"event": "recovered", "message": message}


def plan(targets, steps: list[dict], agent: dict | None = None) -> dict:
    """`runner make -n`'s one line: each step's decision, and what its agent steps would spend."""
    event: dict = {"event": "plan", "target": named(targets), "steps": steps}
    if agent is not None:
        event["agent"] = agent
    return event


def affected(found: dict) -> dict:
    """`runner make --affected BASE`'s first line: which selected intents a change since BASE affects, and why
    (affected.Affected.to_json)."""
    return {"event": "affected", **found}


def error(code: int, message: str, problems: list) -> dict:
    """A command that cannot do its work, in one line a script reads as it reads the command's results."""
    return {"event": "error", "code": code, "message": message, "problems": problems}


def roadmap_synced(ticked: list[dict], unmarked: list[dict], missing: list[dict]) -> dict:
    """`make --sync-roadmap`: the roadmap items marked done, and those it could not mark."""
    return {"event": "roadmap_synced", "ticked": ticked, "unmarked": unmarked, "missing": missing}


# ---- a step -----------------------------------------------------------------------------------------------------
def step_started(name: str, reasons: list[str], **more) -> tuple[dict, str]:
    """A step about to start, why it runs: the event and its line."""
    line = f'{{"event": "step_started", "intent": "{name}", "reasons": {json_list(reasons)}{_tail(more)}}}'
    return {"event": "step_started", "intent": name, "reasons": reasons, **more}, line


def step_finished(name: str, **keys) -> dict:
    """A step's end, its keys in the order events.json lists them for its status (a failure's: duration, what it
    left, status, reasons, exit_code, error, ...)."""
    return {"event": "step_finished", "intent": name, **keys}


def step_ran(name: str, duration: float, reasons: list[str], **more) -> tuple[dict, str]:
    """A step that ran: the event and its line; `more`: its log, worker, agent details, outputs."""
    duration = round(duration, 3)
    line = (
        f'{{"event": "step_finished", "intent": "{name}", "duration": {duration!r}{_tail(more)}, '
        f'"status": "ran", "reasons": {json_list(reasons)}}}'
    )
    return {
        "event": "step_finished",
        "intent": name,
        "duration": duration,
        **more,
        "status": "ran",
        "reasons": reasons,
    }, line


def step_stopped(name: str, status: str, why: str | None, **more) -> dict:
    """A step that ends without a result of its own (failed or blocked before it started, or waiting for
    approval): its error is its one reason."""
    return {"event": "step_finished", "intent": name, **more, "status": status, "error": why, "reasons": [why]}


def step_skipped(name: str, why: str) -> dict:
    """A step not started: the run stopped, or a dependency failed."""
    return {"event": "step_finished", "intent": name, "status": "skipped", "reasons": [why]}


_CACHED_BEFORE = '{"event": "step_finished", "intent": "'
_CACHED_AFTER = '", "status": "cached", "reasons": ["up to date"]}'


def step_cached(name: str) -> dict:
    """A step proven up to date: the event cached_text's lines hold."""
    return {"event": "step_finished", "intent": name, "status": "cached", "reasons": ["up to date"]}


def cached_text(joined: str) -> str:
    """The `step_finished` lines of the steps proven up to date, the names `joined` by NULs (as a proof stores its
    order), joined by newlines: a 10,000-step no-op or edit is mostly these. Made by one replace over the string,
    not a line per name (~2 ms for 100,000 names instead of ~20). No names: ""."""
    if not joined:
        return ""
    return _CACHED_BEFORE + joined.replace("\0", _CACHED_AFTER + "\n" + _CACHED_BEFORE) + _CACHED_AFTER


# ---- an agent step's attempts -----------------------------------------------------------------------------------
def attempt_started(name: str, candidate: int, attempt: int, prompt: str | None = None, **more) -> dict:
    """One attempt of an agent step's candidate begins; `prompt`: the canary template variant it was given."""
    event = {"event": "attempt_started", "intent": name, "candidate": candidate, "attempt": attempt}
    if prompt:
        event["prompt"] = prompt
    return {**event, **more}


def attempt_finished(
    name: str,
    candidate: int,
    attempt: int,
    ok: bool,
    kind: str | None,
    error: str | None,
    tokens: int,
    seconds: float,
    worker: str | None = None,
    **more,
) -> dict:
    """How one attempt ended: verified or why not, what it spent; `worker`: the Dask worker it ran on."""
    event = {
        "event": "attempt_finished",
        "intent": name,
        "candidate": candidate,
        "attempt": attempt,
        "ok": ok,
        "kind": kind,
        "error": error,
        "tokens": tokens,
        "seconds": round(seconds, 3),
    }
    if worker:
        event["worker"] = worker
    return {**event, **more}
