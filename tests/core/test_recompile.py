"""An edit of some intents' tables is compiled by making only those steps' records again (compiled._recompiled):
on random projects and random sequences of edits, what it gives is what a full compile of the same files gives,
record by record and field by field; and edits that change the graph, or that a full load refuses, are left to
the full compile, which says what it always says."""

from __future__ import annotations

import json

import pytest
import racy
from hypothesis import given, settings
from hypothesis import strategies as st

from runner import load
from runner.compiled import _COLUMNS, compile_spec, load_compiled
from runner.errors import SpecError

# edits that keep what other intents and the graph read of a step: compiled by the splice
SPLICED = ("run", "description", "env-literal", "timeout", "goal", "facts", "comment")
# edits that change the graph, a field other steps' checks read, the variables a step reads, an intent's name or
# a table that is no intent's (a policy's scope); or are refused
FULL = ("deps", "inputs", "outputs", "env-variable", "policy", "verify", "rename", "scope", "invalid")


@st.composite
def _projects(draw) -> dict[str, dict]:
    """Intent tables by name: shell steps with deps among the earlier ones, then an agent step over them."""
    steps: dict[str, dict] = {}
    for i in range(draw(st.integers(1, 8))):
        name = f"s{i:02d}"
        deps = draw(st.lists(st.sampled_from(sorted(steps)), unique=True, max_size=2)) if steps else []
        steps[name] = {
            "run": f"echo {i} > out/{name}.txt",
            "inputs": [f"src/f{draw(st.integers(0, 4))}.txt"],
            "outputs": [f"out/{name}.txt"],
            "deps": deps,
        }
    steps["agent"] = {
        "goal": "write the tests",
        "facts": ["stdlib only"],
        "inputs": ["src/f0.txt"],
        "outputs": ["tests/test_f.py"],
        "prompt": "write-tests",
        "adapter": "python",
        "verify": ["test"],
        "deps": [draw(st.sampled_from(sorted(steps)))],
    }
    return steps


def _text(steps: dict[str, dict], comments: int, scope: int = 0) -> str:
    head = f'[project]\nname = "p"\n\n[policy.default]\nscope = ["tests{scope}/**"]\n\n[policy.strict]\nscope = []\n\n'
    tables = []
    for k, (name, table) in enumerate(steps.items()):
        lines = [f"[intent.{name}]"] + [f"{key} = {json.dumps(value)}" for key, value in table.items()]
        if k < comments:
            lines.insert(1, f"# a comment, {comments}")
        tables.append("\n".join(lines) + "\n")
    return head + "\n".join(tables)


def _edit(steps: dict[str, dict], kind: str, name: str, n: int) -> None:
    table = steps.get(name)
    if table is None:  # renamed by an earlier edit of the same round
        return
    agent = "goal" in table
    if kind == "run":
        table["goal" if agent else "run"] = f"echo edited {n}"
    elif kind == "description":
        table["description"] = f"edited {n}"
    elif kind == "env-literal":
        table["env"] = {"X": f"value {n}"}
    elif kind == "env-variable":
        table["env"] = {"X": "$HOME" if table.get("env", {}).get("X") != "$HOME" else "$PATH"}
    elif kind == "timeout":
        table["timeout"] = n + 1
    elif kind == "goal":
        if agent:
            table["goal"] = f"write the tests, take {n}"
    elif kind == "facts":
        if agent:
            table["facts"] = [f"fact {n}"]
    elif kind == "deps":
        earlier = [other for other in steps if other < name and other not in table["deps"]]
        table["deps"] = table["deps"][1:] if table["deps"] else earlier[:1]
    elif kind == "inputs":
        table["inputs"] = table["inputs"] + [f"src/extra{n}.txt"]
    elif kind == "outputs":
        table["outputs"] = table["outputs"] + [f"out/extra{n}.txt"]
    elif kind == "policy":
        if agent:
            table["policy"] = "strict" if table.get("policy") != "strict" else "default"
    elif kind == "verify":
        if agent:
            table["verify"] = [] if table["verify"] == ["test"] else ["test"]
    elif kind == "rename":  # in its place: the same count of intents, in the same order but for its name
        renamed = {(f"{other}r" if other == name else other): value for other, value in steps.items()}
        steps.clear()
        steps.update(renamed)
    elif kind == "invalid":
        table["timeout"] = "soon"


