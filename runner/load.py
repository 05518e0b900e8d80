"""A project's spec built from its TOML files: each intent, policy and setting made from its table, the intents
checked against each other (deps, policies, outputs, cycles), every problem reported by file, line and TOML path.
Reading a file and its schema check: runner/spec_reader.py and runner/schema_check.py."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

from .confine import check_glob, output_problem
from .errors import Problem, SpecError, UsageError
from .globs import GLOB_CHARS, matches
from .graph import cycle_words, cycles
from .intent_env import env_names, kept_out
from .memory import FIELDS as MEMORY_FIELDS
from .memory import too_big
from .schema_check import _fast_validator, _intent_path, toml_path
from .spec import (
    BUILTIN_DIR,
    STEP_AGENT,
    STEP_AGGREGATE,
    STEP_SHELL,
    Adapter,
    Budget,
    CacheSettings,
    ExecutorSettings,
    Intent,
    Policy,
    Project,
    Spec,
    TelemetrySettings,
    WorkerSettings,
    env_problem,
)
from .spec_reader import _Reader
from .subprojects import ROOT_ONLY, edited_intent, include_of
from .suggest import did_you_mean
from .toml_locate import Locator, split_path
from .workspace import SPEC_FILE


class _Suggestions:
    """did_you_mean within a budget of comparisons for one load: each suggestion compares the name with
    every candidate, so a file of 100,000 unknown names among 100,000 intents would take hours to report.
    Past the budget (about a second) problems are reported without a suggestion."""

    def __init__(self, budget: int = 300_000):
        self.budget = budget

    def __call__(self, name: str, candidates) -> str:
        self.budget -= len(candidates)
        return did_you_mean(name, candidates) if self.budget >= 0 else ""


def _quoted(name: str) -> str:
    """A user's name in a message, cut short when it is too long to read."""
    return f"'{name}'" if len(name) <= 60 else f"'{name[:40]}...' ({len(name)} characters)"


# ---- adapters and prompts -------------------------------------------------------------------


def _load_adapters(reader: _Reader, dirs: list[Path]) -> tuple[dict[str, Adapter], set[str]]:
    """The adapters that loaded, and the names of those whose file has a problem (already reported)."""
    from .adapters import load_adapters

    return load_adapters(dirs, reader.read_toml, reader.validate, reader.problem, with_broken=True)


def _find_prompts(dirs: list[Path]) -> dict[str, str]:
    prompts: dict[str, str] = {}
    for folder in dirs:
        if folder.is_dir():
            for path in sorted(folder.glob("*.md")):
                prompts[path.stem] = str(path)
    return prompts


# ---- intents ---------------------------------------------------------------------------------


def _same_file(output: str, inputs) -> str | None:
    """The input pattern naming a file the output pattern names too: the same pattern, or a glob matching
    the plain path of the other; None. Two different globs are not compared."""
    if output in inputs:
        return output
    output_glob = not GLOB_CHARS.isdisjoint(output)
    for pattern in inputs:
        if not isinstance(pattern, str) or output_glob == (not GLOB_CHARS.isdisjoint(pattern)):
            continue  # two plain paths differ (checked above), two globs are not compared
        if matches(output, pattern) if not output_glob else matches(pattern, output):
            return pattern
    return None


def _interned(values) -> tuple:
    """One string object per name and path: a step's output is also its dependants' input, and its name their
    dep (parsed, each mention is a string of its own: ~270 B a step at 100,000 steps)."""
    return tuple([sys.intern(v) if type(v) is str else v for v in values])


