"""Policies: where a change may write, which actions need a human, and the budgets of a step and a run."""

from __future__ import annotations

import fnmatch
import threading
from dataclasses import dataclass, field

from .attempt import PRIVATE, Change
from .spec import Intent, Policy

WRITE_FILES, RUN_SHELL, NETWORK = "write_files", "run_shell", "network"
BOUNDARIES = (WRITE_FILES, RUN_SHELL, NETWORK)


def _matches(path: str, pattern: str) -> bool:
    if fnmatch.fnmatchcase(path, pattern):
        return True
    if pattern.endswith("/**"):
        return path.startswith(pattern[:-3] + "/")
    if "/**/" in pattern:  # src/**/x.py also matches src/x.py
        return fnmatch.fnmatchcase(path, pattern.replace("/**/", "/"))
    return False


def check_change(change: Change, policy: Policy, intent: Intent) -> list[str]:
    """Every reason the change may not be applied; empty when it may."""
    allowed = tuple(policy.scope) + tuple(intent.outputs)
    where = f"policy '{policy.name}'"
    problems = []
    for rel, target in sorted(change.symlinks.items()):
        problems.append(f"{rel}: a symlink (-> {target}) is never applied: it could point outside the project "
                        f"({where})")
    for rel in sorted(change.files):
        parts = rel.split("/")
        if rel.startswith("/") or ".." in parts:
            problems.append(f"{rel}: outside the project ({where})")
        elif parts[0] in PRIVATE:
            problems.append(f"{rel}: inside {parts[0]}/, which no step may write ({where})")
        elif not any(_matches(rel, p) for p in allowed):
            scope = ", ".join(allowed) or "nothing: declare outputs or a scope"
            problems.append(f"{rel}: outside the scope of {where} and the intent's outputs ({scope})")
    if change.files and policy.write_files == "never":
        problems.append(f"{where} forbids writing files (write_files = \"never\")")
    return problems


def needs_approval(boundary: str, policy: Policy, halt_on: frozenset[str]) -> bool:
    """True when crossing this boundary must wait for a human."""
    return getattr(policy, boundary) == "ask" or boundary in halt_on or policy.approval == "manual"


@dataclass
class Spent:
    tokens: int = 0
    seconds: float = 0.0
    attempts: int = 0

    def text(self) -> str:
        plural = "" if self.attempts == 1 else "s"
        return f"{self.tokens} tokens, {self.seconds:.0f}s, {self.attempts} attempt{plural}"


@dataclass
class RunBudget:
    """What a whole run has spent, shared by every agent step (threads)."""

    tokens: int | None = None
    seconds: float | None = None
    attempts: int | None = None
    spent: Spent = field(default_factory=Spent)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def charge(self, tokens: int, seconds: float, attempts: int = 1) -> None:
        with self._lock:
            self.spent.tokens += tokens
            self.spent.seconds += seconds
            self.spent.attempts += attempts

    def exhausted(self) -> str | None:
        with self._lock:
            s = self.spent
            if self.tokens is not None and s.tokens >= self.tokens:
                return f"the run's token budget ({self.tokens}) is spent: {s.text()}"
            if self.seconds is not None and s.seconds >= self.seconds:
                return f"the run's time budget ({self.seconds:g}s) is spent: {s.text()}"
            if self.attempts is not None and s.attempts >= self.attempts:
                return f"the run's attempt budget ({self.attempts}) is spent: {s.text()}"
        return None


def step_budget_exhausted(policy: Policy, spent: Spent) -> str | None:
    b = policy.step_budget
    if b.tokens is not None and spent.tokens >= b.tokens:
        return f"the step's token budget ({b.tokens}, policy '{policy.name}') is spent: {spent.text()}"
    if b.seconds is not None and spent.seconds >= b.seconds:
        return f"the step's time budget ({b.seconds:g}s, policy '{policy.name}') is spent: {spent.text()}"
    if b.attempts is not None and spent.attempts >= b.attempts:
        return f"the step's attempt budget ({b.attempts}, policy '{policy.name}') is spent: {spent.text()}"
    return None
