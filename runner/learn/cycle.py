"""One learning pass over a project: move every candidate through the gate by what the runs observed, then
propose new candidates from the misses the runs recorded, score them, and write the survivors in shadow; and
the pieces the other `runner learn` commands share (the candidates as their files record them, a rollback)."""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from pathlib import Path

from .. import parse, toml_read
from ..errors import UserError
from ..names import stored
from ..workspace import Layout
from . import writeback
from .gate import Move, Settings, Standing, evaluate
from .propose import Candidate
from .score import Thresholds, score


def today() -> str:
    return datetime.date.today().isoformat()


def settings_of(root: Path, spec_file: str = "intents.toml") -> Settings:
    """The [learn] table (validated with the rest of the spec by `runner validate` and every command)."""
    try:
        data = toml_read.loads((root / spec_file).read_text(encoding="utf-8"))
    except (OSError, toml_read.TOMLDecodeError):
        data = {}
    return Settings.of(data.get("learn"))


def _family_files(root: Path) -> list[Path]:
    folder = root / "regexes"
    return sorted(folder.glob("*.toml")) if folder.is_dir() else []


def standings(root: Path, stages: tuple[str, ...] = ("shadow", "canary")) -> list[Standing]:
    """Every pattern of the project's own families in these stages, with its gate record, in file order."""
    found = []
    for path in _family_files(root):
        try:
            doc = toml_read.loads(path.read_text(encoding="utf-8"))
        except (OSError, toml_read.TOMLDecodeError) as exc:
            raise UserError(f"{path}: cannot be read ({exc}); `runner validate` says where") from None
        for table in doc.get("pattern", ()):
            stage = table.get("stage", "active")
            if stage in stages:
                found.append(
                    Standing(
                        doc.get("family", path.stem),
                        table["name"],
                        stage,
                        path,
                        dict(table.get("gate", {})),
                        table.get("replaces"),
                        table.get("regex"),
                    )
                )
    return found


@dataclass
class Report:
    """What a pass did, and why: the lines `runner learn` prints, the object `--json` prints."""

    dry_run: bool
    projected_model_calls: int = 0
    mined: int = 0
    moves: list[Move] = field(default_factory=list)
    proposed: list[dict] = field(default_factory=list)  # scored candidates: name, kind, regex, score, verdict
    notes: list[str] = field(default_factory=list)
    model_calls: int = 0
    model_tokens: int = 0
    model_reused: int = 0  # answers a pass that stopped part-way paid for, read back rather than asked again

    def to_json(self) -> dict:
        return {
            "dry_run": self.dry_run,
            "projected_model_calls": self.projected_model_calls,
            "model_calls": self.model_calls,
            "model_tokens": self.model_tokens,
            "model_reused": self.model_reused,
            "mined": self.mined,
            "moved": [
                {"pattern": m.standing.ref, "from": m.standing.stage, "to": m.to, "weight": _weight(m), "why": m.why}
                for m in self.moves
            ],
            "proposed": self.proposed,
            "notes": self.notes,
        }


def _weight(move: Move) -> int | None:
    if move.to != "canary":
        return None
    return move.gate.get("weight", move.standing.gate.get("weight"))


_COUNTS = ("runs", "failed_checks", "disagreements")  # gate counters: an absent one is 0


def changes_nothing(move: Move) -> bool:
    """A stay on which no run since the candidate's last record observed anything: its record would differ
    only in `since`, moved past runs that held nothing for it. Not written, so that a pass over runs that
    bring nothing new leaves the family files as they were, and a scheduled pass proposes no change."""
    if move.moved or move.also:
        return False
    before = move.standing.gate
    return all(
        value == before.get(key, 0 if key in _COUNTS else None) for key, value in move.gate.items() if key != "since"
    )


