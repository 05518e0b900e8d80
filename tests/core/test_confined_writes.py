"""A step writes only inside the project, through the real CLI: the spec refuses a cwd or an output whose folder
leads out once links are followed; a link made after that fails the shell step before it starts; outputs are
never read (nor deleted) through a link out; a restore never writes through a folder swapped for a link out
just before it; and a record in the local cache database that names what its step does not declare is refused,
counted and explained, and the step runs (runner/confine.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.cache import Cache, StepRecord
from runner.keys import digest_bytes


def _files(root: Path) -> dict[str, bytes | str]:
    """Every file under root by its relative path (a link: its target), but .runner/'s."""
    found: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == ".runner" or rel.startswith(".runner/"):
            continue
        if path.is_symlink():
            found[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            found[rel] = path.read_bytes()
    return found


def _finished(result, name: str) -> dict:
    return next(e for e in result.events() if e.get("event") == "step_finished" and e["intent"] == name)


def test_the_spec_refuses_a_cwd_or_an_output_whose_folder_leads_out(project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "theirs.txt").write_text("someone else's\n")
    project.spec(
        """
        [intent.linked]
        run = "echo x > linked/a.txt"
        outputs = ["linked/a.txt", "linked/**/*.o"]

        [intent.through]
        run = "echo x > out/theirs.txt"
        outputs = ["out/theirs.txt"]

        [intent.elsewhere]
        run = "ls"
        cwd = "linked"

        [intent.hooks]
        run = "echo x > githooks/pre-commit"
        outputs = ["githooks/pre-commit"]

        [intent.fine]
        run = "echo x > inner/b.txt"
        outputs = ["inner/b.txt"]
        """
    )
    os.symlink(outside, project.root / "linked")
    (project.root / "out").mkdir()
    os.symlink(outside / "theirs.txt", project.root / "out" / "theirs.txt")
    (project.root / ".git" / "hooks").mkdir(parents=True)
    os.symlink(".git/hooks", project.root / "githooks")
    (project.root / "real").mkdir()
    os.symlink("real", project.root / "inner")  # a link that stays inside is a folder like any other
    before = _files(project.root)
    real = os.path.realpath(outside)
    expected = (
        "error: 5 problems in the spec\n"
        f"  intents.toml:4: intent.linked.outputs[0]: path 'linked/a.txt' leads outside the project once links are "
        f"followed (to {real})\n"
        f"  intents.toml:4: intent.linked.outputs[1]: path 'linked/**/*.o' leads outside the project once links are "
        f"followed (to {real})\n"
        f"  intents.toml:8: intent.through.outputs[0]: path 'out/theirs.txt' leads outside the project once links "
        f"are followed (to {real}/theirs.txt)\n"
        f"  intents.toml:12: intent.elsewhere.cwd: folder 'linked' leads outside the project once links are followed "
        f"(to {real})\n"
        "  intents.toml:16: intent.hooks.outputs[0]: path 'githooks/pre-commit' leads into .git/, git's own folder, "
        "once links are followed\n"
    )
    for command in (["validate"], ["make"], ["status"]):
        result = project.run(*command)
        assert (result.code, result.out, result.err) == (2, "", expected), command
    assert _files(project.root) == before
    assert (outside / "theirs.txt").read_text() == "someone else's\n"


LINKED = """
[intent.gen]
run = "cp src/in.txt gen/out.txt"
inputs = ["src/in.txt"]
outputs = ["gen/out.txt"]

[intent.copy]
run = "cp src/in.txt copy.txt"
inputs = ["src/in.txt"]
outputs = ["copy.txt"]
"""


@pytest.mark.parametrize("link", ["folder", "file"])
def test_a_link_out_made_after_validation_fails_the_step_before_it_starts(project, tmp_path, link):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "theirs.txt").write_text("someone else's\n")
    project.spec(LINKED)
    project.write("src/in.txt", "one\n")
    (project.root / "gen").mkdir()
    assert project.make().code == 0
    if link == "folder":  # the compiled spec stands: nothing in intents.toml changed
        (project.root / "gen" / "out.txt").unlink()
        (project.root / "gen").rmdir()
        os.symlink(outside, project.root / "gen")
        name, output, shown = "gen", "gen/out.txt", os.path.realpath(outside)
    else:
        (project.root / "copy.txt").unlink()
        os.symlink(outside / "theirs.txt", project.root / "copy.txt")
        name, output, shown = "copy", "copy.txt", os.path.realpath(outside / "theirs.txt")
    project.write("src/in.txt", "two\n")
    result = project.make()
    assert result.code == 1
    failed = _finished(result, name)
    assert failed["status"] == "failed"
    assert failed["error"] == (
        f"output '{output}' leads outside the project once links are followed (to {shown}): a step writes only "
        "inside the project (remove the link, or declare another output)"
    )
    assert sorted(p.name for p in outside.iterdir()) == ["theirs.txt"]
    assert (outside / "theirs.txt").read_text() == "someone else's\n"
    assert os.path.islink(project.root / output if link == "file" else project.root / "gen")  # left as it was


