"""The differential test of freshness: on random DAGs, random sequences of edits, kills and runs; after each,
the fast paths answer as the rule does, and the outputs equal what a clean build of the current sources gives.

Each example is a generated project of 20-60 shell steps whose outputs are pure functions of their inputs (so a
clean build can be computed here, in Python, without running anything), and a short sequence of operations:
edit, touch, a same-size edit with the old mtime put back, an output deleted or edited by hand, an edit of
intents.toml (a command, a dependency, an input glob) or a rewrite of it as it was, an input changed while the
build runs, an input edited while a step reads it (and put back after the run), a file created (or deleted) under
an input glob while a step runs (and undone after), a step that rewrites its own input (a formatter: one that
rewrites it every run is never cached, so runs every run; one that writes only a change settles), a step whose
input glob matches its own output (which counts as it was before the step ran: it settles), SIGKILL or
Ctrl-C at a random moment, `-j 1/2/4`, `-k` with a failing step. The edits that land while a step reads use the
gate every step's command opens with: a step waits there while `hold/NAME` exists (decided, its key made, its
inputs not read yet), so the edit lands inside it whatever the timing.

After each operation the project is settled: `runner status` is asked what must run, `runner make -k` must do
exactly that (no step status called up to date runs; every step it called out of date for its own reasons runs;
every output it said to restore is restored), until nothing but the failing steps is left; then every output is
compared with the clean build's bytes.

Profiles (tests/conftest.py): `ci` (the default) runs 300 sequences from fixed seeds;
`--hypothesis-profile=long` explores 5,000 with random seeds, `--hypothesis-profile=explore` 2,000 (the issue's floor);
each in four parts of a quarter (PARTS), which xdist runs side by side.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import runner_cli
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.cli import cli

# each runner call has its own timeout (120 s); the whole exploration may take hours with --hypothesis-profile=long
pytestmark = [pytest.mark.slow, pytest.mark.timeout(6 * 3600)]

SOURCES = [f"src/f{i}.txt" for i in range(6)]
GLOB = "src/g_*.txt"
GLOB_BASE = "src/g_a.txt"  # never deleted: a shell glob that matches nothing stays literal and cat fails
GLOB_EXTRA = [f"src/g_{c}.txt" for c in "bcde"]
FMT_SOURCE = "src/fmt.txt"
WORDS = ["x", "yy", "zz z", "ok", "q q q", "w"]  # no F, A, I or L: FAIL appears only where an edit puts it
HOLD = "hold"  # hold/NAME: step NAME waits at its gate (it writes hold/NAME.at there) until the file is gone


@dataclass
class Step:
    name: str
    sources: list[str]  # explicit source paths, or [GLOB]
    deps: list[str]
    variant: str  # cat | head | fmt
    tag: str = "t0"
    slow: bool = False
    rewrites: bool = False  # fmt: rewrites its input every run, as it was or not (else only when that changes it)
    own_glob: bool = False  # an input glob that matches its own output too (runner init's **/*.py beside tests/**)

    @property
    def output(self) -> str:
        return f"out/{self.name}.txt"


@dataclass
class World:
    steps: list[Step]
    by_name: dict[str, Step] = field(init=False)

    def __post_init__(self):
        self.by_name = {s.name: s for s in self.steps}

    def reads(self, step: Step) -> list[str]:
        return [*step.sources, *(self.by_name[d].output for d in step.deps)]

    def command(self, step: Step) -> str:
        gate = f"if [ -e {HOLD}/{step.name} ]; then : > {HOLD}/{step.name}.at; while [ -e {HOLD}/{step.name} ]; "
        pause = gate + "do sleep 0.01; done; fi; " + ("sleep 0.05; " if step.slow else "")
        if step.variant == "fmt":
            # a formatter: rewrites its own input (not an output), then reports it
            put = (
                "mv src/fmt.tmp {0}"
                if step.rewrites
                else "if cmp -s src/fmt.tmp {0}; then rm src/fmt.tmp; else mv src/fmt.tmp {0}; fi"
            ).format(FMT_SOURCE)
            return f"{pause}tr a-z A-Z < {FMT_SOURCE} > src/fmt.tmp && {put}; cat {FMT_SOURCE} > {step.output}"
        reads = " ".join(self.reads(step))
        # grep reads the files itself (one process fewer than cat | grep, a step in every build): FAIL never spans
        # two of them, each of which ends in a newline or holds no letter of it (a head step's four bytes)
        check = f"if grep -q FAIL {reads}; then echo found FAIL >&2; exit 1; fi; "
        if step.variant == "head":
            # loses information: an upstream edit past the fourth byte leaves this output as it was (early cutoff)
            return f"{pause}{check}cat {reads} | head -c 4 > {step.output}; echo {step.tag} > /dev/null"
        return f"{pause}{check}cat {reads} > {step.output}; echo {step.name}:{step.tag} >> {step.output}"

    def toml(self) -> str:
        lines = ['[project]\nname = "differential"\ndefault = "all"\n']
        for step in self.steps:
            inputs = [FMT_SOURCE] if step.variant == "fmt" else step.sources
            outputs = [step.output]
            if step.own_glob:  # two globs naming the one output (a glob and a path that match is refused at load)
                inputs, outputs = [*inputs, f"out/{step.name}.t?t"], [f"out/{step.name}.tx?"]
            lines.append(
                f"[intent.{step.name}]\nrun = {json.dumps(self.command(step))}\ninputs = {json.dumps(inputs)}\n"
                f"outputs = {json.dumps(outputs)}\ndeps = {json.dumps(step.deps)}\n"
            )
        lines.append(f"[intent.all]\ndeps = {json.dumps([s.name for s in self.steps])}\n")
        return "\n".join(lines)

    def clean_build(self, root: Path) -> dict[str, bytes | None | str]:
        """What a clean build of the sources on disk produces, step by step: bytes, None for a step that fails,
        "blocked" for one downstream of a failure."""
        result: dict[str, bytes | None | str] = {}
        for step in self.steps:
            if step.variant == "fmt":
                result[step.name] = (root / FMT_SOURCE).read_bytes().upper()
                continue
            if any(not isinstance(result[d], bytes) for d in step.deps):
                result[step.name] = "blocked"
                continue
            files = sorted(str(p.relative_to(root)) for p in root.glob(GLOB)) if step.sources == [GLOB] else []
            content = b"".join((root / p).read_bytes() for p in files or step.sources)
            content += b"".join(result[d] for d in step.deps)  # type: ignore[misc]
            if b"FAIL" in content:
                result[step.name] = None
            elif step.variant == "head":
                result[step.name] = content[:4]
            else:
                result[step.name] = content + f"{step.name}:{step.tag}\n".encode()
        return result


@st.composite
def worlds(draw) -> World:
    n = draw(st.integers(20, 60))
    steps = [Step("fmt", [], [], "fmt", slow=draw(st.booleans()), rewrites=draw(st.booleans()))]
    for i in range(1, n):
        name = f"s{i:02d}"
        earlier = [s.name for s in steps]
        deps = sorted(draw(st.lists(st.sampled_from(earlier), max_size=2, unique=True)))
        if draw(st.integers(0, 9)) == 0:
            sources = [GLOB]
        else:
            sources = sorted(
                draw(st.lists(st.sampled_from(SOURCES), min_size=0 if deps else 1, max_size=2, unique=True))
            )
        variant = "head" if draw(st.integers(0, 4)) == 0 else "cat"
        own_glob = sources != [GLOB] and draw(st.integers(0, 9)) == 0
        steps.append(Step(name, sources, deps, variant, slow=draw(st.integers(0, 7)) == 0, own_glob=own_glob))
    return World(steps)


def _text(draw) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
    if draw(st.integers(0, 11)) == 0:
        words.insert(draw(st.integers(0, len(words))), "FAIL")
    return "\n".join(words) + "\n"


# ---- driving the runner -------------------------------------------------------------------------------------


def _runner(root: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m runner ARGS` as a forked copy of this process (tests/runner_cli.py); the runs killed or
    interrupted (`_background`) are real `python -m runner` processes, from their start."""
    return runner_cli.run(args, root, timeout=120)