def apply_moves(moves: list[Move], today_text: str) -> None:
    """Write every move into its family's file (a prompt's variants into its candidates file), one write per
    file; a move that changes nothing (a stay with nothing observed, a variant waiting for a human) is left out."""
    by_file: dict[tuple[Path, str], dict[str, dict]] = {}
    for move in moves:
        if changes_nothing(move):
            continue
        where = (move.standing.file, "candidate" if move.standing.family.startswith("prompt:") else "pattern")
        change: dict = {"gate": dict(move.gate)}
        if move.to != move.standing.stage:
            change["stage"] = move.to
        if move.moved:
            change["gate"]["history"] = f"{today_text} {move.why}"
        by_file.setdefault(where, {})[move.standing.name] = change
        for name, other in move.also.items():
            by_file[where][name] = other
    forgotten: dict[Path, list[dict]] = {}  # retired by the gate: remembered, so never proposed again
    for move in moves:
        if move.to == "retired" and move.standing.regex and not move.standing.family.startswith("prompt:"):
            reason = move.gate.get("reason") or move.why
            forgotten.setdefault(move.standing.file, []).append(
                {"regex": move.standing.regex, "reason": f"{move.standing.name}: {reason}", "date": today_text}
            )
    for (path, key), changes in by_file.items():
        writeback.update_patterns(path, changes, key=key)
    for path, entries in forgotten.items():
        writeback.remember_rejected(path, entries)


def learn_pass(root: Path, dry_run: bool = False, spec_file: str = "intents.toml", on_projection=None) -> Report:
    """Gate moves for the candidates there are, then new candidates into shadow: induced from what the recorded
    runs missed, then (where [learn] model_calls allows and a model is configured) asked of the model for the
    lines induction could not read. `on_projection(n)` hears the projected model calls before any is made.

    What is decided is written as it is decided: the gate's moves first, then the induced candidates, then each
    model call's; a pass that stops part-way (a model call that fails, an interrupt) keeps what came before."""
    settings = settings_of(root, spec_file)
    layout = Layout(root)
    report = Report(dry_run)
    day = today()
    from . import prompts

    found = standings(root)
    _observe_late(root, layout.runs_dir, found)
    report.moves = [evaluate(s, layout.runs_dir, settings, day) for s in found]
    report.moves += [
        prompts.evaluate(root, s, layout.runs_dir, settings)
        for s in prompts.standings(root)
        if s.stage in ("proposed", "canary")
    ]
    if not dry_run:
        apply_moves(report.moves, day)
        ledger = Ledger(root)
        ledger.note_moves(report.moves)
        ledger.save()
    restored = propose_from_runs(root, settings, report, spec_file, on_projection)
    if restored and not dry_run:
        # taken up from the ledger: moved on in this pass by the evidence the builds recorded since
        again = [s for s in standings(root) if (s.family, s.name) in set(restored)]
        _observe_late(root, layout.runs_dir, again)
        moves = [evaluate(s, layout.runs_dir, settings, day) for s in again]
        apply_moves(moves, day)
        ledger = Ledger(root)
        ledger.note_moves(moves)
        ledger.save()
        report.moves += moves
    return report


def _observe_late(root: Path, runs_dir: Path, found: list[Standing]) -> None:
    """Each candidate's observations on the runs since its last move that recorded none for it (they were built
    from a checkout without it: the main branch, while the pull request that proposed it waited)."""
    from ..errors import RunnerError
    from ..load import load_spec
    from ..record import runs_after
    from ..shadow import observe_late

    if not found:
        return
    try:
        spec = load_spec(root)
        library = parse.load_library([parse.builtin_dir(), root / "regexes"])
    except RunnerError:
        return  # `runner validate` says what is wrong; the gate moves on what was observed
    for standing in found:
        family = library.families.get(standing.family)
        if family is None:
            continue
        candidate = next((p for p in family.patterns if p.name == standing.name), None)
        if candidate is not None:
            observe_late(spec, runs_dir, family, candidate, runs_after(runs_dir, standing.gate.get("since")))


