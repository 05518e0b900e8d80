"""Read a project's TOML files, validate them, and report every problem by file, line and TOML path."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from . import toml_read
from .confine import Folders, check_glob, output_problem
from .errors import Problem, SpecError, UsageError
from .globs import GLOB_CHARS, matches
from .graph import cycle_words, cycles
from .intent_env import env_names, kept_out
from .keys import digest_bytes
from .memory import FIELDS as MEMORY_FIELDS
from .memory import too_big
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
    WorkerSettings,
    env_problem,
)
from .suggest import did_you_mean
from .toml_locate import Locator

SPEC_FILE = "intents.toml"
SCHEMA_DIR = Path(__file__).parent / "schemas"

_TOML_POS = re.compile(r"^(?P<msg>.*) \(at line (?P<line>\d+), column (?P<col>\d+)\)$")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_TOML_DUP = re.compile(r"^Cannot declare \((?P<parts>.*)\) twice$")
_PATTERN_RULES = {
    "^https?://": "must start with http:// or https://",
    "^[A-Za-z_][A-Za-z0-9_]*$": "must be an environment variable name (letters, digits, '_'; not starting "
    "with a digit)",
    "^[a-z0-9][a-z0-9_-]*$": "use lowercase letters, digits, '_' and '-', starting with a letter or digit",
    "^[A-Za-z0-9][A-Za-z0-9_.-]*$": "start with a letter or digit, then use letters, digits, '_', '-', '.'",
    "^[a-z][a-z0-9_-]*$": "start with a lowercase letter, then use lowercase letters, digits, '_', '-'",
    "^[a-z_][a-z0-9_]*$": "use lowercase letters, digits and '_', not starting with a digit",
    "^[^\\n\\r]*$": "must be one line (what the intent is for); put the details in 'facts'",
}
# An intent's name names files: .runner/runs/<id>/logs/NAME.log, attempts/NAME/, pending/NAME.json,
# replays/NAME/ and an attempt's temporary folder runner-NAME-XXXXXXXX (NAME + 16 bytes, the longest). 128
# keeps every one of them far under NAME_MAX (255 bytes); the schema's pattern keeps them free of '/', of
# shell metacharacters and of a leading '-' or '.'.
MAX_NAME = 128
_JSON_TYPES = {
    "string": "a string",
    "array": "a list",
    "object": "a table",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
}


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


def _schema(name: str) -> dict:
    return json.loads((SCHEMA_DIR / name).read_text())


_DOLLAR = re.compile(r"(?<!\\)\$")  # an unescaped '$', as fastjsonschema finds it


def _precise_validator(schema: dict):
    """jsonschema's validator for `schema`, with patterns anchored as fastjsonschema (and JSON Schema's own
    ECMA-262 regexes) anchor them: Python's '$' also matches before a final newline, so "name\n" would pass
    '^[A-Za-z0-9]...$' here while the fast check refuses it, and the spec would load with no problem told."""
    import jsonschema

    def pattern(validator, regex, instance, _schema):
        if validator.is_type(instance, "string") and not re.search(_DOLLAR.sub(r"\\Z", regex), instance):
            yield jsonschema.ValidationError(f"{instance!r} does not match {regex!r}")

    base = jsonschema.validators.validator_for(schema)
    return jsonschema.validators.extend(base, {"pattern": pattern})(schema)


class _Reader:
    """Collects problems while reading files relative to the project root."""

    def __init__(self, root: Path, documents: dict | None = None, digests: dict | None = None, secret=frozenset()):
        self.root = root
        self.secret_names = secret  # the names policies list in `secrets`: what env_secrets.kept_out keeps out
        # path -> (digest of its bytes, the document they read as, toml_read.document_digests): read already
        self.documents = documents or {}
        self.problems: list[Problem] = []
        self.locators: dict[str, Locator] = {}
        self.sources: list[str] = []
        self.read: dict[str, str] = {}  # path -> digest of the bytes read (Spec.read)
        self.parsed: dict[str, str | None] = {}  # path -> digest of the document read (Spec.parsed)
        # path -> toml_read.document_digests of the document read (the caller's dict, if it gave one)
        self.digests: dict[str, tuple | None] = digests if digests is not None else {}
        self.folders = Folders(str(root))  # where the spec's folders lead, links followed

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
        raw = path.read_bytes()
        self.read[str(path)] = digest_bytes(raw)
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
            bad = " ".join(f"0x{b:02x}" for b in raw[exc.start : exc.end])
            self.problems.append(
                Problem(
                    file=shown,
                    line=line,
                    column=column,
                    message=f"not UTF-8 text: byte {bad} cannot be decoded; save the file as UTF-8",
                )
            )
            return shown, None
        locator = self.locators[shown] = Locator(text)
        known = self.documents.pop(str(path), None)
        if known is not None and known[0] == self.read[str(path)]:  # the same bytes: not read twice
            self._digested(str(path), known[2])
            return shown, known[1]
        try:
            doc = toml_read.loads(text)
            # taken before the loader reads the document (it drops each intent's table as it goes)
            self._digested(str(path), toml_read.document_digests(doc))
            return shown, doc
        except toml_read.TOMLDecodeError as exc:
            self.problems.append(_syntax_problem(shown, str(exc), locator))
            return shown, None
        except RecursionError as exc:  # tomli's limits on nesting and on a key's parts (a hostile file)
            self.problems.append(_too_deep(shown, str(exc), text, locator))
            return shown, None

    def _digested(self, path: str, digests: tuple | None) -> None:
        self.parsed[path] = digests[0] if digests is not None else None
        self.digests[path] = digests

    def validate(self, shown: str, data: dict, schema_name: str) -> list[list]:
        """Check `data` against a schema; report each violation; return the key paths (as lists) that failed."""
        if _fast_validator(schema_name)(data):
            return []
        # the slow, precise validator: only to word the problems
        validator = _precise_validator(_schema(schema_name))
        errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
        failed = []
        for error in errors:
            for parts, message, value in _describe(error):
                self.problem(shown, toml_path(parts), message, value)
                failed.append(parts)
        if not errors:  # never load what the fast check refused, even if the two ever disagree again
            self.problem(shown, "", f"does not match {schema_name}, yet no rule of it says why: please report this")
            failed.append([])
        return failed


def schema_errors(data, schema_name: str) -> list[tuple[list, str]]:
    """(key path, jsonschema's own message) for each violation of the schema file `schema_name`: for files
    validated outside this module (the regex library), so that jsonschema is imported in one place and only
    when something is wrong (its import is ~0.15 s, paid by the first agent attempt while its model call
    was being sent, when the regex library was checked with it every time)."""
    if _fast_validator(schema_name)(data):
        return []
    validator = _precise_validator(_schema(schema_name))
    return [
        (list(e.absolute_path), e.message)
        for e in sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    ]


_FAST: dict = {}


def _fast_validator(schema_name: str):
    """A compiled validator (fastjsonschema) that says only yes or no, 50x faster than jsonschema.

    Thousands of intents validate in milliseconds; on a no, jsonschema re-validates to report every
    problem by its path. Both read the same schema file, so they cannot disagree on what is valid."""
    if schema_name not in _FAST:
        import fastjsonschema

        check = _generated_check(schema_name) or fastjsonschema.compile(_schema(schema_name))

        def valid(data) -> bool:
            try:
                check(data)
                return True
            except fastjsonschema.JsonSchemaException:
                return False

        _FAST[schema_name] = valid
    return _FAST[schema_name]


def _generated_check(schema_name: str):
    """The validator tools/generate_schema_checks.py wrote for this schema, if it was made from the schema
    file as it is now (generating and compiling one costs ~0.1 s of every cold load); else None."""
    import hashlib
    import importlib

    try:
        module = importlib.import_module(f"{__package__}.schemas.{schema_name.rsplit('.', 1)[0]}_check")
    except ImportError:  # not generated for this schema, or made by a fastjsonschema this one is not
        return None
    if hashlib.sha256((SCHEMA_DIR / schema_name).read_bytes()).hexdigest() != module.SCHEMA_SHA256:
        return None
    return module.validate


def _syntax_problem(shown: str, text: str, locator: Locator) -> Problem:
    """A tomllib error as a Problem: file, line, column, the key being read, and what to do."""
    m = _TOML_POS.match(text)
    msg, line, col = (m.group("msg"), int(m.group("line")), int(m.group("col"))) if m else (text, None, None)
    if msg.endswith(" (at end of document)"):
        msg = msg[: -len(" (at end of document)")]
        lines = locator.lines or [""]
        line, col = len(lines), len(lines[-1]) + 1
    source = locator.lines[line - 1] if line and line <= len(locator.lines) else ""
    declared = locator.at(line) if line else None
    parts, is_header = declared if declared else ([], False)
    path = toml_path(parts)
    dup = _TOML_DUP.match(msg)
    if dup or (msg == "Cannot overwrite a value" and parts):
        if dup:
            parts = [p.strip().strip("'\"") for p in dup.group("parts").split(",") if p.strip()]
            path, is_header = toml_path(parts), True
        first = locator.first_line(parts, before=line)
        col = len(source) - len(source.lstrip()) + 1 if source else col
        if first is None and not dup:  # a dotted key reaching into a value set earlier (a = 1, then a.b = 2)
            for k in range(len(parts) - 1, 0, -1):
                earlier = locator.first_line(parts[:k], before=line)
                if earlier is not None and locator.at(earlier) == (parts[:k], False):
                    return Problem(
                        file=shown,
                        path=path,
                        line=line,
                        column=col,
                        message=f"{toml_path(parts[:k])} is already a value (line {earlier}), "
                        "so it cannot hold keys; rename one",
                    )
        at = f" (first at line {first})" if first else ""
        if is_header:
            msg = f"[{path}] is declared twice{at}: each name may appear once; rename or merge one"
        else:
            msg = f"'{parts[-1]}' is set twice in the same table{at}; keep one"
        return Problem(file=shown, path=path, line=line, column=col, message=msg)
    rest = source[col - 1 :] if col else ""
    if msg == "Invalid value" and (not rest.strip() or rest.lstrip().startswith("#")):
        msg = "missing value after '='"
    elif msg == "Invalid value":
        msg = 'invalid value: quote text ("..."); unquoted values are numbers, true/false, [lists] or {tables}'
    elif msg in ("Illegal character '\\n'", "Illegal character '\\r'"):
        opened = _open_quote(source)
        col = opened + 1 if opened is not None else col
        msg = "unterminated string: close the quote on the same line, or use triple quotes for several lines"
    elif msg == "Unescaped '\\' in a string":
        slash = source.rfind("\\", 0, max((col or 1) - 1, 0)) if source else -1
        if slash >= 0:
            col = slash + 1
            msg = (
                f"invalid escape '{source[slash : slash + 2]}' in a \"...\" string: write '\\\\' for a "
                "backslash, or use a 'literal string' in single quotes"
            )
        else:
            msg = "invalid escape in a \"...\" string: write '\\\\' for a backslash"
    else:
        msg = msg[0].lower() + msg[1:] if msg else msg
    return Problem(
        file=shown, path=path if not is_header else "", line=line, column=col, message=f"TOML syntax error: {msg}"
    )


def _too_deep(shown: str, message: str, text: str, locator: Locator) -> Problem:
    """tomli's RecursionError (no position in it) as a Problem at the first line that goes past its limit."""
    limit = int(m.group()) if (m := re.search(r"\d+", message)) else 0
    if "key" in message:
        line = next((n for n, s in enumerate(locator.lines, 1) if s.count(".") >= limit), None)
        what = f"a key of more than {limit} dotted parts; use a short key"
    else:
        line = _nesting_line(text, limit)
        what = f"arrays or inline tables nested more than {limit} levels deep; a spec needs a few at most"
    declared = locator.at(line) if line else None
    path = toml_path(declared[0]) if declared and not declared[1] else ""
    return Problem(file=shown, path=path, line=line, message=f"TOML syntax error: {what}")


def _nesting_line(text: str, limit: int) -> int | None:
    """The line where '[' and '{' of values first nest deeper than `limit` (strings and comments skipped;
    a [table] header at the start of a line does not nest)."""
    depth, line, i, n = 0, 1, 0, len(text)
    at_line_start = True
    while i < n:
        ch = text[i]
        if ch == "\n":
            line, at_line_start = line + 1, True
        elif ch in " \t\r":
            pass
        elif ch == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif ch in "\"'":
            quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else ch
            j = i + len(quote)
            while j < n and not text.startswith(quote, j) and (len(quote) == 3 or text[j] != "\n"):
                j += 2 if quote[0] == '"' and text[j] == "\\" else 1
            line += text.count("\n", i, j)
            i = j + len(quote)
            at_line_start = False
            continue
        elif ch == "[" and at_line_start and depth == 0:  # a [table] or [[array]] header
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return line
        elif ch in "]}":
            depth = max(0, depth - 1)
        if ch != "\n" and ch not in " \t\r":
            at_line_start = False
        i += 1
    return None


def _open_quote(line: str) -> int | None:
    """The index of the quote opening a string that the line never closes, or None."""
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "#":
            return None
        if ch in "\"'":
            j = i + 1
            while j < len(line) and line[j] != ch:
                j += 2 if ch == '"' and line[j] == "\\" else 1
            if j >= len(line):
                return i
            i = j
        i += 1
    return None


def toml_path(parts) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            p = str(p)
            key = p if _BARE_KEY.fullmatch(p) else json.dumps(p)
            out += ("." if out else "") + key
    return out


def _intent_path(name: str) -> str:
    """toml_path(["intent", name]), asked for every intent of a spec: a bare name needs no quoting."""
    return "intent." + name if _BARE_KEY.fullmatch(name) else toml_path(["intent", name])


def _describe(error) -> list[tuple[list, str, object]]:
    """A jsonschema error as [(key path, message a user can act on, offending value)]: one per unknown field."""
    parts = list(error.absolute_path)
    kind, inst, arg = error.validator, error.instance, error.validator_value
    if kind == "additionalProperties":
        known = set(error.schema.get("properties", {}))
        extra = sorted(set(inst) - known)
        if not known:  # a table of user-chosen names reached a non-table value
            return [(parts + [name], "expected a table", None) for name in extra]
        if not parts and error.schema.get("title") == SPEC_FILE:
            return [
                (
                    [name],
                    (
                        f"unknown table [{name}]{did_you_mean(name, known)}; {SPEC_FILE} holds [project], "
                        "[worker], [policy.NAME] and [intent.NAME]"
                    ),
                    None,
                )
                for name in extra
            ]
        return [(parts + [name], f"unknown field '{name}'{did_you_mean(name, known)}", None) for name in extra]
    if kind == "required":
        missing = [r for r in arg if r not in inst]
        if not parts and missing == ["intent"]:
            return [
                (
                    [],
                    (
                        "no intents: declare at least one [intent.NAME] table with 'run' (a shell line), "
                        "'goal' (an agent step) or 'deps' (an aggregate target)"
                    ),
                    None,
                )
            ]
        return [(parts, f"missing required field '{name}'", None) for name in missing]
    if kind == "type":
        want = arg if isinstance(arg, list) else [arg]
        wanted = " or ".join(_JSON_TYPES.get(str(w), str(w)) for w in want)
        hint = f"; write {json.dumps([inst])}" if want == ["array"] and isinstance(inst, str) else ""
        if want == ["object"] and len(parts) == 2 and parts[0] == "intent":
            hint = f"; declare it as [{toml_path(parts)}] with 'run', 'goal' or 'deps'"
        return [(parts, f"expected {wanted}, got {_toml_type(inst)} {_short(inst)}{hint}", None)]
    if kind == "enum":
        return [(parts, f"must be one of {', '.join(map(str, arg))}; got {_short(inst)}", None)]
    if kind == "maxLength" and error.schema_path and "propertyNames" in error.schema_path:
        section = str(parts[-1]) if parts else ""
        what = {"intent": "intent name", "policy": "policy name"}.get(section, "name")
        why = " (an intent's name names files under .runner/)" if section == "intent" else ""
        return [
            (
                parts + [inst],
                f"invalid {what} {_short(inst)}: {len(inst)} characters, at most {arg}{why}; shorten it",
                None,
            )
        ]
    if kind == "maxLength":
        return [(parts, f"must be at most {arg} characters, got {len(inst)}", None)]
    if kind == "minLength":
        return [(parts, "must not be empty", None)]
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        sign = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[kind]
        return [(parts, f"must be {sign} {arg}, got {_short(inst)}", None)]
    if kind == "minProperties":
        return [(parts, "must not be empty", None)]
    if kind == "pattern" and error.schema_path and "propertyNames" in error.schema_path:
        what = {
            "intent": "intent name",
            "commands": "command name",
            "vars": "var name",
            "variant": "variant name",
            "policy": "policy name",
            "env": "environment variable name",
        }.get(str(parts[-1]) if parts else "", "name")
        rule = _PATTERN_RULES.get(arg, f"must match {arg}")
        return [(parts + [inst], f"invalid {what} {_short(inst)}: {rule}", None)]
    if kind == "pattern":
        rule = _PATTERN_RULES.get(arg, f"must match {arg}")
        return [(parts, f"invalid value {_short(inst)}: {rule}", None)]
    return [(parts, error.message, None)]


def _toml_type(value) -> str:
    return {
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        list: "a list",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def _short(value) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


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
) -> None:
    owners: dict[str, str] = {}
    suggest = _Suggestions()
    for name, intent in intents.items():
        where = _intent_path(name)
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
        reader.problem(
            shown,
            f"{toml_path(['intent', first])}.deps[{index}]",
            f"{cycle_words(cycle)}; remove one of these deps",
            cycle[1],
        )
    project = spec_data.get("project")
    default = project.get("default") if isinstance(project, dict) else None
    if isinstance(default, str) and default and default not in names:
        reader.problem(shown, "project.default", f"unknown intent {_quoted(default)}{suggest(default, names)}")


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
    placed by line in the intents file as load's own are."""
    try:
        locator: Locator | None = Locator((Path(spec.root) / spec.file).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError):
        locator = None  # changed since it was compiled: the problem is still told, without its line
    return [
        Problem(file=spec.file, path=path, line=locator.line_of(path, value) if locator else None, message=message)
        for path, message, value in found
    ]


def unset_variable(spec: Spec, name: str, key: str, variable: str) -> UsageError:
    """The error for an `env` value reading a variable the runner's environment does not have."""
    where = toml_path(["intent", name, "env", key])
    problem = located(spec, [(where, "", None)])[0]
    at = f"{problem.file}:{problem.line}" if problem.line else problem.file
    return UsageError(
        f"error: {at}: {where}: ${variable} is not set in runner's environment; set it, or give a default "
        f"(${{{variable}:-default}}, or ${{{variable}:-}} for empty)"
    )


def load_project_adapters(root: Path) -> dict[str, Adapter]:
    """The built-in adapters and the project's own, for commands that need no intents.toml (adapters, init)."""
    reader = _Reader(root.resolve())
    adapters, _broken = _load_adapters(reader, [BUILTIN_DIR / "adapters", reader.root / "adapters"])
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
    failed = reader.validate(shown, data, "intents.json")
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
        read=tuple(reader.read.items()),
        parsed=tuple(reader.parsed.items()),
    )


