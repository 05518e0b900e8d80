"""`runner approve [INTENT...]`: apply (or `--reject`) verified changes that wait for approval; no model call."""

from __future__ import annotations

from ..errors import EXIT_OK, EXIT_STEP_FAILED, UsageError
from . import SPEC_FILE, Command, Invocation, argument, echo, flag, option, print_json, warn


def run(
    inv: Invocation,
    intents: tuple[str, ...],
    spec_file: str | None,
    reject: bool,
    prompt: str | None,
    pattern: str | None,
    show: bool = False,
) -> int:
    if prompt is not None or pattern is not None:
        return _candidate(inv, prompt, pattern, reject)
    if show:
        if reject:
            raise UsageError("error: --show only shows a waiting change; drop --reject (or --show) and run it again")
        return _show(inv, intents, spec_file)
    from ..approvals import decide
    from ..executors import stop_abandoned

    done = decide(inv.directory, spec_file, intents, reject, stop_abandoned, lambda said: warn([f"runner: {said}"]))
    if done is None:
        if inv.as_json:
            print_json({"done": []})
        else:
            echo("nothing waits for approval")
        return EXIT_OK
    if inv.as_json:
        print_json({"done": done})
    else:
        for d in done:
            if d["action"] == "allowed":
                echo(f"allowed {d['intent']}: its next `runner make` may call the model once")
                continue
            detail = d.get("error") or ", ".join(d.get("files", []))
            echo(f"{d['action']} {d['intent']}: {detail}")
    return EXIT_STEP_FAILED if any(d["action"] == "failed" for d in done) else EXIT_OK


def _show(inv: Invocation, intents: tuple[str, ...], spec_file: str | None) -> int:
    """Each waiting change (of INTENT, or every one): diff, verify result, drift; nothing is approved."""
    from ..apply import load_pending
    from ..pipeline import load_project
    from ..suggest import did_you_mean
    from ..waiting import render, views

    project = load_project(inv.directory, spec_file=spec_file)
    intents = tuple(project.named(name) for name in intents)
    pending = load_pending(project.layout.state_dir)
    agents = {n for n, i in project.spec.intents.items() if i.kind == "agent"}
    for name in intents:
        if name not in pending and name not in agents:
            raise UsageError(
                f"error: '{name}' is not an agent step{did_you_mean(name, agents)}; "
                f"changes waiting: {', '.join(sorted(pending)) or 'none'}"
            )
    shown = views(project.spec, project.layout.state_dir, list(intents))
    if inv.as_json:
        print_json({"waiting": shown})
        return EXIT_OK
    if not shown:
        which = f" for {', '.join(intents)}" if intents else ""
        echo(f"nothing waits for approval{which}")
    for i, view in enumerate(shown):
        if i:
            echo("")
        for line in render(view):
            echo(line)
    return EXIT_OK


def _candidate(inv: Invocation, prompt: str | None, pattern: str | None, reject: bool) -> int:
    """A variant of a prompt template (into canary, or promoted once ready there), or a pattern ready to be
    promoted ([learn] approve_patterns); --reject retires either."""
    from ..learn.cycle import approve_pattern, settings_of, today
    from ..learn.prompts import approve
    from ..workspace import Layout, ProjectLock, find_root

    root = find_root(inv.directory)
    with ProjectLock(Layout(root), "runner approve"):
        if prompt is not None:
            done = approve(root, prompt, reject, settings_of(root), today())
        else:
            assert pattern is not None
            done = approve_pattern(root, pattern, reject)
    if inv.as_json:
        print_json({"done": [done]})
    else:
        echo(done)
    return EXIT_OK


COMMAND = Command(
    "approve",
    "Apply (or --reject) verified changes that wait for approval; no model is called.",
    (
        argument("intents", nargs=-1),
        SPEC_FILE,
        flag("--reject", dest="reject", help="Drop the pending change instead of applying it."),
        flag("--show", dest="show", help="Show the waiting change (diff, verify, drift) without approving it."),
        option(
            "--prompt",
            dest="prompt",
            help="A variant of a prompt template (NAME/VARIANT): into canary, or promoted once ready.",
            metavar="NAME/VARIANT",
        ),
        option(
            "--pattern",
            dest="pattern",
            help="A candidate pattern ready to be promoted ([learn] approve_patterns).",
            metavar="FAMILY/NAME",
        ),
    ),
    run,
)