class Ledger:
    """The candidates the passes proposed, by family and regex, with their stage and gate record as last
    written: kept in .runner/learn/ledger.json, which CI keeps between builds with the run records, so that a
    pass on a checkout without them (their pull request not merged) takes each up where it stood, evidence and
    all, instead of proposing it again from zero."""

    def __init__(self, root: Path):
        self.path = root / ".runner" / "learn" / "ledger.json"
        try:
            self.entries: dict[str, dict] = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.entries = {}

    @staticmethod
    def key(family: str, regex: str) -> str:
        return f"{family}\t{regex}"

    def get(self, family: str, regex: str) -> dict | None:
        return self.entries.get(self.key(family, regex))

    def note(self, family: str, table: dict) -> None:
        self.entries[self.key(family, table["regex"])] = {
            k: v for k, v in table.items() if k in ("name", "kind", "stage", "gate")
        }

    def note_moves(self, moves: list[Move]) -> None:
        for move in moves:
            s = move.standing
            if s.regex is None or s.family.startswith("prompt:"):
                continue
            entry = self.entries.setdefault(self.key(s.family, s.regex), {"name": s.name, "gate": dict(s.gate)})
            gate = {**entry.get("gate", {}), **{k: v for k, v in move.gate.items() if v is not None}}
            for k, v in move.gate.items():
                if v is None:
                    gate.pop(k, None)
            entry.update(stage=move.to, gate=gate)

    def save(self) -> None:
        from ..toml_write import replace_file

        if self.entries:
            replace_file(self.path, json.dumps(self.entries, indent=1, sort_keys=True).encode("utf-8"))


def shadow_gate(candidate: Candidate, latest_run: str | None, verdict) -> dict:
    """The gate record a scored candidate enters shadow with."""
    gate: dict = {
        "runs": 0,
        "failed_checks": 0,
        "precision": verdict.precision,
        "recall": verdict.recall,
        "lines": verdict.lines,
        "source": candidate.source,
        "history": [
            f"{today()} shadow: {candidate.source} from {len(candidate.lines)} line(s); "
            f"precision {verdict.precision:.2f}, recall {verdict.recall:.2f} on {verdict.lines} recorded lines"
        ],
    }
    if latest_run:
        gate["since"] = latest_run
    return gate


class _Proposals:
    """Scored candidates of a pass, by family file, written as they are decided (unless a dry run); what was
    dropped, remembered with its reason in its family's file so that no later pass proposes it again."""

    def __init__(self, root: Path, report: Report, thresholds: Thresholds, latest: str | None):
        self.root, self.report, self.thresholds, self.latest = root, report, thresholds, latest
        self.out: dict[Path, tuple[str, list[dict]]] = {}
        self.dropped: dict[Path, list[dict]] = {}
        self.ledger = Ledger(root)
        self.restored: list[tuple[str, str]] = []  # (family, name) taken up again from the ledger

    def judge(self, candidate: Candidate, family: str, existing, logs: list, beside: list | None = None) -> str | None:
        """Score a candidate (with the candidates kept for its command so far, `beside`); keep it for shadow if it
        passes. Returns why it did not (None when it did)."""
        from .score import as_pattern

        verdict = score(candidate, existing, family, logs, self.thresholds, beside=beside or ())
        why = "; ".join(verdict.problems) or None
        self.report.proposed.append(
            {
                "name": candidate.name,
                "family": family,
                "kind": candidate.kind,
                "regex": candidate.regex,
                "source": candidate.source,
                "precision": verdict.precision,
                "recall": verdict.recall,
                "verdict": "shadow" if verdict.passed else "dropped",
                "why": why,
            }
        )
        path = self.root / "regexes" / f"{family}.toml"
        if not verdict.passed:
            entry = {"regex": candidate.regex, "reason": f"{candidate.name}: dropped: {why}", "date": today()}
            self.dropped.setdefault(path, []).append(entry)
            return why
        if candidate.source == "model":
            candidate.lines = [t for t in candidate.lines if parse.re2_fullmatch(candidate.regex, t) is not None]
            candidate.examples = [
                {
                    "text": t,
                    "expect": {k: v for k, v in (parse.re2_fullmatch(candidate.regex, t) or {}).items() if v},
                }
                for t in list(dict.fromkeys(candidate.lines))[:5]
            ]
        table = candidate.table("shadow", shadow_gate(candidate, self.latest, verdict))
        kept = self.ledger.get(family, candidate.regex)
        if kept is not None and kept.get("stage") in ("shadow", "canary"):
            # proposed before, on a checkout this pass does not see: it goes on from where it stood
            table.update(name=kept.get("name", table["name"]), stage=kept["stage"], gate=dict(kept.get("gate") or {}))
            history = list(table["gate"].get("history") or [])
            table["gate"]["history"] = [
                *history,
                f"{today()} taken up again from the ledger: its pull request was not merged",
            ]
            self.restored.append((family, table["name"]))
        self.ledger.note(family, table)
        self.out.setdefault(path, (family, []))[1].append(table)
        if beside is not None:
            beside.append(as_pattern(candidate, family))
        return None

    def write(self) -> None:
        """What was decided since the last write, into the family files (nothing on a dry run)."""
        if not self.report.dry_run:
            for path, (family, tables) in self.out.items():
                writeback.add_patterns(path, family, tables)
            for path, entries in self.dropped.items():
                writeback.remember_rejected(path, entries, family=path.stem)
            self.ledger.save()
        self.out, self.dropped = {}, {}