def _events(out: str) -> list[dict]:
    events = []
    for line in out.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass  # a SIGKILL can cut the last line
    return events


def _plan(root: Path) -> dict[str, dict]:
    """`runner status --json`, in this process (click's runner: the same command, without a Python start)."""
    done = CliRunner().invoke(cli, ["status", "--json", "-C", str(root)], catch_exceptions=False)
    assert done.exit_code == 0, done.stderr
    return {s["intent"]: s for s in json.loads(done.stdout)["steps"]}


def _runs(plan: dict[str, dict]) -> set[str]:
    return {n for n, s in plan.items() if s["action"] == "run"}


def _own(plan: dict[str, dict]) -> set[str]:
    """Steps the plan runs for their own reasons, not only because a dependency will run (whose outputs may
    come out the same: then the step is cached after all)."""
    return {
        n
        for n, s in plan.items()
        if s["action"] == "run" and not all(r.startswith("dependency ") for r in s["reasons"])
    }


def _restores(plan: dict[str, dict]) -> set[str]:
    return {n for n, s in plan.items() if s["action"] == "skip" and any("restore" in r for r in s["reasons"])}


def _make(root: Path, *args: str) -> tuple[int, dict[str, str]]:
    done = _runner(root, "make", "--json", *args)
    assert done.returncode in (0, 1), f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    statuses = {e["intent"]: e["status"] for e in _events(done.stdout) if e.get("event") == "step_finished"}
    return done.returncode, statuses


