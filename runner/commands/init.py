"""`runner init`: detect the project's toolchains and write a starting intents.toml, never over an existing one."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path

from ..adapters import Detection, detect, variant_evidence
from ..errors import InternalError, SpecError, UsageError
from ..globs import matches_any
from ..load import load_project_adapters
from ..manifests import Offered, npm_runs, offered, project_name
from ..member_deps import linked
from ..project_root import including_root
from ..spec import Adapter
from ..workspace_members import find as find_workspaces
from ..workspace_members import member_of
from . import Command, Invocation, echo, flag, print_json

SPEC_FILE = "intents.toml"
EXAMPLE_PROMPT = "write-tests"
EXAMPLE_INTENT = "write-tests"
# where each toolchain keeps its tests: the example agent step's outputs (an agent step needs outputs)
TEST_FILES = {
    "python": "tests/**/*.py",
    "node": "tests/**",
    "go": "**/*_test.go",
    "rust": "tests/**/*.rs",
    "maven": "src/test/**",
    "gradle": "src/test/**",
}


def _q(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _key(name: str) -> str:
    """An intent's name as a TOML key: bare when it can be, quoted when it holds a dot (tox-3.13)."""
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else _q(name)


def _list(values) -> str:
    return "[" + ", ".join(_q(v) for v in values) + "]"


def _inputs(root: Path, adapter: Adapter) -> list[str]:
    """The adapter's input globs that match something here, as a step reads them (what git ignores and the
    adapter's `exclude` left out, never walked); all of them when none does yet."""
    from ..globs import expand
    from ..ignore import IgnoreRules

    ignore = IgnoreRules(str(root))
    matching = [g for g in adapter.inputs if expand(str(root), (g,), ignore, adapter.exclude) and _there(root, g)]
    return matching or list(adapter.inputs)


def _there(root: Path, pattern: str) -> bool:
    """A literal input is returned by the expansion whether it exists or not: it counts when it does."""
    from ..globs import GLOB_CHARS

    return not GLOB_CHARS.isdisjoint(pattern) or (root / pattern).exists()


def _exclude(adapter: Adapter, inputs: list[str]) -> list[str]:
    """`exclude = [...]` for a step with these inputs: the adapter's, when an input is a glob (else refused)."""
    from ..globs import GLOB_CHARS

    if adapter.exclude and any(not GLOB_CHARS.isdisjoint(p) for p in inputs):
        return [f"exclude = {_list(adapter.exclude)}"]
    return []


_TEST_SCRIPT = re.compile(r"^(?:npm|pnpm|yarn)(?: run)? test$")
_LINTERS = ("eslint", "biome", "standard", "xo", "oxlint")


def lint_in_test(root: Path, adapter: Adapter, d: Detection) -> tuple[str, str] | None:
    """(the script `npm test` runs that lints, its line) when the package's test script already runs the lint
    (minimist: `pretest` is `npm run lint`): a lint step beside it would lint twice."""
    test, lint = adapter.command("test", d.variants), adapter.command("lint", d.variants)
    if adapter.name != "node" or test is None or lint is None or not _TEST_SCRIPT.match(test.run):
        return None
    tools = [t for t in _LINTERS if re.search(rf"\b{t}\b", lint.run)]
    for name, line in npm_runs(root, "test").items():
        if re.search(r"\brun lint\b", line) and lint.run.endswith("run lint"):
            return name, line
        if any(re.search(rf"\b{t}\b", line) for t in tools) or (name == "lint" and lint.run.endswith("run lint")):
            return name, line
    return None


def lint_config(root: Path, adapter: Adapter, d: Detection) -> tuple[str, str] | None:
    """(what says how the project lints, the file that says it): the adapter's `linter` variant chosen here."""
    for name in d.variants:
        v = adapter.variant(name)
        if v is not None and v.group == "linter":
            return variant_evidence(root, v)
    return None