def propose_from_runs(
    root: Path, settings: Settings, report: Report, spec_file: str = "intents.toml", on_projection=None
) -> list[tuple[str, str]]:
    """New candidates from what the recorded runs missed, scored, written into shadow as they are decided;
    returns the (family, name) of those taken up again from the ledger (proposed before, never merged)."""
    from .gather import mine
    from .propose import candidates_from_lines

    mined = mine(root)
    report.mined = len(mined.misses)
    library = parse.load_library([parse.builtin_dir(), root / "regexes"])
    proposals = _Proposals(
        root, report, Thresholds(settings.precision, settings.recall), mined.runs[-1] if mined.runs else None
    )
    taken = {p.name for fam in library.families.values() for p in fam.patterns}
    known = _known_regexes(root, library)
    unread: list[tuple] = []  # groups with lines no kept candidate reads: (group, family, lines, rejected, logs)
    for group in mined.lines_for_induction():
        family = target_family(root, group.families, group.own)
        if family is None:
            _set_aside(report, group, "its command names only the generic families and no tool to name one after")
            continue
        existing = library.families.get(family)
        logs = _logs_of(root, mined, group)
        # the misses are judged against the active patterns: a line a candidate already reads is not new
        live = [p for p in existing.patterns if p.stage != "retired"] if existing else []
        lines = [line for line in group.lines if not any(p.search(line) for p in live)]
        if not lines:
            continue
        kept: list[str] = []
        rejected: list[tuple[str, str]] = []
        beside: list = []  # the candidates kept for this command: scored together
        for candidate in candidates_from_lines(lines, family, taken):
            if candidate.kind == "event":
                continue  # a line that says neither a count, a failing test nor a location changes no finding
            if candidate.regex in known:
                note = f"not proposed again: {family}/{candidate.name} {known[candidate.regex]}"
                if note not in report.notes:
                    report.notes.append(note)
                continue
            taken.add(candidate.name)
            why = proposals.judge(candidate, family, existing, logs, beside)
            known[candidate.regex] = f"was {'dropped' if why else 'proposed'} by this pass"
            (rejected.append((candidate.regex, why)) if why else kept.append(candidate.regex))
        left = [
            line
            for line in lines
            if not any(parse.re2_fullmatch(regex, line) is not None for regex in kept) and _says_something(line)
        ]
        if left:
            unread.append((group, family, left, rejected, logs))
    proposals.write()  # the induced candidates stand whatever the model's turn does
    spec = _model_spec(root, spec_file) if settings.model_calls else None
    templates = _templates_to_improve(root, spec, mined) if spec is not None else []
    calls = min(settings.model_calls, len(unread) + len(templates)) if spec is not None else 0
    report.projected_model_calls = calls
    if on_projection is not None:
        on_projection(calls)
    for group, family, left, _rejected, _logs in unread[calls:] if spec is not None else unread:
        if not report.dry_run or spec is None:
            _set_aside(report, group, "induction made no pattern that scores for them", left, family)
    if report.dry_run:
        return proposals.restored
    from .model import ask, ask_for_template

    budget = _token_budget(spec) if spec is not None else None  # no spec read: [learn] model_calls is 0
    for group, family, left, rejected, logs in unread[:calls]:
        if _spent(report, budget):
            break
        asked = ask(spec, group.command or group.own or group.adapter or family, left, rejected, family)
        _count_call(report, asked.tokens, asked.reused)
        if asked.error:
            report.notes.append(f"the model proposed nothing for {family}: {asked.error}")
        beside = []
        for candidate in asked.candidates:
            n = 2
            base = candidate.name
            while candidate.name in taken:
                candidate.name, n = f"{base}-{n}", n + 1
            if candidate.regex in known:
                report.notes.append(f"not proposed again: {family}/{candidate.name} {known[candidate.regex]}")
                continue
            taken.add(candidate.name)
            known[candidate.regex] = "was proposed by this pass"
            proposals.judge(candidate, family, library.families.get(family), logs, beside)
        proposals.write()  # each call's candidates as soon as they are scored: a later failure loses none
    for name, template, failures in templates[: max(0, calls - len(unread[:calls]))]:
        if _spent(report, budget):
            break
        text, tokens, error, reused = ask_for_template(spec, name, template, failures)
        _count_call(report, tokens, reused)
        if text is None:
            report.notes.append(f"the model proposed no variant of prompts/{name}.md: {error}")
            continue
        variant = f"learned-{today()}"
        writeback.add_prompt_candidate(
            root / "prompts" / f"{name}.candidates.toml",
            name,
            variant,
            text,
            "proposed",
            {"source": "model", "history": [f"{today()} proposed by the model after {len(failures)} failing line(s)"]},
        )
        report.proposed.append(
            {
                "name": variant,
                "family": f"prompt:{name}",
                "kind": "prompt",
                "regex": None,
                "source": "model",
                "precision": None,
                "recall": None,
                "verdict": "proposed",
                "why": "a prompt variant waits for `runner approve --prompt` (it cannot be scored offline)",
            }
        )
    return proposals.restored


