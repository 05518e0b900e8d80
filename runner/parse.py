"""The regex library: load regexes/FAMILY.toml, validate, compile under RE2, apply to text (findings.py reads logs)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path

import re2

from runner import toml_read
from runner.errors import Problem, SpecError, UserError
from runner.keys import canary_slot
from runner.redos import check_redos
from runner.suggest import did_you_mean as _did_you_mean

STAGES = ("shadow", "canary", "active", "retired")
DEFAULT_STAGES = ("active",)
CANDIDATE_STAGES = ("shadow", "canary")  # what the learning loop's gate moves: never used but as it says
_FLAG_PREFIX = {"ignorecase": "i", "multiline": "m", "dotall": "s"}
_CHUNK_LINES = 128  # lines per pre-filter probe: most log lines match nothing, so skip them in bulk


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # absl would print every refused proposal to stderr
    return options


def builtin_dir() -> Path:
    """The regexes that ship with runner (the repository's top-level regexes/ folder)."""
    return Path(str(resources.files("runner") / "builtin" / "regexes"))


# ---------------------------------------------------------------------------------------------------------------
# The declared world


@dataclass(frozen=True)
class Example:
    text: str
    expect: dict[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Match:
    """One pattern's hit: offsets are into the text given to finditer."""

    pattern: str
    kind: str
    fields: dict[str, str | None]
    start: int
    end: int


@dataclass(frozen=True)
class Pattern:
    family: str
    name: str
    regex: str
    kind: str
    flags: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    stage: str = "active"
    scope: str = "line"
    count: str | None = None
    aggregate: str = "sum"
    cause: str | None = None
    until_next: str | None = None
    replaces: str | None = None
    exclude: tuple[str, ...] = ()
    zero: tuple[str, ...] = ()
    examples: tuple[Example, ...] = ()
    counterexamples: tuple[Example, ...] = ()
    file: str = ""
    line: int | None = None
    weight: int = 0  # a canary's share of steps, in percent ([pattern.gate] weight)
    since: str | None = None  # the run after which its current stage or weight counts ([pattern.gate] since)

    @property
    def ref(self) -> str:
        """family/name: how the gate and its records name a pattern."""
        return f"{self.family}/{self.name}"

    def used_for(self, slice_key: str | None) -> bool:
        """Whether a step whose key (without candidates) is `slice_key` uses this pattern: an active one always,
        a canary one for its weight's slice of steps, a shadow or retired one never."""
        if self.stage == "active":
            return True
        return self.stage == "canary" and slice_key is not None and canary_slot(slice_key, self.ref) < self.weight

    @property
    def full_regex(self) -> str:
        """The regex with its flags inlined, as RE2 sees it."""
        letters = "".join(_FLAG_PREFIX[f] for f in self.flags)
        return f"(?{letters}){self.regex}" if letters else self.regex

    @cached_property
    def compiled(self) -> re2._Regexp:
        return re2.compile(self.full_regex, _options())

    def definition(self) -> dict:
        """What changes findings (examples, descriptions, the stage and the gate's records do not: a canary
        promoted to active finds what it found): the input of Library.digest."""
        return {
            "name": self.name,
            "regex": self.regex,
            "flags": list(self.flags),
            "fields": list(self.fields),
            "kind": self.kind,
            "scope": self.scope,
            "count": self.count,
            "aggregate": self.aggregate,
            "cause": self.cause,
            "until_next": self.until_next,
            "replaces": self.replaces,
            "exclude": list(self.exclude),
            "zero": list(self.zero),
        }

    def search(self, text: str):
        """One RE2 search, dropping a hit whose text holds an `exclude` string (RE2 has no lookahead)."""
        m = self.compiled.search(text)
        if m is not None and self.exclude and any(x in m.group(0) for x in self.exclude):
            return None
        return m

    def finditer(self, text: str):
        for m in self.compiled.finditer(text):
            if not (self.exclude and any(x in m.group(0) for x in self.exclude)):
                yield m

    def match_fields(self, m) -> dict[str, str | None]:
        return {name: m.group(name) for name in self.fields}


class Family:
    """An ordered list of patterns; the order is the priority where kinds conflict."""

    def __init__(self, name: str, patterns: Iterable[Pattern], description: str = "", file: str = ""):
        self.name = name
        self.patterns = tuple(patterns)
        self.description = description
        self.file = file
        self.replace = False  # set from the file's `replace = true`: drop the earlier family of this name
        self.identify: tuple[str, ...] = ()  # regexes of lines that say a log is this tool's (identify.py)
        self._plans: dict[tuple[str, ...], _Plan] = {}

    def __repr__(self) -> str:
        return f"Family({self.name!r}, {len(self.patterns)} patterns)"

    def pattern(self, name: str) -> Pattern:
        for p in self.patterns:
            if p.name == name:
                return p
        raise UserError(
            f"family {self.name!r} has no pattern {name!r}" + _did_you_mean(name, [p.name for p in self.patterns])
        )

    def select(self, stages: Iterable[str] = DEFAULT_STAGES) -> tuple[Pattern, ...]:
        """The patterns of these stages; a selected candidate that `replaces` another drops the one it replaces."""
        stages = tuple(stages)
        chosen = [p for p in self.patterns if p.stage in stages]
        replaced = {p.replaces for p in chosen if p.replaces}
        return tuple(p for p in chosen if p.name not in replaced)

    def used(self, slice_key: str | None = None) -> tuple[Pattern, ...]:
        """The patterns a step whose key (without candidates) is `slice_key` uses: the active ones, and a canary
        where the step falls in its slice, in place of the pattern it replaces. None: the active ones alone."""
        chosen = [p for p in self.patterns if p.used_for(slice_key)]
        replaced = {p.replaces for p in chosen if p.replaces}
        return tuple(p for p in chosen if p.name not in replaced)

    def with_candidate(self, candidate: Pattern) -> tuple[Pattern, ...]:
        """The active patterns with one candidate used beside them (in place of the one it replaces): what a
        shadow candidate would find, compared with what the active ones do."""
        chosen = [p for p in self.patterns if p.stage == "active" or p is candidate]
        return tuple(p for p in chosen if p.name != candidate.replaces)

    def candidates(self) -> tuple[Pattern, ...]:
        return tuple(p for p in self.patterns if p.stage in CANDIDATE_STAGES)

    def _plan(self, stages: tuple[str, ...]) -> _Plan:
        if stages not in self._plans:
            self._plans[stages] = _Plan(self.select(stages))
        return self._plans[stages]

    def _plan_of(self, patterns: tuple[Pattern, ...]) -> _Plan:
        names = ("=",) + tuple(p.name for p in patterns)  # "=": not a stage, so never a stages key
        if names not in self._plans:
            self._plans[names] = _Plan(patterns)
        return self._plans[names]

    def finditer_patterns(self, text: str, patterns: tuple[Pattern, ...]) -> Iterator[Match]:
        """Every hit of these patterns (of this family, as `used` or `with_candidate` chose them)."""
        return iter(self._plan_of(patterns).run(text))

    def finditer(self, text: str, stages: Iterable[str] = DEFAULT_STAGES) -> Iterator[Match]:
        """Every hit of the selected patterns, in text order (then pattern order), via re2.Set candidates."""
        return iter(self._plan(tuple(stages)).run(text))

    def finditer_naive(self, text: str, stages: Iterable[str] = DEFAULT_STAGES) -> Iterator[Match]:
        """The reference implementation: every pattern on every line, no Set. For tests and the benchmark."""
        plan = self._plan(tuple(stages))
        hits: list[tuple[int, int, Pattern, object, int]] = []
        for order, p in enumerate(plan.patterns):
            if p.scope == "text":
                hits += [(m.start(), order, p, m, 0) for m in p.finditer(text)]
                continue
            offset = 0
            for line in text.split("\n"):
                m = p.search(line)
                if m:
                    hits.append((offset + m.start(), order, p, m, offset))
                offset += len(line) + 1
        return iter(plan.finish(text, hits))


class _Plan:
    """Compiled matching machinery for one selection of a family's patterns."""

    def __init__(self, patterns: tuple[Pattern, ...]):
        self.patterns = patterns
        self.line_idx = [i for i, p in enumerate(patterns) if p.scope == "line"]
        self.text_idx = [i for i, p in enumerate(patterns) if p.scope == "text"]
        self.line_set = self.chunk_set = None
        if self.line_idx:
            self.line_set = re2.Set.SearchSet(_options())
            self.chunk_set = re2.Set.SearchSet(_options())
            for i in self.line_idx:
                self.line_set.Add(patterns[i].full_regex)
                # (?m) and \A,\z -> ^,$ make the chunk probe a superset of the per-line matches
                self.chunk_set.Add("(?m)" + _line_anchors(patterns[i].full_regex))
            self.line_set.Compile()
            self.chunk_set.Compile()

    def run(self, text: str) -> list[Match]:
        hits: list[tuple[int, int, Pattern, object, int]] = []
        for order in self.text_idx:
            p = self.patterns[order]
            hits += [(m.start(), order, p, m, 0) for m in p.finditer(text)]
        line_set, chunk_set = self.line_set, self.chunk_set  # both None, or both compiled
        if line_set is not None and chunk_set is not None and chunk_set.Match(text):
            lines = text.split("\n")
            starts = [0] * (len(lines) + 1)
            pos = 0
            for i, line in enumerate(lines):
                starts[i] = pos
                pos += len(line) + 1
            starts[len(lines)] = pos
            for c in range(0, len(lines), _CHUNK_LINES):
                stop = min(c + _CHUNK_LINES, len(lines))
                if not chunk_set.Match(text[starts[c] : starts[stop] - 1]):
                    continue
                for i in range(c, stop):
                    found = line_set.Match(lines[i])
                    if not found:
                        continue
                    for k in sorted(found):
                        order = self.line_idx[k]
                        p = self.patterns[order]
                        m = p.search(lines[i])
                        if m is not None:
                            hits.append((starts[i] + m.start(), order, p, m, starts[i]))
        return self.finish(text, hits)

    def finish(self, text: str, hits: list) -> list[Match]:
        hits.sort(key=lambda h: (h[0], h[1]))
        out = [Match(p.name, p.kind, p.match_fields(m), base + m.start(), base + m.end()) for _, _, p, m, base in hits]
        if any(p.until_next for p in self.patterns):
            out = _fill_blocks(text, out, {p.name: p for p in self.patterns})
        return out


def _fill_blocks(text: str, matches: list[Match], by_name: dict[str, Pattern]) -> list[Match]:
    """A block's body runs from the end of its marker to the next block marker (or the end of the text)."""
    blocks = [i for i, m in enumerate(matches) if m.kind == "block"]
    out = list(matches)
    for n, i in enumerate(blocks):
        m = matches[i]
        target = by_name[m.pattern].until_next
        if not target:
            continue
        stop = matches[blocks[n + 1]].start if n + 1 < len(blocks) else len(text)
        begin = m.end + 1 if text.startswith("\n", m.end) else m.end
        begin = min(begin, stop)
        out[i] = Match(m.pattern, m.kind, {**m.fields, target: text[begin:stop]}, m.start, stop)
    return out


_ANCHOR = re.compile(r"(?<!\\)((?:\\\\)*)\\([Az])")


class LineSet:
    """Which of several RE2 regexes match a line, in one pass (re2.Set): for modules that read text with
    patterns of their own (excerpt.py's generic evidence) without importing re2 themselves."""

    def __init__(self, regexes: Iterable[str]):
        self.size = 0
        self._set = re2.Set.SearchSet(_options())
        for regex in regexes:
            self._set.Add(regex)
            self.size += 1
        self._set.Compile()

    def match(self, line: str) -> list[int]:
        """The indexes of the regexes that match somewhere in `line`."""
        return self._set.Match(line) or []


def _line_anchors(regex: str) -> str:
    return _ANCHOR.sub(lambda m: m.group(1) + ("^" if m.group(2) == "A" else "$"), regex)


class Library:
    """Every family, built-in first, each project folder adding to or overriding it."""

    def __init__(self, families: dict[str, Family]):
        self.families = families

    def family(self, name: str) -> Family:
        try:
            return self.families[name]
        except KeyError:
            known = ", ".join(sorted(self.families)) or "none"
            raise UserError(
                f"unknown regex family {name!r}{_did_you_mean(name, self.families)}; known families: {known}"
            ) from None

    def digest(self, family_names: Iterable[str]) -> str:
        """sha256 over the canonical definitions of the patterns these families use for every step (the active
        ones), for step cache keys: a candidate in shadow, or in canary outside a step's slice, changes no key."""
        doc = {n: [p.definition() for p in self.family(n).used()] for n in sorted(set(family_names))}
        canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------------------------------
# Loading and validation


def re2_error(regex: str) -> str | None:
    """Why RE2 refuses `regex` (its own message and a hint), or None when it compiles: for code outside this module
    that makes regexes (the learning loop's induction) and must not import re2 itself."""
    try:
        _compiled(regex)
    except re2.error as exc:
        msg = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        return f"{msg}. {_re2_hint(regex)}"
    return None


def re2_fullmatch(regex: str, text: str) -> dict[str, str | None] | None:
    """The named captures when `regex` matches the whole of `text` under RE2, else None; `regex` must compile
    (check it with re2_error first)."""
    m = _compiled(regex).fullmatch(text)
    return None if m is None else m.groupdict()


@lru_cache(maxsize=4096)
def _compiled(regex: str) -> re2._Regexp:
    return re2.compile(regex, _options())


_RE2_HINTS = [
    (re.compile(r"\\[1-9]|\(\?P="), "RE2 has no backreferences: capture both parts and compare them in code"),
    (
        re.compile(r"\(\?<?[=!]"),
        "RE2 has no lookahead or lookbehind: match the context as well, or capture and check it in code",
    ),
    (
        re.compile(r"\(\?>|[*+?}]\+"),
        "RE2 has no atomic groups or possessive quantifiers: drop them (RE2 never backtracks)",
    ),
    (re.compile(r"\\Z"), "RE2 writes end of text as \\z, not \\Z"),
    (re.compile(r"\(\?x|\(\?#"), "RE2 has no verbose mode or comments: write the pattern on one line"),
]


def _re2_hint(regex: str) -> str:
    for probe, hint in _RE2_HINTS:
        if probe.search(regex):
            return hint
    return "check the RE2 syntax (https://github.com/google/re2/wiki/Syntax)"


def _locate(text: str) -> dict[tuple, int]:
    """Line numbers for pattern[i], pattern[i].KEY and pattern[i].example[j]: tomllib keeps no positions."""
    where: dict[tuple, int] = {}
    pi, sub = -1, {"example": -1, "counterexample": -1}
    for number, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if re.match(r"\[\[\s*pattern\s*\]\]", s):
            pi, sub = pi + 1, {"example": -1, "counterexample": -1}
            where[(pi,)] = number
        elif m := re.match(r"\[\[\s*pattern\s*\.\s*(example|counterexample)\s*\]\]", s):
            sub[m.group(1)] += 1
            where[(pi, m.group(1), sub[m.group(1)])] = number
        elif (m := re.match(r"([A-Za-z_]+)\s*=", s)) and pi >= 0 and sub["example"] < 0 and sub["counterexample"] < 0:
            where.setdefault((pi, m.group(1)), number)
    return where


def _load_file(path: Path, shown: str, problems: list[Problem]) -> Family | None:
    def problem(message: str, toml_path: str = "", line: int | None = None) -> None:
        problems.append(Problem(file=shown, path=toml_path, line=line, message=message))

    try:
        text = path.read_text("utf-8")
        doc = toml_read.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        problem(f"cannot read the regexes file: {exc}")
        return None
    except toml_read.TOMLDecodeError as exc:
        at_line = re.search(r"line (\d+)", str(exc))
        problem(f"not valid TOML: {exc}", line=int(at_line.group(1)) if at_line else None)
        return None
    where = _locate(text)
    from runner.schema_check import schema_errors

    errors = schema_errors(doc, "regexes.json")
    for parts, message in errors:
        toml_path = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if k else p) for k, p in enumerate(parts))
        line = (
            where.get((parts[1],) + tuple(parts[2:3])) or where.get((parts[1],))
            if len(parts) > 1 and parts[0] == "pattern"
            else None
        )
        problem(f"{message} (see runner/schemas/regexes.json)", toml_path, line)
    if errors:
        return None
    name = doc["family"]
    if path.stem != name:
        problem(f"family {name!r} is declared in {path.name}: name the file {name}.toml", "family")
    patterns, seen = [], set()
    for i, raw in enumerate(doc.get("pattern", ())):
        at = f"pattern[{i}]"
        line = where.get((i, "regex")) or where.get((i,))
        pname = raw["name"]
        if pname in seen:
            problem(
                f"pattern name {pname!r} is used twice in family {name!r}: names must be unique",
                f"{at}.name",
                where.get((i, "name")),
            )
        seen.add(pname)
        flags = tuple(raw.get("flags", ()))
        regex = raw["regex"]
        scope = raw.get("scope") or ("text" if {"dotall", "multiline"} & set(flags) else "line")
        pat = Pattern(
            family=name,
            name=pname,
            regex=regex,
            kind=raw["kind"],
            flags=flags,
            fields=tuple(raw.get("fields", ())),
            stage=raw.get("stage", "active"),
            scope=scope,
            count=raw.get("count"),
            aggregate=raw.get("aggregate", "sum"),
            cause=raw.get("cause"),
            until_next=raw.get("until_next"),
            replaces=raw.get("replaces"),
            weight=int(raw.get("gate", {}).get("weight", 0)),
            since=raw.get("gate", {}).get("since"),
            exclude=tuple(raw.get("exclude", ())),
            zero=tuple(raw.get("zero", ())),
            examples=tuple(
                Example(e["text"], {k: (None if v is False else v) for k, v in e.get("expect", {}).items()})
                for e in raw.get("example", ())
            ),
            counterexamples=tuple(Example(e["text"]) for e in raw.get("counterexample", ())),
            file=shown,
            line=line,
        )
        why = check_redos(regex)
        if why:
            problem(
                f"pattern {pname!r} refused: {why}; that backtracks catastrophically in any backtracking engine "
                "(exponential time on a line that almost matches). Rewrite it without nested repetition, "
                "e.g. (\\w+\\s?)+ as [\\w\\s]+",
                f"{at}.regex",
                line,
            )
            continue
        try:
            compiled = pat.compiled
        except re2.error as exc:
            msg = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
            problem(f"pattern {pname!r} does not compile under RE2: {msg}. {_re2_hint(regex)}", f"{at}.regex", line)
            continue
        groups = set(compiled.groupindex)
        for f in pat.fields:
            if f not in groups:
                problem(
                    f"pattern {pname!r} lists field {f!r} but the regex has no group (?P<{f}>...)"
                    f"{_did_you_mean(f, groups)}",
                    f"{at}.fields",
                    where.get((i, "fields")),
                )
        for g in sorted(groups - set(pat.fields) - {pat.until_next}):
            problem(
                f"pattern {pname!r} captures (?P<{g}>...) but does not list it in fields: add it to fields "
                "or make the group (?:...)",
                f"{at}.fields",
                where.get((i, "fields"), line),
            )
        if pat.cause:
            for ref in re.findall(r"\{(\w+)\}", pat.cause):
                if ref not in pat.fields:
                    problem(
                        f"cause text of {pname!r} refers to {{{ref}}}, which is not one of its fields",
                        f"{at}.cause",
                        where.get((i, "cause")),
                    )
        if pat.kind == "cause" and not pat.cause:
            problem(f'pattern {pname!r} has kind = "cause" but no cause = "..." text', at, line)
        if pat.kind == "summary" and not (pat.fields or pat.count):
            problem(f'summary pattern {pname!r} needs fields (the counts it captures) or count = "FIELD"', at, line)
        patterns.append(pat)
    names = {p.name for p in patterns}
    for p in patterns:
        if p.replaces and p.replaces not in names:
            problem(
                f"pattern {p.name!r} replaces {p.replaces!r}, which is not in family {name!r}"
                f"{_did_you_mean(p.replaces, names)}",
                "pattern.replaces",
                p.line,
            )
    fam = Family(name, patterns, doc.get("description", ""), shown)
    fam.replace = bool(doc.get("replace", False))
    fam.identify = tuple(doc.get("identify", ()))
    for k, regex in enumerate(fam.identify):
        why = check_redos(regex) or re2_error(regex)
        if why:
            problem(f"identify[{k}] {regex!r} is refused: {why}", f"identify[{k}]", where.get(("identify",)))
    return fam