def _as_full_compile_made_it(compiled, root) -> None:
    """Every field of `compiled` (as load_compiled gave it) is what a full compile of the files now makes."""
    reference, _sources = compile_spec(load.load_spec(root))
    assert compiled.order == reference.order
    assert compiled.sources == reference.sources
    for name in reference.order:
        assert tuple(compiled.spec.intents[name]) == tuple(reference.spec.intents[name]), name
        for column in _COLUMNS:
            assert getattr(compiled, column)[name] == getattr(reference, column)[name], (column, name)
    assert list(compiled.declared_by) == list(reference.declared_by)
    assert {p: tuple(n) for p, n in compiled.declared_by.items()} == dict(reference.declared_by)
    for field in ("agents", "aggregates", "unprovable", "produced", "env_names", "fingerprints", "graph"):
        assert getattr(compiled, field) == getattr(reference, field), field
    assert list(compiled.gates.items()) == list(reference.gates.items())
    # the bytes each spec file holds now (where a comment kept the compilation, its header keeps the bytes it
    # was compiled from: compiled._reused)
    assert compiled.spec_read == dict(reference.spec.read)
    assert compiled.spec._replace(intents={}, read=(), parsed=()) == reference.spec._replace(
        intents={}, read=(), parsed=()
    )


@pytest.fixture
def loads(monkeypatch) -> list[int]:
    """How many full loads of the spec have run (load_spec, watched as it runs)."""
    calls = [0]
    real = load.load_spec

    def counted(*args, **kwargs):
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(load, "load_spec", counted)
    return calls


@pytest.fixture(scope="module")
def aged_root(tmp_path_factory):
    """A project folder older than the racy window: an adapter step's compile watches the folder itself (what
    detection looked at), and a folder changed within the window is too fresh to vouch for (compiled._racy), so
    the edit after it would be compiled in full. Every example reuses it (a file rewritten in place leaves it)."""
    root = tmp_path_factory.mktemp("recompile")
    (root / ".runner").mkdir()
    (root / "intents.toml").write_text("")
    racy.wait_out()
    return root


def _edits(most: int):
    """Sequences of edits, each some kinds at a seed: half of kinds all spliced, so that runs of splices are met."""
    kinds = st.lists(st.sampled_from(SPLICED), min_size=1, max_size=3) | st.lists(
        st.sampled_from(SPLICED + FULL), min_size=1, max_size=3
    )
    return st.lists(st.tuples(kinds, st.integers(0, 100)), min_size=1, max_size=most)


@settings(max_examples=40, deadline=None)
@given(steps=_projects(), edits=_edits(6))
def test_an_edit_compiles_to_what_a_full_compile_makes(aged_root, steps, edits):
    root = aged_root
    for kept in (root / ".runner").iterdir():  # another example's
        kept.unlink()
    spec_file = root / "intents.toml"
    spec_file.write_text(_text(steps, 0))
    load_compiled(root)
    scope = 0  # the edits of [policy.default]'s scope so far
    for n, (kinds, pick) in enumerate(edits, start=1):
        names = sorted(steps)
        before = json.dumps(steps)
        for k, kind in enumerate(kinds):
            _edit(steps, kind, names[(pick + k) % len(names)], n)
        scope += kinds.count("scope")
        spec_file.write_text(_text(steps, n % 3 if "comment" in kinds else 0, scope))
        try:
            compiled = load_compiled(root)
        except SpecError:
            with pytest.raises(SpecError):
                load.load_spec(root)
            steps.clear()
            steps.update(json.loads(before))  # the project as it was, for the next edit
            spec_file.write_text(_text(steps, 0, scope))
            load_compiled(root)
            continue
        _as_full_compile_made_it(compiled, root)
        # and as the next run reads it back from its file
        _as_full_compile_made_it(load_compiled(root), root)


def _project(root, steps) -> None:
    (root / ".runner").mkdir()
    (root / "intents.toml").write_text(_text(steps, 0))


STEPS = {
    "a": {"run": "echo a > out/a.txt", "inputs": ["src/a.txt"], "outputs": ["out/a.txt"], "deps": []},
    "b": {"run": "echo b > out/b.txt", "inputs": ["out/a.txt"], "outputs": ["out/b.txt"], "deps": ["a"]},
}


def test_a_commands_edit_is_not_a_full_load(tmp_path, loads):
    steps = json.loads(json.dumps(STEPS))
    _project(tmp_path, steps)
    first = load_compiled(tmp_path)
    assert loads[0] == 1
    steps["b"]["run"] = "echo B > out/b.txt"
    (tmp_path / "intents.toml").write_text(_text(steps, 0))
    edited = load_compiled(tmp_path)
    assert loads[0] == 1  # spliced: no full load
    assert edited.spec.intents["b"].run == "echo B > out/b.txt"
    assert edited.static["b"] != first.static["b"] and edited.static["a"] == first.static["a"]
    assert edited.previous == (first.token, first.fingerprints)
    _as_full_compile_made_it(edited, tmp_path)