def _agrees(plan: dict[str, dict], statuses: dict[str, str], keep_going: bool, history: list[str]) -> None:
    """`runner make` did what `runner status` said it must, and nothing status called up to date."""
    ran = {n for n, s in statuses.items() if s in ("ran", "failed")}
    restored = {n for n, s in statuses.items() if s == "restored"}
    stopped = {n for n, s in statuses.items() if s == "skipped"}  # downstream of a failure, or after it
    where = "\n".join(history)
    assert ran <= _runs(plan), f"ran though status said up to date: {sorted(ran - _runs(plan))}\n{where}"
    assert restored <= _restores(plan) | _runs(plan), f"restored unannounced: {sorted(restored)}\n{where}"
    if keep_going or "failed" not in statuses.values():
        missed = _own(plan) - ran - stopped
        assert not missed, f"status said these must run; make did not run them: {sorted(missed)}\n{where}"
        unrestored = _restores(plan) - restored - ran - stopped
        assert not unrestored, f"status said restore; make did not: {sorted(unrestored)}\n{where}"


def _settle(world: World, root: Path, history: list[str], first: tuple[str, ...] = ("-k",)) -> None:
    """Ask status, make (`first`: the operation's own flags, then -k), compare; until status says nothing but
    the failing steps must run and make agrees. Then every output is what a clean build of the current sources
    gives."""
    expected = world.clean_build(root)
    failing = {n for n, v in expected.items() if v is None}
    args = first
    for attempt in range(4):
        plan = _plan(root)
        code, statuses = _make(root, *args)
        _agrees(plan, statuses, "-k" in args, history + [f"run {attempt} {' '.join(args)}"])
        work = (_runs(plan) | _restores(plan)) - failing - _downstream(world, failing) - _every_run(world, plan)
        if not work and ("-k" in args or not failing):
            break  # status called everything up to date but what fails: make (the fast no-op) agreed
        args = ("-k",)
        expected = world.clean_build(root)  # a formatter step rewrites a source
        failing = {n for n, v in expected.items() if v is None}
    else:
        raise AssertionError("four runs in a row each had work:\n" + "\n".join(history))
    assert {n for n, s in statuses.items() if s == "failed"} == failing, "\n".join(history)
    assert code == (1 if failing else 0), "\n".join(history)
    for step in world.steps:
        want, path = expected[step.name], root / step.output
        if isinstance(want, bytes):
            assert path.read_bytes() == want, f"{step.output} differs from a clean build's\n" + "\n".join(history)
        elif want is None:
            assert not path.exists(), f"{step.output} of a failing step is left\n" + "\n".join(history)


def _every_run(world: World, plan: dict[str, dict]) -> set[str]:
    """A formatter that rewrites its input every run runs every run (new stats while it ran: nothing cached,
    runner/inputs_held.py), and with it the steps status runs only because it will: their keys come out the same
    (early cutoff)."""
    found = {s.name for s in world.steps if s.variant == "fmt" and s.rewrites}
    for step in world.steps:
        reasons = plan[step.name]["reasons"] if plan[step.name]["action"] == "run" else []
        if reasons and all(r.startswith("dependency ") and r.split()[1] in found for r in reasons):
            found.add(step.name)
    return found


def _downstream(world: World, names: set[str]) -> set[str]:
    below: set[str] = set()
    for step in world.steps:
        if any(d in names or d in below for d in step.deps):
            below.add(step.name)
    return below


def _background(root: Path, jobs: str, keep_going: bool) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "runner", "make", "--json", "-j", jobs, *(["-k"] if keep_going else [])],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # Ctrl-C goes to the terminal's whole process group: the runner and its steps
    )