# what other intents' checks and the compiled graph read of an intent (_cross_check, graph.cycles, compile_spec): an
# edit that keeps these leaves every other intent's checks and record as they were
_GRAPH_FIELDS = ("kind", "deps", "inputs", "outputs", "prompt", "adapter", "policy", "verify")


def edited_intents(spec: Spec, document: dict, names: list[str]) -> dict[str, Intent] | None:
    """The Intents of `names` as `document` now defines them, where the spec file was read again and nothing
    but these intents' tables changed since `spec` was loaded from it (compiled._recompiled): each table passes every
    check a full load makes of it, and keeps what other intents' checks and the graph read of it
    (_GRAPH_FIELDS and the variables its env reads). None otherwise, and for any problem: the full load then
    runs and tells every problem as it always does."""
    tables = document.get("intent")
    if not isinstance(tables, dict):
        return None
    # the schema's rules for an intent hold table by table: the rest of the document with only these tables
    part = {key: value for key, value in document.items() if key != "intent"}
    part["intent"] = {name: tables[name] for name in names}
    if not _fast_validator("intents.json")(part):
        return None
    reader = _Reader(Path(spec.root), secret=frozenset(name for p in spec.policies.values() for name in p.secrets))
    _not_a_number(reader, spec.file, part)
    _nul_characters(reader, spec.file, part)
    made = {name: _intent(reader, spec.file, name, tables[name]) for name in names}
    if reader.problems:
        return None
    for name, intent in made.items():
        was = spec.intents[name]
        if any(getattr(intent, field) != getattr(was, field) for field in _GRAPH_FIELDS):
            return None
        if env_names(intent) != env_names(was):
            return None
    return made
