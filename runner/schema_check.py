"""Checking a document against its JSON schema (runner/schemas/): a fast yes or no (fastjsonschema), then, only for
a no, every violation worded by its TOML path as a user can act on it (jsonschema)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .suggest import did_you_mean
from .workspace import SPEC_FILE

SCHEMA_DIR = Path(__file__).parent / "schemas"


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


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