def _write_keep_stat(path: Path, text: str, old: os.stat_result) -> None:
    path.write_text(text)
    os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))


@st.composite
def operations(draw, world: World) -> tuple:
    kind = draw(
        st.sampled_from(
            [
                "edit",
                "touch",
                "same-size",
                "delete-output",
                "edit-output",
                "glob-file",
                "spec-command",
                "spec-dep",
                "spec-input",
                "spec-touch",
                "spec-comment",
                "edit-fmt",
                "edit-while-running",
                "edit-while-reading",
                "glob-while-reading",
                "kill",
                "ctrl-c",
            ]
        )
    )
    step = draw(st.sampled_from(world.steps[1:]))
    globbed = [s for s in world.steps[1:] if s.sources == [GLOB]]
    if kind == "glob-while-reading" and globbed:
        step = draw(st.sampled_from(globbed))
    jobs = draw(st.sampled_from(["1", "2", "4"]))
    keep_going = draw(st.booleans())
    if kind in ("edit", "same-size", "touch", "edit-while-running"):
        arg: object = (draw(st.sampled_from(SOURCES)), _text(draw))
    elif kind == "glob-file":
        arg = (draw(st.sampled_from(GLOB_EXTRA)), _text(draw))
    elif kind == "edit-while-reading":  # one of the step's own sources: the edit it decides on, the one it reads
        own = step.sources if step.sources and step.sources != [GLOB] else SOURCES
        arg = (draw(st.sampled_from(own)), _text(draw), _text(draw))
    elif kind == "glob-while-reading":  # the glob base edited (so glob steps run), a file made or deleted
        arg = (draw(st.sampled_from(GLOB_EXTRA)), _text(draw), _text(draw))
    elif kind == "spec-command":
        arg = f"t{draw(st.integers(0, 9))}"
    elif kind == "spec-dep":
        index = world.steps.index(step)
        arg = draw(st.sampled_from([s.name for s in world.steps[:index]]))
    elif kind == "edit-fmt":
        arg = _text(draw).lower()
    elif kind == "spec-comment":
        arg = draw(st.integers(0, 9))
    elif kind in ("kill", "ctrl-c"):
        arg = draw(st.floats(0.0, 0.4))
    else:
        arg = None
    return kind, step.name, arg, jobs, keep_going