def test_outputs_are_never_read_nor_deleted_through_a_link_out(project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not the project's\n")
    project.spec(
        f"""
        [intent.many]
        run = "mkdir -p many && cp src/in.txt many/in.txt && ln -s {outside} many/ext"
        inputs = ["src/in.txt"]
        outputs = ["many/**"]
        """
    )
    project.write("src/in.txt", "one\n")
    result = project.make()
    assert result.code == 1
    failed = _finished(result, "many")
    assert failed["error"] == (
        f"declared output many/ext/secret.txt leads outside the project once links are followed (to "
        f"{os.path.realpath(outside / 'secret.txt')})"
    )
    # the failed step's outputs went, as always: never the file the link leads to
    assert (outside / "secret.txt").read_text() == "not the project's\n"
    assert not (project.root / "many" / "in.txt").exists()
    cache = Cache(str(project.root / ".runner" / "cache"))
    try:  # nothing of it was stored
        assert cache.get_blob(digest_bytes(b"not the project's\n")) is None
    finally:
        cache.close()


def test_a_folder_swapped_for_a_link_out_just_before_a_restore_gets_nothing_written_out(project, tmp_path):
    """-j1: `victim` is decided (restore gen/v.txt) while `swap` runs, the scheduler deciding ahead; `swap` then
    puts a link out of the project where gen/ was, and the restore comes after. The walk from the root refuses
    the link it meets; the step then runs, and its start refuses the link too."""
    outside = tmp_path / "outside"
    outside.mkdir()
    project.spec(
        """
        [intent.swap]
        run = "sleep 1; if [ -e swap.flag ]; then rm -rf gen && ln -s ../outside gen; fi"

        [intent.victim]
        run = "cp src/in.txt gen/v.txt"
        inputs = ["src/in.txt"]
        outputs = ["gen/v.txt"]
        """
    )
    project.write("src/in.txt", "victim\n")
    (project.root / "gen").mkdir()
    assert project.make("-j1").code == 0
    (project.root / "gen" / "v.txt").unlink()
    project.write("swap.flag", "")
    result = project.make("-j1")
    assert result.code == 1
    victim = _finished(result, "victim")
    assert victim["reasons"] == [
        "output gen/v.txt not restored: it leads outside the project once links are followed (gen -> ../outside)"
    ]
    assert victim["error"].startswith("output 'gen/v.txt' leads outside the project once links are followed")
    assert list(outside.iterdir()) == []  # nothing written through the link, not even a temporary file


EVIL = b"[intent.pwned]\nrun = 'touch pwned'\n"


def _tamper(root: Path, intent: str, outputs: dict) -> None:
    """Replace the records of `intent` in the local cache database with ones naming `outputs` (path -> bytes or
    None for a record naming no valid digest), their blobs stored."""
    cache = Cache(str(root / ".runner" / "cache"), owner=True)
    try:
        keys = [k[5:] for k in cache.db.iterkeys() if k.startswith("step:") and cache.db[k]["intent"] == intent]
        assert keys
        blobs = {digest_bytes(data): data for data in outputs.values()}
        named = {rel: digest_bytes(data) for rel, data in outputs.items()}
        cache.put_many(blobs, [StepRecord(intent=intent, key=key, outputs=named) for key in keys])
    finally:
        cache.close()


LOCAL = """
[intent.gen]
run = "cp src/a.txt out/a.txt"
inputs = ["src/a.txt"]
outputs = ["out/a.txt"]

[intent.many]
run = "mkdir -p many && cp src/b.txt many/b.txt"
inputs = ["src/b.txt"]
outputs = ["many/**"]
"""


@pytest.mark.parametrize(
    ("intent", "outputs", "why"),
    [
        ("gen", {"intents.toml": EVIL}, "'intents.toml' is not one of the step's declared outputs"),
        ("gen", {"out/a.txt": b"a\n", "src/b.txt": EVIL}, "'src/b.txt' is not one of the step's declared outputs"),
        ("gen", {"out/other.txt": EVIL}, "'out/other.txt' is not one of the step's declared outputs"),
        ("gen", {}, "it does not name the declared output 'out/a.txt'"),
        ("gen", {".": EVIL}, "'.' names the project root, not a file a step writes"),
        ("many", {"many/sub": EVIL}, "'many/sub' is a folder in this project"),
        ("many", {"many/.git/config": EVIL}, "'many/.git/config' must stay out of .git/, git's own folder"),
    ],
    ids=["spec-file", "another-steps-input", "undeclared", "no-outputs", "root", "folder", "nested-git"],
)
def test_a_record_in_the_local_database_naming_what_its_step_does_not_declare_is_refused(project, intent, outputs, why):
    project.spec(LOCAL)
    project.write("src/a.txt", "a\n")
    project.write("src/b.txt", "b\n")
    (project.root / "out").mkdir()
    (project.root / "many" / "sub").mkdir(parents=True)
    (project.root / "many" / "sub" / "keep.txt").write_text("kept\n")
    assert project.make().code == 0
    _tamper(project.root, intent, outputs)
    source = "src/a.txt" if intent == "gen" else "src/b.txt"
    project.write(source, "changed\n")  # another key: the state index no longer holds the tampered one
    assert project.make().code == 0
    project.write(source, "a\n" if intent == "gen" else "b\n")  # the tampered record's key again
    before = _files(project.root)
    result = project.make()
    assert result.code == 0, result.err
    step = _finished(result, intent)
    assert (step["status"], step["reasons"]) == ("ran", [f"cached record refused: {why}"])
    assert result.finished()["refused"] == [intent]
    after = _files(project.root)
    declared = {"gen": ["out/a.txt"], "many": ["many/b.txt"]}[intent]
    assert {k: v for k, v in after.items() if k not in declared} == {
        k: v for k, v in before.items() if k not in declared
    }
    assert project.read(declared[0]) == ("a\n" if intent == "gen" else "b\n")
