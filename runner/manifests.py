"""What a project's own files say about it, for `runner init`: its name (pyproject.toml, package.json, Cargo.toml,
pom.xml, settings.gradle, go.mod) and what it already runs (Makefile targets, npm scripts, tox environments)."""

from __future__ import annotations

import configparser
import itertools
import json
import re
from pathlib import Path
from typing import NamedTuple

# what `npm install`, `npm publish` and `npm pack` run by themselves: hooks, not tasks a user runs by name
NPM_LIFECYCLE = {
    "preinstall",
    "install",
    "postinstall",
    "prepublish",
    "preprepare",
    "prepare",
    "postprepare",
    "prepublishOnly",
    "prepack",
    "postpack",
    "dependencies",
    # `npm version` and `npm publish` run these: a release's steps, not a task (minimist's `version` was offered)
    "preversion",
    "version",
    "postversion",
    "publish",
    "postpublish",
}
# a Makefile rule line: targets, one or two colons, not an assignment (`X := y`, `X ::= y`)
_RULE = re.compile(r"^(?P<targets>[^\s:#=][^:#=]*?)\s*::?(?![:=])")
_GRADLE_NAME = re.compile(r"""^\s*rootProject\.name\s*=\s*["']([^"']+)["']""", re.M)
_GO_MODULE = re.compile(r"^\s*module\s+(\S+)", re.M)


class Offered(NamedTuple):
    """Something the project already runs, offered as an intent."""

    name: str  # the intent's name
    run: str  # the shell line
    source: str  # where it was found, for the description


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _json(path: Path) -> dict:
    text = _read(path)
    try:
        data = json.loads(text) if text is not None else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _toml(path: Path) -> dict:
    from . import toml_read

    text = _read(path)
    try:
        return toml_read.loads(text) if text is not None else {}
    except ValueError:
        return {}


def _get(data: dict, *keys: str) -> object:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)  # type: ignore[assignment]
    return data


def project_name(root: Path) -> tuple[str, str] | None:
    """(the project's own name, where it was read), or None when no manifest names it."""
    root = Path(root)
    found: list[tuple[object, str]] = []
    if (root / "pyproject.toml").is_file():
        data = _toml(root / "pyproject.toml")
        found += [(_get(data, "project", "name"), "pyproject.toml [project] name")]
        found += [(_get(data, "tool", "poetry", "name"), "pyproject.toml [tool.poetry] name")]
    if (root / "package.json").is_file():
        found.append((_json(root / "package.json").get("name"), "package.json name"))
    if (root / "Cargo.toml").is_file():
        found.append((_get(_toml(root / "Cargo.toml"), "package", "name"), "Cargo.toml [package] name"))
    if (root / "pom.xml").is_file():
        found.append((_pom_artifact(root / "pom.xml"), "pom.xml <artifactId>"))
    for settings in ("settings.gradle", "settings.gradle.kts"):
        match = _GRADLE_NAME.search(_read(root / settings) or "")
        if match:
            found.append((match.group(1), f"{settings} rootProject.name"))
    match = _GO_MODULE.search(_read(root / "go.mod") or "")
    if match:  # example.com/x/tool/v2: the tool, not its major version
        parts = [p for p in match.group(1).split("/") if p]
        if len(parts) > 1 and re.fullmatch(r"v\d+", parts[-1]):
            parts.pop()
        found.append((parts[-1] if parts else None, "go.mod module"))
    for value, source in found:
        if isinstance(value, str) and value.strip() and "${" not in value:
            return value.strip(), source
    return None


def _pom_artifact(path: Path) -> str | None:
    """The project's own <artifactId> (not its parent's), with or without the POM namespace."""
    import xml.etree.ElementTree as ET

    try:
        project = ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        return None
    for child in project:
        if isinstance(child.tag, str) and child.tag.rsplit("}", 1)[-1] == "artifactId":
            return (child.text or "").strip() or None
    return None


def make_targets(root: Path) -> list[str]:
    """The targets of the Makefile's rules, in order: not special (.PHONY), pattern (%.o) or computed ($(X))
    ones, nor files in folders (build/x.o): the names a user types after `make`."""
    for name in ("GNUmakefile", "makefile", "Makefile"):
        text = _read(Path(root) / name)
        if text is not None:
            break
    else:
        return []
    out: list[str] = []
    in_define = False
    for line in text.replace("\\\n", " ").splitlines():
        if re.match(r"^\s*define\b", line):
            in_define = True
        elif re.match(r"^\s*endef\b", line):
            in_define = False
        if in_define or line.startswith(("\t", " ")) or line.lstrip().startswith("#"):
            continue
        match = _RULE.match(line)
        if not match:
            continue
        for target in match.group("targets").split():
            if target.startswith(".") or any(c in target for c in "%$()/\\*?[]{}'\"") or target in out:
                continue
            out.append(target)
    return out


def package_dependencies(root: Path) -> bool:
    """Whether package.json names packages to install (dependencies of any kind)."""
    data = _json(Path(root) / "package.json")
    return any(isinstance(data.get(k), dict) and data[k] for k in ("dependencies", "devDependencies"))


