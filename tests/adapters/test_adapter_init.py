"""runner init: a starting intents.toml from what is detected, that `runner validate` accepts; nothing overwritten."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from adapter_helpers import FIXTURES, ROOT, copy_fixture

import runner.commands.init as init_mod
from runner.commands.init import init_project
from runner.errors import EXIT_USER_ERROR, UsageError
from runner.load import BUILTIN_DIR, load_spec

MARKERS = {
    "python": {"pyproject.toml": ""},
    "node": {"package.json": "{}"},
    "go": {"go.mod": "module x\n"},
    "rust": {"Cargo.toml": ""},
    "maven": {"pom.xml": "<project/>"},
    "gradle": {"build.gradle": ""},
}
HAS_PROMPT = (BUILTIN_DIR / "prompts" / "write-tests.md").is_file()


def tree(root: Path, files: dict) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def validate_cli(root: Path) -> subprocess.CompletedProcess:
    """The real `runner validate`, as a user would run it after init."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "runner", "validate", "-C", str(root)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_init_in_a_python_project_writes_intents_that_validate(tmp_path):
    root = copy_fixture(FIXTURES / "python", tmp_path / "calc")
    text, obj = init_project(root)
    assert obj["written"] is True and (root / "intents.toml").is_file()
    assert obj["detected"][0]["adapter"] == "python"
    spec = load_spec(root)
    assert spec.project.default == "check"
    assert spec.intents["test"].adapter == "python" and spec.intents["test"].run == "test"
    assert spec.intents["lint"].run == "lint"
    assert spec.intents["check"].deps == ("lint", "test")
    assert "**/*.py" in spec.intents["test"].inputs and "pyproject.toml" in spec.intents["test"].inputs
    if HAS_PROMPT:
        agent = spec.intents["write-tests"]
        assert agent.prompt == "write-tests" and agent.verify == ("test",) and agent.adapter == "python"
        assert agent.outputs == ("tests/**/*.py",)  # an agent step needs outputs: what it may write
        assert "write-tests" not in spec.intents["check"].deps  # `runner make` alone never pays for a model call
    proc = validate_cli(root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok:")
    assert "wrote" in text and "python" in text


@pytest.mark.parametrize("adapter", sorted(MARKERS))
def test_init_validates_for_every_builtin_adapter(tmp_path, adapter):
    root = tree(tmp_path / adapter, MARKERS[adapter])
    _, obj = init_project(root)
    spec = load_spec(root)
    assert spec.intents["test"].adapter == adapter
    assert set(obj["intents"]) <= set(spec.intents)
    assert ("lint" in spec.intents) == (adapter not in ("maven",))  # Maven has no standard lint


def test_an_existing_intents_toml_is_left_untouched(tmp_path):
    root = tree(tmp_path / "p", {"pyproject.toml": "", "intents.toml": "# mine\n[intent.x]\nrun = 'true'\n"})
    before = (root / "intents.toml").read_bytes()
    with pytest.raises(UsageError, match="already exists; runner init never overwrites it") as info:
        init_project(root)
    assert info.value.exit_code == EXIT_USER_ERROR == 2
    assert (root / "intents.toml").read_bytes() == before
    with pytest.raises(UsageError):
        init_project(root, dry_run=True)


def test_dry_run_prints_the_file_and_writes_nothing(tmp_path):
    root = tree(tmp_path / "p", {"go.mod": "module x\n"})
    text, obj = init_project(root, dry_run=True)
    assert not (root / "intents.toml").exists()
    assert obj["written"] is False
    assert "would write" in text and "[intent.test]" in text and obj["content"] in text + "\n"


def test_no_toolchain_still_gives_a_valid_file_that_says_what_to_do(tmp_path):
    root = tree(tmp_path / "empty", {})
    text, obj = init_project(root)
    assert obj["detected"] == [] and obj["intents"] == ["check"]
    assert "no toolchain" in (root / "intents.toml").read_text()
    assert validate_cli(root).returncode == 0


def test_several_toolchains_get_one_lint_and_test_each_and_aggregates(tmp_path):
    root = tree(tmp_path / "poly", {"pyproject.toml": "", "package.json": "{}", "pnpm-lock.yaml": ""})
    _, obj = init_project(root)
    spec = load_spec(root)
    for name in ("lint-python", "test-python", "lint-node", "test-node"):
        assert name in spec.intents
    assert spec.intents["test"].deps == ("test-node", "test-python")  # equally sure: by name
    assert spec.intents["check"].deps == ("lint", "test")
    assert "test with the node adapter: pnpm test" in (root / "intents.toml").read_text()  # the variant's command


def test_the_agent_example_is_commented_out_when_it_would_not_validate(tmp_path, monkeypatch):
    monkeypatch.setattr(init_mod, "EXAMPLE_PROMPT", "no-such-prompt")
    root = tree(tmp_path / "p", {"Cargo.toml": ""})
    text, obj = init_project(root)
    content = (root / "intents.toml").read_text()
    assert "# [intent.write-tests]" in content and "\n[intent.write-tests]" not in content
    assert "no-such-prompt" in obj["note"] and "does not validate" in obj["note"]
    assert "write-tests" not in obj["intents"] and obj["agent_example"] is False
    assert "commented out" in text
    assert validate_cli(root).returncode == 0


def test_a_project_adapter_is_used_by_init(tmp_path):
    root = tree(tmp_path / "p", {"Makefile": "test:\n\ttrue\n"})
    (root / "adapters").mkdir()
    (root / "adapters" / "make.toml").write_text(
        'name = "make"\n[detect]\nfiles = ["Makefile"]\n[commands.test]\nrun = "make test"\n'
    )
    _, obj = init_project(root)
    spec = load_spec(root)
    assert spec.intents["test"].adapter == "make" and "lint" not in spec.intents
