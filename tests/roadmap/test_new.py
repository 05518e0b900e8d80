"""`runner new GOAL`: the model (the fake Responses server) drafts intents grounded in a tiny Python project; the
draft is appended to intents.toml (every byte before it kept) only with --yes, `runner validate` accepts it, and
a draft that is not valid, or a project with no model, is said exactly."""

from __future__ import annotations

import json

import pytest

GOAL = "Add rate limiting to the API"
HEAD = """\
# Hand-written: keep this comment, its spacing   and its order.
[project]
name = "shop"

[intent.lint]
run = "python3 -m compileall -q src"   # the quick check
inputs = ["src/**/*.py"]
"""
WORKER = """
[worker]
kind = "openai"
model = "gpt-test"
base_url = "{base_url}"
"""
DRAFT = {
    "intents": [
        {
            "name": "Rate limiter",
            "goal": "Write a token-bucket rate limiter in src/shop/ratelimit.py",
            "deps": ["lint"],
            "inputs": ["src/shop/api.py"],
            "outputs": ["src/shop/ratelimit.py"],
            "adapter": "python",
            "verify": ["test"],
            "acceptance": ["a burst over the limit gets 429"],
        },
        {
            "name": "rate-limit-tests",
            "goal": "Test the limiter through the API",
            "deps": ["Rate limiter"],
            "outputs": ["tests/test_ratelimit.py"],
            "verify": ["test"],
        },
    ]
}


def _fixture(project, base_url: str | None) -> str:
    project.write("pyproject.toml", '[project]\nname = "shop"\nversion = "0.1.0"\n')
    project.write("src/shop/__init__.py", "")
    project.write("src/shop/api.py", "def handle(request):\n    return 200\n")
    project.write(
        "tests/test_api.py", "from shop.api import handle\n\n\ndef test_ok():\n    assert handle(None) == 200\n"
    )
    text = HEAD + (WORKER.format(base_url=base_url) if base_url else "")
    project.write("intents.toml", text)
    return text


def _answer(draft) -> str:
    return f"<<MIS:START>>\n<<MIS:FILE path=draft.json>>\n{json.dumps(draft)}\n<<MIS:END>>"


def _asked(srv) -> list[dict]:
    return [r for r in srv.requests() if r.get("path") == "/v1/responses"]


def test_the_model_drafts_intents_that_validate_and_the_file_keeps_its_bytes(project, server, snapshot):
    srv = server([{"steps": [{"message": _answer(DRAFT)}]}])
    old = _fixture(project, srv.base_url).encode()
    done = project.run("new", GOAL, "--yes")
    assert done.code == 0, done.err
    assert done.out.splitlines()[-1] == "wrote intents.toml: 2 intents drafted for the goal"
    new = project.bytes("intents.toml")
    assert new.startswith(old)  # the hand-written comment and everything else, byte for byte
    assert new[len(old) :].decode() == snapshot
    checked = project.run("validate")
    assert checked.code == 0, checked.err
    assert checked.out.startswith("ok: 3 intents, no problems")
    asked = _asked(srv)
    assert len(asked) == 1
    request = json.dumps(asked[0])
    assert GOAL in request
    assert "src/shop/api.py" in request and "python: install" in request  # the file tree, the adapters


def test_json_prints_the_draft_and_writes_nothing(project, server):
    srv = server([{"steps": [{"message": _answer(DRAFT)}]}])
    old = _fixture(project, srv.base_url).encode()
    done = project.run("new", GOAL, "--json", "--yes")
    assert done.code == 0, done.err
    assert json.loads(done.out) == {
        "file": "intents.toml",
        "model": True,
        "intents": [
            {
                "name": "rate-limiter",
                "goal": "Write a token-bucket rate limiter in src/shop/ratelimit.py",
                "deps": ["lint"],
                "inputs": ["src/shop/api.py"],
                "outputs": ["src/shop/ratelimit.py"],
                "adapter": "python",
                "verify": ["test"],
                "acceptance": ["a burst over the limit gets 429"],
            },
            {
                "name": "rate-limit-tests",
                "goal": "Test the limiter through the API",
                "deps": ["rate-limiter"],
                "outputs": ["tests/test_ratelimit.py"],
                "adapter": "python",
                "verify": ["test"],
            },
        ],
    }
    assert project.bytes("intents.toml") == old


