"""The fastjsonschema validators generated ahead of time (runner/schemas/*_check.py) match their schemas."""

from __future__ import annotations

import hashlib
import importlib
import tomllib
from pathlib import Path

import fastjsonschema
import pytest

from runner.schema_check import SCHEMA_DIR, _generated_check, _schema

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("schema", ["intents.json", "adapter.json", "regexes.json"])
def test_each_generated_check_was_made_from_its_schema_as_it_is(schema):
    module = importlib.import_module(f"runner.schemas.{schema.split('.')[0]}_check")
    digest = hashlib.sha256((SCHEMA_DIR / schema).read_bytes()).hexdigest()
    assert digest == module.SCHEMA_SHA256, "run: .venv/bin/python tools/generate_schema_checks.py"
    assert _generated_check(schema) is module.validate


def _verdict(check, data) -> bool:
    try:
        check(data)
        return True
    except fastjsonschema.JsonSchemaException:
        return False


@pytest.mark.parametrize("schema,pattern", [("intents.json", "intents.toml"), ("adapter.json", "adapters/*.toml")])
def test_generated_and_runtime_compiled_checks_agree_on_every_spec_in_the_repository(schema, pattern):
    generated, compiled = _generated_check(schema), fastjsonschema.compile(_schema(schema))
    files = sorted(ROOT.glob(f"tests/specs/*/{pattern}")) + sorted(ROOT.glob(f"examples/*/{pattern}"))
    verdicts = []
    for path in files:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue  # a syntax error never reaches the schema
        verdicts.append(_verdict(compiled, data))
        assert _verdict(generated, data) == verdicts[-1], path
    assert True in verdicts and False in verdicts  # both kinds were compared


def test_the_regex_library_is_checked_fast_and_worded_by_jsonschema_only_when_wrong():
    """schema_errors says yes with the generated check, and only a no imports jsonschema to word it: every
    built-in regexes file passes both, and files broken in each way are refused by both."""
    import subprocess
    import sys

    from runner.schema_check import _precise_validator, schema_errors

    builtin = sorted((ROOT / "runner/builtin/regexes").glob("*.toml"))
    docs = [tomllib.loads(p.read_text(encoding="utf-8")) for p in builtin]
    good = docs[0]
    broken = [
        {k: v for k, v in good.items() if k != "family"},  # no family
        {**good, "family": "Not A Name"},
        {**good, "family": "name\n"},  # '$' before a final newline: refused by both, as ECMA-262 anchors it
        {**good, "replace": "yes"},
        {**good, "pattern": "not a list"},
        {**good, "surprise": 1},
    ]
    precise = _precise_validator(_schema("regexes.json"))
    for doc in docs + broken:
        assert (schema_errors(doc, "regexes.json") == []) == (not list(precise.iter_errors(doc))), doc
    assert all(schema_errors(doc, "regexes.json") == [] for doc in docs)
    assert all(schema_errors(doc, "regexes.json") for doc in broken)
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys; from runner.parse import load_library, builtin_dir; "
         "load_library([builtin_dir()]); print('jsonschema' in sys.modules)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert loaded.stdout.strip() == "False"


@pytest.mark.parametrize("schema", ["intents.json", "adapter.json", "regexes.json"])
def test_the_generated_checks_name_what_they_format(schema):
    """fastjsonschema's `.format(**locals())` built a dict of every local once per intent (~1 s of a 100,000-step
    cold load): the generator names the variables instead (tools/generate_schema_checks.py)."""
    text = (SCHEMA_DIR / f"{schema.split('.')[0]}_check.py").read_text()
    assert "locals()" not in text, "run: .venv/bin/python tools/generate_schema_checks.py"