def npm_scripts(root: Path) -> dict[str, str]:
    """package.json's scripts, without npm's lifecycle hooks and the pre/post hooks of other scripts."""
    scripts = _json(Path(root) / "package.json").get("scripts")
    if not isinstance(scripts, dict):
        return {}
    out = {}
    for name, line in scripts.items():
        if not isinstance(line, str) or name in NPM_LIFECYCLE:
            continue
        hook = re.match(r"^(pre|post)(.+)$", name)
        if hook and (hook.group(2) in scripts or hook.group(2) in NPM_LIFECYCLE | {"test", "start", "stop"}):
            continue
        out[name] = line
    return out


_RUNS_SCRIPT = re.compile(r"(?:^|&&|\|\||;)\s*(?:npm|pnpm|yarn)\s+(?:run(?:-script)?\s+)?([\w:.-]+)")


def npm_runs(root: Path, script: str) -> dict[str, str]:
    """The scripts `npm run SCRIPT` (`npm test`) runs, each with its line: its pre and post hooks around it, and
    the scripts their lines run in turn (`npm run lint`): minimist's `npm test` runs `pretest` (`npm run lint`),
    so a lint step beside its test step ran eslint twice."""
    scripts = _json(Path(root) / "package.json").get("scripts")
    if not isinstance(scripts, dict):
        return {}
    ran: dict[str, str] = {}

    def visit(name: str) -> None:
        for each in (f"pre{name}", name, f"post{name}"):
            line = scripts.get(each)
            if not isinstance(line, str) or each in ran:
                continue
            ran[each] = line
            for called in _RUNS_SCRIPT.findall(line):
                if called not in ("install", "ci", "exec", "x") and called in scripts:
                    visit(called)

    visit(script)
    return ran


def _factor_choices(braced: str) -> list[str]:
    """One {...} of a tox name: its comma-separated factors, a numeric range among them (`8-10, 13`: 8, 9, 10, 13)
    counted out as tox does."""
    out: list[str] = []
    for c in (c.strip() for c in braced.split(",")):
        span = re.fullmatch(r"(\d+)\s*-\s*(\d+)", c)
        if span:
            low, high = int(span.group(1)), int(span.group(2))
            out += [str(n) for n in (range(low, high + 1) if low <= high else range(low, high - 1, -1))]
        else:
            out.append(c)
    return out


def _expand_braces(env: str) -> list[str]:
    """tox's generative names: py{311,312}-django{4,5} -> py311-django4, py311-django5, ...; py3{9-14} -> py39 ...
    py314."""
    parts = re.split(r"(\{[^{}]*\})", env)
    choices = [_factor_choices(p[1:-1]) if p.startswith("{") else [p] for p in parts]
    return ["".join(combo) for combo in itertools.product(*choices)]


def _envlist(value) -> list[str]:
    # a TOML list, or an ini value: commas split (but not inside braces), and so do newlines
    items = [str(v) for v in value] if isinstance(value, list) else re.split(r",(?![^{]*\})|\n", str(value or ""))
    return [e for item in items for e in _expand_braces(item.strip()) if e and not e.startswith("#")]


def tox_envs(root: Path) -> list[str]:
    """The environments tox runs: env_list / envlist of tox.ini, tox.toml or pyproject.toml [tool.tox], then the
    [testenv:NAME] sections it lists apart."""
    root = Path(root)
    envs: list[str] = []
    ini_text = _read(root / "tox.ini")
    pyproject = _toml(root / "pyproject.toml") if (root / "pyproject.toml").is_file() else {}
    legacy = _get(pyproject, "tool", "tox", "legacy_tox_ini")
    if ini_text is None and isinstance(legacy, str):
        ini_text = legacy
    if ini_text is not None:
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read_string(ini_text)
        except configparser.Error:
            parser = configparser.ConfigParser(interpolation=None)
        if parser.has_section("tox"):
            envs += _envlist(parser.get("tox", "env_list", fallback=None) or parser.get("tox", "envlist", fallback=""))
        envs += [s.split(":", 1)[1].strip() for s in parser.sections() if s.startswith("testenv:")]
    else:
        data = _toml(root / "tox.toml") if (root / "tox.toml").is_file() else _get(pyproject, "tool", "tox")
        if isinstance(data, dict):
            envs += _envlist(data.get("env_list") or [])
            envs += list((data.get("env") or {}).keys()) if isinstance(data.get("env"), dict) else []
    return list(dict.fromkeys(e for e in envs if e))


INTENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def offered(root: Path, pm: str = "npm") -> list[Offered]:
    """Makefile targets, npm scripts (run with the package manager `pm`) and tox environments as intents
    (make-NAME, npm-NAME, tox-NAME); names an intent cannot have are left out."""
    out = [Offered(f"make-{t}", f"make {t}", f"the Makefile's target {t}") for t in make_targets(root)]
    for script, line in npm_scripts(root).items():
        out.append(Offered(f"npm-{script.replace(':', '-')}", f"{pm} run {script}", f"package.json script: {line}"))
    out += [Offered(f"tox-{e}", f"tox -e {e}", f"tox environment {e}") for e in tox_envs(root)]
    seen: set[str] = set()
    kept = []
    for o in out:
        if INTENT_NAME.match(o.name) and len(o.name) <= 128 and o.name not in seen:
            seen.add(o.name)
            kept.append(o)
    return kept