def _count_call(report: Report, tokens: int, reused: bool) -> None:
    """A model answer: paid for now, or one a pass that stopped part-way paid for (never paid twice)."""
    if reused:
        report.model_reused += 1
        return
    report.model_calls += 1
    report.model_tokens += tokens


def _set_aside(report: Report, group, why: str, lines=None, family: str | None = None) -> None:
    """A note that says which missed lines the pass made no pattern for, why, and what the user can do."""
    lines = list(lines if lines is not None else group.lines)
    steps = ", ".join(group.steps) or "?"
    where = f"{family}" if family else (group.command or group.own or "a plain run line")
    what = f"{len(lines)} missed line{'s' if len(lines) != 1 else ''} of step {steps} ({where})"
    if family is None:
        todo = "give the step an adapter whose command's `parse` names a family of its own (regexes/NAME.toml)"
    else:
        todo = (
            "set [learn] model_calls and a [worker] for the model to propose one, or write one by hand in "
            f"regexes/{family}.toml"
        )
    first = lines[0] if lines else ""
    report.notes.append(f"set aside {what}: {why}, e.g. {first!r}; {todo}")


def _known_regexes(root: Path, library) -> dict[str, str]:
    """Every regex a candidate must not repeat, with why: live in a pattern (any family), retired, or dropped or
    rejected before (a family file's `rejected` memory, which outlives the pattern's deletion)."""
    known: dict[str, str] = {}
    for fam in library.families.values():
        for p in fam.patterns:
            known.setdefault(p.regex, f"is {fam.name}/{p.name}'s regex ({p.stage})")
    for path in _family_files(root):
        try:
            doc = toml_read.loads(path.read_text(encoding="utf-8"))
        except (OSError, toml_read.TOMLDecodeError):
            continue
        for entry in doc.get("rejected", ()):
            known.setdefault(entry["regex"], f"was rejected on {entry.get('date', '?')} ({entry.get('reason', '')})")
    return known