def _intent(reader: _Reader, shown: str, name: str, d: dict) -> Intent:
    where = _intent_path(name)
    has_run, has_goal = "run" in d, "goal" in d
    if has_run and has_goal:
        reader.problem(shown, where, "has both 'run' (a shell step) and 'goal' (an agent step); keep one")
    elif not has_run and not has_goal and not d.get("deps"):
        reader.problem(
            shown,
            where,
            "does nothing: give it 'run' (a shell line), 'goal' (an agent step) or 'deps' (an aggregate target)",
        )
    kind = STEP_AGENT if has_goal else STEP_SHELL if has_run else STEP_AGGREGATE
    if kind != STEP_AGENT:
        for field in ("prompt", "acceptance", "candidates", "verify", *MEMORY_FIELDS):
            if field in d:
                reader.problem(
                    shown, f"{where}.{field}", f"'{field}' only applies to agent steps (with 'goal'); remove it"
                )
    for field in ("inputs", "outputs", "exclude", "scope", "reports"):
        for i, pattern in enumerate(d.get(field, ())):
            why = check_glob(pattern)
            if why is None and field == "outputs":  # where a step may write (runner/confine.py), links followed
                why = output_problem(pattern) or reader.folders.output(pattern)
            if why:
                reader.problem(shown, f"{where}.{field}[{i}]", f"path {_quoted(pattern)} {why}", pattern)
    if d.get("exclude") and all(GLOB_CHARS.isdisjoint(p) for p in d.get("inputs", ()) if isinstance(p, str)):
        reader.problem(
            shown,
            f"{where}.exclude",
            "'exclude' takes files out of what the input globs expand to, and this intent has no input glob; "
            "remove it, or add a glob to 'inputs'",
        )
    env = d.get("env")
    for key, value in env.items() if isinstance(env, dict) else ():
        why = env_problem(value) if isinstance(value, str) and "$" in value else None
        if why:
            reader.problem(shown, toml_path(["intent", name, "env", key]), why, value)
    cwd = d.get("cwd")
    if cwd is not None and cwd != ".":
        why = check_glob(cwd) or reader.folders.folder(cwd)
        if why:
            reader.problem(shown, f"{where}.cwd", f"folder {_quoted(cwd)} {why}", cwd)
    for field in ("outputs", "runtime"):
        if kind == STEP_AGGREGATE and d.get(field):
            what = "produces no outputs" if field == "outputs" else "runs no tool whose version could matter"
            reader.problem(shown, f"{where}.{field}", f"an aggregate target (no 'run' or 'goal') {what}")
    if kind == STEP_AGENT and not has_run and not d.get("outputs"):  # with both, which kind is yet to say
        # its change would be applied once and then be invisible: the cache records and restores outputs only,
        # dependants see only outputs, and with the default scope (none) no change could be applied at all
        reader.problem(
            shown,
            where,
            "an agent step needs 'outputs': the files its change may write, which the cache keeps and restores; "
            'list them (globs allowed, e.g. outputs = ["tests/**/*.py"]; an output may also be an input)',
        )
    if kind == STEP_SHELL:  # agent steps edit files in place: their change is applied only once verified
        for i, pattern in enumerate(d.get("outputs", ())):
            same = _same_file(pattern, d.get("inputs", ())) if isinstance(pattern, str) else None
            if same is not None:
                also = "also an input of this shell step" if same == pattern else f"matched by its input '{same}'"
                reader.problem(
                    shown,
                    f"{where}.outputs[{i}]",
                    f"'{pattern}' is {also}: a shell step that fails or is interrupted "
                    "has its outputs deleted (none is left half-written), which would delete this input; write "
                    "the result to another path, or make it an agent step (goal), whose change is applied only "
                    "once verified",
                    pattern,
                )
    intent = Intent(
        name=sys.intern(name),
        kind=kind,
        deps=_interned(d.get("deps", ())),
        inputs=_interned(d.get("inputs", ())),
        exclude=tuple(d.get("exclude", ())),
        outputs=_interned(d.get("outputs", ())),
        reports=tuple(d.get("reports", ())),
        description=d.get("description", ""),
        run=d.get("run"),
        goal=d.get("goal"),
        acceptance=tuple(d.get("acceptance", ())),
        prompt=d.get("prompt"),
        adapter=d.get("adapter"),
        verify=tuple(d.get("verify", ())),
        policy=d.get("policy", "default"),
        candidates=d.get("candidates", 1),
        max_attempts=d.get("max_attempts", 3),
        timeout=d.get("timeout"),
        env=kept_out(d.get("env", {}), reader.secret_names),
        cwd=d.get("cwd", "."),
        anchor=d.get("anchor", ""),
        facts=tuple(d.get("facts", ())),
        non_goals=tuple(d.get("non_goals", ())),
        constraints=tuple(d.get("constraints", ())),
        open_questions=tuple(d.get("open_questions", ())),
        scope=tuple(d.get("scope", ())),
        runtime=tuple(d.get("runtime", ())),
    )
    big = too_big(intent) if kind == STEP_AGENT else None
    if big:  # the bound holds where it is written, not when a prompt is rendered mid-run
        reader.problem(shown, f"{where}.{big[0]}", big[1])
    return intent


