"""Frozen dataclasses of the declared world: project, worker, policies, adapters, intents. No I/O."""

from __future__ import annotations

from dataclasses import dataclass, field

STEP_SHELL = "shell"
STEP_AGENT = "agent"
STEP_AGGREGATE = "aggregate"


@dataclass(frozen=True)
class Budget:
    tokens: int | None = None
    seconds: float | None = None
    attempts: int | None = None


@dataclass(frozen=True)
class Policy:
    name: str
    approval: str = "delegate"  # manual | confirm-phase | delegate
    write_files: str = "auto"  # never | ask | auto
    run_shell: str = "auto"
    network: str = "never"
    scope: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()
    step_budget: Budget = Budget()
    run_budget: Budget = Budget()


@dataclass(frozen=True)
class WorkerSettings:
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


@dataclass(frozen=True)
class AdapterCommand:
    name: str
    run: str
    parse: tuple[str, ...] = ()  # regex families that parse this command's output


@dataclass(frozen=True)
class Adapter:
    name: str
    source: str  # the file it came from
    description: str = ""
    markers: tuple[str, ...] = ()  # files whose presence detects the toolchain
    confidence: float = 0.5
    commands: tuple[AdapterCommand, ...] = ()

    def command(self, name: str) -> AdapterCommand | None:
        for cmd in self.commands:
            if cmd.name == name:
                return cmd
        return None


@dataclass(frozen=True)
class Intent:
    name: str
    kind: str  # STEP_SHELL | STEP_AGENT | STEP_AGGREGATE
    deps: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
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

    def definition(self) -> dict:
        """What the user wrote that changes what the step does (part of its key)."""
        return {
            "kind": self.kind, "run": self.run, "goal": self.goal, "acceptance": list(self.acceptance),
            "inputs": list(self.inputs), "outputs": list(self.outputs), "prompt": self.prompt,
            "adapter": self.adapter, "verify": list(self.verify), "candidates": self.candidates,
            "max_attempts": self.max_attempts, "env": [list(kv) for kv in self.env], "cwd": self.cwd,
        }


@dataclass(frozen=True)
class Project:
    name: str
    default: str | None = None
    description: str = ""


@dataclass(frozen=True)
class Spec:
    """Everything loaded from a project's TOML files, validated."""

    root: str
    project: Project
    worker: WorkerSettings
    policies: dict[str, Policy] = field(default_factory=dict)
    adapters: dict[str, Adapter] = field(default_factory=dict)
    intents: dict[str, Intent] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)  # prompt name -> file path
    sources: tuple[str, ...] = ()  # every file the spec was read from (for the spec cache)
