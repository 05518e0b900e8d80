"""Loading adapters/*.toml: the built-in six, schema and semantic problems by path, extends and overrides."""

import pickle
import textwrap
from pathlib import Path

import pytest

from runner.adapters import load_adapters
from runner.load import BUILTIN_DIR, _Reader
from runner.spec import Adapter

COMMANDS = ("install", "build", "test", "lint", "typecheck", "smoke")


def load(root: Path, *dirs: Path):
    reader = _Reader(root)
    adapters = load_adapters(list(dirs), reader.read_toml, reader.validate, reader.problem)
    return adapters, [p.render() for p in reader.problems]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_the_six_builtin_adapters_load_without_problems(adapters):
    assert sorted(adapters) == ["go", "gradle", "maven", "node", "python", "rust"]
    for a in adapters.values():
        assert a.markers and 0 < a.confidence <= 1, a.name
        assert a.command("test") is not None, a.name
        assert "causes" in a.command("test").parse and "diagnostics" in a.command("test").parse, a.name


@pytest.mark.parametrize(
    "name,variants,family",
    [
        ("python", (), "pytest"),
        ("node", ("jest",), "jest"),  # node's own `npm test` runs whatever scripts.test names: no runner assumed
        ("node", ("jest-script",), "jest"),
        ("node", ("vitest-script",), "vitest"),
        ("node", ("script",), "tap"),  # tape's and node --test's TAP
        ("go", (), "gotest"),
        ("rust", (), "cargo"),
        ("maven", (), "surefire"),
        ("gradle", (), "gradle"),
    ],
)
def test_each_adapter_parses_its_test_output_with_its_runner_family(adapters, name, variants, family):
    assert adapters[name].command("test", variants).parse[0] == family


def test_every_builtin_command_names_only_shipped_families_and_declared_vars(adapters, library):
    for a in adapters.values():
        for variants in [()] + [(v.name,) for v in a.variants]:
            for cname in a.command_names(variants):
                cmd = a.command(cname, variants)
                assert cname in COMMANDS, (a.name, cname)
                assert "{" not in cmd.run, (a.name, variants, cmd.run)  # every placeholder filled
                for fam in cmd.parse:
                    library.family(fam)


def test_the_python_variants_switch_the_package_manager(adapters):
    py = adapters["python"]
    assert py.command("test").run == "python3 -m pytest"
    assert py.command("test", ("uv",)).run == "uv run pytest"
    assert py.command("install", ("uv",)).run == "uv sync"
    assert py.command("lint", ("uv",)).run == "uv run python -m ruff check --output-format concise ."
    assert py.command("test", ("poetry",)).run == "poetry run pytest"
    assert py.command("install", ("requirements",)).run == "python3 -m pip install -r requirements.txt"


def test_the_node_variants_combine_manager_and_test_runner(adapters):
    node = adapters["node"]
    assert node.command("test").run == "npm test"
    assert node.command("test", ("pnpm", "script")).run == "pnpm test"
    assert node.command("test", ("pnpm", "vitest")).run == "pnpm exec vitest run"
    assert node.command("test", ("pnpm", "vitest")).parse == ("vitest", "diagnostics", "causes")
    assert node.command("install", ("pnpm", "vitest")).run == "pnpm install --frozen-lockfile"
    assert node.command("test", ("yarn", "jest")).run == "yarn jest --ci"
    assert node.command("lint", ("yarn", "lint-script")).run == "yarn run lint"
    assert node.command("install", ("npm",)).run == "npm ci"


def test_adapters_are_frozen_picklable_and_have_a_stable_definition(adapters):
    node = adapters["node"]
    again = pickle.loads(pickle.dumps(node))
    assert again == node and hash(again) == hash(node)
    assert again.definition() == node.definition()
    with pytest.raises(AttributeError):
        node.name = "x"  # type: ignore[misc]


def test_a_project_adapter_replaces_the_builtin_of_the_same_name(tmp_path):
    write(
        tmp_path / "adapters" / "python.toml",
        """
        name = "python"
        [detect]
        files = ["setup.py"]
        [commands.test]
        run = "make test"
    """,
    )
    adapters, problems = load(tmp_path, BUILTIN_DIR / "adapters", tmp_path / "adapters")
    assert problems == []
    assert adapters["python"].command("test").run == "make test"
    assert adapters["python"].command("lint") is None
    assert adapters["python"].source == "adapters/python.toml"
    assert "node" in adapters


def test_extends_merges_over_the_builtin_table_by_table(tmp_path):
    write(
        tmp_path / "adapters" / "python.toml",
        """
        name = "python"
        extends = "python"
        [commands.test]
        run = "{py} -m pytest -x -q"
        [variant.uv.commands.test]
        run = "uv run pytest -x"
    """,
    )
    write(
        tmp_path / "adapters" / "django.toml",
        """
        name = "django"
        extends = "python"
        [detect]
        files = ["manage.py"]
        [commands.test]
        run = "{py} manage.py test"
    """,
    )
    adapters, problems = load(tmp_path, BUILTIN_DIR / "adapters", tmp_path / "adapters")
    assert problems == []
    py = adapters["python"]
    assert py.command("test").run == "python3 -m pytest -x -q"
    assert py.command("test").parse == ("pytest", "diagnostics", "causes")  # kept from the builtin
    assert py.command("test", ("uv",)).run == "uv run pytest -x"
    assert py.command("lint").run.startswith("python3 -m ruff")
    dj = adapters["django"]
    assert dj.markers == ("manage.py",)
    assert dj.command("test").run == "python3 manage.py test"
    assert dj.command("test", ("poetry",)).run == "poetry run pytest"  # the variant's own command still wins