def _merge(base: Family, over: Family) -> Family:
    """Same-named patterns are replaced in place; new ones go first, so the project's own win conflicts."""
    overriding = {p.name: p for p in over.patterns}
    kept = [overriding.pop(p.name, p) for p in base.patterns]
    fresh = [p for p in over.patterns if p.name in overriding]
    merged = Family(base.name, fresh + kept, over.description or base.description, over.file)
    merged.identify = over.identify or base.identify
    return merged


def load_library(dirs: list[Path]) -> Library:
    """Load every regexes/*.toml in dirs (later dirs override earlier: put builtin_dir() first)."""
    problems: list[Problem] = []
    families: dict[str, Family] = {}
    for d in dirs:
        d = Path(d)
        if not d.is_dir():
            continue
        here: dict[str, str] = {}
        for path in sorted(d.glob("*.toml")):
            shown = _shown(path)
            fam = _load_kept(path, shown, problems)
            if fam is None:
                continue
            if fam.name in here:
                problems.append(
                    Problem(
                        file=shown,
                        path="family",
                        message=f"family {fam.name!r} is also declared in "
                        f"{here[fam.name]}: one file per family per folder",
                    )
                )
                continue
            here[fam.name] = shown
            if fam.name in families and not fam.replace:
                fam = _merge(families[fam.name], fam)
            families[fam.name] = fam
    if problems:
        raise SpecError(problems=problems)
    return Library(families)


