"""The declared world as named tuples: project, worker, policies, adapters, intents. No I/O.

Named tuples rather than frozen dataclasses: every full run unpickles these, and defining a frozen
dataclass costs ~0.9 ms at import (a named tuple ~0.15 ms), paid before a step can start."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

BUILTIN_DIR = Path(__file__).parent / "builtin"  # the adapters, prompts and regexes shipped with runner

# the longest timeout, in seconds (a week; intents.json says the same): epoll waits at most ~24 days, and an
# infinite timeout reached it as an internal error
MAX_TIMEOUT = 604800

STEP_SHELL = "shell"
STEP_AGENT = "agent"
STEP_AGGREGATE = "aggregate"


class Budget(NamedTuple):
    tokens: int | None = None
    seconds: float | None = None
    attempts: int | None = None


class Policy(NamedTuple):
    name: str
    approval: str = "delegate"  # manual | confirm-phase | delegate
    write_files: str = "auto"  # never | ask | auto
    run_shell: str = "auto"
    network: str = "never"
    scope: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()
    step_budget: Budget = Budget()
    run_budget: Budget = Budget()
    checkpoint: str = "none"  # none | commit: each applied agent change is a git commit of its files alone


class WorkerSettings(NamedTuple):
    """The `[worker]` table as declared; the worker module turns it into its own config."""

    kind: str = "codex"
    model: str = "gpt-5.3-codex"
    fallback_models: tuple[str, ...] = ("gpt-5-codex",)
    base_url: str | None = None
    env_key: str | None = None
    binary: str | None = None
    timeout: float = 900.0
    idle_timeout: float | None = 300.0
    replays_dir: str = "replays"
    extra: tuple[tuple[str, str], ...] = ()

    def answer_parts(self) -> list:
        """What decides a worker's answer, for an agent step's key: its kind, models and the settings that shape
        the model's work; never where the request goes (base_url), the key's variable, the binary's path, time
        limits or retries (a teammate behind another proxy shares the cache)."""
        shaping = [[k, v] for k, v in self.extra if k in ANSWER_EXTRAS]
        return [self.kind, self.model, list(self.fallback_models), shaping]


# the `[worker] extra` settings that change what the model does (the others say how it is reached or retried)
ANSWER_EXTRAS = frozenset({"reasoning_effort", "sandbox"})


class ExecutorSettings(NamedTuple):
    """The `[executor]` table: where shell steps run. `local` (the default) on this machine; `dask` on the
    Dask cluster whose scheduler is at `address` (tcp://HOST:PORT), every worker seeing the project's path, or
    with `hermetic`, a worker that does not see it: each step gets its declared inputs from the remote cache."""

    kind: str = "local"
    address: str | None = None
    hermetic: bool = False


class CacheSettings(NamedTuple):
    """The `[cache]` table: the shared remote cache (runner/stores), over which `--remote`, `--remote-mode`,
    RUNNER_REMOTE_CACHE and RUNNER_REMOTE_MODE win. `signing_key_env` names the variable holding the team's key."""

    remote: str | None = None
    mode: str | None = None
    signing_key_env: str | None = None
    timeout: float = 5.0  # seconds for one connection or read, never retried
    upload_timeout: float = 60.0  # seconds the end of a run waits for its uploads


class TelemetrySettings(NamedTuple):
    """The `[telemetry]` table: the OTLP/HTTP collector a run's spans go to (runner/telemetry.py), under the
    standard OTEL_EXPORTER_OTLP_ENDPOINT variables, which win as they do for every OpenTelemetry SDK."""

    endpoint: str | None = None


class AdapterCommand(NamedTuple):
    name: str
    run: str  # may hold {var} placeholders, filled from the adapter's and its variants' vars
    parse: tuple[str, ...] = ()  # regex families that parse this command's output
    reports: tuple[str, ...] = ()  # globs of the JUnit XML reports it writes by default (reports.py reads them)
    # commands that print the versions of the tools it runs: their output is part of the key (runner/toolchain.py)
    runtime: tuple[str, ...] = ()


class AdapterVariant(NamedTuple):
    """A flavour of a toolchain (uv instead of pip, vitest instead of jest), chosen by evidence in the project."""

    name: str
    description: str = ""
    group: str = ""  # variants sharing a group exclude each other: the first that matches wins
    files: tuple[str, ...] = ()  # any of these (paths or globs) present selects the variant
    contains: tuple[tuple[str, str], ...] = ()  # (file, text): the file holds the text
    vars: tuple[tuple[str, str], ...] = ()
    commands: tuple[AdapterCommand, ...] = ()
    # (file, dotted key, text): the JSON or TOML file has the key (package.json scripts.test, pyproject.toml
    # tool.ruff), and its value holds the text when one is given
    keys: tuple[tuple[str, str, str], ...] = ()


PLACEHOLDER = re.compile(r"(?<![$\w])\{([a-z_][a-z0-9_]*)\}")  # ${x} is the shell's


def expand_vars(run: str, values: dict[str, str]) -> str:
    """Fill {name} for declared names only, so shell braces (${HOME}, {a,b}, find -exec {}) pass through."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), run)


# `env` values: $NAME, ${NAME} and ${NAME:-default} from the runner's environment; $$ for a dollar sign
ENV_REF = re.compile(r"\$(?:(\$)|([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}$]*))?\})")


def env_problem(value: str) -> str | None:
    """Why an `env` value cannot be expanded (a `$` that starts no reference), or None."""
    bare = ENV_REF.sub("", value)
    if "$" not in bare:
        return None
    return (
        f"'{value}' has a '$' that starts no variable: write $NAME, ${{NAME}} or ${{NAME:-default}} for a "
        "variable of runner's environment, and $$ for a dollar sign"
    )


def env_refs(value: str) -> list[str]:
    """The variables an `env` value reads."""
    return [m.group(2) or m.group(3) for m in ENV_REF.finditer(value) if not m.group(1)]


def expand_env(value: str, environ: Mapping[str, str]) -> str:
    """The value with each reference replaced from `environ`; KeyError(NAME) for a variable that is not set
    and has no default (${NAME:-default} takes the default when NAME is unset or empty, as the shell does)."""

    def one(m: re.Match) -> str:
        if m.group(1):
            return "$"
        name = m.group(2) or m.group(3)
        found = environ.get(name)
        if m.group(4) is not None:
            return found or m.group(4)
        if found is None:
            raise KeyError(name)
        return found

    return ENV_REF.sub(one, value)


class Adapter(NamedTuple):
    name: str
    source: str  # the file it came from
    description: str = ""
    markers: tuple[str, ...] = ()  # files whose presence detects the toolchain
    confidence: float = 0.5
    commands: tuple[AdapterCommand, ...] = ()  # the base commands, before any variant
    vars: tuple[tuple[str, str], ...] = ()
    variants: tuple[AdapterVariant, ...] = ()
    inputs: tuple[str, ...] = ()  # globs whose contents the commands depend on (runner init uses them)
    runtime: tuple[str, ...] = ()  # commands printing the versions every command depends on (the interpreter's)
    exclude: tuple[str, ...] = ()  # globs taken out of `inputs` (node_modules/**): runner init writes them too

    def variant(self, name: str) -> AdapterVariant | None:
        for v in self.variants:
            if v.name == name:
                return v
        return None

    def command(self, name: str, variants: tuple[str, ...] = ()) -> AdapterCommand | None:
        """The command as it runs with these variants applied (in declaration order), vars filled in."""
        values = dict(self.vars)
        found = next((c for c in self.commands if c.name == name), None)
        for v in self.variants:
            if v.name in variants:
                values.update(v.vars)
                found = next((c for c in v.commands if c.name == name), found)
        if found is None:
            return None
        runtime = tuple(expand_vars(r, values) for r in found.runtime)
        return AdapterCommand(found.name, expand_vars(found.run, values), found.parse, found.reports, runtime)

    def runtime_of(self, variants: tuple[str, ...] = ()) -> tuple[str, ...]:
        """The adapter-wide runtime commands with these variants' vars filled in."""
        values = dict(self.vars)
        for v in self.variants:
            if v.name in variants:
                values.update(v.vars)
        return tuple(expand_vars(r, values) for r in self.runtime)

    def command_names(self, variants: tuple[str, ...] = ()) -> list[str]:
        names = [c.name for c in self.commands]
        for v in self.variants:
            if v.name in variants:
                names += [c.name for c in v.commands if c.name not in names]
        return names

    def definition(self) -> dict:
        """Everything that changes what the adapter runs or how its output is read (for step keys)."""

        def cmds(commands):  # reports only where declared: the keys of adapters without them stay
            return [[c.name, c.run, list(c.parse)] + ([list(c.reports)] if c.reports else []) for c in commands]

        return {
            "name": self.name,
            "vars": [list(kv) for kv in self.vars],
            "commands": cmds(self.commands),
            "variants": [[v.name, [list(kv) for kv in v.vars], cmds(v.commands)] for v in self.variants],
        }


class Intent(NamedTuple):
    """One [intent.NAME] table. A named tuple rather than a frozen dataclass: a 10,000-intent spec
    unpickles from the compiled cache twice as fast."""

    name: str
    kind: str  # STEP_SHELL | STEP_AGENT | STEP_AGGREGATE
    deps: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    # globs of the JUnit XML reports its command writes: how a failure is read, not what the step does (no key part)
    reports: tuple[str, ...] = ()
    description: str = ""
    run: str | None = None
    goal: str | None = None
    acceptance: tuple[str, ...] = ()
    prompt: str | None = None
    adapter: str | None = None
    verify: tuple[str, ...] = ()
    policy: str = "default"
    candidates: int = 1
    max_attempts: int = 3
    timeout: float | None = None
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = "."
    exclude: tuple[str, ...] = ()  # globs taken out of what the input globs expand to
    # an agent intent's memory (runner/memory.py): what it is for, what stays true, what it must not do
    anchor: str = ""
    facts: tuple[str, ...] = ()
    non_goals: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    open_questions: tuple[str, ...] = ()
    # globs it may change besides its outputs without being flagged as drift; never wider than its policy allows
    scope: tuple[str, ...] = ()
    # commands printing the versions of tools its command uses beyond its adapter's (runner/toolchain.py)
    runtime: tuple[str, ...] = ()

    def definition(self) -> dict:
        """What the user wrote that changes what the step does (part of its key)."""
        return {
            "kind": self.kind,
            "run": self.run,
            "goal": self.goal,
            "acceptance": list(self.acceptance),
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
            "prompt": self.prompt,
            "adapter": self.adapter,
            "verify": list(self.verify),
            "candidates": self.candidates,
            "max_attempts": self.max_attempts,
            "env": [list(kv) for kv in self.env],
            "cwd": self.cwd,
            **({"exclude": list(self.exclude)} if self.exclude else {}),  # absent: the keys of specs without it stay
            **({"runtime": list(self.runtime)} if self.runtime else {}),
        }


def runs_always(intent: Intent) -> bool:
    """A shell step with no inputs and no dependencies: nothing declared can say it is up to date."""
    return intent.kind == STEP_SHELL and not intent.inputs and not intent.deps


class Project(NamedTuple):
    name: str
    default: str | None = None
    description: str = ""


class Spec(NamedTuple):
    """Everything loaded from a project's TOML files, validated."""

    root: str
    project: Project
    worker: WorkerSettings
    policies: dict[str, Policy]
    adapters: dict[str, Adapter]
    intents: Mapping[str, Intent]  # a dict, or the compiled spec's view that decodes each on first use
    prompts: dict[str, str]  # prompt name -> file path
    sources: tuple[str, ...] = ()  # every file the spec was read from (for the spec cache)
    file: str = "intents.toml"  # the intents file, relative to root (`-f FILE` names another)
    executor: ExecutorSettings = ExecutorSettings()
    cache: CacheSettings = CacheSettings()
    telemetry: TelemetrySettings = TelemetrySettings()
    # (path, sha256 of its bytes as read) for each file the loader read itself: a compiled spec whose files
    # only had their stats moved (a touch, a checkout putting the same bytes back) is reused by content
    read: tuple[tuple[str, str], ...] = ()
    # (path, digest of the document read, toml_read.document_digests) for the same files: one whose bytes changed
    # but that reads as the same document (a comment, a blank line) keeps the compiled spec too
    parsed: tuple[tuple[str, str | None], ...] = ()
    # the sub-projects `[project] include` names (runner/subprojects.py): (folder, its [project] default, qualified)
    subprojects: tuple[tuple[str, str | None], ...] = ()
    # (folder, its [worker]) for each sub-project declaring its own: its agent steps' worker (worker_of)
    workers: tuple[tuple[str, WorkerSettings], ...] = ()


def worker_of(spec: Spec, name: str) -> WorkerSettings:
    """The [worker] an intent's agent step uses: its sub-project's own, else the root's."""
    if spec.workers:
        folder = name.rpartition(":")[0]
        for declared, worker in spec.workers:
            if declared == folder:
                return worker
    return spec.worker