def _templates_to_improve(root: Path, spec, mined) -> list[tuple[str, str, list[str]]]:
    """(template name, its text, the failing lines) for each prompt whose agent steps failed their verify at the
    first attempt (or never converged) in the recorded runs, and that has no variant proposed or in canary."""
    from ..prompts import read_candidates

    failures: dict[str, list[str]] = {}
    for miss in mined.misses:
        if miss.kind not in ("verify-failed-first", "retry-not-converged") or miss.step not in spec.intents:
            continue
        prompt = spec.intents[miss.step].prompt
        if prompt and prompt in spec.prompts:
            lines = failures.setdefault(prompt, [])
            lines += [line.text for line in miss.lines if line.text not in lines]
    found = []
    for name, lines in sorted(failures.items()):
        if any(c.stage in ("proposed", "canary") for c in read_candidates(root, name)):
            continue  # one variant at a time: the last one has not been judged yet
        found.append((name, Path(spec.prompts[name]).read_text(encoding="utf-8"), lines))
    return found


def _token_budget(spec) -> int | None:
    """The tokens a pass may spend on the model: the default policy's run budget, else its step budget (the
    budgets any agent step spends under), else none beyond [learn] model_calls."""
    policy = spec.policies.get("default")
    if policy is None:
        return None
    return policy.run_budget.tokens or policy.step_budget.tokens


def _spent(report: Report, budget: int | None) -> bool:
    """Whether the pass's model tokens reached the budget (said once in the report's notes)."""
    if budget is None or report.model_tokens < budget:
        return False
    note = f"no more model calls: the default policy's token budget ({budget}) is spent ({report.model_tokens} tokens)"
    if note not in report.notes:
        report.notes.append(note)
    return True


def _says_something(line: str) -> bool:
    """A line worth a pattern: one with a count (a count word beside a number: `3 passed`, `failures=2`), a
    failure word or a location (what propose.py gives a kind). A passing test's line (`Test that x raises an
    error ... ok`) holds count words but no count."""
    import re

    from .propose import COUNT_WORDS, FAIL_WORD, LOCATION

    words = "|".join(sorted(COUNT_WORDS))
    counted = re.search(rf"\d+\s*(?:{words})\b|\b(?:{words})\s*[:=]?\s*\d+", line, re.IGNORECASE)
    return bool(FAIL_WORD.search(line) or LOCATION.search(line) or counted)


def _model_spec(root: Path, spec_file: str):
    """The project's spec when its [worker] can answer a proposal (an openai or codex worker: the openai worker
    is called with its model, key and base_url), else None: a replay worker has nothing recorded for this."""
    from ..compiled import load_compiled

    spec = load_compiled(root, spec_file=spec_file).spec
    return spec if spec.worker.kind in ("openai", "codex") else None


def target_family(root: Path, families: tuple[str, ...], own: str | None = None) -> str | None:
    """Where patterns for a command's output go: the first family in the command's `parse` order that the
    project has a file for (a project's file of a built-in family's name adds to it), else the first it names;
    never the generic ones (diagnostics, causes) on their own: a command that names only those gets its tool's
    own family (`own`, made in regexes/ with its first pattern). None when there is neither."""
    from ..identify import GENERIC

    named = [f for f in families if f not in GENERIC]
    for family in named:
        if (root / "regexes" / f"{family}.toml").is_file():
            return family
    return named[0] if named else own


