"""Read a project's TOML files, validate them, and report every problem by file, line and TOML path."""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from pathlib import Path

from .errors import Problem, SpecError
from .spec import (STEP_AGENT, STEP_AGGREGATE, STEP_SHELL, Adapter, AdapterCommand, Budget, Intent,
                   Policy, Project, Spec, WorkerSettings)
from .toml_locate import Locator

SPEC_FILE = "intents.toml"
SCHEMA_DIR = Path(__file__).parent / "schemas"
BUILTIN_DIR = Path(__file__).parent / "builtin"

_TOML_POS = re.compile(r"^(?P<msg>.*) \(at line (?P<line>\d+), column (?P<col>\d+)\)$")
_TOML_DUP = re.compile(r"^Cannot declare \((?P<parts>.*)\) twice$")
_JSON_TYPES = {"string": "a string", "array": "a list", "object": "a table", "integer": "an integer",
               "number": "a number", "boolean": "a boolean"}


def did_you_mean(name: str, candidates) -> str:
    close = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _schema(name: str) -> dict:
    return json.loads((SCHEMA_DIR / name).read_text())


class _Reader:
    """Collects problems while reading files relative to the project root."""

    def __init__(self, root: Path):
        self.root = root
        self.problems: list[Problem] = []
        self.locators: dict[str, Locator] = {}
        self.sources: list[str] = []

    def display(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            try:
                return "<builtin>/" + str(path.relative_to(BUILTIN_DIR))
            except ValueError:
                return str(path)

    def problem(self, file: str, path: str, message: str, value: object = None) -> None:
        loc = self.locators.get(file)
        line = loc.line_of(path, value) if loc and path else None
        self.problems.append(Problem(file=file, path=path, line=line, message=message))

    def read_toml(self, path: Path) -> tuple[str, dict | None]:
        shown = self.display(path)
        self.sources.append(str(path))
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            self.problems.append(Problem(file=shown, message=f"not UTF-8 text ({exc.reason} at byte {exc.start})"))
            return shown, None
        self.locators[shown] = Locator(text)
        try:
            return shown, tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            self.problems.append(_syntax_problem(shown, str(exc)))
            return shown, None

    def validate(self, shown: str, data: dict, schema_name: str) -> bool:
        if _fast_validator(schema_name)(data):
            return True
        import jsonschema  # the slow, precise validator: only to word the problems

        schema = _schema(schema_name)
        validator = jsonschema.validators.validator_for(schema)(schema)
        errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
        for error in errors:
            path, message, value = _describe(error)
            self.problem(shown, path, message, value)
        return not errors


_FAST: dict = {}


def _fast_validator(schema_name: str):
    """A compiled validator (fastjsonschema) that says only yes or no, 50x faster than jsonschema.

    Thousands of intents validate in milliseconds; on a no, jsonschema re-validates to report every
    problem by its path. Both read the same schema file, so they cannot disagree on what is valid.
    """
    if schema_name not in _FAST:
        import fastjsonschema

        check = fastjsonschema.compile(_schema(schema_name))

        def valid(data) -> bool:
            try:
                check(data)
                return True
            except fastjsonschema.JsonSchemaException:
                return False

        _FAST[schema_name] = valid
    return _FAST[schema_name]


def _syntax_problem(shown: str, text: str) -> Problem:
    m = _TOML_POS.match(text)
    msg, line, col = (m.group("msg"), int(m.group("line")), int(m.group("col"))) if m else (text, None, None)
    dup = _TOML_DUP.match(msg)
    if dup:
        parts = [p.strip().strip("'\"") for p in dup.group("parts").split(",") if p.strip()]
        table = ".".join(parts)
        msg = f"[{table}] is declared twice: each name may appear once; rename or merge one"
    else:
        msg = f"TOML syntax error: {msg[0].lower() + msg[1:] if msg else msg}"
    return Problem(file=shown, line=line, column=col, message=msg)


def toml_path(parts) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            p = str(p)
            key = p if re.fullmatch(r"[A-Za-z0-9_-]+", p) else json.dumps(p)
            out += ("." if out else "") + key
    return out


def _describe(error) -> tuple[str, str, object]:
    """A jsonschema error as (TOML path, message a user can act on, offending value)."""
    parts = list(error.absolute_path)
    path = toml_path(parts)
    kind, inst, arg = error.validator, error.instance, error.validator_value
    if kind == "additionalProperties":
        known = set(error.schema.get("properties", {}))
        extra = sorted(set(inst) - known)
        name = extra[0]
        if not known:  # a table of user-chosen names reached a non-table value
            return toml_path(parts + [name]), "expected a table", None
        return (toml_path(parts + [name]),
                f"unknown field '{name}'{did_you_mean(name, known)}", None)
    if kind == "required":
        missing = next(r for r in arg if r not in inst)
        return path, f"missing required field '{missing}'", None
    if kind == "type":
        want = arg if isinstance(arg, list) else [arg]
        wanted = " or ".join(_JSON_TYPES.get(w, w) for w in want)
        return path, f"expected {wanted}, got {_toml_type(inst)} {_short(inst)}", None
    if kind == "enum":
        return path, f"must be one of {', '.join(map(str, arg))}; got {_short(inst)}", None
    if kind == "minLength":
        return path, "must not be empty", None
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        sign = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[kind]
        return path, f"must be {sign} {arg}, got {_short(inst)}", None
    if kind == "minProperties":
        return path, "must not be empty", None
    if kind == "pattern" and error.schema_path and "propertyNames" in error.schema_path:
        return path, f"invalid name {_short(inst)}: use letters, digits, '_', '-', '.'", None
    if kind == "pattern":
        return path, f"invalid value {_short(inst)} (must match {arg})", None
    return path, error.message, None


def _toml_type(value) -> str:
    return {str: "a string", bool: "a boolean", int: "an integer", float: "a number", list: "a list",
            dict: "a table"}.get(type(value), type(value).__name__)


def _short(value) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


# ---- adapters and prompts -------------------------------------------------------------------

def _load_adapters(reader: _Reader, dirs: list[Path]) -> dict[str, Adapter]:
    schema = "adapter.json"
    adapters: dict[str, Adapter] = {}
    for folder in dirs:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            shown, data = reader.read_toml(path)
            if data is None or not reader.validate(shown, data, schema):
                continue
            if data["name"] != path.stem:
                reader.problem(shown, "name", f"adapter name '{data['name']}' does not match its file name "
                                              f"{path.name}; rename one so they agree")
                continue
            detect = data.get("detect", {})
            adapters[data["name"]] = Adapter(
                name=data["name"], source=shown, description=data.get("description", ""),
                markers=tuple(detect.get("files", ())), confidence=float(detect.get("confidence", 0.5)),
                commands=tuple(AdapterCommand(name=k, run=v["run"], parse=tuple(v.get("parse", ())))
                               for k, v in data["commands"].items()))
    return adapters


def _find_prompts(dirs: list[Path]) -> dict[str, str]:
    prompts: dict[str, str] = {}
    for folder in dirs:
        if folder.is_dir():
            for path in sorted(folder.glob("*.md")):
                prompts[path.stem] = str(path)
    return prompts


# ---- intents ---------------------------------------------------------------------------------

def check_glob(pattern: str) -> str | None:
    """Why a path pattern is unusable, or None."""
    if pattern.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", pattern):
        return "must be relative to the project root, not absolute"
    parts = pattern.replace("\\", "/").split("/")
    if ".." in parts:
        return "must not leave the project root ('..')"
    for part in parts:
        if "**" in part and part != "**":
            return "'**' must be a whole path component, as in src/**/*.py"
    depth = 0
    for ch in pattern:
        if ch == "[":
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
    if depth:
        return "has an unclosed '[' (write [[] to match a literal '[')"
    return None


def _intent(reader: _Reader, shown: str, name: str, d: dict) -> Intent:
    where = f"intent.{name}" if re.fullmatch(r"[A-Za-z0-9_-]+", name) else f'intent."{name}"'
    has_run, has_goal = "run" in d, "goal" in d
    if has_run and has_goal:
        reader.problem(shown, where, "has both 'run' (a shell step) and 'goal' (an agent step); keep one")
    elif not has_run and not has_goal and not d.get("deps"):
        reader.problem(shown, where, "does nothing: give it 'run' (a shell line), 'goal' (an agent step) "
                                     "or 'deps' (an aggregate target)")
    kind = STEP_AGENT if has_goal else STEP_SHELL if has_run else STEP_AGGREGATE
    if kind != STEP_AGENT:
        for field in ("prompt", "acceptance", "candidates", "verify"):
            if field in d:
                reader.problem(shown, f"{where}.{field}", f"'{field}' only applies to agent steps (with 'goal')")
    for field in ("inputs", "outputs"):
        for i, pattern in enumerate(d.get(field, ())):
            why = check_glob(pattern)
            if why:
                reader.problem(shown, f"{where}.{field}[{i}]", f"path '{pattern}' {why}", pattern)
    if kind == STEP_AGGREGATE and d.get("outputs"):
        reader.problem(shown, f"{where}.outputs", "an aggregate target (no 'run' or 'goal') produces no outputs")
    return Intent(
        name=name, kind=kind, deps=tuple(d.get("deps", ())), inputs=tuple(d.get("inputs", ())),
        outputs=tuple(d.get("outputs", ())), description=d.get("description", ""), run=d.get("run"),
        goal=d.get("goal"), acceptance=tuple(d.get("acceptance", ())), prompt=d.get("prompt"),
        adapter=d.get("adapter"), verify=tuple(d.get("verify", ())), policy=d.get("policy", "default"),
        candidates=d.get("candidates", 1), max_attempts=d.get("max_attempts", 3), timeout=d.get("timeout"),
        env=tuple(sorted(d.get("env", {}).items())), cwd=d.get("cwd", "."))


def _cross_check(reader: _Reader, shown: str, spec_data: dict, intents: dict[str, Intent], names: set[str],
                 policies: dict[str, Policy], adapters: dict[str, Adapter], prompts: dict[str, str]) -> None:
    owners: dict[str, str] = {}
    for name, intent in intents.items():
        where = f"intent.{name}"
        seen = set()
        for i, dep in enumerate(intent.deps):
            if dep not in names:
                reader.problem(shown, f"{where}.deps[{i}]", f"unknown intent '{dep}'{did_you_mean(dep, names)}", dep)
            elif dep in seen:
                reader.problem(shown, f"{where}.deps[{i}]", f"'{dep}' is listed twice", dep)
            seen.add(dep)
        if intent.policy not in policies:
            reader.problem(shown, f"{where}.policy",
                           f"unknown policy '{intent.policy}'{did_you_mean(intent.policy, policies)}; "
                           f"declare [policy.{intent.policy}] or use one of: {', '.join(sorted(policies))}")
        adapter = None
        if intent.adapter and intent.adapter != "auto":
            adapter = adapters.get(intent.adapter)
            if adapter is None:
                reader.problem(shown, f"{where}.adapter", f"unknown adapter '{intent.adapter}'"
                               f"{did_you_mean(intent.adapter, adapters)}; known: {', '.join(sorted(adapters))}")
        if adapter:
            for i, cmd in enumerate(intent.verify):
                if adapter.command(cmd) is None:
                    known = [c.name for c in adapter.commands]
                    reader.problem(shown, f"{where}.verify[{i}]", f"adapter '{adapter.name}' has no command "
                                   f"'{cmd}'{did_you_mean(cmd, known)}; it has: {', '.join(known)}", cmd)
        if intent.kind == STEP_AGENT and intent.prompt and intent.prompt not in prompts:
            reader.problem(shown, f"{where}.prompt", f"prompt '{intent.prompt}' not found: create "
                           f"prompts/{intent.prompt}.md{did_you_mean(intent.prompt, prompts)}")
        for i, out in enumerate(intent.outputs):
            if out in owners:
                reader.problem(shown, f"{where}.outputs[{i}]",
                               f"'{out}' is also an output of intent '{owners[out]}'; one file has one producer", out)
            owners.setdefault(out, name)
        if name in intent.deps:
            reader.problem(shown, f"{where}.deps", f"intent '{name}' depends on itself", name)
    default = spec_data.get("project", {}).get("default")
    if default and default not in names:
        reader.problem(shown, "project.default", f"unknown intent '{default}'{did_you_mean(default, names)}")


def _policies(d: dict) -> dict[str, Policy]:
    out = {"default": Policy(name="default")}
    for name, p in d.items():
        out[name] = Policy(
            name=name, approval=p.get("approval", "delegate"), write_files=p.get("write_files", "auto"),
            run_shell=p.get("run_shell", "auto"), network=p.get("network", "never"),
            scope=tuple(p.get("scope", ())), secrets=tuple(p.get("secrets", ())),
            step_budget=Budget(**p.get("budget", {})), run_budget=Budget(**p.get("run_budget", {})))
    return out


def _worker(d: dict) -> WorkerSettings:
    kw = {k: v for k, v in d.items() if k != "extra"}
    if "fallback_models" in kw:
        kw["fallback_models"] = tuple(kw["fallback_models"])
    kw["extra"] = tuple(sorted((k, str(v)) for k, v in d.get("extra", {}).items()))
    return WorkerSettings(**kw)


def _in_file_order(problems: list[Problem]) -> list[Problem]:
    return sorted(problems, key=lambda p: (p.file != SPEC_FILE, p.file, p.line or 0, p.column or 0))


def load_spec(root: Path) -> Spec:
    """Load and validate a project; raise SpecError with every problem found."""
    root = root.resolve()
    reader = _Reader(root)
    spec_path = root / SPEC_FILE
    if not spec_path.is_file():
        raise SpecError(problems=[Problem(file=SPEC_FILE, message=f"no {SPEC_FILE} in {root}: create one "
                                          "(`runner init`) or run from the project root (`-C DIR`)")])
    shown, data = reader.read_toml(spec_path)
    adapters = _load_adapters(reader, [BUILTIN_DIR / "adapters", root / "adapters"])
    prompts = _find_prompts([BUILTIN_DIR / "prompts", root / "prompts"])
    if data is None:
        raise SpecError(problems=reader.problems)
    before = len(reader.problems)
    reader.validate(shown, data, "intents.json")
    schema_problems = reader.problems[before:]
    if not isinstance(data.get("intent"), dict) or any(not p.path.startswith("intent.") for p in schema_problems):
        raise SpecError(problems=reader.problems)
    # go on with the intents that passed the schema, so one report holds every problem
    broken = {p.path.split(".")[1].split("[")[0].strip('"') for p in schema_problems}
    intents = {name: _intent(reader, shown, name, d) for name, d in data["intent"].items()
               if name not in broken and isinstance(d, dict)}
    policies = _policies(data.get("policy", {}))
    _cross_check(reader, shown, data, intents, set(data["intent"]), policies, adapters, prompts)
    if reader.problems:
        raise SpecError(problems=_in_file_order(reader.problems))
    proj = data.get("project", {})
    project = Project(name=proj.get("name", root.name), default=proj.get("default"),
                      description=proj.get("description", ""))
    used_prompts = {i.prompt: prompts[i.prompt] for i in intents.values() if i.prompt}
    reader.sources.extend(used_prompts.values())
    return Spec(root=str(root), project=project, worker=_worker(data.get("worker", {})), policies=policies,
                adapters=adapters, intents=intents, prompts=prompts, sources=tuple(reader.sources))