def _cross_check(
    reader: _Reader,
    shown: str,
    spec_data: dict,
    intents: dict[str, Intent],
    names: set[str],
    policies: set[str],
    adapters: dict[str, Adapter],
    broken_adapters: set[str],
    prompts: dict[str, str],
    place=None,
) -> None:
    """`place`: an intent's name -> (its file, its TOML path there), where sub-projects hold intents of their own."""
    owners: dict[str, str] = {}
    suggest = _Suggestions()
    root_file = shown
    for name, intent in intents.items():
        shown, where = place(name) if place is not None else (root_file, _intent_path(name))
        seen = set()
        for i, dep in enumerate(intent.deps):
            if dep == name:
                reader.problem(shown, f"{where}.deps[{i}]", f"intent '{name}' depends on itself; remove it", dep)
            elif dep not in names:
                reader.problem(shown, f"{where}.deps[{i}]", f"unknown intent {_quoted(dep)}{suggest(dep, names)}", dep)
            elif dep in seen:
                reader.problem(shown, f"{where}.deps[{i}]", f"'{dep}' is listed twice; remove one", dep)
            seen.add(dep)
        if intent.policy not in policies:
            reader.problem(
                shown,
                f"{where}.policy",
                f"unknown policy {_quoted(intent.policy)}{suggest(intent.policy, policies)}; "
                f"declare [policy.{intent.policy}] or use one of: {', '.join(sorted(policies))}",
            )
        adapter = None
        if intent.adapter and intent.adapter != "auto" and intent.adapter not in broken_adapters:
            adapter = adapters.get(intent.adapter)
            if adapter is None:
                known = (
                    f"known: {', '.join(sorted(adapters))}"
                    if adapters
                    else f"there are none: add adapters/{intent.adapter}.toml"
                )
                reader.problem(
                    shown,
                    f"{where}.adapter",
                    f"unknown adapter '{intent.adapter}'{did_you_mean(intent.adapter, adapters)}; {known}",
                )
        if adapter:
            commands = adapter.command_names(tuple(v.name for v in adapter.variants))
            for i, cmd in enumerate(intent.verify):
                if cmd not in commands:
                    reader.problem(
                        shown,
                        f"{where}.verify[{i}]",
                        f"adapter '{adapter.name}' has no command "
                        f"'{cmd}'{did_you_mean(cmd, commands)}; it has: {', '.join(commands)}",
                        cmd,
                    )
        if intent.kind == STEP_AGENT and intent.prompt and intent.prompt not in prompts:
            reader.problem(
                shown,
                f"{where}.prompt",
                f"unknown prompt '{intent.prompt}'"
                f"{did_you_mean(intent.prompt, prompts)}: there is no prompts/{intent.prompt}.md; "
                "create it or fix the name",
            )
        for i, out in enumerate(intent.outputs):
            if out in owners:
                reader.problem(
                    shown,
                    f"{where}.outputs[{i}]",
                    f"'{out}' is also an output of intent "
                    f"'{owners[out]}': a file has one producer; remove it from one of them",
                    out,
                )
            owners.setdefault(out, name)
    for cycle in cycles({name: intent.deps for name, intent in intents.items()}):
        first = cycle[0]
        index = intents[first].deps.index(cycle[1])
        shown, where = place(first) if place is not None else (root_file, toml_path(["intent", first]))
        reader.problem(
            shown,
            f"{where}.deps[{index}]",
            f"{cycle_words(cycle)}; remove one of these deps",
            cycle[1],
        )
    project = spec_data.get("project")
    default = project.get("default") if isinstance(project, dict) else None
    if isinstance(default, str) and default and default not in names:
        reader.problem(root_file, "project.default", f"unknown intent {_quoted(default)}{suggest(default, names)}")


def _policies(d: dict, broken: set[str]) -> dict[str, Policy]:
    out = {"default": Policy(name="default")}
    for name, p in d.items():
        if name in broken or not isinstance(p, dict):
            continue
        out[name] = Policy(
            name=name,
            approval=p.get("approval", "delegate"),
            write_files=p.get("write_files", "auto"),
            run_shell=p.get("run_shell", "auto"),
            network=p.get("network", "never"),
            scope=tuple(p.get("scope", ())),
            secrets=tuple(p.get("secrets", ())),
            step_budget=Budget(**p.get("budget", {})),
            run_budget=Budget(**p.get("run_budget", {})),
            checkpoint=p.get("checkpoint", "none"),
        )
    return out


