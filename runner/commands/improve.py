"""`runner improve INTENT --feedback TEXT`: run an agent intent again with feedback on its latest version."""

from __future__ import annotations

from . import SPEC_FILE, Command, Invocation, flag, option, target_argument


def run(
    inv: Invocation,
    intent: str,
    feedback: str,
    spec_file: str | None,
    worker: str | None,
    no_wait: bool,
    verbose: bool,
) -> int:
    from ..names import shown
    from ..pipeline import load_project
    from ..versions import agent_intent, improve_request
    from .make import make

    project = load_project(inv.directory, spec_file=spec_file)
    intent = project.named(intent)
    agent_intent(project.spec, intent)
    request = improve_request(project.layout.state_dir, intent, feedback)
    return make(
        inv.directory,
        [shown(intent) if project.here else intent],  # typed again by make: a root intent's as :NAME
        spec_file,
        no_wait=no_wait,
        verbose=verbose,
        worker=worker,
        as_json=inv.as_json,
        ask=None if inv.as_json else inv.ask,
        improve={intent: request},
    )


COMMAND = Command(
    "improve",
    "Run an agent intent again with feedback and its latest version in the prompt; the verified result, applied "
    "through the same gates, is its next version.",
    (
        target_argument("intent", required=True),
        option("--feedback", dest="feedback", help="What the next version should do differently.", required=True),
        SPEC_FILE,
        option(
            "--worker",
            dest="worker",
            help="Use this worker for this run instead of [worker] kind.",
            type=("codex", "openai", "replay"),
        ),
        flag("--no-wait", dest="no_wait", help="Fail (exit 3) instead of waiting when another runner holds the lock."),
        flag("-v", "--verbose", dest="verbose", help="Stream what each step prints, as `runner make -v`."),
    ),
    run,
)