def test_without_yes_an_existing_file_gets_a_diff_and_is_not_written(project, server):
    srv = server([{"steps": [{"message": _answer(DRAFT)}]}])
    old = _fixture(project, srv.base_url).encode()
    done = project.run("new", GOAL)
    assert done.code == 0, done.err
    assert done.out.startswith("--- intents.toml\n+++ intents.toml\n")
    assert "+[intent.rate-limiter]\n" in done.out and "+[intent.rate-limit-tests]\n" in done.out
    assert (
        done.err == "2 intents drafted for the goal; intents.toml exists: not written (again with --yes to write it)\n"
    )
    assert project.bytes("intents.toml") == old
    written = project.run("new", GOAL, "--yes")  # the diff read, now written: the same draft, no second call
    assert written.code == 0, written.err
    assert "+[intent.rate-limiter]\n" in written.out
    assert project.bytes("intents.toml").startswith(old) and len(_asked(srv)) == 1


def test_no_model_configured_drafts_one_intent_and_says_so(project, snapshot):
    old = _fixture(project, None).encode()
    done = project.run("new", GOAL, "--yes")
    assert done.code == 0, done.err
    assert done.err == (
        "no model configured (intents.toml has no [worker] model): one intent drafted for the goal, a step that "
        "fails until it has a recipe; set [worker] model and its key for a plan the model drafts\n"
    )
    new = project.bytes("intents.toml")
    assert new.startswith(old)
    assert new[len(old) :].decode() == snapshot
    assert project.run("validate").code == 0
    made = project.run("make", "add-rate-limiting-to-the-api")
    assert made.code == 1 and "has no recipe yet (drafted without a model)" in made.err + made.out


def test_a_worker_whose_key_is_not_set_is_no_model(project, server):
    srv = server([{"steps": [{"message": _answer(DRAFT)}]}])
    _fixture(project, srv.base_url)
    done = project.run("new", GOAL, "--json", unset=("OPENAI_API_KEY",))
    assert done.code == 0, done.err
    assert done.err.startswith("no model configured (the environment variable OPENAI_API_KEY is not set: ")
    assert [i["name"] for i in json.loads(done.out)["intents"]] == ["add-rate-limiting-to-the-api"]
    assert _asked(srv) == []


def test_with_no_intents_file_the_draft_is_written_at_once(project):
    project.write("pyproject.toml", '[project]\nname = "shop"\n')
    done = project.run("new", GOAL)
    assert done.code == 0, done.err
    text = project.read("intents.toml")
    assert text.startswith("# Intents drafted by `runner new`")
    assert 'name = "shop"\n' in text and "[intent.add-rate-limiting-to-the-api]\n" in text
    assert project.run("validate").code == 0


def _broken(which: str) -> dict:
    draft = json.loads(json.dumps(DRAFT))
    if which == "unknown dep":
        draft["intents"][1]["deps"] = ["Rate limiter", "deploy"]
    elif which == "no outputs":
        del draft["intents"][0]["outputs"]
    elif which == "output of another intent":
        draft["intents"][1]["outputs"] = ["src/shop/ratelimit.py"]
    return draft


@pytest.mark.parametrize(
    ("which", "message"),
    [
        (
            "unknown dep",
            "error: the model's draft intent rate-limit-tests depends on deploy, which is neither in the intents file "
            "nor in the draft; nothing written\n",
        ),
        (
            "no outputs",
            "error: the model's draft intent rate-limiter has no outputs (an agent step declares the files it "
            "writes); nothing written\n",
        ),
    ],
)
def test_a_draft_that_is_not_valid_is_an_error_and_nothing_is_written(project, server, which, message):
    srv = server([{"steps": [{"message": _answer(_broken(which))}]}])
    old = _fixture(project, srv.base_url).encode()
    done = project.run("new", GOAL, "--yes")
    assert (done.code, done.err) == (2, message)
    assert done.out == ""
    assert project.bytes("intents.toml") == old


def test_a_draft_that_does_not_load_says_why_and_writes_nothing(project, server):
    srv = server([{"steps": [{"message": _answer(_broken("output of another intent"))}]}])
    old = _fixture(project, srv.base_url).encode()
    done = project.run("new", GOAL, "--yes")
    assert done.code == 2
    assert done.err.startswith("error: the draft does not load, nothing written:\n  intents.toml:")
    assert "tests/test_ratelimit.py" not in done.err and "src/shop/ratelimit.py" in done.err
    assert project.bytes("intents.toml") == old
    assert not list((project.root / ".runner").glob("new-draft-*"))
