"""The house's rules, read from the source: no import circle in runner/, imports that run one way (commands ->
stages -> the declared world), subsystem packages that import the core and never the reverse, each module
saying in its first line what it owns."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "runner"
# grown by kind, each importing the core (../shared/ARCHITECTURE.md, "Layout as the project grows")
SUBSYSTEMS = ("runner.learn", "runner.roadmap", "runner.executors", "runner.stores", "runner.web")
DECLARED_WORLD = ("runner.spec", "runner.errors")  # the bottom: they import no other runner module
TOP = ("runner.cli", "runner.entry", "runner.__main__")  # the only importers of runner.commands
# each third-party library has one importer in runner/, which owns what the project does with it
OWNERS = {
    "click": "runner.cli",
    "codex_cli_bin": "runner.workers.codex",
    "diskcache": "runner.cache",
    "distributed": "runner.executors.dask",
    "fastjsonschema": "runner.schema_check",
    "fsspec": "runner.stores.remote",
    "httpx2": "runner.workers.openai",
    "gcsfs": "runner.stores.remote",
    "jsonschema": "runner.schema_check",
    "junitparser": "runner.reports",
    "networkx": "runner.graph",
    "openai": "runner.workers.openai",
    "opentelemetry": "runner.telemetry",
    "pathspec": "runner.ignore",
    "re2": "runner.parse",
    "rich": "runner.report",
    "sse_starlette": "runner.web.app",
    "starlette": "runner.web.app",
    "uvicorn": "runner.web.app",
    "rtoml": "runner.toml_read",
    "tomli": "runner.toml_read",
    "tomlkit": "runner.toml_write",
}
# fastjsonschema's own code, written by tools/generate_schema_checks.py
GENERATED = tuple(f"runner.schemas.{p.stem}" for p in sorted((PACKAGE / "schemas").glob("*_check.py")))


def _modules(package: Path) -> dict[str, Path]:
    found = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    """Nodes under `if TYPE_CHECKING:`: annotations only, never executed."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(child) for child in ast.walk(node))
    return skip


def import_graph(package: Path = PACKAGE) -> nx.DiGraph:
    """module -> the runner modules it imports when it runs, at the top or inside a function."""
    modules = _modules(package)
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_only(tree)
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = here[: len(here) - node.level + 1]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            for target in targets:
                if target in modules and target != name and target != "runner":
                    graph.add_edge(name, target)
    return graph


GRAPH = import_graph()


def test_no_import_circle_in_runner():
    cycles = sorted(nx.simple_cycles(GRAPH), key=len)
    assert cycles == [], f"import circles: {cycles}"


def test_the_core_never_imports_a_subsystem_package():
    wrong = [
        (a, b)
        for a, b in GRAPH.edges
        if b.startswith(SUBSYSTEMS) and not a.startswith(SUBSYSTEMS) and not a.startswith(("runner.commands",) + TOP)
    ]
    assert wrong == [], f"core modules importing a subsystem: {wrong}"


def test_only_the_command_line_imports_the_commands():
    wrong = [(a, b) for a, b in GRAPH.edges if b.startswith("runner.commands") and not a.startswith(TOP)]
    wrong = [(a, b) for a, b in wrong if not a.startswith("runner.commands")]
    assert wrong == [], f"modules importing a command: {wrong}"


def test_only_the_console_entry_imports_the_fast_path():
    """runner/noop.py is the warm no-op's own module (its argv parsing, the proof check, its report): the rest of
    the core shares what it needs through the modules it imports, never by reaching into it."""
    assert sorted(GRAPH.predecessors("runner.noop")) == ["runner.entry"]


@pytest.mark.parametrize("module", DECLARED_WORLD)
def test_the_declared_world_imports_nothing_of_runner(module):
    assert sorted(GRAPH.successors(module)) == []


def test_each_third_party_library_is_imported_by_its_one_owner():
    importers: dict[str, set[str]] = {}
    for name, path in _modules(PACKAGE).items():
        if name in GENERATED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                tops = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                tops = [node.module.split(".")[0]]
            else:
                continue
            for top in tops:
                if top not in sys.stdlib_module_names and top != "runner":
                    importers.setdefault(top, set()).add(name)
    unowned = sorted(set(importers) - set(OWNERS))
    assert unowned == [], f"a new library needs its one owner named in OWNERS: {unowned}"
    wrong = {lib: sorted(mods) for lib, mods in importers.items() if mods != {OWNERS[lib]}}
    assert wrong == {}, f"libraries imported outside their owner: {wrong}"


def test_every_module_says_what_it_owns_in_its_first_line():
    silent = [
        name
        for name, path in _modules(PACKAGE).items()
        if path.stat().st_size and not (ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "").strip()
    ]
    assert silent == [], f"modules without a docstring: {silent}"


def test_the_walk_finds_a_circle_when_there_is_one(tmp_path):
    """The test above can fail: a package whose two modules import each other, one of them lazily."""
    pkg = tmp_path / "runner"
    (pkg / "steps").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""x"""\n')
    (pkg / "steps" / "__init__.py").write_text('"""x"""\nfrom .agent import run\n')
    (pkg / "steps" / "agent.py").write_text('"""x"""\ndef run():\n    from . import helper\n')
    (pkg / "typed.py").write_text('"""x"""\nTYPE_CHECKING = False\nif TYPE_CHECKING:\n    from .steps import agent\n')
    graph = import_graph(pkg)
    assert [sorted(cycle) for cycle in nx.simple_cycles(graph)] == [["runner.steps", "runner.steps.agent"]]
    assert list(graph.successors("runner.typed")) == []


def test_each_command_is_one_module_named_for_its_verb():
    from runner.commands import MODULES, NAMES, load

    modules = sorted(p.stem for p in (PACKAGE / "commands").glob("*.py") if p.stem != "__init__")
    expected = sorted(MODULES.get(name, name) for name in NAMES)  # a keyword's module is named otherwise
    assert modules == expected, "a module in runner/commands/ is a command named in NAMES, and only that"
    assert [load(name).name for name in NAMES] == list(NAMES)


def test_the_command_line_module_keeps_only_the_group_the_shared_options_and_the_boundary():
    # 200 until the group took -C and -f before the command too (issue 39); their logic is project_root.py's. 215
    # until the boundary carried a Ctrl-C in a command past click's main (its blank line), 12 lines of boundary
    assert len((PACKAGE / "cli.py").read_text(encoding="utf-8").splitlines()) < 230


def test_no_module_of_hand_written_code_is_over_700_lines():
    """A module a newcomer reads in one sitting: past 700 lines it is split along its seams (issue 36). The
    schema checks tools/generate_schema_checks.py writes are not read, only regenerated."""
    long = {
        name: lines
        for name, path in _modules(PACKAGE).items()
        if name not in GENERATED and (lines := len(path.read_text(encoding="utf-8").splitlines())) > 700
    }
    assert long == {}


def test_the_scheduler_never_asks_a_step_s_kind():
    """What differs by kind is the kind class's (runner/steps/base.py, StepKind): the scheduler names no kind and
    reads no intent's kind, so a new kind is one class and one entry in steps.KINDS."""
    from runner import spec
    from runner.steps import KINDS

    source = (PACKAGE / "execute.py").read_text(encoding="utf-8")
    named = [word for word in ("STEP_SHELL", "STEP_AGENT", "STEP_AGGREGATE", ".kind ==", ".kind !=") if word in source]
    assert named == []
    kinds = {value for name, value in vars(spec).items() if name.startswith("STEP_")}
    assert set(KINDS) == kinds
