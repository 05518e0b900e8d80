"""Many agent steps at once with the openai worker against the fake Responses server: every step's call is in
flight together at -j N (the pool is not capped below -j, the workspace is made during the call), each change
is applied once, and an answer that writes outside its scope is refused with the project untouched."""

from __future__ import annotations

import os
import textwrap

GIT_ENV = dict(
    os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t"
)
DELAY = 3.0  # seconds the server waits before each answer: longer than any start-up skew between the steps


def _answer(files: dict[str, str]) -> str:
    blocks = "".join(f"<<MIS:FILE path={path}>>\n{body}" for path, body in files.items())
    return f'<<MIS:START>>\n{blocks}<<MIS:JSON>>\n{{"summary": "wrote it"}}\n<<MIS:END>>\n'


def _project(agent, srv, steps: int) -> None:
    with open(agent.root / "adapters/local.toml", "a") as f:
        f.write('[commands.check]\nrun = "true"\n')
    worker = textwrap.dedent(f"""\
        [worker]
        kind = "openai"
        model = "gpt-5.5"
        base_url = "{srv.base_url}"
        env_key = "FAKE_KEY"
        timeout = 30
        """)
    intents = "".join(
        textwrap.dedent(f"""\
            [intent.n{i}]
            goal = "Write note number {i} of the batch"
            inputs = ["src/calc.py"]
            outputs = ["notes/n{i}.txt"]
            adapter = "local"
            verify = ["check"]
            """)
        for i in range(steps)
    )
    all_ = ", ".join(f'"n{i}"' for i in range(steps))
    (agent.root / "intents.toml").write_text(
        f'[project]\nname = "many"\ndefault = "all"\n{worker}\n[intent.all]\ndeps = [{all_}]\n\n{intents}'
    )


def test_four_openai_steps_at_j4_are_in_flight_together_and_each_is_applied_once(agent, server):
    srv = server(
        [
            {
                "match": f"note number {i} ",
                "steps": [{"message": _answer({f"notes/n{i}.txt": f"note {i}\n"}), "delay": DELAY}],
            }
            for i in range(4)
        ]
    )
    _project(agent, srv, 4)
    temp = agent.root.parent / "tmp"  # where the attempts' workspaces are made
    temp.mkdir()
    result = agent.make("-j", "4", env=dict(agent.env(), TMPDIR=str(temp)))
    assert result.code == 0, result.err + result.out[-2000:]
    for i in range(4):
        assert (agent.root / f"notes/n{i}.txt").read_text() == f"note {i}\n"
        assert result.step(f"n{i}")["status"] == "ran"
    requests = srv.requests()
    assert len(requests) == 4
    sent = sorted(r["ts"] for r in requests)
    # every request reached the server before the first answer came back: four calls in flight at once
    assert sent[-1] - sent[0] < DELAY, sent
    # the attempts' workspaces (removed in the background) and the apply journals (retired in the background)
    # are all gone once the command is
    assert list(temp.iterdir()) == []
    assert list((agent.root / ".runner/apply").iterdir()) == []
    again = agent.make("-j", "4")
    assert again.code == 0 and len(srv.requests()) == 4  # a second make pays for nothing


def test_an_openai_answer_beyond_its_outputs_is_refused_and_the_project_is_untouched(agent, server):
    srv = server([{"steps": [{"message": _answer({"notes/n0.txt": "note\n", "src/calc.py": "broken = True\n"})}]}])
    _project(agent, srv, 1)
    before = agent.files()
    result = agent.make()
    assert result.code == 1
    assert result.step("n0")["error"] == (
        "refused: src/calc.py: outside the scope of policy 'default' and the intent's outputs (notes/n0.txt)"
    )
    assert agent.files() == before


def test_one_after_another_the_steps_attempts_share_one_worktree_brought_back_each_time(agent, server):
    """In a git repository, a spent attempt's worktree is brought back for the next step (runner.attempt): the
    three verifications run in one folder, and each sees the outputs the steps before it applied (uncommitted
    files of the project), as a new worktree would. The slot a step frees starts the next one before its change
    is applied (execute.py's _handle), and the next step's workspace waits for that apply."""
    import subprocess

    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run(["git", *args], cwd=agent.root, check=True, capture_output=True, env=GIT_ENV)
    srv = server(
        [
            {"match": f"note number {i} ", "steps": [{"message": _answer({f"notes/n{i}.txt": f"note {i}\n"})}]}
            for i in range(3)
        ]
    )
    _project(agent, srv, 3)
    seen = agent.root.parent / "seen.txt"
    with open(agent.root / "adapters/local.toml", "a") as f:
        # the verify also runs `git status` after touching a tracked file, as tools do: git must not rewrite the
        # worktree's index for it (an index that moved makes the worktree unfit to bring back)
        f.write(
            r"""
[commands.look]
run = "touch intents.toml && git status >/dev/null"
[commands.where]
run = "echo $PWD@$(stat -c %w . | tr -d ' ') $(ls notes | tr '\\n' ,) >> \"$SEEN\""
"""
        )
    spec = (agent.root / "intents.toml").read_text().replace('verify = ["check"]', 'verify = ["look", "where"]')
    (agent.root / "intents.toml").write_text(spec)
    result = agent.make("-j", "1", env=dict(agent.env(), SEEN=str(seen)))
    assert result.code == 0, result.err + result.out[-2000:]
    lines = seen.read_text().split()
    folders, listed = lines[0::2], lines[1::2]
    assert len(set(folders)) == 1, folders  # one workspace for the three attempts (the same folder, not remade)
    assert listed == ["n0.txt,", "n0.txt,n1.txt,", "n0.txt,n1.txt,n2.txt,"]
    order = [(e["event"], e["intent"]) for e in result.events() if e["event"] in ("step_started", "step_finished")]
    assert order.index(("step_started", "n1")) < order.index(("step_finished", "n0")), order
    assert order.index(("step_started", "n2")) < order.index(("step_finished", "n1")), order
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=agent.root, capture_output=True, text=True).stdout
    assert len(worktrees.strip().splitlines()) == 1, worktrees  # and it is gone with the run


def test_an_attempt_finishing_takes_the_file_work_slot_before_a_workspace_being_made():
    """At -j 16 sixteen answers come back together while the next steps make their workspaces: the finishes
    (finding the change, undoing a verify's side effects) free slots for the next steps, so they go first."""
    import threading
    import time

    from runner.steps.agent import _FileWork

    gate = _FileWork(1)
    order: list[str] = []

    def take(kind: str) -> None:
        with getattr(gate, kind)():
            order.append(kind)

    holding = gate.making()
    holding.__enter__()  # the one slot busy
    maker = threading.Thread(target=take, args=("making",))
    maker.start()
    finisher = threading.Thread(target=take, args=("finishing",))
    finisher.start()
    deadline = time.monotonic() + 10
    while gate._finishes_waiting == 0 and time.monotonic() < deadline:
        time.sleep(0.001)
    holding.__exit__(None, None, None)
    maker.join(30)
    finisher.join(30)
    assert order == ["finishing", "making"]