@pytest.mark.parametrize(
    ("field", "value"),
    [("deps", []), ("inputs", ["src/a.txt"]), ("outputs", ["out/b.txt", "out/c.txt"])],
)
def test_an_edit_of_the_graph_is_a_full_compile(tmp_path, loads, field, value):
    steps = json.loads(json.dumps(STEPS))
    _project(tmp_path, steps)
    load_compiled(tmp_path)
    steps["b"][field] = value
    (tmp_path / "intents.toml").write_text(_text(steps, 0))
    edited = load_compiled(tmp_path)
    assert loads[0] == 2
    _as_full_compile_made_it(edited, tmp_path)


def test_a_refused_edit_is_told_as_a_full_load_tells_it(tmp_path, loads):
    steps = json.loads(json.dumps(STEPS))
    _project(tmp_path, steps)
    load_compiled(tmp_path)
    steps["b"]["timeout"] = "soon"
    (tmp_path / "intents.toml").write_text(_text(steps, 0))
    with pytest.raises(SpecError) as refused:
        load_compiled(tmp_path)
    assert loads[0] == 2
    assert [str(p) for p in refused.value.problems] == [
        str(p) for p in pytest.raises(SpecError, load.load_spec, tmp_path).value.problems
    ]


def test_another_files_edit_beside_it_is_a_full_compile(tmp_path, loads):
    steps = json.loads(json.dumps(STEPS))
    _project(tmp_path, steps)
    (tmp_path / "prompts").mkdir()
    load_compiled(tmp_path)
    (tmp_path / "prompts" / "new.md").write_text("a prompt\n")  # the prompts folder changed too
    steps["b"]["run"] = "echo B > out/b.txt"
    (tmp_path / "intents.toml").write_text(_text(steps, 0))
    load_compiled(tmp_path)
    assert loads[0] == 2


def _monorepo(root, app_run: str = "echo app > out.txt", root_deps: str = '["build"]') -> None:
    """A root with two sub-projects; `build` is lib's alone, so the root's bare dep names it (subprojects.py)."""
    (root / "lib").mkdir(exist_ok=True)
    (root / "app").mkdir(exist_ok=True)
    (root / "intents.toml").write_text(
        f'[project]\nname = "m"\ninclude = ["lib", "app"]\n\n[intent.all]\ndeps = {root_deps}\n'
    )
    (root / "lib/intents.toml").write_text(
        '[intent.build]\nrun = "echo lib > out.txt"\ninputs = ["src.txt"]\noutputs = ["out.txt"]\n'
    )
    (root / "app/intents.toml").write_text(
        '[policy.mine]\nscope = ["gen/**"]\n\n'  # its own: its intent's policy is app:mine
        f'[intent.app]\nrun = "{app_run}"\ndeps = ["lib:build"]\ninputs = ["../lib/out.txt"]\noutputs = ["out.txt"]\n'
        'policy = "mine"\n'
    )


def test_an_edit_of_a_sub_project_s_intent_is_spliced(tmp_path, loads):
    (tmp_path / ".runner").mkdir()
    _monorepo(tmp_path)
    first = load_compiled(tmp_path)
    assert loads[0] == 1
    _monorepo(tmp_path, app_run="echo APP > out.txt")  # its run line: the graph as it was
    edited = load_compiled(tmp_path)
    assert loads[0] == 1  # spliced: only app:app's record made again
    assert edited.spec.intents["app:app"].run == "echo APP > out.txt"
    assert (
        edited.static["app:app"] != first.static["app:app"] and edited.static["lib:build"] == first.static["lib:build"]
    )
    _as_full_compile_made_it(edited, tmp_path)
    _as_full_compile_made_it(load_compiled(tmp_path), tmp_path)
    # the root's table, its bare dep resolved as the full load resolves it: spliced too
    before = loads[0]
    _monorepo(tmp_path, app_run="echo APP > out.txt", root_deps='["lib:build"]')
    assert load_compiled(tmp_path).spec.intents["all"].deps == ("lib:build",)
    assert loads[0] == before
    # a sub-project's deps: the graph changed, compiled in full
    (tmp_path / "app/intents.toml").write_text('[intent.app]\nrun = "true"\n')
    edited = load_compiled(tmp_path)
    assert loads[0] == before + 1
    _as_full_compile_made_it(edited, tmp_path)