def _step(
    root: Path, name: str, adapter: Adapter, command: str, d: Detection, inputs: list[str], sub_of: str | None = None
) -> list[str]:
    cmd = adapter.command(command, d.variants)
    line = cmd.run if cmd is not None else command
    description = f"{command} with the {adapter.name} adapter: {line}"
    head = []
    if command == "lint" and any(v.group == "linter" for v in adapter.variants):
        config = lint_config(root, adapter, d)
        if config is not None:
            why, file = config
            description += f", with the project's own configuration ({why})"
            head = [f"# lint follows the project's own configuration: {why}"]
            if not matches_any(file, inputs):  # an edit to the configuration re-runs the lint
                inputs = [*inputs, file]
        elif (above := _root_lint_config(root, adapter, sub_of)) is not None:
            description += f" (no lint configuration in this folder; the root's: {above})"
            head = [
                f"# lint: no lint configuration in this folder; the root has one ({above}), which a linter that",
                "# looks in the folders above finds; an edit of it does not re-run this step (a sub-project's",
                "# inputs stay in its folder)",
            ]
        else:
            description += " (no lint configuration found here: the linter's defaults)"
            head = ["# lint: no lint configuration was found here, so the linter runs with its defaults"]
    return [
        *head,
        f"[intent.{name}]",
        f"description = {_q(description)}",
        f"adapter = {_q(adapter.name)}",
        f"run = {_q(command)}",
        f"inputs = {_list(inputs)}",
        *_exclude(adapter, inputs),
        "",
    ]


def _root_lint_config(root: Path, adapter: Adapter, sub_of: str | None) -> str | None:
    """What says the monorepo's root configures a linter of this adapter (otel's members: the root's
    pyproject.toml has tool.ruff), for a sub-project's folder that has no configuration of its own."""
    if sub_of is None:
        return None
    above = (root / sub_of).parent.resolve()
    found = (variant_evidence(above, v) for v in adapter.variants if v.group == "linter")
    return next((f[0] for f in found if f is not None), None)


# words a shell runs itself: nothing to install
_SHELL_WORDS = {"cd", "echo", "exec", "exit", "export", "set", "test", "true", "false", ":", ".", "[", "if", "for"}


def _program(root: Path, line: str) -> str | None:
    """The program a run line starts (after VAR=value assignments), if it is not to be found here: on PATH, or as a
    path from the project's root (./gradlew). None when it is there, is the shell's own, or the line is not plain."""
    try:
        words = shlex.split(line)
    except ValueError:
        return None
    words = [w for w in words if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)]
    if not words or words[0] in _SHELL_WORDS:
        return None
    word = words[0]
    found = (root / word).exists() if "/" in word else shutil.which(word) is not None
    if found and len(words) > 2 and words[1] == "-m" and re.match(r"^python[0-9.]*$", word):
        return None if _has_module(word, words[2]) else words[2]  # more-itertools' lint: No module named ruff
    return None if found else word


