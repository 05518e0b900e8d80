"""Policies: where a change may write, which actions need a human, and the budgets of a step and a run."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from .attempt import PRIVATE, Change
from .globs import matches_any
from .spec import Intent, Policy

WRITE_FILES, RUN_SHELL, NETWORK = "write_files", "run_shell", "network"
BOUNDARIES = (WRITE_FILES, RUN_SHELL, NETWORK)


def check_change(change: Change, policy: Policy, intent: Intent) -> list[str]:
    """Every reason the change may not be applied; empty when it may."""
    allowed = tuple(policy.scope) + tuple(intent.outputs)
    where = f"policy '{policy.name}'"
    problems = []
    for rel, target in sorted(change.symlinks.items()):
        problems.append(
            f"{rel}: a symlink (-> {target}) is never applied: it could point outside the project ({where})"
        )
    for rel in sorted(change.files):
        parts = rel.split("/")
        if rel.startswith("/") or ".." in parts:
            problems.append(f"{rel}: outside the project ({where})")
        elif parts[0] in PRIVATE:
            problems.append(f"{rel}: inside {parts[0]}/, which no step may write ({where})")
        elif not matches_any(rel, allowed):
            scope = ", ".join(allowed) or "nothing: declare outputs or a scope"
            problems.append(f"{rel}: outside the scope of {where} and the intent's outputs ({scope})")
    if change.files and policy.write_files == "never":
        problems.append(f'{where} forbids writing files (write_files = "never")')
    return problems


def writable_scope(policy: Policy, intent: Intent) -> str:
    """Where the policy lets the step write, in words (its outputs, then the policy's scope)."""
    parts = [f"outputs {', '.join(intent.outputs)}"] if intent.outputs else []
    if policy.scope:
        parts.append(f"the scope of policy '{policy.name}': {', '.join(policy.scope)}")
    return " or ".join(parts) or "nothing (declare outputs or a scope)"


def only_outside_scope(change: Change, policy: Policy, intent: Intent) -> bool:
    """The change wrote files, every one an ordinary path outside what the policy lets it write (no escape, no
    symlink, nothing private): an attempt that missed where to write, which the next attempt can mend."""
    if not change.files or change.symlinks or policy.write_files == "never":
        return False
    allowed = tuple(policy.scope) + tuple(intent.outputs)
    for rel in change.files:
        parts = rel.split("/")
        if rel.startswith("/") or ".." in parts or parts[0] in PRIVATE or matches_any(rel, allowed):
            return False
    return True


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
            return _spent_past(self, self.spent, "the run's", "")


def step_budget_exhausted(policy: Policy, spent: Spent) -> str | None:
    return _spent_past(policy.step_budget, spent, "the step's", f", policy '{policy.name}'")


def _spent_past(budget, spent: Spent, whose: str, where: str) -> str | None:
    """Which limit of `budget` (tokens, seconds, attempts) `spent` has reached, in words; None if none."""
    for kind, limit, used, shown in (
        ("token", budget.tokens, spent.tokens, budget.tokens),
        ("time", budget.seconds, spent.seconds, f"{budget.seconds or 0:g}s"),
        ("attempt", budget.attempts, spent.attempts, budget.attempts),
    ):
        if limit is not None and used >= limit:
            return f"{whose} {kind} budget ({shown}{where}) is spent: {spent.text()}"
    return None