def test_an_edit_of_an_exclude_another_sub_project_reads_past_is_told_as_a_full_load_tells_it(tmp_path, loads):
    """What app may read of lib's sources hangs on lib's exclude (subprojects._unread), a field no other intent's
    check read before: an edit of it alone is compiled in full, and refused there."""
    (tmp_path / ".runner").mkdir()
    _monorepo(tmp_path)
    (tmp_path / "lib/intents.toml").write_text(
        '[intent.build]\nrun = "echo lib > out.txt"\ninputs = ["src/*.txt"]\noutputs = ["out.txt"]\n'
        'exclude = ["src/old.txt"]\n'
    )
    app = (tmp_path / "app/intents.toml").read_text().replace('"../lib/out.txt"', '"../lib/src/*.txt"')
    (tmp_path / "app/intents.toml").write_text(app + 'exclude = ["../lib/src/old.txt"]\n')
    load_compiled(tmp_path)
    assert loads[0] == 1
    lib = (tmp_path / "lib/intents.toml").read_text()
    (tmp_path / "lib/intents.toml").write_text(lib.replace('"src/old.txt"', '"src/gen.txt"'))
    with pytest.raises(SpecError) as refused:
        load_compiled(tmp_path)
    assert loads[0] == 2
    assert [(p.file, p.line, p.path, p.message) for p in refused.value.problems] == [
        (
            "app/intents.toml",
            7,
            "intent.app.inputs[0]",
            "path '../lib/src/*.txt' leaves app/ and reads what lib:build leaves out of its inputs "
            "('../lib/src/gen.txt'): exclude '../lib/src/gen.txt' here too, or add the intent that makes or reads it "
            "to deps",
        )
    ]


def _folder_of(name: str) -> str:
    """Where a step of _projects lives in the monorepo layout: the root, a/ or b/ by its number."""
    return "" if name.startswith("agent") else ("", "a", "b")[int(name[1:3]) % 3]


def _monorepo_files(steps: dict[str, dict], comments: int, scope: int = 0) -> dict[str, str]:
    """_text's project as a root and two sub-projects: each step's table in its folder's file, its deps named as
    they are from there (bare in its own folder, :NAME for the root's, PATH:NAME for another's)."""
    head = _text({}, 0, scope).replace('name = "p"\n', 'name = "p"\ninclude = ["a", "b"]\n', 1)
    by_folder: dict[str, dict[str, dict]] = {"": {}, "a": {}, "b": {}}
    for name, table in steps.items():
        folder = _folder_of(name)
        deps = []
        for dep in table.get("deps", ()):
            theirs = _folder_of(dep) if dep[:1] == "s" or dep.startswith("agent") else ""
            deps.append(dep if theirs == folder else f"{theirs}:{dep}" if theirs else f":{dep}")
        by_folder[folder][name] = {**table, "deps": deps}
    bare = len(_text({}, 0))  # the head _text writes before the tables

    files = {"intents.toml": head + _text(by_folder[""], comments)[bare:]}
    for folder in ("a", "b"):
        files[f"{folder}/intents.toml"] = _text({"keep": {"run": "true"}, **by_folder[folder]}, comments)[bare:]
    return files


@pytest.fixture(scope="module")
def aged_monorepo(tmp_path_factory):
    root = tmp_path_factory.mktemp("recompile-monorepo")
    (root / ".runner").mkdir()
    for folder in ("a", "b"):
        (root / folder).mkdir()
        (root / folder / "intents.toml").write_text("")
    (root / "intents.toml").write_text("")
    racy.wait_out()
    return root


@settings(max_examples=25, deadline=None)
@given(steps=_projects(), edits=_edits(5))
def test_an_edit_in_a_monorepo_compiles_to_what_a_full_compile_makes(aged_monorepo, steps, edits):
    """The same property over the root and two sub-projects: an edit of one sub-project's tables is spliced with
    its paths moved and its names qualified as the full load makes them."""
    root = aged_monorepo
    for kept in (root / ".runner").iterdir():
        kept.unlink()

    def write(comments: int = 0, scope: int = 0) -> None:
        for rel, text in _monorepo_files(steps, comments, scope).items():
            if not (root / rel).is_file() or (root / rel).read_text() != text:
                (root / rel).write_text(text)

    write()
    load_compiled(root)
    scope = 0
    for n, (kinds, pick) in enumerate(edits, start=1):
        names = sorted(steps)
        before = json.dumps(steps)
        for k, kind in enumerate(kinds):
            _edit(steps, kind, names[(pick + k) % len(names)], n)
        scope += kinds.count("scope")
        write(n % 3 if "comment" in kinds else 0, scope)
        try:
            compiled = load_compiled(root)
        except SpecError:
            with pytest.raises(SpecError):
                load.load_spec(root)
            steps.clear()
            steps.update(json.loads(before))
            write(0, scope)
            load_compiled(root)
            continue
        _as_full_compile_made_it(compiled, root)
        _as_full_compile_made_it(load_compiled(root), root)