def _checkpoints(reader: _Reader, shown: str, root: Path, policies: dict[str, Policy]) -> None:
    """A git checkpoint needs a git repository to commit to."""
    committing = [policy for policy in policies.values() if policy.checkpoint == "commit"]
    if not committing:
        return  # the usual case: checkpoint.py (and its subprocess) is not imported to load a spec
    from .checkpoint import git_dir_of

    if git_dir_of(root) is not None:
        return
    for policy in committing:
        reader.problem(
            shown,
            f"{toml_path(['policy', policy.name])}.checkpoint",
            f'checkpoint = "commit" needs a git repository, and {root} is not in one: run `git init` there, '
            "or drop checkpoint",
            "commit",
        )


def _worker(d: dict) -> WorkerSettings:
    kw = {k: v for k, v in d.items() if k != "extra"}
    if "fallback_models" in kw:
        kw["fallback_models"] = tuple(kw["fallback_models"])
    kw["extra"] = tuple(sorted((k, str(v)) for k, v in d.get("extra", {}).items()))
    return WorkerSettings(**kw)


def _nul_characters(reader: _Reader, shown: str, data: dict) -> None:
    """A NUL character (TOML writes it \\u0000) in any key or string: no command line, path, environment
    variable or prompt argument can carry one (it was an internal error at the first exec or stat)."""
    stack: list[tuple[list, object]] = [([], data)]
    while stack:
        parts, value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                # names of intents, policies, variables and fields have rules of their own; extra's become flags
                if "\0" in key and parts == ["worker", "extra"]:
                    reader.problem(shown, toml_path(parts + [key]), "the name holds a NUL character (\\u0000)")
                stack.append((parts + [key], item))
        elif isinstance(value, list):
            stack.extend((parts + [i], item) for i, item in enumerate(value))
        elif isinstance(value, str) and "\0" in value:
            reader.problem(
                shown, toml_path(parts), "holds a NUL character (\\u0000), which no command, path or variable can"
            )


def _not_a_number(reader: _Reader, shown: str, data: dict) -> None:
    """TOML's nan passes every numeric rule of a schema (each comparison with it is false): refuse it where a
    number is a duration or a budget. (inf is refused by the schema's maximum where a number becomes a
    wait: epoll takes at most 24 days, and a timeout of inf was an internal error.)"""
    found = [(["worker", k], v) for k, v in _items(data.get("worker")).items() if k in ("timeout", "idle_timeout")]
    found += [(["intent", n, "timeout"], _items(i).get("timeout")) for n, i in _items(data.get("intent")).items()]
    for name, policy in _items(data.get("policy")).items():
        for budget in ("budget", "run_budget"):
            found.append((["policy", name, budget, "seconds"], _items(_items(policy).get(budget)).get("seconds")))
    for parts, value in found:
        if isinstance(value, float) and value != value:
            reader.problem(shown, toml_path(parts), "must be a number of seconds, got nan")


def _items(value) -> dict:
    return value if isinstance(value, dict) else {}


def _in_file_order(problems: list[Problem], spec_file: str = SPEC_FILE) -> list[Problem]:
    return sorted(problems, key=lambda p: (p.file != spec_file, p.file, p.line or 0, p.column or 0))


def located(spec: Spec, found: list[tuple[str, str, object]]) -> list[Problem]:
    """Problems found after the spec loaded ((TOML path, message, value): an input glob that matches no file),
    placed by line in the intents file as load's own are: a sub-project's intent (PATH:NAME) in its own file, by
    the name and the path as it is written there."""
    locators: dict[str, Locator | None] = {}
    problems = []
    for path, message, value in found:
        file = spec.file
        parts = split_path(path) if path.startswith('intent."') else []
        if len(parts) > 1 and ":" in parts[1]:
            folder, _colon, own = parts[1].rpartition(":")
            # the rest as written after the quoted name (a field, an index): the name alone is written again
            rest = path[len(toml_path(["intent", parts[1]])) :]
            file, path = f"{folder}/{SPEC_FILE}", toml_path(["intent", own]) + rest
            if isinstance(value, str) and value.startswith(f"{folder}/"):
                value = value[len(folder) + 1 :]
        if file not in locators:
            try:
                locators[file] = Locator((Path(spec.root) / file).read_text(encoding="utf-8-sig"))
            except (OSError, UnicodeDecodeError):
                locators[file] = None  # changed since it was compiled: the problem is still told, without its line
        locator = locators[file]
        line = locator.line_of(path, value) if locator else None
        problems.append(Problem(file=file, path=path, line=line, message=message))
    return problems