def _apply(op: tuple, world: World, root: Path, history: list[str]) -> None:
    """Do the operation; then settle, the operation's own make first (a killed one by a plain make -k)."""
    kind, name, arg, jobs, keep_going = op
    step = world.by_name[name]
    make_args = ["-j", jobs, *(["-k"] if keep_going else [])]
    if kind == "edit":
        rel, text = arg  # type: ignore[misc]
        (root / rel).write_text(text)
    elif kind == "touch":
        rel, _ = arg  # type: ignore[misc]
        os.utime(root / rel)
    elif kind == "same-size":
        rel, _ = arg  # type: ignore[misc]
        path = root / rel
        old = path.stat()
        data = path.read_bytes()
        flipped = bytes(b ^ 0x20 if 97 <= b <= 122 else b for b in data)  # same length, other letters
        _write_keep_stat(path, flipped.decode(), old)
    elif kind == "delete-output":
        (root / step.output).unlink(missing_ok=True)
    elif kind == "edit-output":
        path = root / step.output
        if path.exists():
            path.write_bytes(path.read_bytes() + b"by hand\n")
    elif kind == "glob-file":
        rel, text = arg  # type: ignore[misc]
        path = root / rel
        if path.exists():
            path.unlink()
        else:
            path.write_text(text)
    elif kind == "spec-command":
        step.tag = arg  # type: ignore[assignment]
        (root / "intents.toml").write_text(world.toml())
    elif kind == "spec-dep":
        if arg in step.deps:
            if step.sources or len(step.deps) > 1:
                step.deps.remove(arg)  # type: ignore[arg-type]
        else:
            step.deps = sorted([*step.deps, arg])  # type: ignore[list-item]
        (root / "intents.toml").write_text(world.toml())
    elif kind == "spec-input":
        if step.variant != "fmt":
            step.sources = [SOURCES[0]] if step.sources == [GLOB] else [GLOB]
            (root / "intents.toml").write_text(world.toml())
    elif kind == "spec-touch":  # its bytes as they were, new stats: a checkout and back, an editor's save
        (root / "intents.toml").write_text(world.toml())
    elif kind == "spec-comment":  # other bytes, the same document: comments and blank lines
        text = world.toml().replace("\n[", f"\n\n# note {arg}\n[")
        (root / "intents.toml").write_text(f"# {name} {arg}\n{text}\n")
    elif kind == "edit-fmt":
        (root / FMT_SOURCE).write_text(arg)  # type: ignore[arg-type]
    if kind in ("edit-while-reading", "glob-while-reading"):
        _while_reading(kind, step, arg, root, jobs, keep_going)
        _settle(world, root, history)
        return
    if kind in ("edit-while-running", "kill", "ctrl-c"):
        run = _background(root, jobs, keep_going)
        if kind == "edit-while-running":
            time.sleep(0.05)
            rel, text = arg  # type: ignore[misc]
            (root / rel).write_text(text)
            run.communicate(timeout=120)
            assert run.returncode in (0, 1)
        else:
            time.sleep(arg)  # type: ignore[arg-type]
            try:
                if kind == "kill":
                    os.kill(run.pid, signal.SIGKILL)
                else:
                    os.killpg(run.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            run.communicate(timeout=120)
            # a Ctrl-C that lands before Python runs runner's code ends the interpreter by the signal itself
            allowed = {0, 1, -signal.SIGKILL} if kind == "kill" else {0, 1, 130, -signal.SIGINT}
            assert run.returncode in allowed, f"{kind}: exit {run.returncode}"
        _settle(world, root, history)
        return
    _settle(world, root, history, tuple(make_args))


def _while_reading(kind: str, step: Step, arg, root: Path, jobs: str, keep_going: bool) -> None:
    """An edit that lands while `step` runs, decided and not yet reading: its gate is closed, a source edited so
    that it runs, and once it waits at the gate, the edit (of that source, or a file made or deleted under the input
    glob); the gate opens, the run ends, and the edit is undone: the sources hold the bytes the step's key was made
    from, which a record stored for them must have been made from too."""
    rel, before, during = arg
    edited = rel if kind == "edit-while-reading" else GLOB_BASE
    (root / edited).write_text(before)
    extra = root / rel
    was = extra.read_text() if kind == "glob-while-reading" and extra.exists() else None
    gate, arrived = root / HOLD / step.name, root / HOLD / f"{step.name}.at"
    gate.write_text("")
    run = _background(root, jobs, keep_going)
    deadline = time.monotonic() + 120
    while not arrived.exists() and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    if arrived.exists():  # else it did not run: up to date, or downstream of a failure
        if kind == "edit-while-reading" or was is None:
            extra.write_text(during)
        else:
            extra.unlink()
    gate.unlink()
    run.communicate(timeout=120)
    assert run.returncode in (0, 1), f"{kind}: exit {run.returncode}"
    arrived.unlink(missing_ok=True)
    if kind == "edit-while-reading":
        extra.write_text(before)
    elif was is None:
        extra.unlink(missing_ok=True)
    else:
        extra.write_text(was)


def _explore(world: World, data) -> None:
    with tempfile.TemporaryDirectory(prefix="runner-differential-") as tmp:
        root = Path(tmp)
        (root / "src").mkdir()
        (root / "out").mkdir()
        (root / HOLD).mkdir()
        for rel in SOURCES:
            (root / rel).write_text(f"{rel}\n")
        (root / GLOB_BASE).write_text("glob base\n")
        (root / FMT_SOURCE).write_text("FORMATTED\n")  # as the formatter leaves it: a clean build settles at once
        (root / "intents.toml").write_text(world.toml())
        history = [f"a world of {len(world.steps)} steps"]
        _settle(world, root, history)
        for _ in range(data.draw(st.integers(1, 3), label="operations")):
            op = data.draw(operations(world), label="operation")
            history.append(repr(op))
            _apply(op, world, root, history)


# The profile's sequences in parts that xdist runs side by side, each part from its own seed (Hypothesis adds the
# parametrized id to a test's digest, which derandomize seeds from): as many sequences as one test ran, spread over
# the workers instead of holding one of them for the whole exploration. Not in the slow lane's single file (the
# group of its own below): no step here times a signal against another test's.
PARTS = 4


@pytest.mark.parametrize(
    "part", [pytest.param(n, marks=pytest.mark.xdist_group(f"differential-{n}")) for n in range(PARTS)]
)
@settings(max_examples=-(-settings.default.max_examples // PARTS))
@given(world=worlds(), data=st.data())
def test_the_fast_paths_answer_as_the_rule_and_outputs_equal_a_clean_build(part, world, data):
    _explore(world, data)
