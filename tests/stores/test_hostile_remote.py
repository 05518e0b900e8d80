"""A hostile shared cache, unsigned (the default), through the real CLI: records rewritten to name the spec file,
another step's input, a path through a link in the clone, the project root, a folder, an undeclared file, or
nothing at all. Each is refused and said, the step runs, the build succeeds, and nothing outside the step's
declared outputs is written (runner/confine.py). One case also on moto's S3 server."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from store_helpers import Clone, records

from runner.keys import digest_bytes

SPEC = """
[project]
name = "hostile"

[intent.gen]
run = "cp src/a.txt out/a.txt"
inputs = ["src/a.txt"]
outputs = ["out/a.txt"]

[intent.many]
run = "mkdir -p many && cp src/b.txt many/b.txt"
inputs = ["src/b.txt"]
outputs = ["many/**"]
"""
EVIL = b"[intent.pwned]\nrun = 'touch pwned'\n"
DECLARED = {"gen": "out/a.txt", "many": "many/b.txt"}


def _first(root: Path, remote: str, env: dict | None = None) -> Clone:
    """A clone whose build filled the remote with a record for each step."""
    root.mkdir()
    first = Clone(root, env)
    first.write("intents.toml", f'[cache]\nremote = "{remote}"\n' + SPEC)
    first.write("src/a.txt", "a\n")
    first.write("src/b.txt", "b\n")
    (root / "out").mkdir()
    built = first.make()
    assert built.code == 0, built.err
    assert built.remote()["uploaded"] == 2
    return first


def _snapshot(root: Path) -> dict[str, bytes | str]:
    """Every file under root (a link: its target) but .runner/'s."""
    found: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] == ".runner":
            continue
        if path.is_symlink():
            found[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            found[rel] = path.read_bytes()
    return found


def _clone(first: Clone, root: Path, outside: Path) -> Clone:
    """A fresh checkout holding a folder of its own under many/ and a link there that leads out of it."""
    clone = first.clone(root)
    (root / "many" / "sub").mkdir(parents=True)
    (root / "many" / "sub" / "keep.txt").write_text("the clone's own\n")
    os.symlink(outside, root / "many" / "link")
    return clone


def _rewritten(envelope: dict, outputs: dict[str, bytes]) -> tuple[bytes, dict[str, bytes]]:
    """The envelope with its record's outputs replaced (unsigned), and the blobs those name."""
    envelope = json.loads(json.dumps(envelope))
    envelope["record"]["outputs"] = {rel: digest_bytes(data) for rel, data in outputs.items()}
    envelope.pop("signature", None)
    return json.dumps(envelope).encode(), {digest_bytes(data): data for data in outputs.values()}


CASES = {
    # intent, what its record names, the reason its step runs
    "spec-file": (
        "gen",
        {"intents.toml": EVIL},
        "cached record refused: 'intents.toml' is not one of the step's declared outputs",
    ),
    "another-steps-input": (
        "gen",
        {"out/a.txt": b"a\n", "src/b.txt": EVIL},
        "cached record refused: 'src/b.txt' is not one of the step's declared outputs",
    ),
    "through-a-link": ("many", {"many/link/pwn.txt": EVIL}, None),  # the reason names the clone's outside folder
    "root": ("gen", {".": EVIL}, None),  # refused by the store's first look: the reason is the remote's
    "folder": ("many", {"many/sub": EVIL}, "cached record refused: 'many/sub' is a folder in this project"),
    "undeclared": (
        "gen",
        {"out/other.txt": EVIL},
        "cached record refused: 'out/other.txt' is not one of the step's declared outputs",
    ),
    "no-outputs": ("gen", {}, "cached record refused: it does not name the declared output 'out/a.txt'"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_unsigned_record_is_refused_and_its_step_runs(tmp_path, shared, case):
    intent, outputs, why = CASES[case]
    first = _first(tmp_path / "first", shared.as_uri())
    path = next(p for p in records(shared) if json.loads(p.read_bytes())["record"]["intent"] == intent)
    envelope, blobs = _rewritten(json.loads(path.read_bytes()), outputs)
    path.write_bytes(envelope)
    for digest, data in blobs.items():
        blob = shared / "v1" / "blobs" / digest[:2] / digest
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
    outside = tmp_path / "outside"
    outside.mkdir()
    second = _clone(first, tmp_path / "second", outside)
    if case == "through-a-link":
        why = (
            "cached record refused: 'many/link/pwn.txt' leads outside the project once links are followed (to "
            f"{os.path.realpath(outside)}/pwn.txt)"
        )
    if case == "root":
        why = "remote record names '.', which names the project root, not a file a step writes: ignored"
    before = _snapshot(second.root)

    run = second.make("--remote-mode", "read")
    assert run.code == 0, run.err
    step = next(e for e in run.events() if e.get("event") == "step_finished" and e["intent"] == intent)
    assert step["status"] == "ran"
    assert why in step["reasons"]  # "root": after the step's own reasons to run (no local record either)
    assert run.remote()["refused"] == 1 and run.remote()["hits"] == 1  # the other step's record served it
    assert run.finished().get("refused") == (None if case == "root" else [intent])
    # nothing written but the steps' own outputs, as their commands wrote them; nothing outside, no temp file
    after = _snapshot(second.root)
    mine = set(DECLARED.values())
    assert {k: v for k, v in after.items() if k not in mine} == {k: v for k, v in before.items() if k not in mine}
    assert after["out/a.txt"] == b"a\n" and after["many/b.txt"] == b"b\n"
    assert list(outside.iterdir()) == []
    # said in the summary a person reads, and by `runner explain` before anything is written
    third = _clone(first, tmp_path / "third", outside)
    shown = third.run("explain", intent)
    assert why in shown.out
    plain = third.run("make", "--remote-mode", "read")
    assert plain.code == 0
    assert "1 refused (damaged, unsigned or naming what a step may not write)" in plain.err + plain.out
    if case != "root":
        assert f"cached records refused, naming what their steps may not write: {intent}" in plain.err + plain.out
    assert (third.root / "intents.toml").read_bytes() == (first.root / "intents.toml").read_bytes()


def test_a_record_naming_the_spec_file_on_s3_is_refused_and_never_written(tmp_path, moto):
    bucket = moto.bucket()
    env = {**moto.env, "RUNNER_REMOTE_CACHE": f"s3://{bucket}/team/cache"}
    first = _first(tmp_path / "first", "file:///unused", env)
    client = moto.client()
    stored = moto.objects(bucket)
    name = next(k for k, data in stored.items() if "/records/" in k and json.loads(data)["record"]["intent"] == "gen")
    envelope, blobs = _rewritten(json.loads(stored[name]), {"intents.toml": EVIL})
    client.put_object(Bucket=bucket, Key=name, Body=envelope)
    for digest, data in blobs.items():
        client.put_object(Bucket=bucket, Key=f"team/cache/v1/blobs/{digest[:2]}/{digest}", Body=data)
    second = first.clone(tmp_path / "second")
    spec = (second.root / "intents.toml").read_bytes()
    run = second.make("--remote-mode", "read")
    assert run.code == 0, run.err
    assert run.statuses() == {"gen": "ran", "many": "cached"}  # the clone holds many/ (only out/ is left out)
    gen = next(e for e in run.events() if e.get("event") == "step_finished" and e["intent"] == "gen")
    assert gen["reasons"] == ["cached record refused: 'intents.toml' is not one of the step's declared outputs"]
    assert run.remote()["refused"] == 1 and run.finished()["refused"] == ["gen"]
    assert (second.root / "intents.toml").read_bytes() == spec
    again = second.make("--remote-mode", "read")  # the spec it would have planted never runs
    assert again.code == 0 and not (second.root / "pwned").exists()