def unset_variable(spec: Spec, name: str, key: str, variable: str) -> UsageError:
    """The error for an `env` value reading a variable the runner's environment does not have."""
    where = toml_path(["intent", name, "env", key])
    problem = located(spec, [(where, "", None)])[0]
    at = f"{problem.file}:{problem.line}" if problem.line else problem.file
    return UsageError(
        f"error: {at}: {where}: ${variable} is not set in runner's environment; set it, or give a default "
        f"(${{{variable}:-default}}, or ${{{variable}:-}} for empty)"
    )


def load_project_adapters(root: Path, folder: str = "") -> dict[str, Adapter]:
    """The built-in adapters and the project's own, for commands that need no intents.toml (adapters, init,
    parse); with `folder`, a sub-project's over the root's (its folder's first, as its steps find them)."""
    reader = _Reader(root.resolve())
    dirs = [BUILTIN_DIR / "adapters", reader.root / "adapters"]
    if folder:
        dirs.append(reader.root / folder / "adapters")
    adapters, _broken = _load_adapters(reader, dirs)
    if reader.problems:
        raise SpecError(problems=reader.problems)
    return adapters


def load_spec(
    root: Path, spec_file: str = SPEC_FILE, documents: dict | None = None, digests: dict | None = None
) -> Spec:
    """Load and validate a project from its intents file (`spec_file`, in `root`); raise SpecError with every
    problem found. `documents`: files the caller parsed already, path -> (the digest of their bytes, the
    document, its toml_read.document_digests), each taken where the file still holds those bytes. `digests`,
    if given, gets path -> toml_read.document_digests of each TOML file read (compiled._save keeps the
    intents file's)."""
    root = root.resolve()
    reader = _Reader(root, documents, digests)
    spec_path = root / spec_file
    if not spec_path.is_file():
        message = (
            f"no {SPEC_FILE} in {root} or any folder above it: create one with an [intent.NAME] table, or run "
            "from the project root (`-C DIR`)"
            if spec_file == SPEC_FILE
            else f"no such intents file: {spec_path}; check the path given to -f"
        )
        raise SpecError(problems=[Problem(file=spec_file, message=message)])
    shown, data = reader.read_toml(spec_path)
    adapters, broken_adapters = _load_adapters(reader, [BUILTIN_DIR / "adapters", root / "adapters"])
    prompts = _find_prompts([BUILTIN_DIR / "prompts", root / "prompts"])
    if data is None:
        raise SpecError(problems=_in_file_order(reader.problems, shown))
    checked = data
    if include_of(data) is not None and not data.get("intent"):
        # a monorepo's root may hold no intent of its own (its sub-projects do): the schema, which asks every
        # intents file for one, checks the rest of it as it stands beside one that cannot be wrong
        data["intent"] = {}
        checked = {**data, "intent": {"0": {"run": "true"}}}
    failed = reader.validate(shown, checked, "intents.json")
    _not_a_number(reader, shown, data)
    if "\\u0000" in reader.locators[shown].text or "\\U00000000" in reader.locators[shown].text:
        _nul_characters(reader, shown, data)  # only an escape can put one in (a NUL byte is a syntax error)
    if not isinstance(data.get("intent"), dict):
        raise SpecError(problems=_in_file_order(reader.problems, shown))
    # go on with whatever passed the schema, so one report holds every problem
    broken = {
        section: {str(parts[1]) for parts in failed if len(parts) > 1 and parts[0] == section}
        for section in ("intent", "policy")
    }
    tables: dict = data["intent"]
    names = set(tables)
    intents = {}
    declared: dict = data["policy"] if isinstance(data.get("policy"), dict) else {}
    policies = _policies(declared, broken["policy"])
    reader.secret_names = frozenset(name for policy in policies.values() for name in policy.secrets)
    # each intent's parsed table goes as its Intent is made: held whole beside the Intents, they were the load's
    # peak (~1 KB a step parsed, ~0.4 KB made: 318 MiB at 100,000 steps)
    for name in list(tables):
        d = tables.pop(name)
        if name not in broken["intent"] and isinstance(d, dict):
            intents[name] = _intent(reader, shown, name, d)
    for policy in policies.values():  # a scope is a glob as inputs and outputs are (runner/globs.py)
        for i, pattern in enumerate(policy.scope):
            why = check_glob(pattern)
            if why:
                where = f"{toml_path(['policy', policy.name])}.scope[{i}]"
                reader.problem(shown, where, f"path '{pattern}' {why}", pattern)
    subs = None
    if include_of(data) is not None:  # sub-projects (runner/subprojects.py): a project without `include` never goes
        from .subprojects import load as load_subprojects

        subs = load_subprojects(
            reader,
            root,
            shown,
            data,
            names,
            intents,
            policies,
            adapters,
            prompts,
            partial(_intent, reader),
            _policies,
            partial(_load_adapters, reader),
            _find_prompts,
            _worker,
        )
        names = subs.names
    _checkpoints(reader, shown, root, policies)
    _cross_check(
        reader,
        shown,
        data,
        intents,
        names,
        set(policies) | set(declared),
        adapters,
        broken_adapters,
        prompts,
        subs.place if subs is not None else None,
    )
    if reader.problems:
        raise SpecError(problems=_in_file_order(reader.problems, shown))
    proj = data.get("project", {})
    project = Project(
        name=proj.get("name", root.name), default=proj.get("default"), description=proj.get("description", "")
    )
    used_prompts = {i.prompt: prompts[i.prompt] for i in intents.values() if i.prompt}
    reader.sources.extend(used_prompts.values())
    return Spec(
        root=str(root),
        project=project,
        worker=_worker(data.get("worker", {})),
        policies=policies,
        adapters=adapters,
        intents=intents,
        prompts=prompts,
        sources=tuple(reader.sources),
        file=spec_file,
        executor=ExecutorSettings(**data.get("executor", {})),
        cache=CacheSettings(**data.get("cache", {})),
        telemetry=TelemetrySettings(**data.get("telemetry", {})),
        read=tuple(reader.read.items()),
        parsed=tuple(reader.parsed.items()),
        subprojects=tuple((sub.folder, sub.default) for sub in subs.subs) if subs is not None else (),
        workers=tuple(sorted(subs.workers.items())) if subs is not None else (),
    )


