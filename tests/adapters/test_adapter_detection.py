"""Detection: each adapter and variant from marker files, the evidence given, auto resolution, project overrides."""

import textwrap
from pathlib import Path

import pytest

from runner.adapters import detect, resolve, resolve_command
from runner.errors import UsageError
from runner.load import load_project_adapters

# (files in the project, adapter, variants, the run line of `test`)
CASES = [
    ({"pyproject.toml": "[project]\nname='x'\n"}, "python", (), "python3 -m pytest"),
    ({"setup.py": ""}, "python", (), "python3 -m pytest"),
    ({"pyproject.toml": "", "uv.lock": ""}, "python", ("uv",), "uv run pytest"),
    ({"pyproject.toml": "[tool.uv]\ndev-dependencies = []\n"}, "python", ("uv",), "uv run pytest"),
    ({"pyproject.toml": "", "poetry.lock": ""}, "python", ("poetry",), "poetry run pytest"),
    ({"pyproject.toml": "[tool.poetry]\nname = 'x'\n"}, "python", ("poetry",), "poetry run pytest"),
    ({"requirements.txt": "requests\n"}, "python", ("requirements",), "python3 -m pytest"),
    ({"package.json": "{}"}, "node", (), "npm test"),  # no runner assumed: npm says what is missing
    ({"package.json": "{}", "package-lock.json": "{}"}, "node", ("npm",), "npm test"),
    ({"package.json": "{}", "pnpm-lock.yaml": ""}, "node", ("pnpm",), "pnpm test"),
    ({"package.json": "{}", "yarn.lock": ""}, "node", ("yarn",), "yarn test"),
    ({"package.json": '{"scripts": {"test": "tape test/*.js"}}'}, "node", ("script",), "npm test"),
    (
        {"package.json": '{"scripts": {"test": "mocha"}, "devDependencies": {"jest": "1"}}'},
        "node",
        ("script",),
        "npm test",
    ),
    ({"package.json": '{"scripts": {"test": "jest --coverage"}}'}, "node", ("jest-script",), "npm test"),
    (
        {"package.json": '{"scripts": {"test": "vitest run"}}', "pnpm-lock.yaml": ""},
        "node",
        ("pnpm", "vitest-script"),
        "pnpm test",
    ),
    ({"package.json": '{"devDependencies": {"jest": "^30"}}'}, "node", ("jest",), "npx --no -- jest --ci"),
    ({"package.json": "{}", "jest.config.js": "", "yarn.lock": ""}, "node", ("yarn", "jest"), "yarn jest --ci"),
    ({"package.json": '{"devDependencies": {"vitest": "^4"}}'}, "node", ("vitest",), "npx --no -- vitest run"),
    ({"package.json": "{}", "vitest.config.ts": ""}, "node", ("vitest",), "npx --no -- vitest run"),
    (
        {"package.json": '{"devDependencies": {"vitest": "^4"}}', "pnpm-lock.yaml": ""},
        "node",
        ("pnpm", "vitest"),
        "pnpm exec vitest run",
    ),
    ({"go.mod": "module x\n"}, "go", (), "go test -v ./..."),
    ({"Cargo.toml": "[package]\n"}, "rust", (), "cargo test"),
    ({"pom.xml": "<project/>"}, "maven", (), "mvn -B test"),
    ({"pom.xml": "<project/>", "mvnw": ""}, "maven", ("wrapper",), "./mvnw -B test"),
    ({"build.gradle": ""}, "gradle", (), "gradle --console=plain test"),
    ({"settings.gradle.kts": "", "gradlew": ""}, "gradle", ("wrapper",), "./gradlew --console=plain test"),
]


def make_tree(root: Path, files: dict) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize(
    "files,adapter,variants,test_run", CASES, ids=[f"{a}-{'+'.join(v) or 'base'}-{'+'.join(f)}" for f, a, v, _ in CASES]
)
def test_detects_each_adapter_and_variant(tmp_path, adapters, files, adapter, variants, test_run):
    root = make_tree(tmp_path / "p", files)
    found = detect(root, adapters)
    assert [d.adapter for d in found] == [adapter]
    d = found[0]
    assert d.variants == variants
    assert d.confidence == adapters[adapter].confidence
    assert any("found" in e for e in d.evidence)
    for v in variants:  # the evidence says which variant and why
        assert any(f"variant {v}" in e for e in d.evidence), d.evidence
    assert resolve(adapter, root, adapters).command("test").run == test_run
    assert resolve("auto", root, adapters).command("test").run == test_run
    assert resolve_command(adapters[adapter], "test", root).run == test_run