# a family file as loaded, by its path, as problems name it, and its stat: a monorepo's libraries (the root's and
# each sub-project's, runner/libraries.py) share the built-in and the root's files, parsed and compiled once a
# process. A family is never changed once loaded (a merge makes a new one); its compiled sets are made on first use.
_KEPT: dict[tuple, Family] = {}


def _load_kept(path: Path, shown: str, problems: list[Problem]) -> Family | None:
    """_load_file's family, kept while the file's stat stays the same; a file with problems is loaded each time."""
    try:
        st = path.stat()
    except OSError:
        return _load_file(path, shown, problems)
    key = (str(path), shown, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
    fam = _KEPT.get(key)
    if fam is None:
        found = len(problems)
        fam = _load_file(path, shown, problems)
        if fam is not None and len(problems) == found:
            _KEPT[key] = fam
    return fam


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def check_examples(library: Library) -> list[Problem]:
    """Every example must match with its expected fields; every counterexample must not match."""
    problems: list[Problem] = []
    for fam in library.families.values():
        index = {}
        for p in fam.patterns:
            index[p.name] = p
        for i, p in enumerate(fam.patterns):
            for j, ex in enumerate(p.examples):
                m = p.search(ex.text)
                where = f"pattern[{i}].example[{j}]"
                if m is None:
                    problems.append(
                        Problem(p.file, f"example of {p.name!r} does not match: {ex.text!r}", where, p.line)
                    )
                    continue
                for f, want in ex.expect.items():
                    got = m.group(f) if f in p.compiled.groupindex else "<no such group>"
                    if got != want:
                        problems.append(
                            Problem(
                                p.file,
                                f"example of {p.name!r}: field {f!r} is {got!r}, expected {want!r}",
                                where,
                                p.line,
                            )
                        )
            for j, ex in enumerate(p.counterexamples):
                m = p.search(ex.text)
                if m is not None:
                    problems.append(
                        Problem(
                            p.file,
                            f"counterexample of {p.name!r} matches ({m.group(0)!r}): {ex.text!r}",
                            f"pattern[{i}].counterexample[{j}]",
                            p.line,
                        )
                    )
    return problems
