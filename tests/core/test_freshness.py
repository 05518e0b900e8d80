"""Never wrong about what is up to date: the fast no-op, the edit's cone and the compiled spec answer as the
rule (runner status) does, whatever happened to the files while a run went on."""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import pickle
import shutil
import subprocess
import sys
import time

import racy
import runner_cli

from runner.noop import _vouched
from runner.stat_cache import StatCache, stat_of

WAIT_FOR_GO = "touch started; while [ ! -e go ]; do sleep 0.01; done"


def _status(project) -> dict[str, str]:
    result = project.run("status", "--json")
    assert result.code == 0, result.err
    return {s["intent"]: s["action"] for s in json.loads(result.out)["steps"]}


def _ran(result) -> set[str]:
    return {name for name, status in result.statuses().items() if status in ("ran", "restored")}


def _during_a_run(project, edit, *args: str) -> None:
    """Start `runner make`, wait until a step says it started (a file `started`), call `edit`, let the step go
    on (a file `go`) and wait for the run to end well."""
    for flag in ("started", "go"):
        (project.root / flag).unlink(missing_ok=True)
    run = subprocess.Popen(
        [sys.executable, "-m", "runner", "make", "--json", *args],
        cwd=project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not (project.root / "started").exists():
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    edit()
    (project.root / "go").touch()
    out, err = run.communicate(timeout=60)
    assert run.returncode == 0, err


def _settled(project) -> None:
    """The rule and the fast no-op agree there is nothing to do."""
    assert set(_status(project).values()) == {"skip"}
    again = project.make()
    assert _ran(again) == set(), again.out


RACE = f"""
[project]
name = "race"
default = "u"

[intent.t]
run = "cat a.txt > out.txt; {WAIT_FOR_GO}"
inputs = ["a.txt"]
outputs = ["out.txt"]

[intent.u]
run = "cat a.txt out.txt > both.txt"
inputs = ["a.txt"]
outputs = ["both.txt"]
deps = ["t"]
"""


def test_an_input_changed_while_its_step_runs_is_built_by_the_next_run(project):
    """t read a.txt, then a.txt changed before u read it: the run's proof cannot hold t up to date."""
    project.spec(RACE)
    project.write("a.txt", "v1\n", age=5)
    _during_a_run(project, lambda: project.write("a.txt", "v2\n", age=5))  # same size, an mtime long past
    assert project.read("both.txt") == "v2\nv1\n"  # u read the new a.txt and t's old output
    assert _status(project)["t"] == "run"
    after = project.make()
    assert _ran(after) == {"t", "u"}, after.out
    assert project.read("out.txt") == "v2\n" and project.read("both.txt") == "v2\nv2\n"
    _settled(project)


def test_a_step_that_rewrites_its_own_input_is_checked_again_and_settles(project):
    """A formatter changes the file its key was made from: the next run decides it again by the rule, and once a
    run leaves the file as it found it (a formatter that writes only a change), the step is cached and settles.
    One that rewrites the file every time (`sed -i`, new stats each run) runs every time, as the README says:
    new stats are a change even where the bytes come back the same (runner/inputs_held.py)."""
    project.spec("""
        [project]
        name = "fmt"
        default = "use"

        [intent.fmt]
        run = "if grep -q bad src.txt; then sed -i s/bad/good/ src.txt; fi && cp src.txt fmt.out"
        inputs = ["src.txt"]
        outputs = ["fmt.out"]

        [intent.use]
        run = "cat src.txt > use.out"
        inputs = ["src.txt"]
        outputs = ["use.out"]
        deps = ["fmt"]
    """)
    project.write("src.txt", "bad\n", age=5)
    assert project.make().code == 0
    assert _status(project)["fmt"] == "run"  # its key saw "bad"; the file holds "good"
    assert "fmt" in _ran(project.make())  # formats again: nothing to change this time
    assert project.read("use.out") == "good\n"
    _settled(project)
    spec = project.root / "intents.toml"
    spec.write_text(
        spec.read_text().replace(
            "if grep -q bad src.txt; then sed -i s/bad/good/ src.txt; fi", "sed -i s/bad/good/ src.txt"
        )
    )
    for _ in range(2):
        assert "fmt" in _ran(project.make())  # rewritten every run: never cached
    assert _status(project)["fmt"] == "run"


def test_a_file_a_step_creates_where_its_inputs_look_does_not_run_it_again(project):
    """An output its own input glob matches (inputs `**/*.txt`, outputs `gen/*.txt`) counts as it was before the
    step ran, absent, while it holds what the step wrote: the next run is up to date, as the rule says ("a step
    never chases its own tail"); an edit of it is an edit of an input."""
    project.spec("""
        [project]
        name = "gen"

        [intent.gen]
        run = "mkdir -p gen && cat a.txt a.txt > gen/twice.txt"
        inputs = ["**/*.txt"]
        outputs = ["gen/*.txt"]
    """)
    project.write("a.txt", "a\n", age=5)
    assert _ran(project.make()) == {"gen"}
    _settled(project)
    project.write("gen/twice.txt", "edited\n")
    assert _ran(project.make()) == {"gen"}  # no longer what the step wrote: an input that changed
    assert project.read("gen/twice.txt") == "a\na\n"
    # a fresh clone with the cache alone (no state index): restored by its first key, then up to date
    shutil.rmtree(project.root / "gen")
    for name in ("state", "state.log"):
        (project.root / ".runner" / name).unlink(missing_ok=True)
    assert project.make().statuses() == {"gen": "restored"}
    _settled(project)


def test_a_file_changed_during_an_edit_run_dirties_the_steps_proved_before_it(project):
    """p is proved up to date as the run begins; shared.txt then changes and q reads the new bytes: the
    next run must not take p as built from them."""
    project.spec(f"""
        [project]
        name = "cone"
        default = "all"

        [intent.p]
        run = "cp shared.txt p.out"
        inputs = ["shared.txt"]
        outputs = ["p.out"]

        [intent.w]
        run = "cat x.txt > w.out; {WAIT_FOR_GO}"
        inputs = ["x.txt"]
        outputs = ["w.out"]

        [intent.q]
        run = "cat shared.txt w.out > q.out"
        inputs = ["shared.txt", "w.out"]
        outputs = ["q.out"]
        deps = ["w"]

        [intent.all]
        deps = ["p", "q"]
    """)
    project.write("shared.txt", "one\n", age=5)
    project.write("x.txt", "x1\n", age=5)
    project.write("go", "")
    assert project.make().code == 0
    project.age_all()
    assert project.make().code == 0  # a proof made of stats older than the racy window
    project.write("x.txt", "x2\n", age=5)  # only w's cone is decided next
    _during_a_run(project, lambda: project.write("shared.txt", "two\n", age=5))
    assert project.read("q.out") == "two\nx2\n" and project.read("p.out") == "one\n"
    after = project.make()
    assert "p" in _ran(after), after.out
    assert project.read("p.out") == "two\n"
    _settled(project)


def _edit_keeping_stats(path, text: str) -> None:
    """Rewrite in place (same inode) with the same size, and put the old mtime back: only ctime moves."""
    st = os.stat(path)
    assert len(text.encode()) == st.st_size
    with open(path, "r+") as f:
        f.write(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)


SPEC = """
[project]
name = "spec"
default = "say"

[intent.say]
run = "echo {word} > said.txt"
inputs = ["in.txt"]
outputs = ["said.txt"]
"""


def test_an_edit_to_intents_toml_that_keeps_size_mtime_and_inode_is_seen(project):
    """A checkout or a tool that puts the mtime back: the compiled spec and the no-op proof see ctime move."""
    project.spec(SPEC.format(word="aaa"))
    project.write("in.txt", "x\n")
    project.age_all()
    assert project.make().code == 0
    assert project.exists(".runner/spec.pickle")
    assert project.make().events()[0].get("fast") is True
    _edit_keeping_stats(project.root / "intents.toml", SPEC.format(word="bbb"))
    result = project.make()
    assert result.statuses() == {"say": "ran"}, result.out
    assert project.read("said.txt") == "bbb\n"
    _settled(project)


def test_a_copied_project_builds_its_own_files_not_the_originals(project, tmp_path):
    """`cp -a` keeps every mtime: the copy finds the original's spec files unchanged at the absolute paths its
    compiled spec names. It must compile its own, so that an edit in the copy is built there, and only there."""
    project.spec(SPEC.format(word="aaa"))
    project.write("in.txt", "x\n")
    project.age_all()
    assert project.make().code == 0
    assert project.exists(".runner/spec.pickle")
    copy = type(project)(tmp_path / "copy")
    shutil.copytree(project.root, copy.root, symlinks=True)  # copy2: mtimes kept, as cp -a keeps them
    copy.spec(SPEC.format(word="bbb"))
    result = copy.make()
    assert result.statuses() == {"say": "ran"}, result.out
    assert copy.read("said.txt") == "bbb\n"
    assert project.read("said.txt") == "aaa\n"
    _settled(copy)
    _settled(project)


def test_an_input_edit_that_keeps_size_mtime_and_inode_is_seen(project):
    project.spec(SPEC.format(word="aaa").replace("echo aaa", "cat in.txt"))
    project.write("in.txt", "one\n")
    project.age_all()
    assert project.make().code == 0
    assert project.make().events()[0].get("fast") is True
    _edit_keeping_stats(project.root / "in.txt", "two\n")
    assert _status(project) == {"say": "run"}
    result = project.make()
    assert result.statuses() == {"say": "ran"}
    assert project.read("said.txt") == "two\n"
    _settled(project)


def test_a_digest_taken_in_the_clock_tick_of_a_write_is_not_trusted(project):
    """The racy rule: a stat cache entry whose file was modified within a second of its hashing does not
    vouch for the bytes (a second write in that tick could keep every stat). The entry here is what such
    a run leaves: the file's stats, a hashing time 1 ms after its mtime, the digest of other bytes."""
    project.spec(SPEC.format(word="aaa").replace("echo aaa", "cat in.txt"))
    project.write("in.txt", "one\n", age=5)
    assert project.make().code == 0
    project.age_all()
    assert project.make().code == 0
    stat_file = str(project.root / ".runner/stat")
    st = os.stat(project.root / "in.txt")
    cache = StatCache(stat_file)
    cache._set("in.txt", (*stat_of(st), st.st_mtime_ns + 1_000_000, "0" * 64))
    cache.save()
    (project.root / ".runner/noop").unlink()  # past the no-op proof, to the rule and its stat cache
    assert _status(project) == {"say": "skip"}  # hashed again; trusting the entry would make it "run"
    assert StatCache(stat_file).entry("in.txt")[5] != "0" * 64


def test_the_no_op_proof_checks_the_bytes_its_stats_could_not_vouch_for(project, real_racy_window):
    """A proof made right after a build keeps the digests of the fresh outputs; bytes other than those
    (a write in the tick the run hashed them, here put in the proof's place) make it fail."""
    project.spec(SPEC.format(word="aaa").replace("echo aaa", "cat in.txt"))
    project.write("in.txt", "one\n", age=5)
    assert project.make().code == 0
    assert project.make().events()[0].get("fast") is True
    proof_file = project.root / ".runner/noop"
    proofs = marshal.loads(proof_file.read_bytes())
    (slot,) = proofs
    entry = list(proofs[slot])
    assert "said.txt" in entry[3]  # kept: the output is younger than the racy window
    entry[3] = {**entry[3], "said.txt": "0" * 64}
    proofs[slot] = tuple(entry)
    proof_file.write_bytes(marshal.dumps(proofs))
    result = project.make()
    assert result.events()[0].get("fast") is None
    assert result.statuses() == {"say": "cached"}  # the rule finds the output as recorded


def test_a_proof_in_an_older_layout_vouches_only_for_the_same_stats(project):
    """Before the stats were recorded in pieces and the paths and order as NUL-joined strings, a proof held lists
    of them and its stats as one marshal of the whole list, with the digest of those bytes. The same stats still
    match that digest (the no-op holds, rightly, and reports as ever); any other stats find no changed paths in
    it, so the edit is decided by the rule over every step, and the run's proof is of today's layout."""
    project.spec(SPEC.format(word="aaa").replace("echo aaa", "cat in.txt"))
    project.write("in.txt", "one\n", age=5)
    assert project.make().code == 0
    project.age_all()
    assert project.make().code == 0
    proof_file = project.root / ".runner/noop"
    proofs = marshal.loads(proof_file.read_bytes())
    (slot,) = proofs
    entry = list(proofs[slot])
    stats = [s for piece in entry[6] for s in marshal.loads(piece)]
    entry[6] = marshal.dumps(stats, 2)
    entry[1] = hashlib.sha256(entry[6]).hexdigest()
    entry[0], entry[2] = entry[0].split("\0"), entry[2].split("\0")
    proofs[slot] = tuple(entry)
    proof_file.write_bytes(marshal.dumps(proofs))
    fast = project.make()
    assert fast.events()[0].get("fast") is True and fast.statuses() == {"say": "cached"}
    project.write("in.txt", "two\n", age=5)
    result = project.make()
    assert result.events()[0].get("fast") is None
    assert result.statuses() == {"say": "ran"}
    entry = marshal.loads(proof_file.read_bytes())[slot]
    assert isinstance(entry[0], str) and isinstance(entry[2], str) and isinstance(entry[6], list)
    assert project.make().events()[0].get("fast") is True


def _touch(path) -> None:
    """A new mtime (and ctime), the same bytes."""
    st = os.stat(path)
    later = st.st_mtime_ns + 2_000_000_000
    os.utime(path, ns=(later, later))


def test_a_touch_is_answered_by_the_fast_no_op_and_an_edit_is_not(project):
    """A touched input or output holds the bytes the proof vouched for: nothing to do, from stats and one
    hash, and the next no-op is stats only again. New bytes, however they came, go to the rule."""
    project.spec(SPEC.format(word="aaa").replace("echo aaa", "cat in.txt"))
    project.write("in.txt", "one\n")
    project.age_all()
    assert project.make().code == 0
    project.age_all()  # every file, the spec too: the proof no longer holds, and the next run records it again
    assert project.make().code == 0
    assert project.make().events()[0].get("fast") is True
    for touched in ("in.txt", "said.txt"):
        _touch(project.root / touched)
        result = project.make()
        assert result.events()[0].get("fast") is True, touched
        assert result.statuses() == {"say": "cached"}
        assert project.make().events()[0].get("fast") is True
    project.write("in.txt", "two\n")
    result = project.make()
    assert result.events()[0].get("fast") is None
    assert result.statuses() == {"say": "ran"}
    assert project.read("said.txt") == "two\n"
    _settled(project)


def test_a_touch_after_an_edit_settled_is_a_no_op_too(project):
    """Right after a run the edited file's digest is kept in the proof (too fresh for its stats); the no-op
    that finds its stats vouching drops it and leaves it in the stat cache, where a touch finds it."""
    project.spec(SPEC.format(word="aaa").replace("echo aaa", "cat in.txt"))
    project.write("in.txt", "one\n", age=5)
    project.age_all()
    assert project.make().code == 0
    project.write("in.txt", "two\n")
    assert project.make().statuses() == {"say": "ran"}
    racy.wait_out()
    assert project.make().events()[0].get("fast") is True  # the kept digests are dropped here
    _touch(project.root / "in.txt")
    result = project.make()
    assert result.events()[0].get("fast") is True
    assert result.statuses() == {"say": "cached"}


def test_touches_each_run_after_the_racy_window_are_all_no_ops(project):
    """A touch whose new stats vouch for the bytes by the time the no-op hashes them (the run began a second or
    more after it) leaves those stats in the stat cache: the next touch finds the bytes there. Once, only the
    stats from before the first touch stood there, and every other touch of a file ran the whole pipeline."""
    project.spec(SPEC.format(word="aaa").replace("echo aaa", "cat in.txt"))
    project.write("in.txt", "one\n", age=5)
    project.age_all()
    assert project.make().code == 0
    project.age_all()
    assert project.make().code == 0
    assert project.make().events()[0].get("fast") is True
    for touch in range(3):
        os.utime(project.root / "in.txt")  # now: a real `touch`
        racy.wait_out()
        result = project.make()
        assert result.events()[0].get("fast") is True, touch
        assert result.statuses() == {"say": "cached"}


def test_a_touch_never_trusts_a_stat_cache_digest_its_stats_did_not_vouch_for(project):
    """The touch shortcut takes the proof's bytes from the stat cache only from an entry hashed outside the
    racy window: here an entry with the recorded stats, hashed 1 ms after its mtime, names the bytes the file
    is then edited to. Trusting it would call the edit a touch."""
    project.spec(SPEC.format(word="aaa").replace("echo aaa", "cat in.txt"))
    project.write("in.txt", "one\n", age=5)
    project.age_all()
    assert project.make().code == 0
    project.age_all()  # every file, the spec too: the proof no longer holds, and the next run records it again
    assert project.make().code == 0
    assert project.make().events()[0].get("fast") is True
    stat_file = str(project.root / ".runner/stat")
    st = os.stat(project.root / "in.txt")
    cache = StatCache(stat_file)
    cache._set("in.txt", (*stat_of(st), st.st_mtime_ns + 1_000_000, hashlib.sha256(b"two\n").hexdigest()))
    cache.save()
    project.write("in.txt", "two\n")
    result = project.make()
    assert result.events()[0].get("fast") is None
    assert result.statuses() == {"say": "ran"}
    assert project.read("said.txt") == "two\n"


def test_a_stat_cache_entry_made_from_stats_taken_before_a_write_never_stands_for_the_written_bytes(project):
    """The first no-op after a build leaves the bytes it checked in the stat cache under the stats it took before
    reading them, without taking them again (noop._vouched, read_after): a write between those stats and the
    read, even one that keeps the size and puts the mtime back, gave the file a later ctime, so the entry, of
    whatever bytes the read saw, is never taken for the file's bytes."""
    project.write("in.txt", "one\n", age=5)
    (project.root / ".runner").mkdir(exist_ok=True)
    racy.wait_out()
    before = os.stat(project.root / "in.txt")
    taken = time.time_ns()
    project.write("in.txt", "owt\n")
    os.utime(project.root / "in.txt", ns=(before.st_atime_ns, before.st_mtime_ns))
    stale = hashlib.sha256(b"one\n").hexdigest()
    _vouched(str(project.root), {"in.txt": (stat_of(before), taken, stale)}, read_after=True)
    cache = StatCache(str(project.root / ".runner/stat"))
    assert cache.entry("in.txt") is not None  # written: the stats vouched when they were taken
    assert cache.digest(str(project.root), "in.txt") == hashlib.sha256(b"owt\n").hexdigest()


TWO = """
[intent.a]
run = "cat in_a.txt > out_a.txt"
inputs = ["in_a.txt"]
outputs = ["out_a.txt"]

[intent.b]
run = "cat in_b.txt > out_b.txt"
inputs = ["in_b.txt"]
outputs = ["out_b.txt"]
"""


def test_an_edit_run_keeps_the_digests_the_last_proof_kept_for_the_steps_it_did_not_decide(project):
    """Right after a build, the proof keeps the digest of each fresh output; an edit elsewhere decides only its
    cone and settles only the paths it saw: the other steps' kept digests must go on into its proof, or a
    write in the tick the build hashed them would pass the next no-op unseen."""
    project.spec(TWO)
    project.write("in_a.txt", "a\n")
    project.write("in_b.txt", "b\n")
    project.age_all()  # the spec too: its compiled form is kept, so the next run compares with this proof
    assert project.make().code == 0
    # as a build's proof has it when out_a was hashed in its write's tick (made so here: a slow machine hashes
    # later than that, and then keeps nothing)
    proof_file = project.root / ".runner/noop"
    proofs = marshal.loads(proof_file.read_bytes())
    (slot,) = proofs
    entry = list(proofs[slot])
    entry[3] = {**entry[3], "out_a.txt": hashlib.sha256(b"a\n").hexdigest()}
    proofs[slot] = tuple(entry)
    proof_file.write_bytes(marshal.dumps(proofs))
    project.write("in_b.txt", "bb\n", age=5)
    result = project.make()
    assert result.events()[0].get("fast") is None
    assert result.statuses() == {"a": "cached", "b": "ran"}
    (entry,) = marshal.loads((project.root / ".runner/noop").read_bytes()).values()
    assert "out_a.txt" in entry[3]  # out_a's from the build's proof
    _settled(project)


SHARED_DEP = """
[project]
name = "shared"
default = "all"

[intent.p]
run = "cat p.txt > out_p.txt"
inputs = ["p.txt"]
outputs = ["out_p.txt"]

[intent.x]
run = "cat x.txt out_p.txt > out_x.txt"
inputs = ["x.txt", "out_p.txt"]
outputs = ["out_x.txt"]
deps = ["p"]

[intent.all]
deps = ["x", "p"]
"""


def test_a_step_after_an_edit_keys_on_what_its_proven_dependency_produced(project):
    """`all` names p beside x, and no step of the run reads what `all` produces, so p's last outputs are not
    looked up for it; x still keys on them: editing x.txt back finds x's first result again."""
    project.spec(SHARED_DEP)
    project.write("p.txt", "p\n", age=5)
    project.write("x.txt", "one\n", age=5)
    project.age_all()
    assert project.make().code == 0
    project.write("x.txt", "two\n")
    assert project.make().statuses() == {"p": "cached", "x": "ran"}
    project.write("x.txt", "one\n")
    result = project.make()
    assert result.statuses() == {"p": "cached", "x": "restored"}, result.statuses()
    assert project.read("out_x.txt") == "one\np\n"


def test_a_project_named_through_a_symlink_is_the_same_project(project, tmp_path):
    """`runner make -C LINK` and `runner make` in the folder itself (whose working folder is always the real
    one) find one root: the compiled spec made one way serves the other, which neither compiles it again nor
    decides every step for want of a proof of the same spec (~30 s at 100,000 steps)."""
    project.spec(SPEC.format(word="aaa").replace("echo aaa", "cat in.txt"))
    project.write("in.txt", "one\n")
    project.age_all()
    link = tmp_path / "link"
    link.symlink_to(project.root, target_is_directory=True)
    assert project.make().statuses() == {"say": "ran"}
    compiled = project.root / ".runner/spec.pickle"
    made = compiled.stat()
    for n, args in enumerate((("-C", str(link)), ("-C", str(link), "-f", "intents.toml"), ())):
        project.write("in.txt", f"edit {n}\n", age=5)
        assert project.make(*args).statuses() == {"say": "ran"}, args
        assert project.make(*args).events()[0].get("fast") is True, args
    assert (compiled.stat().st_ino, compiled.stat().st_mtime_ns) == (made.st_ino, made.st_mtime_ns)


def test_a_proof_file_keeps_only_this_folders_proofs(project):
    """A copy of the project, or a checkout whose .runner a CI cache restored, holds the proofs of the folder it
    came from, never read here: the next good run drops them (and another runner version's), so the file does not
    grow by a proof for each folder it passed through; this folder's proofs of other targets stay."""
    project.spec(SPEC.format(word="aaa").replace("echo aaa", "cat in.txt"))
    project.write("in.txt", "one\n")
    project.age_all()
    assert project.make().code == 0 and project.make("said.txt").code == 0
    proof_file = project.root / ".runner/noop"
    ours = set(marshal.loads(proof_file.read_bytes()))
    assert len(ours) == 2
    version, folder, _target = next(iter(ours)).split("\0", 2)
    proofs = marshal.loads(proof_file.read_bytes())
    proofs[f"{version}\0{folder}9\0"] = proofs[f"{version}\0{folder}\0"]  # a copy's, from another folder
    proofs[f"0.0.1\0{folder}\0"] = ("another version's",)
    proof_file.write_bytes(marshal.dumps(proofs))
    project.write("in.txt", "two\n", age=5)
    assert project.make().statuses() == {"say": "ran"}
    assert set(marshal.loads(proof_file.read_bytes())) == ours


def test_the_no_op_after_an_edit_still_leaves_the_aggregate_out(chain):
    """The proof an edit's run records keeps where its aggregates are in the order (taken from the proof before
    it): the fast no-op after it neither reports nor counts `all`, as the full pipeline does not."""
    chain.age_all()
    assert chain.make().code == 0
    chain.age_all()  # outputs too: past the racy window, their stats vouch for them
    assert chain.make().code == 0
    assert chain.make().events()[0].get("fast") is True
    chain.write("src/x.txt", "edited\n", age=5)
    assert chain.make().statuses() == {"a": "ran", "b": "ran", "c": "cached"}
    events = chain.make().events()  # the fresh outputs' bytes checked by the digests the proof kept
    assert events[0].get("fast") is True and events[0]["steps"] == 3
    assert sorted(e["intent"] for e in events if e["event"] == "step_finished") == ["a", "b", "c"]
    assert events[-1]["cached"] == 3


def test_a_no_op_named_from_another_folder_is_proved_from_the_project(project):
    """`runner make -C DIR` from elsewhere stats the proof's paths in DIR, not in the working folder: proved
    fast, and an edit there is seen."""
    project.spec(SPEC.format(word="aaa").replace("echo aaa", "cat in.txt"))
    project.write("in.txt", "one\n")
    project.age_all()
    assert project.make().code == 0
    project.age_all()  # outputs too: past the racy window, their stats vouch for them
    assert project.make().code == 0

    def make_from_parent() -> list[dict]:
        proc = runner_cli.run(["make", "--json", "-C", project.root.name], project.root.parent, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return [json.loads(line) for line in proc.stdout.splitlines()]

    assert make_from_parent()[0].get("fast") is True
    project.write("in.txt", "two\n", age=5)
    assert [e["status"] for e in make_from_parent() if e["event"] == "step_finished"] == ["ran"]
    assert project.read("said.txt") == "two\n"


def _hashed_next(project) -> None:
    """Remove the stat cache: what it holds after the next run is what that run's rule hashed (a step the last
    proof vouches for is not decided, and hashes nothing)."""
    for name in ("stat", "stat.log"):
        (project.root / ".runner" / name).unlink(missing_ok=True)


def _edit_spec(project, text: str) -> None:
    """Edit intents.toml alone, outside the racy window (age_all would move the outputs' stats too)."""
    project.write("intents.toml", text, age=5)
    racy.wait_out()


def _hashed(project, *paths: str) -> set[str]:
    stat = StatCache(str(project.root / ".runner" / "stat"))
    return {rel for rel in paths if stat.entry(rel) is not None}


def _compiled_token(project) -> str:
    """The token of the compilation .runner/spec.pickle holds: each compile of the spec makes a new one."""
    with open(project.root / ".runner/spec.pickle", "rb") as f:
        pickle.load(f)  # its fingerprint
        return pickle.load(f)[4]


def test_a_touch_of_intents_toml_keeps_its_compilation_and_decides_nothing(chain):
    """The spec's bytes as they were under new stats (a checkout of another branch and back, an editor's save
    of an unchanged file): the fast no-op proves it by one hash of the file, against the digest of the bytes its
    loader read (noop._touched), without loading the spec; and the full pipeline finds its compilation by
    those bytes (compiled._unchanged) rather than making it again (~1.5 s at 10,000 steps, ~20 s at 100,000),
    and the last proof stands for every step."""
    chain.age_all()
    assert chain.make().code == 0
    token = _compiled_token(chain)
    _edit_spec(chain, chain.read("intents.toml"))
    fast = chain.make()
    assert fast.events()[0].get("fast") is True, fast.out
    assert fast.code == 0 and set(fast.statuses().values()) == {"cached"}
    assert chain.make().events()[0].get("fast") is True  # and the proof holds the new stats: stats only now
    _edit_spec(chain, chain.read("intents.toml"))
    _hashed_next(chain)
    touched = chain.make("-v")  # no plain `runner make`: the full pipeline
    assert "fast" not in touched.events()[0]
    assert touched.code == 0 and set(touched.statuses().values()) == {"cached"}
    assert _hashed(chain, "src/x.txt", "src/y.txt", "out/a.txt") == set(), "the rule decided proven steps"
    assert _compiled_token(chain) == token, "the same bytes were compiled again"


def test_a_comment_in_intents_toml_keeps_its_compilation_and_decides_nothing(chain):
    """Other bytes that read as the same document (a comment, blank lines): the full pipeline finds the compilation
    by the document's digest (compiled._unchanged, toml_read.document_digests) instead of making it again (~8 s
    at 100,000 steps), the last proof stands for every step, and the next run's fast no-op proves the new bytes.
    A value edited among the comments is compiled, and its step runs."""
    spec = chain.read("intents.toml")
    chain.age_all()
    assert chain.make().code == 0
    token = _compiled_token(chain)
    _hashed_next(chain)
    _edit_spec(chain, "# why these steps\n\n" + spec.replace("\n[", "\n\n# the next one\n["))
    commented = chain.make()
    assert "fast" not in commented.events()[0]
    assert commented.code == 0 and set(commented.statuses().values()) == {"cached"}, commented.out
    assert _compiled_token(chain) == token, "the same document was compiled again"
    assert _hashed(chain, "src/x.txt", "src/y.txt", "out/a.txt") == set(), "the rule decided proven steps"
    assert chain.make().events()[0].get("fast") is True
    again = chain.make("-v")  # the full pipeline: the commented bytes are the ones the compilation is kept for
    assert again.code == 0 and set(again.statuses().values()) == {"cached"}
    assert _compiled_token(chain) == token
    _edit_spec(chain, chain.read("intents.toml").replace("wc -c < src/y.txt", "wc -l < src/y.txt"))
    edited = chain.make()
    assert edited.statuses() == {"a": "cached", "b": "cached", "c": "ran"}, edited.out
    assert chain.read("out/c.txt") == "1\n"
    assert _compiled_token(chain) != token


def test_status_takes_the_targets_proof_as_make_does(chain):
    """`runner status` (and `make -n`) decide only the steps the last good run's proof cannot vouch for, as `runner
    make` does: with nothing changed, none (no file hashed; at 100,000 steps deciding each took 6 s and 400 MB,
    against make's 0.2 s); after an edit, the edited file's cone, and what it says is what make then does."""
    chain.age_all()
    assert chain.make().code == 0
    _hashed_next(chain)
    status = chain.run("status")
    assert status.code == 0
    assert status.out.splitlines()[-1] == "0 to run, 4 up to date (target all)"
    assert _hashed(chain, "src/x.txt", "src/y.txt", "out/a.txt", "out/b.txt", "out/c.txt") == set()
    chain.write("src/x.txt", "hi\n", age=5)
    status = chain.run("status", "--json")
    planned = {step["intent"]: (step["action"], step["reasons"]) for step in json.loads(status.out)["steps"]}
    assert planned["c"] == ("skip", ["up to date"])
    assert planned["a"][0] == planned["b"][0] == "run"
    assert _hashed(chain, "out/c.txt") == set()  # c is not decided
    result = chain.make()
    assert result.statuses() == {"a": "ran", "b": "ran", "c": "cached"}, result.out


def test_a_problem_in_an_edited_intents_toml_is_told_at_its_line(chain):
    """An edited spec is parsed once, to compare its document with the compiled one's, and the loader checks that
    document (load_spec's `documents`): its problems are placed by the edited text's lines."""
    chain.age_all()
    assert chain.make().code == 0
    c_outputs = 'outputs = ["out/c.txt"]\n'
    edited = chain.read("intents.toml").replace(c_outputs, c_outputs + 'exclude = ["x"]\n')
    _edit_spec(chain, "# a comment\n# and another\n" + edited)
    result = chain.make()
    assert result.code == 2
    assert result.err.strip() == (
        "error: 1 problem in the spec\n"
        "  intents.toml:23: intent.c.exclude: 'exclude' takes files out of what the input globs expand to, and "
        "this intent has no input glob; remove it, or add a glob to 'inputs'"
    )


def test_an_edit_of_intents_toml_decides_only_the_steps_it_changed(chain):
    """What an edit of the spec changed for a step is in the step's fingerprint: the last proof still stands for
    the steps whose fingerprint is the same, and only the cone of the others is decided (at 100,000 steps that
    was ~13 s of deciding for one edited line)."""
    spec = chain.read("intents.toml")
    chain.age_all()
    assert chain.make().code == 0
    _hashed_next(chain)
    _edit_spec(chain, "# a comment changes no step\n" + spec)
    result = chain.make()
    assert result.statuses() == {"a": "cached", "b": "cached", "c": "cached"}, result.out
    assert _hashed(chain, "src/x.txt", "src/y.txt", "out/a.txt", "out/b.txt", "out/c.txt") == set()
    _edit_spec(chain, spec.replace("wc -c < src/y.txt", "wc -l < src/y.txt"))
    result = chain.make()
    assert result.statuses() == {"a": "cached", "b": "cached", "c": "ran"}, result.out
    assert _hashed(chain, "src/x.txt", "out/a.txt", "out/b.txt") == set()  # a's and b's: never looked at
    assert chain.read("out/c.txt") == "1\n"
    # an edit of the spec and of a file at once: the file's cone as well
    chain.write("src/x.txt", "hi\n", age=5)
    _edit_spec(chain, spec)
    result = chain.make()
    assert result.statuses() == {"a": "ran", "b": "ran", "c": "restored"}, result.out
    assert chain.read("out/b.txt") == "HI\nWORLD\n" and chain.read("out/c.txt") == "6\n"
    _settled(chain)


def test_every_step_an_edit_of_intents_toml_changed_is_decided(chain):
    """A dependency added, a step added to the target, an edit run at once (its compiled spec too fresh to be
    reused, yet named to the next), and `runner status` compiling the edit before `runner make`: each edited
    step is decided, each other one proved, and the outputs are those of a clean build."""
    spec = chain.read("intents.toml")
    chain.age_all()
    assert chain.make().code == 0
    # b depends on c too: its key holds c's outputs' digest, though its command and files are the same
    chain.spec(spec.replace('deps = ["a"]', 'deps = ["a", "c"]'))
    result = chain.make()  # within the racy window of the edit
    assert result.statuses() == {"a": "cached", "b": "ran", "c": "cached"}, result.out
    added = spec.replace('deps = ["b", "c"]', 'deps = ["b", "c", "d"]') + (
        '\n[intent.d]\nrun = "cat out/c.txt src/x.txt > out/d.txt"\ninputs = ["out/c.txt", "src/x.txt"]\n'
        'outputs = ["out/d.txt"]\ndeps = ["c"]\n'
    )
    chain.spec(added)  # b's extra dependency gone again: its first key, whose bytes out/b.txt holds
    assert _status(chain) == {"a": "skip", "b": "skip", "c": "skip", "d": "run", "all": "skip"}
    result = chain.make()
    assert result.statuses() == {"a": "cached", "b": "cached", "c": "cached", "d": "ran"}, result.out
    assert chain.read("out/b.txt") == "HELLO\nWORLD\n" and chain.read("out/d.txt") == "6\nhello\n"
    _settled(chain)


def test_a_proof_stands_only_beside_the_compilation_that_replaced_its_own(chain):
    """The fingerprints compared are those of the compilation the edit replaced: a proof made from one before
    it (here `runner status` compiled an edit of c, then the spec was edited again) proves nothing."""
    spec = chain.read("intents.toml")
    chain.age_all()
    assert chain.make().code == 0
    _edit_spec(chain, spec.replace("wc -c < src/y.txt", "wc -l < src/y.txt"))
    assert _status(chain)["c"] == "run"
    _edit_spec(chain, "# and a comment\n" + spec.replace("wc -c < src/y.txt", "wc -l < src/y.txt"))
    result = chain.make()
    assert result.statuses() == {"a": "cached", "b": "cached", "c": "ran"}, result.out
    assert chain.read("out/c.txt") == "1\n"
    _settled(chain)


def test_each_shortcut_the_rule_lists_names_tests_that_exist():
    """runner/freshness.py lists every shortcut with the test that goes red when it is wrong: each named test is
    there (a renamed test would leave the list pointing at nothing)."""
    import ast
    import re
    from pathlib import Path

    import runner.freshness

    doc = ast.get_docstring(ast.parse(Path(runner.freshness.__file__).read_text()))
    assert doc is not None
    named = re.findall(r"(test_\w+\.py)(?:::\s*(test_\w+))?", doc)
    assert len({test for _file, test in named if test}) >= 20
    here = Path(__file__).parent
    missing = [f"{file}::{test}" for file, test in named if f"def {test or 'test_'}" not in (here / file).read_text()]
    assert missing == []