def _has_module(python: str, module: str) -> bool:
    """Whether `python -m module` finds the module (the interpreter asked, as the step will run it)."""
    import subprocess

    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec(sys.argv[1]) is None)"
    try:
        return subprocess.run([python, "-c", probe, module], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return True  # cannot tell: say nothing rather than something wrong


def dependencies_missing(
    root: Path, found: list[Detection], adapters: dict[str, Adapter], up_to: Path | None = None
) -> str | None:
    """The install command to run first, when package.json names dependencies and no node_modules holds them
    (minimist from `npm pack`: its test step failed with `eslint: not found`). A sub-project's may be in a folder
    above it, up to the monorepo's root (`up_to`): npm, yarn and pnpm workspaces install there, and node finds them."""
    from ..manifests import package_dependencies

    folders = [root]
    while up_to is not None and folders[-1].resolve() != up_to.resolve() and folders[-1].parent != folders[-1]:
        folders.append(folders[-1].parent)
    for d in found:
        if (
            d.adapter == "node"
            and package_dependencies(root)
            and not any((f / "node_modules").is_dir() for f in folders)
        ):
            install = adapters["node"].command("install", d.variants)
            return install.run if install is not None else "npm install"
    return None


def not_installed(root: Path, found: list[Detection], adapters: dict[str, Adapter]) -> dict[str, list[str]]:
    """The programs the generated lint and test steps would start that this machine does not have, each with the
    steps that start it: attrs' `uv run pytest` failed with `uv: not found` on the first `runner make`."""
    missing: dict[str, list[str]] = {}
    for d in found:
        adapter = adapters[d.adapter]
        if adapter.command("test", d.variants) is None:  # render() writes no step for it
            continue
        for command in ("lint", "test"):
            if command == "lint" and lint_in_test(root, adapter, d) is not None:
                continue  # render() writes no lint step: the test script lints
            cmd = adapter.command(command, d.variants)
            program = _program(root, cmd.run) if cmd is not None else None
            if cmd is not None and program is not None:
                missing.setdefault(program, []).append(f"{command} ({adapter.name}: {cmd.run})")
    return missing


def _same_command(a: str, b: str) -> bool:
    """`npm run test` is `npm test` (and `start`): an offered script the generated steps already run."""

    def norm(line: str) -> str:
        return re.sub(r"^(npm|pnpm|yarn) run (test|start)$", r"\1 \2", line.strip())

    return norm(a) == norm(b)


def _offered(root: Path, found: list[Detection], adapters: dict[str, Adapter], ran: list[str]) -> list[Offered]:
    """What the project already runs, less what the generated steps run."""
    pm = "npm"
    for d in found:
        if d.adapter == "node":
            values = dict(adapters["node"].vars)
            for name in d.variants:
                v = adapters["node"].variant(name)
                values.update(v.vars if v is not None else ())
            pm = values.get("pm", "npm")
    return [o for o in offered(root, pm) if not any(_same_command(o.run, line) for line in ran)]


def _sub_head(sub_of: str) -> list[str]:
    """The first lines of a sub-project's file: whose it is, and what only the root's file sets."""
    return [
        f"# A sub-project of {sub_of}, whose [project] include takes in this folder. Written by `runner init`.",
        "# Paths are relative to this folder; [project] holds only its default (`runner make` typed here); the",
        "# project's name, [worker], [cache], [executor], [telemetry] and [learn] are the root's to set.",
    ]


def render(
    root: Path,
    found: list[Detection],
    adapters: dict[str, Adapter],
    agent: bool = True,
    agent_note: str = "",
    sub_of: str | None = None,
) -> tuple[str, list[str]]:
    """The intents.toml text and the names of the (uncommented) intents in it; `sub_of` (the root's intents.toml,
    relative to `root`) makes it a sub-project's: its [project] holds only `default`."""
    root = Path(root)
    named = project_name(root)
    if sub_of is None:
        opening = [
            "# Written by `runner init`. Edit freely: `runner validate` checks it, `runner make` runs the default."
        ]
        name_line = [
            f"name = {_q(named[0])}  # from {named[1]}" if named else f"name = {_q(root.resolve().name or 'project')}"
        ]
    else:
        opening, name_line = _sub_head(sub_of), []
    head = [
        *opening,
        "# Detected: "
        + (
            "; ".join(
                f"{d.adapter} (confidence {d.confidence:.2f}" + (f", variant {d.variant}" if d.variant else "") + ")"
                for d in found
            )
            or "no toolchain"
        ),
        "",
        "[project]",
        *name_line,
        'default = "check"',
        "",
    ]
    body: list[str] = []
    names: list[str] = []
    checks: dict[str, list[str]] = {"lint": [], "test": []}
    usable = [d for d in found if adapters[d.adapter].command("test", d.variants)]
    single = len(usable) == 1
    ran: list[str] = []  # the command lines of the generated steps
    for d in usable:
        adapter = adapters[d.adapter]
        inputs = _inputs(root, adapter)
        linted = lint_in_test(root, adapter, d)
        for command in ("lint", "test"):
            cmd = adapter.command(command, d.variants)
            if cmd is None:
                continue
            if command == "lint" and linted is not None:
                body.append(f"# no lint step: `{_test_line(adapter, d)}` lints already ({linted[0]}: {linted[1]})")
                continue
            name = command if single else f"{command}-{adapter.name}"
            body += _step(root, name, adapter, command, d, inputs, sub_of)
            names.append(name)
            ran.append(cmd.run)
            if not single:
                checks[command].append(name)
    for command, parts in checks.items():
        if parts:
            body += [f"[intent.{command}]", f"deps = {_list(parts)}", ""]
            names.append(command)
    if not usable:
        body += [
            "# No toolchain was detected (see `runner adapters`): replace this with the project's checks.",
            "[intent.check]",
            "run = \"echo 'runner init found no toolchain: edit intents.toml'\"",
            "",
        ]
        names.append("check")
    else:
        parts = [n for n in ("lint", "test") if n in names]
        body += ["[intent.check]", 'description = "Everything CI checks"', f"deps = {_list(parts)}", ""]
        names.append("check")
    extra = [o for o in _offered(root, found, adapters, ran) if o.name not in names]
    if extra:
        body += [
            "# What the project already runs (its Makefile targets, npm scripts, tox environments), offered as",
            "# intents: `runner make NAME` runs one. They declare no inputs, so each runs every time, like a phony",
            "# make target: add inputs (and outputs) to let runner skip one that is up to date.",
        ]
        for o in extra:
            body += [f"[intent.{_key(o.name)}]", f"description = {_q(o.source)}", f"run = {_q(o.run)}", ""]
            names.append(o.name)
    if usable:
        first = usable[0]
        example = _agent_example(root, adapters[first.adapter], first)
        if agent:
            body += example
            names.append(EXAMPLE_INTENT)
        else:
            body += [f"# {agent_note}" if agent_note else "#"]
            body += ["# " + line if line else "" for line in example]
    return "\n".join(head + body).rstrip("\n") + "\n", names


def _test_line(adapter: Adapter, d: Detection) -> str:
    cmd = adapter.command("test", d.variants)
    return cmd.run if cmd is not None else "test"


def _agent_example(root: Path, adapter: Adapter, d: Detection) -> list[str]:
    return [
        "# An agent step: Codex writes tests in an isolated copy of the project; the adapter's test command",
        "# verifies them before anything is applied. Not part of `check`: run it with `runner make write-tests`.",
        f"[intent.{EXAMPLE_INTENT}]",
        'goal = "Write tests for the least-tested module of this project, covering edge cases and malformed input"',
        'acceptance = ["all tests pass", "no existing test is changed"]',
        f"prompt = {_q(EXAMPLE_PROMPT)}",
        f"adapter = {_q(adapter.name)}",
        f"inputs = {_list(_inputs(root, adapter))}",
        *_exclude(adapter, _inputs(root, adapter)),
        f"outputs = {_list([_test_files(root, adapter.name)])}  # what it may write; cached, restored",
        'verify = ["test"]',
        'deps = ["test"]' if adapter.command("test", d.variants) else "",
        "",
    ]


def _test_files(root: Path, adapter: str) -> str:
    """Where the example agent step writes tests: the toolchain's usual place, or the folder a node project uses."""
    if adapter == "node":
        for folder in ("tests", "test", "__tests__"):
            if (root / folder).is_dir():
                return f"{folder}/**"
    return TEST_FILES.get(adapter, "tests/**")


def _validate_text(root: Path, text: str, sub: bool = False) -> SpecError | None:
    """Load `text` as this project's intents.toml in a scratch folder (beside the project's adapters and prompts);
    a sub-project's (`sub`) with a name for the scratch project, which only the root's file may give it."""
    if sub:
        text = text.replace("\n[project]\n", '\n[project]\nname = "scratch"\n', 1)
    from ..load import load_spec

    with tempfile.TemporaryDirectory(prefix="runner-init-") as tmp:
        scratch = Path(tmp) / (root.resolve().name or "project")
        scratch.mkdir()
        for folder in ("adapters", "prompts", "regexes"):
            if (root / folder).is_dir():
                os.symlink((root / folder).resolve(), scratch / folder)
        (scratch / SPEC_FILE).write_text(text, encoding="utf-8")
        try:
            spec = load_spec(scratch)
        except SpecError as exc:
            return exc
        if EXAMPLE_INTENT in spec.intents:
            return _setup_problem(spec)
    return None


def _setup_problem(spec) -> SpecError | None:
    """The example agent step's worker cannot start here (`runner validate` would exit 2): why, as a problem."""
    from ..errors import Problem
    from ..preflight import preview
    from ..workers import config_for

    agents = preview(spec, config_for(spec), [(EXAMPLE_INTENT, None)])
    if agents.ok:
        return None
    why = "; ".join(f"{c.what}: {c.detail}" for c in agents.checks if not c.ok)
    return SpecError([Problem(SPEC_FILE, f"the {agents.worker} worker cannot start: {why}")])


def init_project(root: Path, dry_run: bool = False) -> tuple[str, dict]:
    """Write root/intents.toml from what is detected; refuse (exit 2) when one exists. Returns (text, JSON).
    In a folder a monorepo's `include` takes in, a sub-project's file; at a workspace's root (uv, npm, pnpm, Cargo,
    Go), the root's with `include` and a sub-project's file in each member (runner/commands/init's `workspace`)."""
    root = Path(root)
    _refuse_existing(root / SPEC_FILE)
    above = including_root(str(root))
    if above is not None:
        return _init_one(root, dry_run, sub_of=_relative_spec(root, Path(above)))
    workspaces, warnings = find_workspaces(root)
    if any(ws.members for ws in workspaces):
        return _init_workspace(root, dry_run, workspaces, warnings)
    workspace = member_of(root)
    if workspace is not None:
        where = os.path.relpath(workspace[0], root.resolve())
        warnings.append(
            f"note: this folder is a member of the workspace at {where} ({workspace[1]}): `runner init` typed there "
            "writes its intents.toml, with `include`, and makes each member a sub-project; this file is a whole "
            "project's, so once a root includes this folder, keep only `default` in its [project]"
        )
    return _init_one(root, dry_run, warnings=warnings)


def _refuse_existing(target: Path) -> None:
    if target.exists():
        raise UsageError(
            f"{target} already exists; runner init never overwrites it. Edit it, or move it away "
            "and run `runner init` again (`runner init --dry-run` prints what it would write)."
        )


def _relative_spec(folder: Path, above: Path) -> str:
    """The root's intents.toml as a path from `folder` ("../../intents.toml")."""
    return os.path.relpath(above / SPEC_FILE, folder.resolve())


def _generate(root: Path, sub_of: str | None = None) -> tuple[str, list[str], list[Detection], dict, str]:
    """(the text, its intents, what was detected, the adapters, the agent example's note): validated here."""
    adapters = load_project_adapters(root)
    found = detect(root, adapters)
    text, names = render(root, found, adapters, sub_of=sub_of)
    note = ""
    if EXAMPLE_INTENT in names:
        error = _validate_text(root, text, sub_of is not None)
        if error is not None:
            why = "; ".join(p.message for p in error.problems)
            note = f"commented out: it does not validate here yet ({why}); uncomment it once it does"
            text, names = render(root, found, adapters, agent=False, agent_note=note, sub_of=sub_of)
    error = _validate_text(root, text, sub_of is not None)
    if error is not None:  # a bug in init, not the user's mistake: say so rather than write a broken file
        raise InternalError("runner init produced an intents.toml that does not validate:\n" + error.render())
    return text, names, found, adapters, note


def _write_new(target: Path, text: str) -> None:
    try:
        with open(target, "x", encoding="utf-8") as fh:  # "x": a file that appeared meanwhile is not clobbered
            fh.write(text)
    except FileExistsError:
        raise UsageError(f"{target} already exists; runner init never overwrites it") from None


def _init_one(
    root: Path, dry_run: bool, sub_of: str | None = None, warnings: list[str] | None = None
) -> tuple[str, dict]:
    """One project's file (a sub-project's when `sub_of` names the root's intents.toml): written, and said."""
    target = root / SPEC_FILE
    text, names, found, adapters, note = _generate(root, sub_of)
    if not dry_run:
        _write_new(target, text)
    lines, obj = _said(root, text, names, found, adapters, note, dry_run, sub_of)
    lines += warnings or []
    if dry_run:
        lines += ["", text.rstrip("\n")]
    return "\n".join(lines), obj


def _said(
    root: Path,
    text: str,
    names: list[str],
    found: list[Detection],
    adapters: dict,
    note: str,
    dry_run: bool,
    sub_of: str | None,
) -> tuple[list[str], dict]:
    """What init says of a file it wrote (or would write), in lines and as JSON."""
    target = root / SPEC_FILE
    what = ", ".join(f"{d.adapter}" + (f" ({d.variant})" if d.variant else "") for d in found) or "no toolchain"
    verb = "would write" if dry_run else "wrote"
    named = project_name(root)
    lines = [f"{verb} {target} ({what} detected): intents {', '.join(names)}"]
    if sub_of is not None:
        lines.append(f"a sub-project of {sub_of}: its [project] holds only its default; the name is the root's")
    else:
        lines.append(
            f"project name {named[0]!r} from {named[1]}"
            if named
            else f"project name {root.resolve().name!r} from the folder (no manifest names it)"
        )
    kept = [o for o in offered(root, "") if o.name in names]  # the offered ones init kept (by name)
    if kept:
        lines.append(f"offered what the project already runs: {', '.join(o.name for o in kept)}")
    for d in found:
        config = lint_config(root, adapters[d.adapter], d)
        if config is not None and any(n == "lint" or n == f"lint-{d.adapter}" for n in names):
            lines.append(f"lint ({d.adapter}) follows the project's own configuration: {config[0]}")
        linted = lint_in_test(root, adapters[d.adapter], d)
        if linted is not None:
            lines.append(
                f"no lint step ({d.adapter}): `{_test_line(adapters[d.adapter], d)}` lints already "
                f"({linted[0]}: {linted[1]})"
            )
    if note:
        lines.append(f"the example agent intent '{EXAMPLE_INTENT}' is {note}")
    missing = not_installed(root, found, adapters)
    for program, steps in missing.items():
        lines.append(
            f"warning: {program} is not installed here, and {'; '.join(steps)} start{'s' if len(steps) == 1 else ''} "
            f"it: install {program}, or change the run line in {SPEC_FILE}"
        )
    above = (root / sub_of).parent if sub_of is not None else None
    install = dependencies_missing(root, found, adapters, above)
    if install is not None:
        lines.append(
            f"warning: package.json's dependencies are not installed here (no node_modules): run `{install}` "
            + ("before `runner make`" if above is None else "(at the workspace's root, for a workspace) first")
        )
    obj = {
        "path": str(target),
        "written": not dry_run,
        "detected": [d.to_json() for d in found],
        "intents": names,
        "agent_example": EXAMPLE_INTENT in names,
        "name": None if sub_of is not None else named[0] if named else root.resolve().name,
        "name_from": named[1] if named and sub_of is None else None,
        "subproject_of": str((root / sub_of).resolve()) if sub_of is not None else None,
        "offered": [o.name for o in kept],
        "note": note or None,
        "not_installed": missing,
        "install_first": install,
        "content": text,
    }
    return lines, obj


def _init_workspace(root: Path, dry_run: bool, workspaces: list, warnings: list[str]) -> tuple[str, dict]:
    """At a workspace's root: a sub-project's file in each member without one, and the root's file taking them in
    (`include`) with an `all` intent on each member's default; the root's own intents too when it is a package."""
    from ..workspace_members import few, include_patterns, own_default, problems, said_once

    members = list(dict.fromkeys(m for ws in workspaces for m in ws.members))
    excluded = [e for e in dict.fromkeys(e for ws in workspaces for e in ws.excluded) if e not in members]
    verb = "would write" if dry_run else "wrote"
    said: list[dict] = []  # one per member, as --json gives them
    texts: dict[str, str] = {}
    reports: list[tuple[str, list[str]]] = []  # (member, what its init says besides its first line)
    for m in members:
        folder = root / m
        entry: dict = {"folder": m, "path": str(folder / SPEC_FILE), "detected": [], "intents": [], "default": None}
        if (folder / SPEC_FILE).exists():
            default = own_default(folder / SPEC_FILE)
            entry.update(status="kept", default=f"{m}:{default}" if default else None)
            said.append(entry)
            continue
        adapters = load_project_adapters(folder)
        if not [d for d in detect(folder, adapters) if adapters[d.adapter].command("test", d.variants)]:
            said.append({**entry, "status": "nothing detected"})
            continue
        text, names, found, adapters, note = _generate(folder, sub_of=_relative_spec(folder, root))
        lines, obj = _said(folder, text, names, found, adapters, note, dry_run, _relative_spec(folder, root))
        texts[m] = text
        reports.append((m, lines[2:]))
        entry.update(status=verb, detected=obj["detected"], intents=names, default=f"{m}:check", content=text)
        said.append(entry)
    subs = [e["folder"] for e in said if e["status"] != "nothing detected"]
    texts, reads, link_warnings = linked(root, members, texts, said)  # what each member's tests read of others
    include = include_patterns(root, workspaces, subs)
    all_deps = [e["default"] for e in said if e["default"]]
    package = next((ws.root_package for ws in workspaces if ws.root_package), None)
    root_text, root_names, found, adapters, note = _root_text(root, workspaces, include, all_deps, package, excluded)
    if not dry_run:
        for m, text in texts.items():
            _write_new(root / m / SPEC_FILE, text)
        _write_new(root / SPEC_FILE, root_text)
    sources = ", ".join(ws.source for ws in workspaces if ws.members)
    lines = [f"{verb} {root / SPEC_FILE} (a workspace: {sources}): include {few(include) or 'nothing'}"]
    if package is not None:
        lines.append(f"the root is a package too ({package}): its own intents as for any project, `check` its default")
    lines.append(f"intent all{'' if package else ' (the default)'}: {few(all_deps) or 'no member'}")
    for e in said:
        what = ", ".join(d["adapter"] for d in e["detected"]) or "no toolchain"
        if e["status"] == "kept":
            lines.append(
                f"  {e['folder']}/: has an intents.toml already, kept as it is"
                + (f"; {e['default']} in all" if e["default"] else "; it names no [project] default, so not in all")
            )
        elif e["status"] == "nothing detected":
            lines.append(f"  {e['folder']}/: nothing runner init detects (see `runner adapters`): no intents.toml")
        else:
            lines.append(
                f"  {e['folder']}/: {verb} {e['folder']}/{SPEC_FILE} ({what} detected): {', '.join(e['intents'])}"
            )
    lines += [f"  {x}/: left out, excluded by the workspace" for x in excluded]
    lines += reads + link_warnings
    lines += warnings + said_once(reports)
    if not dry_run:
        lines += problems(root)
    else:
        lines += ["", f"# {SPEC_FILE}", root_text.rstrip("\n")]
        lines += [line for m, text in texts.items() for line in ("", f"# {m}/{SPEC_FILE}", text.rstrip("\n"))]
    named = project_name(root)
    obj = {
        "path": str(root / SPEC_FILE),
        "written": not dry_run,
        "detected": [d.to_json() for d in found],
        "intents": root_names,
        "agent_example": EXAMPLE_INTENT in root_names,
        "name": named[0] if named else root.resolve().name,
        "name_from": named[1] if named else None,
        "subproject_of": None,
        "offered": [o.name for o in offered(root, "") if o.name in root_names] if package else [],
        "note": note or None,
        "not_installed": not_installed(root, found, adapters) if package else {},
        "install_first": dependencies_missing(root, found, adapters) if package else None,
        "content": root_text,
        "workspace": {
            "tools": [ws.tool for ws in workspaces if ws.members],
            "include": include,
            "all": all_deps,
            "members": said,
            "excluded": excluded,
        },
    }
    return "\n".join(lines), obj


def _root_text(
    root: Path, workspaces: list, include: list[str], all_deps: list[str], package: str | None, excluded: list[str]
) -> tuple[str, list[str], list[Detection], dict, str]:
    """The root's intents.toml (workspace_members.root_file), with what init detected at the root when it is a
    package too: (the text, its intents, the detections, the adapters, the agent example's note)."""
    from ..workspace_members import root_file

    sources = "; ".join(ws.source for ws in workspaces if ws.members)
    if package is None:
        named = project_name(root)
        name = (
            f"name = {_q(named[0])}  # from {named[1]}" if named else f"name = {_q(root.resolve().name or 'project')}"
        )
        return root_file(None, name, sources, include, all_deps, excluded), ["all"], [], {}, ""
    text, names, found, adapters, note = _generate(root)
    return root_file(text, "", sources, include, all_deps, excluded), [*names, "all"], found, adapters, note


def run(inv: Invocation, dry_run: bool) -> None:
    text, obj = init_project(inv.directory.resolve(), dry_run=dry_run)
    if inv.as_json:
        print_json(obj)
    else:
        echo(text)


COMMAND = Command(
    "init",
    "Detect the toolchains here and write a starting intents.toml (never overwrites one).",
    (flag("--dry-run", dest="dry_run", help="Print the intents.toml it would write; write nothing."),),
    run,
)