def test_evidence_names_the_files_and_the_variants_not_taken(tmp_path, adapters):
    root = make_tree(tmp_path / "p", {"package.json": '{"devDependencies": {"vitest": "1"}}', "yarn.lock": ""})
    d = detect(root, adapters)[0]
    assert d.variant == "yarn+vitest"
    assert d.evidence == (
        "package.json found",
        "yarn.lock found: variant yarn (yarn installs the packages)",
        'package.json mentions "vitest": variant vitest (vitest runs the tests)',
        "linter: no evidence for lint-script, eslint, biome: the base commands",
    )
    py = detect(make_tree(tmp_path / "q", {"pyproject.toml": ""}), adapters)[0]
    assert py.evidence[-2:] == (
        "manager: no evidence for uv, poetry, requirements: the base commands",
        "test-runner: no evidence for pytest, unittest: the base commands",
    )
    assert py.to_json() == {
        "adapter": "python",
        "variant": None,
        "variants": [],
        "confidence": 0.9,
        "evidence": list(py.evidence),
    }


def test_the_first_variant_of_a_group_wins(tmp_path, adapters):
    root = make_tree(tmp_path / "p", {"pyproject.toml": "", "uv.lock": "", "poetry.lock": "", "requirements.txt": ""})
    assert detect(root, adapters)[0].variants == ("uv",)


def test_nothing_detected_in_an_empty_folder_and_auto_says_so(tmp_path, adapters):
    assert detect(tmp_path, adapters) == []
    with pytest.raises(UsageError, match="no toolchain detected"):
        resolve("auto", tmp_path, adapters)


def test_several_toolchains_sort_by_confidence_and_auto_takes_the_surest(tmp_path, adapters):
    root = make_tree(tmp_path / "p", {"package.json": "{}", "go.mod": "module x\n"})
    found = detect(root, adapters)
    assert [(d.adapter, d.confidence) for d in found] == [("go", 0.95), ("node", 0.9)]
    assert resolve("auto", root, adapters).adapter.name == "go"


def test_auto_refuses_to_guess_between_equally_likely_toolchains(tmp_path, adapters):
    root = make_tree(tmp_path / "p", {"Cargo.toml": "", "go.mod": ""})
    with pytest.raises(UsageError, match=r"ambiguous.*go, rust.*adapter = \"NAME\""):
        resolve("auto", root, adapters)


def test_explicit_variants_override_detection_and_unknown_names_are_refused(tmp_path, adapters):
    root = make_tree(tmp_path / "p", {"pyproject.toml": ""})
    assert resolve("python", root, adapters, variants=("poetry",)).command("test").run == "poetry run pytest"
    with pytest.raises(UsageError, match="has no variant 'petry' \\(did you mean 'poetry'\\?\\)"):
        resolve("python", root, adapters, variants=("petry",))
    with pytest.raises(UsageError, match="unknown adapter 'pyton' \\(did you mean 'python'\\?\\)"):
        resolve("pyton", root, adapters)
    with pytest.raises(UsageError, match="has no command 'tset' \\(did you mean 'test'\\?\\)"):
        resolve("python", root, adapters).command("tset")


def test_a_project_adapter_overrides_detection_and_adds_toolchains(tmp_path):
    root = make_tree(tmp_path / "p", {"pyproject.toml": "", "manage.py": "", "Makefile": "test:\n\ttrue\n"})
    (root / "adapters").mkdir()
    (root / "adapters" / "python.toml").write_text(
        textwrap.dedent("""
        name = "python"
        extends = "python"
        [detect]
        confidence = 0.5
    """)
    )
    (root / "adapters" / "make.toml").write_text(
        textwrap.dedent("""
        name = "make"
        [detect]
        files = ["Makefile", "GNUmakefile"]
        confidence = 0.8
        [commands.test]
        run = "make test"
    """)
    )
    adapters = load_project_adapters(root)
    found = detect(root, adapters)
    assert [(d.adapter, d.confidence) for d in found] == [("make", 0.8), ("python", 0.5)]
    assert resolve("auto", root, adapters).command("test").run == "make test"
    assert adapters["python"].command("test").run == "python3 -m pytest"  # the rest of the builtin kept


def test_glob_markers_match(tmp_path):
    root = make_tree(tmp_path / "p", {"App.csproj": "<Project/>"})
    (root / "adapters").mkdir()
    (root / "adapters" / "dotnet.toml").write_text(
        'name = "dotnet"\n[detect]\nfiles = ["*.csproj", "*.sln"]\n[commands.test]\nrun = "dotnet test"\n'
    )
    found = detect(root, load_project_adapters(root))
    assert found[0].adapter == "dotnet" and found[0].evidence[0] == "App.csproj found"
