"""Many agent steps at once with the openai worker against the fake Responses server: every step's call is in
flight together at -j N (the pool is not capped below -j, the workspace is made during the call), each change
is applied once, and an answer that writes outside its scope is refused with the project untouched."""

from __future__ import annotations

import textwrap

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