# what other intents' checks and the compiled graph read of an intent (_cross_check, graph.cycles, compile_spec): an
# edit that keeps these leaves every other intent's checks and record as they were
_GRAPH_FIELDS = ("kind", "deps", "inputs", "outputs", "prompt", "adapter", "policy", "verify")


def edited_intents(spec: Spec, document: dict, names: list[str], folder: str = "") -> dict[str, Intent] | None:
    """The Intents of `names` as `document` now defines them, where the spec file was read again and nothing
    but these intents' tables changed since `spec` was loaded from it (compiled._recompiled): each table passes every
    check a full load makes of it, and keeps what other intents' checks and the graph read of it
    (_GRAPH_FIELDS and the variables its env reads). `folder`: the sub-project whose intents.toml it is (its
    names are its own, the Intents' qualified). None otherwise, and for any problem: the full load then
    runs and tells every problem as it always does."""
    tables = document.get("intent")
    if not isinstance(tables, dict):
        return None
    # the schema's rules for an intent hold table by table: the rest of the document with only these tables
    part = {key: value for key, value in document.items() if key != "intent"}
    if folder:  # a sub-project's [project] and the root's own tables are checked by runner/subprojects.py
        part = {key: value for key, value in part.items() if key not in ("project", "worker", *ROOT_ONLY)}
    part["intent"] = {name: tables[name] for name in names}
    if not _fast_validator("intents.json")(part):
        return None
    reader = _Reader(Path(spec.root), secret=frozenset(name for p in spec.policies.values() for name in p.secrets))
    shown = f"{folder}/{SPEC_FILE}" if folder else spec.file
    _not_a_number(reader, shown, part)
    _nul_characters(reader, shown, part)
    made = {}
    for own in names:
        if spec.subprojects:
            intent = edited_intent(spec, folder, own, tables[own], partial(_intent, reader, shown))
            if intent is None:
                return None
        else:
            intent = _intent(reader, spec.file, own, tables[own])
        made[intent.name] = intent
    if reader.problems:
        return None
    for name, intent in made.items():
        was = spec.intents.get(name)
        if was is None or any(getattr(intent, field) != getattr(was, field) for field in _GRAPH_FIELDS):
            return None
        if env_names(intent) != env_names(was):
            return None
    return made