def test_problems_are_named_by_file_and_toml_path(tmp_path):
    folder = tmp_path / "adapters"
    write(
        folder / "bad-schema.toml",
        """
        name = "bad-schema"
        [detect]
        file = ["x"]
        [commands.test]
        run = "x"
    """,
    )
    write(
        folder / "misnamed.toml",
        """
        name = "other"
        [commands.test]
        run = "x"
    """,
    )
    write(folder / "nocmds.toml", 'name = "nocmds"\n')
    write(
        folder / "typo.toml",
        """
        name = "typo"
        [vars]
        exec = "npx"
        [commands.test]
        run = "{exce} jest"
        parse = ["jset"]
        [commands.lint]
        parse = ["diagnostics"]
    """,
    )
    write(
        folder / "orphan.toml",
        """
        name = "orphan"
        extends = "pyhton"
    """,
    )
    write(folder / "loop-a.toml", 'name = "loop-a"\nextends = "loop-b"\n')
    write(folder / "loop-b.toml", 'name = "loop-b"\nextends = "loop-a"\n')
    adapters, problems = load(tmp_path, BUILTIN_DIR / "adapters", folder)
    text = "\n".join(problems)
    assert "adapters/bad-schema.toml:3: detect.file: unknown field 'file' (did you mean 'files'?)" in text
    assert "adapters/misnamed.toml:1: name: adapter name 'other' does not match its file name misnamed.toml" in text
    assert "adapters/nocmds.toml: commands: adapter 'nocmds' declares no commands" in text
    assert "'{exce}' names no var (did you mean 'exec'?)" in text
    assert "commands.test.parse[0]: unknown regex family 'jset' (did you mean 'jest'?)" in text
    assert "commands.lint: command 'lint' has no 'run'" in text
    assert "extends unknown adapter 'pyhton' (did you mean 'python'?)" in text
    assert "adapters extend each other in a cycle" in text
    assert not {"bad-schema", "misnamed", "nocmds", "typo", "orphan", "loop-a", "loop-b", "other"} & set(adapters)


def test_with_broken_names_the_adapters_whose_file_failed(tmp_path):
    write(tmp_path / "adapters" / "python.toml", 'name = "python"\ncommands = 3\n')
    reader = _Reader(tmp_path)
    adapters, broken = load_adapters(
        [BUILTIN_DIR / "adapters", tmp_path / "adapters"],
        reader.read_toml,
        reader.validate,
        reader.problem,
        with_broken=True,
    )
    assert broken == {"python"}
    assert isinstance(adapters["python"], Adapter)  # the builtin stays: the broken override is reported
    assert reader.problems


def test_shell_braces_are_not_placeholders(adapters, tmp_path):
    write(
        tmp_path / "adapters" / "sh.toml",
        """
        name = "sh"
        [vars]
        dir = "src"
        [commands.test]
        run = "find {dir} -name '*.sh' -exec sh -n {} \\\\; && echo ${HOME} {a,b}"
    """,
    )
    adapters, problems = load(tmp_path, tmp_path / "adapters")
    assert problems == []
    assert adapters["sh"].command("test").run == "find src -name '*.sh' -exec sh -n {} \\; && echo ${HOME} {a,b}"


def test_load_spec_with_this_loader_switched_in(tmp_path, monkeypatch):
    """The one-line change in load.py (its _load_adapters calling load_adapters) gives specs vars and variants."""
    import runner.load as load_mod

    monkeypatch.setattr(
        load_mod,
        "_load_adapters",
        lambda reader, dirs: load_adapters(dirs, reader.read_toml, reader.validate, reader.problem, with_broken=True),
    )
    write(
        tmp_path / "adapters" / "python.toml",
        """
        name = "python"
        extends = "python"
        [commands.test]
        run = "{py} -m pytest -x"
    """,
    )
    write(
        tmp_path / "intents.toml",
        """
        [project]
        name = "p"
        [intent.test]
        adapter = "python"
        run = "test"
        [intent.fix]
        goal = "fix it"
        adapter = "python"
        verify = ["test", "lnt"]
    """,
    )
    with pytest.raises(load_mod.SpecError) as info:
        load_mod.load_spec(tmp_path)
    assert "adapter 'python' has no command 'lnt' (did you mean 'lint'?)" in info.value.render()
    (tmp_path / "intents.toml").write_text('[intent.test]\nadapter = "python"\nrun = "test"\n')
    spec = load_mod.load_spec(tmp_path)
    assert spec.adapters["python"].command("test").run == "python3 -m pytest -x"
    assert spec.adapters["python"].command("test", ("uv",)).run == "uv run pytest"