def _logs_of(root: Path, mined, group) -> list[tuple[str, bool | None]]:
    """The recorded logs of a group's steps in the runs read, passing ones too, each with whether its command
    passed: what its candidates are scored on."""
    from ..excerpt import read_text
    from ..record import read_events
    from .mine import command_failed

    runs_dir = Layout(root).runs_dir
    found: list[tuple[str, bool | None]] = []
    seen: set[str] = set()
    for run in mined.runs:
        try:
            events = read_events(runs_dir, run)
        except OSError:
            continue
        for e in events:
            if e.get("event") != "step_finished" or e.get("intent") not in group.steps or "agent" in e:
                continue
            text = read_text(runs_dir / run / "logs" / f"{stored(e['intent'])}.log")
            if text.startswith("$ "):  # the runner's own line above what the command printed
                text = text.split("\n", 1)[1] if "\n" in text else ""
            if text and text not in seen:
                seen.add(text)
                found.append((text, e.get("status") == "ran" if not command_failed(e) else False))
    paths = dict.fromkeys(m.log for m in mined.misses if m.log and m.step in group.steps and "/attempts/" in m.log)
    found += [(text, None) for text in (read_text(root / p) for p in paths) if text and text not in seen]
    return found


def rollback(root: Path, name: str | None = None) -> list[str]:
    """Undo the last promotion (or the named pattern's): it is retired, and the pattern it replaced is active
    again. Returns what was done, a line each."""
    promoted = [s for s in standings(root, ("active",)) if s.gate.get("promoted")]
    if name:
        promoted = [s for s in promoted if s.name == name or s.ref == name]
        if not promoted:
            raise UserError(f"no promoted pattern named {name!r}: `runner learn status` lists them")
    if not promoted:
        raise UserError("nothing to roll back: no pattern was promoted by `runner learn`")
    last = max(promoted, key=lambda s: (s.gate["promoted"], s.ref))
    day = today()
    from .mine import recorded_runs

    runs = recorded_runs(root)
    after = runs[-1] if runs else None  # the runs after this one read without it (audit.py)
    changes = {
        last.name: {
            "stage": "retired",
            "gate": {
                "promoted": None,
                "reason": f"rolled back on {day}",
                "history": f"{day} rolled back by hand",
                "retired_after": after,
            },
        }
    }
    done = [f"{last.ref}: active -> retired"]
    if last.replaces:
        changes[last.replaces] = {
            "stage": "active",
            "gate": {
                "reason": None,
                "history": f"{day} active again: {last.name} rolled back",
                "retired_after": None,
                "active_after": after,
            },
        }
        done.append(f"{last.family}/{last.replaces}: retired -> active")
    writeback.update_patterns(last.file, changes)
    return done


def approve_pattern(root: Path, ref: str, reject: bool) -> str:
    """`runner approve --pattern FAMILY/NAME`: promote a canary pattern that is ready ([learn] approve_patterns),
    or (`reject`) retire it. Returns what was done, in a line."""
    from .gate import promotion

    found = [s for s in standings(root) if s.ref == ref or s.name == ref]
    if not found:
        waiting = ", ".join(s.ref for s in standings(root) if s.gate.get("ready")) or "none"
        raise UserError(f"no candidate pattern {ref!r} (ready for approval: {waiting})")
    standing, day = found[0], today()
    if reject:
        move = Move(standing, "retired", {"weight": None, "ready": None, "reason": "rejected by hand"}, "rejected")
    elif standing.gate.get("ready"):
        move = promotion(standing, {}, "approved: promoted", day)
    else:
        raise UserError(f"{standing.ref} is in {standing.stage}: not ready to promote (`runner learn status`)")
    apply_moves([move], day)
    return f"{standing.ref}: {standing.stage} -> {move.to}"
