"""Secret values never reach what the runner writes (step logs, events, the cache database, the terminal), while
a step's declared outputs keep the user's bytes exactly. Each secret here is this test's own value, not the
session's key, so a declared output that holds it on purpose does not trip the session's leak check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

LINES = 3000  # ~200 KB through the pipe: the scheduler reads it in chunks, and some cut a secret in two


def _files_holding(folder: Path, needle: bytes) -> list[str]:
    """Every file under folder (the sqlite database's bytes included) that holds needle."""
    return sorted(str(p) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes())


@pytest.mark.parametrize(
    ("name", "policy"),
    [
        ("OPENAI_API_KEY", ""),  # a default name
        ("MY_SERVICE_TOKEN", ""),  # a name that looks like a key (*_TOKEN)
        ("AZURE_STORAGE_CONNECTION_STRING", ""),  # one that holds a key inside (az://'s credential)
        ("DEPLOY_CREDENTIAL", 'secrets = ["DEPLOY_CREDENTIAL"]'),  # a name the policy lists
    ],
)
def test_a_secret_a_step_prints_is_masked_in_logs_events_cache_and_terminal(project, name, policy):
    secret = "s3cr3t-" + uuid.uuid4().hex
    project.spec(f"""
        [policy.default]
        {policy}

        [intent.leak]
        run = "echo \\"key=${name}\\"; exit 1"

        [intent.chatty]
        run = "yes \\"${name}\\" | head -n {LINES}; echo done > chatty.txt"
        inputs = ["x"]
        outputs = ["chatty.txt"]
    """)
    project.write("x", "1")
    marker = f"[REDACTED:{name}]"

    as_json = project.make("-k", "-j1", env={name: secret})
    plain = project.run("make", "-k", "-j1", env={name: secret})

    assert as_json.code == 1 and plain.code == 1
    for result in (as_json, plain):
        assert secret not in result.out and secret not in result.err
    failed = next(e for e in as_json.events() if e.get("status") == "failed")
    assert failed["log_tail"].splitlines()[-1] == f"key={marker}"
    assert f"key={marker}" in plain.err  # the failure's tail on the terminal
    chatty = next(e for e in as_json.events() if e.get("intent") == "chatty" and e.get("status") == "ran")
    lines = Path(chatty["log"]).read_text().splitlines()
    assert lines[1:] == [marker] * LINES  # masked whole wherever a chunk boundary cut it, nothing lost
    assert _files_holding(project.root / ".runner", secret.encode()) == []
    assert (project.root / ".runner/cache/cache.db").is_file()  # the walk above did read the database


def test_a_secret_in_an_event_or_a_record_that_no_log_holds_is_masked(project):
    """An error naming a declared output, and a step record naming an input: here the secret is in the file
    names (the freshness files keep the project's file names as they are, and are not looked at)."""
    secret = "s3cr3t-" + uuid.uuid4().hex
    project.spec(f"""
        [intent.names]
        run = "cat in-*.txt > out.txt"
        inputs = ["in-*.txt"]
        outputs = ["out.txt"]

        [intent.missing]
        run = "true"
        inputs = ["out.txt"]
        outputs = ["never-{secret}.txt"]
        deps = ["names"]
    """)
    project.write(f"in-{secret}.txt", "1")
    env = {"MY_SERVICE_TOKEN": secret}
    as_json = project.make(env=env)
    plain = project.run("make", env=env)
    assert as_json.code == 1 and plain.code == 1
    failed = next(e for e in as_json.events() if e.get("status") == "failed")
    assert failed["error"] == "declared output never-[REDACTED:MY_SERVICE_TOKEN].txt was not produced"
    assert "FAILED missing: declared output never-[REDACTED:MY_SERVICE_TOKEN].txt was not produced" in plain.err
    for result in (as_json, plain):
        assert secret not in result.out and secret not in result.err
    records = project.root / ".runner/runs"
    assert _files_holding(records, secret.encode()) == []
    assert _files_holding(project.root / ".runner/cache", secret.encode()) == []
    (project.root / "out.txt").unlink()  # the masked record still says where the output goes back to
    (project.root / ".runner/state").unlink()
    (project.root / ".runner/noop").unlink(missing_ok=True)
    assert project.make("names", env=env).statuses() == {"names": "restored"}


def test_a_declared_output_keeps_the_secret_byte_for_byte_and_its_restore_too(project):
    secret = "s3cr3t-" + uuid.uuid4().hex
    project.spec("""
        [intent.keep]
        run = "printf 'token=%s\\\\n' \\"$MY_SERVICE_TOKEN\\" > kept.txt; echo \\"wrote $MY_SERVICE_TOKEN\\""
        inputs = ["x"]
        outputs = ["kept.txt"]
    """)
    project.write("x", "1")
    env = {"MY_SERVICE_TOKEN": secret}
    first = project.make(env=env)
    assert first.code == 0, first.err
    assert (project.root / "kept.txt").read_bytes() == f"token={secret}\n".encode()
    log = Path(next(e["log"] for e in first.events() if e.get("intent") == "keep" and "log" in e))
    assert log.read_text().splitlines()[1:] == ["wrote [REDACTED:MY_SERVICE_TOKEN]"]
    assert secret not in first.out

    (project.root / "kept.txt").unlink()
    again = project.make(env=env)
    assert again.statuses() == {"keep": "restored"}
    assert (project.root / "kept.txt").read_bytes() == f"token={secret}\n".encode()


def test_short_values_and_ordinary_names_mask_nothing(project):
    """A value under 8 characters ("true", "1") would mask ordinary words; a name that does not look like a key
    is not a secret."""
    project.spec("""
        [intent.say]
        run = "echo \\"$FEATURE_TOKEN $GREETING_TEXT\\"; exit 1"
    """)
    result = project.make(env={"FEATURE_TOKEN": "true", "GREETING_TEXT": "hello-world-of-ours"})
    failed = next(e for e in result.events() if e.get("status") == "failed")
    assert failed["log_tail"].splitlines()[-1] == "true hello-world-of-ours"


def test_an_internal_error_masks_the_secret_in_its_message_and_last_error_log(tmp_path):
    """The error boundary's line and .runner/last-error.log, when what failed quotes a secret (here the
    project's folder is named after it, and a link to itself stands where the run records go: a file or a folder
    there is the user's error, named with what to do, since a disk or a person damages them)."""
    secret = "s3cr3t-" + uuid.uuid4().hex
    folder = tmp_path / f"proj-{secret}"
    (folder / ".runner").mkdir(parents=True)
    (folder / "intents.toml").write_text('[intent.a]\nrun = "true"\n')
    (folder / ".runner/runs").symlink_to("runs")
    result = subprocess.run(
        [sys.executable, "-m", "runner", "make", "--json"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, MY_SERVICE_TOKEN=secret),
    )
    assert result.returncode == 4, result.stderr
    assert "[REDACTED:MY_SERVICE_TOKEN]" in result.stderr and secret not in result.stderr
    log = (folder / ".runner/last-error.log").read_text()
    assert "[REDACTED:MY_SERVICE_TOKEN]" in log and secret not in log


def test_a_secret_is_masked_in_its_json_escaped_form_and_the_line_stays_json(project):
    """Quotes, backslashes and non-ASCII letters are escaped in an event line: the mask finds them there too.
    (The secret is in a declared output's name, so it reaches the event through the error, not a log.)"""
    secret = 'quo"te\\back-\u00e9-' + uuid.uuid4().hex[:8]
    project.spec(f"""
        [intent.missing]
        run = "true"
        outputs = [{json.dumps(f"never-{secret}.txt")}]
    """)
    result = project.make(env={"MY_SERVICE_TOKEN": secret})
    assert result.code == 1
    assert json.dumps(secret)[1:-1] not in result.out  # parsing each line below checks they are still JSON
    failed = next(e for e in result.events() if e.get("status") == "failed")
    assert failed["error"] == "declared output never-[REDACTED:MY_SERVICE_TOKEN].txt was not produced"
    events = next((project.root / ".runner/runs").glob("*/events.jsonl")).read_text()
    assert json.dumps(secret)[1:-1] not in events and secret not in events


@pytest.mark.parametrize(
    ("name", "policy", "written"),
    [
        ("SERVICE_PASSWORD", "", "s3cr3t-{}"),  # a name that looks like a key (*PASSWORD*)
        ("DEPLOY_CREDENTIAL", 'secrets = ["DEPLOY_CREDENTIAL"]', "s3cr3t-{}"),  # a name the policy lists
        ("DB_PASSWORD", "", "pa$$s3cr3t-{}"),  # $$ is a dollar sign: the value reads no variable, it is a literal
    ],
)
def test_a_literal_secret_in_env_reaches_the_step_and_nothing_the_runner_writes(project, name, policy, written):
    """`env = { SERVICE_PASSWORD = "..." }` written in intents.toml: the step's command gets the value; the step log,
    the terminal, --json, the events, the compiled spec (.runner/spec.pickle) and every other file the runner writes
    never hold it, through a cold run (the spec compiled), a warm one (read back from .runner/) and a failure."""
    unique = uuid.uuid4().hex
    toml_value = written.format(unique)
    secret = toml_value.replace("$$", "$")  # what the command gets
    project.spec(f"""
        [policy.default]
        {policy}

        [intent.use]
        run = "echo \\"using ${name}\\" >&2; printf %s \\"${name}\\" | sha256sum | cut -c1-64 > out.txt"
        inputs = ["x"]
        outputs = ["out.txt"]
        env = {{ {name} = "{toml_value}" }}

        [intent.fail]
        run = "echo \\"failing with ${name}\\"; exit 3"
        env = {{ {name} = "{toml_value}" }}
    """)
    project.write("x", "1")
    marker = f"[REDACTED:{name}]"
    import hashlib

    results = [project.run("make", "-k", "-v"), project.make("-k")]  # cold, then warm from the compiled spec
    project.write("x", "2")
    results += [project.make("-k", "use"), project.run("explain", "use"), project.run("explain", "use", "--json")]
    results += [project.run("log", "fail"), project.run("status"), project.run("validate", "--json")]
    for result in results:
        assert secret not in result.out and secret not in result.err, result
    assert results[0].code == 1 and results[2].code == 0, results[2].err
    assert project.read("out.txt") == hashlib.sha256(secret.encode()).hexdigest() + "\n"  # the step got it whole
    assert f"using {marker}" in results[0].out + results[0].err  # -v streams the masked line
    failed = next(e for e in results[1].events() if e.get("status") == "failed")
    assert failed["log_tail"].splitlines()[-1] == f"failing with {marker}"
    assert f"env: {name}={marker}" in results[3].out
    holding = [
        p
        for p in _files_holding(project.root, secret.encode()) + _files_holding(project.root, toml_value.encode())
        if Path(p).name != "intents.toml"
    ]
    assert holding == []
    assert (project.root / ".runner/spec.pickle").is_file()  # the walk above did read the compiled spec
