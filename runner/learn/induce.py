"""Deterministic log-template induction: groups of similar lines become anchored RE2 patterns with named captures."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from runner import parse

VAR = "<*>"  # Loghub's notation for a variable part of a template
# the same inside a shape, where it must not be confused with a line's own text (which may hold "<*>"): a lone
# surrogate, which no line that RE2 can read holds
DATA = "\udfff"


@dataclass(frozen=True)
class InducedPattern:
    """One group of similar lines as a candidate pattern for the regex library."""

    name: str  # f"{family}-{slug}" from the template's leading constant words, deduplicated with -2, -3
    regex: str  # RE2, anchored ^...$, one named capture per variable field
    template: str  # the line with each variable part replaced by <*>
    fields: tuple[str, ...]  # the capture names in order
    examples: tuple[str, ...]  # up to 5 distinct lines of the group
    support: int  # how many input lines it was made from


@dataclass(frozen=True)
class Induction:
    """The patterns, by support then template, and which one each input line went to."""

    patterns: tuple[InducedPattern, ...]
    assignments: tuple[str | None, ...]  # per input line: its pattern's name, or None for a blank line


# ---------------------------------------------------------------------------------------------------------------
# Masking: which parts of a token are data. Each rule is a shape any tool's log uses for values.

# a value as a whole: URL, path, IPv4 (with port), host:port, UUID, hex, number (with a short unit), time, date,
# a boolean or null
_URL = re.compile(r"[A-Za-z][\w+.-]*://\S*")
_PATH = re.compile(r"(?:~|\.{1,2})?/[^\s]*|[A-Za-z]:\\\S*")
_IP = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?")
# a host (with a dot, a dash or a digit in it: `PendingReds:1` is a key and its value) and a port; also Java's
# host/ip:port
_HOST_PORT = re.compile(r"(?:localhost|[\w-]*[\d.-][\w.-]*)(?:/[\w.-]+)?:\d{1,5}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX = re.compile(r"0[xX][0-9a-fA-F]+|(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{6,}")
_BOOL = re.compile(r"true|false|True|False|TRUE|FALSE|null|None|nil")
_NUMBER = re.compile(r"[-+]?(?:\d+(?:[.,:_/-]\d+)*|\.\d+)(?:[eE][-+]?\d+)?[A-Za-z%]{0,3}")
# an identifier with a number that is not part of a word (blk_-42, attempt_1445_0020_m_000000_0, node-7.example)
_NUMBERED_ID = re.compile(r"(?:^|[^A-Za-z0-9])\d")
_WHOLE = re.compile("|".join(f"(?:{rx.pattern})" for rx in (_URL, _PATH, _IP, _HOST_PORT, _UUID, _HEX, _NUMBER, _BOOL)))

_OPEN = "([{<'\"`"
_QUOTES = "'\"`"  # a token that is one quoted string ('x', "x", `x`) is a value
_CLOSE = ")]}>'\"`,;:.!?…"  # … : a value cut short (a key printed as its first 16 hex digits and an ellipsis)
# inside a token, the value after one of these is judged alone: key=value, key:value, a,b lists, a##b; then, in
# what is not a value as a whole, f(x), a[x], a{x}, a/b
_SPLIT = re.compile(r"(=|,|;|\||&|#+|(?<=[A-Za-z0-9\])]):)")
_SPLIT_INNER = re.compile(r"(\(|\[|\{|(?<=.)/)")

_MONTHS = {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
_DAYS = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"}

Seg = tuple[str, bool]  # a piece of a token and whether it is data


def _is_whole_value(text: str) -> bool:
    return _WHOLE.fullmatch(text) is not None


def _is_value(text: str) -> bool:
    return bool(text) and (_is_whole_value(text) or bool(_NUMBERED_ID.search(text)))


@lru_cache(maxsize=65536)  # a log repeats its tokens; masking is a pure function of the token
def _mask_token(token: str) -> tuple[Seg, ...]:
    """The token cut into literal and data pieces; joined, the pieces are the token."""
    head, core, tail = _unwrapped(token)
    if not core:
        return ((token, False),)
    segs: list[Seg] = []
    if head:
        segs.append((head, False))
    quoted = head[-1:] != "" and head[-1:] in _QUOTES and tail[:1] == head[-1:]
    for k, piece in enumerate([core] if quoted or _is_whole_value(core) else _SPLIT.split(core)):
        if k % 2 or not piece:
            segs.append((piece, False))
        elif quoted or (_is_whole_value(piece) and piece != "/"):
            segs.append((piece, True))
        else:
            for n, inner in enumerate(_SPLIT_INNER.split(piece)):
                segs.append((inner, n % 2 == 0 and _is_value(inner)))
    if tail:
        segs.append((tail, False))
    return _join_literals(segs)


def _join_literals(segs: list[Seg]) -> tuple[Seg, ...]:
    out: list[Seg] = []
    for text, var in segs:
        if not text:
            continue
        if out and not var and not out[-1][1]:
            out[-1] = (out[-1][0] + text, False)
        else:
            out.append((text, var))
    return tuple(out)


def _shape(segs: tuple[Seg, ...]) -> str:
    return "".join(DATA if var else text for text, var in segs)


_TOKEN = re.compile(r"\S+")


@dataclass
class _Line:
    text: str
    tokens: list[str]
    gaps: list[str]  # len(tokens) + 1: before the first token, between tokens, after the last
    segs: list[tuple[Seg, ...]]
    shapes: tuple[str, ...]
    starts: list[int]  # each token's offset in text
    ends: list[int]


_TIME = re.compile(r"\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?")
_DATE_PART = re.compile(r"\d{1,4}|\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?")


def _read(text: str) -> _Line:
    spans, joined = _join_timestamps(text, [(m.start(), m.end()) for m in _TOKEN.finditer(text)])
    tokens = [text[a:b] for a, b in spans]
    starts = [a for a, _ in spans]
    ends = [b for _, b in spans]
    gaps = [text[e:a] for e, a in zip([0, *ends], [*starts, len(text)], strict=True)]
    segs = [_mask_token_as_value(t) if k in joined else _mask_token(t) for k, t in enumerate(tokens)]
    _mask_dates(tokens, segs)
    return _Line(text, tokens, gaps, segs, tuple(_shape(s) for s in segs), starts, ends)


def _join_timestamps(text: str, spans: list[tuple[int, int]]) -> tuple[list[tuple[int, int]], set[int]]:
    """A written-out timestamp is one value, whatever spaces it holds: `Fri Jun 17 07:07:00 2005` (a run of
    weekday and month names, numbers and times holding a month name and a time). The token spans with each
    timestamp as one, and which of them are timestamps."""
    out: list[tuple[int, int]] = []
    joined: set[int] = set()
    k = 0
    while k < len(spans):
        j, month, clock = k, False, False
        while j < len(spans):
            word = text[spans[j][0] : spans[j][1]].strip(_OPEN + _CLOSE)
            if word.lower() in _MONTHS or word.lower() in _DAYS:
                month = month or word.lower() in _MONTHS
            elif _DATE_PART.fullmatch(word):
                clock = clock or _TIME.fullmatch(word) is not None
            else:
                break
            j += 1
        if month and clock and j - k >= 3:
            joined.add(len(out))
            out.append((spans[k][0], spans[j - 1][1]))
            k = j
        else:
            out.append(spans[k])
            k += 1
    return out, joined


def _mask_dates(tokens: list[str], segs: list[tuple[Seg, ...]]) -> None:
    """A month or weekday name next to a number is part of a date (`May 8`, `Tue Nov 25`)."""
    for k, tok in enumerate(tokens):
        word = tok.strip(_OPEN + _CLOSE).lower()
        if word not in _MONTHS and word not in _DAYS:
            continue
        near = [segs[n] for n in (k - 1, k + 1) if 0 <= n < len(segs)]
        near_date = [tokens[n].strip(_OPEN + _CLOSE).lower() for n in (k - 1, k + 1) if 0 <= n < len(tokens)]
        if any(len(s) == 1 and s[0][1] for s in near) or any(w in _MONTHS or w in _DAYS for w in near_date):
            segs[k] = _mask_token_as_value(tok)


def _mask_token_as_value(token: str) -> tuple[Seg, ...]:
    head, core, tail = _unwrapped(token)
    return _join_literals([s for s in [(head, False), (core, True), (tail, False)] if s[0]])


def _unwrapped(token: str) -> tuple[str, str, str]:
    """(the opening punctuation, what it wraps, the closing punctuation): `("x",` is `("`, `x`, `",`."""
    i, j = 0, len(token)
    while i < j and token[i] in _OPEN:
        i += 1
    while j > i and token[j - 1] in _CLOSE:
        j -= 1
    return token[:i], token[i:j], token[j:]


def template_of(line: str) -> str:
    """The template one line gets by masking alone (numbers, hex, ids, paths, ips, quoted values)."""
    return " ".join(_read(line).shapes).replace(DATA, VAR)


# ---------------------------------------------------------------------------------------------------------------
# Grouping: lines of one shape, then shapes that differ only where the data is, then lengths that differ only by
# how many tokens a value spans. Every step is a function of the set of shapes: input order never matters.

# a unit word after a number belongs to the value when lengths differ (`0 bytes (0 KB)`, `<1 sec`)
_UNIT = re.compile(r"(?:[kmgt]i?)?b(?:ytes?)?|[kmg]|[mun]?s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?", re.I)


LONG_LINE = 128  # tokens: past this, lines of one length join only by shape (the one-position pass is quadratic)


@dataclass
class _Group:
    members: list[int]  # line numbers (into the read lines)
    slots: list[str]  # per slot: a token shape (the same for every member), or DATA for a run of data tokens
    spans: list[list[tuple[int, int]]]  # per member, per slot: its token range [a, b)


class _Union:
    def __init__(self, keys):
        self.parent = {k: k for k in keys}

    def find(self, k):
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            # the smaller key becomes the root: the result does not depend on the order of unions
            lo, hi = (ra, rb) if ra < rb else (rb, ra)
            self.parent[hi] = lo


@lru_cache(maxsize=4096)
def _shape_regex(shape: str) -> re.Pattern[str]:
    """What a masked shape matches, each data part a lazy group (Python's re: this is internal, never emitted)."""
    return re.compile("(.*?)".join(re.escape(p) for p in shape.split(DATA)), re.DOTALL)


def _fits(literal: str, shape: str) -> bool:
    """Whether a literal token could be a value of a masked shape: `()` and `(host.example)` fit `(<*>)`,
    `rhost=zummit.com` fits `rhost=<*>`. Where the shape says nothing but punctuation, a plain word does not fit:
    `Interrupting` is no value of `<*>`."""
    parts = shape.split(DATA)
    m = _shape_regex(shape).fullmatch(literal)
    if m is None:
        return False
    if re.search(r"[A-Za-z0-9]", "".join(parts)):
        return True
    return not any(re.fullmatch(r"[A-Za-z]+", g) for g in m.groups())


def _merge_same_length(shapes: list[tuple[str, ...]]) -> _Union:
    """Shapes of one length that differ at one position only, where one holds data and the other a literal that
    fits it: `()` and `(host.example)` beside `(<*>)`, `rhost=zummit.com` beside `rhost=<*>`. A plain word never
    becomes data by itself: `VM Paused` and `VM Started` are two events."""
    union = _Union(shapes)
    by_len: dict[int, list[tuple[str, ...]]] = defaultdict(list)
    for sh in shapes:
        by_len[len(sh)].append(sh)
    for n, group in sorted(by_len.items()):
        if len(group) < 2 or n > LONG_LINE:
            continue
        for p in range(n):
            buckets: dict[tuple[str, ...], list[tuple[str, ...]]] = defaultdict(list)
            for sh in group:
                buckets[sh[:p] + sh[p + 1 :]].append(sh)
            for key, members in sorted(buckets.items()):
                masked = sorted({sh[p] for sh in members if DATA in sh[p]})
                if not masked or all(DATA in tok for tok in key):
                    continue  # with no constant beside it, a difference says nothing of what is data
                for sh in members:
                    for v in masked:
                        if v != sh[p] and _fits(sh[p], v):  # a literal, or a narrower mask (`wpad:<*>` in `<*>`)
                            union.union(sh, next(m for m in members if m[p] == v))
                            break
    return union


def _common_shape(shapes: set[str]) -> str:
    """The slot for tokens of these shapes: the shape, or the one masked shape the others fit (`(<*>)` for `()`,
    `(host.example)`), else data as a whole."""
    if len(shapes) == 1:
        return next(iter(shapes))
    masked = [sh for sh in shapes if DATA in sh]
    if len(masked) == 1 and all(sh == masked[0] or _fits(sh, masked[0]) for sh in shapes):
        return masked[0]
    return DATA


def _resegment(token: str, shape: str) -> tuple[Seg, ...] | None:
    """A literal token cut as the masked shape it fits: `(host.example)` as `(`, `host.example`, `)`."""
    parts = shape.split(DATA)
    m = _shape_regex(shape).fullmatch(token)
    if m is None:
        return None
    segs: list[Seg] = [(parts[0], False)]
    for value, literal in zip(m.groups(), parts[1:], strict=True):
        segs += [(value, True), (literal, False)]
    return tuple((t, v) for t, v in segs if t or v)


def _pure_var(shape: str) -> bool:
    """A token that is all data but for punctuation around it: `<*>`, `(<*>`, `<*>,`."""
    return DATA in shape and not re.search(r"[A-Za-z0-9]", shape.replace(DATA, ""))


def _collapse(slots: list[str]) -> tuple[tuple[str, ...], list[tuple[int, int]]]:
    """Runs of data tokens (with the unit words after them: `0 bytes (0 KB)`, `<1 sec`) as one value, and a run of
    one data shape repeated (`sha256:<*> sha256:<*>`) as one list of them."""
    out: list[str] = []
    ranges: list[tuple[int, int]] = []
    k = 0
    while k < len(slots):
        j = k + 1
        if slots[k] == DATA or _pure_var(slots[k]):
            while j < len(slots) and (
                slots[j] == DATA or _pure_var(slots[j]) or _UNIT.fullmatch(slots[j].strip(_OPEN + _CLOSE))
            ):
                j += 1
            out.append(DATA)
        else:
            if DATA in slots[k]:
                while j < len(slots) and slots[j] == slots[k]:
                    j += 1
            out.append(slots[k])
        ranges.append((k, j))
        k = j
    return tuple(out), ranges


def _group(lines: list[_Line]) -> list[_Group]:
    by_shape: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, line in enumerate(lines):
        by_shape[line.shapes].append(i)
    union = _merge_same_length(sorted(by_shape))
    merged: dict[tuple[str, ...], list[tuple[str, ...]]] = defaultdict(list)
    for sh in sorted(by_shape):
        merged[union.find(sh)].append(sh)
    groups: list[_Group] = []
    for root in sorted(merged):
        shapes = merged[root]
        members = sorted(i for sh in shapes for i in by_shape[sh])
        n = len(root)
        slots = [_common_shape({sh[p] for sh in shapes}) for p in range(n)]
        groups.append(_Group(members, slots, [[(p, p + 1) for p in range(n)] for _ in members]))
    # lengths that differ by how many tokens a value spans
    by_key: dict[tuple[str, ...], list[tuple[_Group, list[tuple[int, int]]]]] = defaultdict(list)
    for g in groups:
        key, ranges = _collapse(g.slots)
        by_key[key].append((g, ranges))
    out: list[_Group] = []
    for key in sorted(by_key):
        parts = by_key[key]
        if len(parts) == 1 or all(slot == DATA for slot in key):  # lines of data alone have nothing in common
            out.extend(g for g, _ in parts)
            continue
        members, spans = [], []
        slots = list(key)
        for g, ranges in parts:
            for m, sp in zip(g.members, g.spans, strict=True):
                members.append(m)
                spans.append([(sp[a][0], sp[b - 1][1]) for a, b in ranges])
            for s, (a, b) in enumerate(ranges):
                if b - a > 1 or g.slots[a] == DATA:
                    slots[s] = DATA  # a list of values, or a slot already variable in one of the parts
        order = sorted(range(len(members)), key=lambda x: members[x])
        out.append(_Group([members[x] for x in order], slots, [spans[x] for x in order]))
    return out


_WORD = re.compile(r"[(\['\"]*[A-Za-z][\w.'-]*[)\]'\",;:.]*")
# words that say the next one names someone or something (`for user cyrus`, `from host alpha`): a name's value
# varies as a number's does, where a word after a verb or a type (`VM Paused`, `"GET`) is what happened
_NAMING = {
    "user",
    "users",
    "username",
    "login",
    "account",
    "owner",
    "group",
    "host",
    "hostname",
    "server",
    "client",
    "node",
    "peer",
    "machine",
    "uid",
    "gid",
}


def _merge_words(groups: list[_Group], min_values: int) -> list[_Group]:
    """Groups alike but for one position, where each holds a plain word, become one with a variable there when
    the words number at least `min_values`: how a value varies within what is otherwise one event (the users of
    `session opened for user cyrus`, `... news`, `... test`), not its shape, makes it data. Fewer words stay
    apart (`VM Paused` and `VM Started` are two events while they are few). 0: words are never data."""
    if min_values < 2:
        return groups
    changed = True
    while changed:
        changed = False
        by_len: dict[int, list[_Group]] = defaultdict(list)
        for g in groups:
            by_len[len(g.slots)].append(g)
        for n in sorted(by_len):
            alike = by_len[n]
            for p in range(n):
                buckets: dict[tuple[str, ...], list[_Group]] = defaultdict(list)
                for g in alike if p > 0 else ():
                    if g.slots[p - 1].strip("(['\":=").lower() not in _NAMING:
                        continue
                    if _WORD.fullmatch(g.slots[p]) and DATA not in g.slots[p]:
                        buckets[tuple(g.slots[:p] + g.slots[p + 1 :])].append(g)
                for key in sorted(buckets):
                    same = buckets[key]
                    if len({g.slots[p] for g in same}) < min_values or all(DATA in k for k in key):
                        continue
                    members = [(m, sp) for g in same for m, sp in zip(g.members, g.spans, strict=True)]
                    members.sort(key=lambda x: x[0])
                    slots = list(same[0].slots)
                    slots[p] = DATA
                    merged = _Group([m for m, _ in members], slots, [sp for _, sp in members])
                    groups = [g for g in groups if all(g is not x for x in same)] + [merged]
                    changed = True
                    break
                if changed:
                    break
            if changed:
                break
    return groups


# ---------------------------------------------------------------------------------------------------------------
# From a group to a pattern


_RE2_SPECIAL = re.compile(r"[\\.^$|?*+()\[\]{}]")
_UNPRINTABLE = re.compile(r"[^\S ]|[^\x20-\x7e\s]")  # escaped unless printable: one search skips the common case


def _escape(text: str) -> str:
    text = _RE2_SPECIAL.sub(lambda m: "\\" + m.group(), text)
    if _UNPRINTABLE.search(text) is None:
        return text
    return "".join(c if c.isprintable() else ("\\t" if c == "\t" else f"\\x{{{ord(c):x}}}") for c in text)


def _char_class(values: Sequence[str]) -> str:
    """The narrowest class of the kinds of characters the values show: digits, or word characters plus the
    punctuation seen, so that a capture cannot run on over a constant that has other characters."""
    chars = set("".join(values))
    quant = "+" if all(values) else "*"
    if not chars:
        return ""
    if chars <= set("0123456789"):
        return r"\d" + quant
    word = {c for c in chars if c.isascii() and (c.isalnum() or c == "_")}
    body = r"\w" if word else ""
    for c in sorted(chars - word):
        if c == "\t":
            body += r"\t"
        elif c in "\\]^-[":
            body += "\\" + c
        elif not c.isprintable() or not c.isascii():
            body += f"\\x{{{ord(c):x}}}"
        else:
            body += c
    if body == r"\w":
        return r"\w" + quant
    return f"[{body}]{quant}"


def _gap_regex(values: set[str]) -> str:
    """The whitespace between two slots: literal when every line has the same, else the kinds of whitespace seen
    (RE2's \\s knows fewer than Python's str.split)."""
    if len(values) == 1:
        return _escape(next(iter(values)))
    chars = sorted(set("".join(values)))
    body = "".join(" " if c == " " else f"\\x{{{ord(c):x}}}" for c in chars)
    return f"[{body}]" + ("+" if all(values) else "*")


# words before a value that say nothing of what it is: the value gets a number instead
_STOP = {
    "a",
    "an",
    "the",
    "of",
    "to",
    "for",
    "from",
    "in",
    "on",
    "at",
    "by",
    "with",
    "and",
    "or",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "as",
    "after",
    "before",
    "into",
    "onto",
    "than",
    "this",
    "that",
    "it",
    "its",
    "not",
    "no",
}


def _field_name(before: str, taken: set[str], index: int) -> str:
    """A capture's name from the text before it: `user=<*>` -> user, `port <*>` -> port; else f1, f2, ..."""
    name = ""
    m = re.search(r"([A-Za-z][A-Za-z0-9_.-]*)\s*[=:]\s*$", before)
    if m is None:
        m = re.search(r"([A-Za-z][A-Za-z0-9_]*)\s+$", before)
        if m is not None and m.group(1).lower() in _STOP:
            m = None
    if m is not None:
        name = re.sub(r"[^a-z0-9_]+", "_", _snake(m.group(1))).strip("_")
    if not name or name[0].isdigit():
        name = f"f{index}"
    base, n = name, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def _snake(word: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", word).lower()


def _build(group: _Group, lines: list[_Line]) -> tuple[str, str, tuple[str, ...]]:
    """(template, regex, fields) of a group."""
    members = [lines[i] for i in group.members]
    pieces: list[tuple[str, str]] = []  # (kind, text): gap regex, literal text, or a capture's class
    for s, slot in enumerate(group.slots):
        if s:
            gaps = {
                m.text[m.ends[sp[s - 1][1] - 1] : m.starts[sp[s][0]]]
                for m, sp in zip(members, group.spans, strict=True)
            }
        else:
            gaps = {m.gaps[0] for m in members}
        pieces.append(("gap", _gap_regex(gaps)))
        if slot == DATA:
            values = [
                m.text[m.starts[sp[s][0]] : m.ends[sp[s][1] - 1]] for m, sp in zip(members, group.spans, strict=True)
            ]
            pieces.append(("var", _char_class(values)))
            continue
        cut: list[tuple[Seg, ...]] = []
        for m, sp in zip(members, group.spans, strict=True):
            segs = m.segs[sp[s][0]] if m.shapes[sp[s][0]] == slot else _resegment(m.tokens[sp[s][0]], slot)
            if segs is None or (cut and len(segs) != len(cut[0])):  # _common_shape checked that they fit
                raise RuntimeError(f"token {m.tokens[sp[s][0]]!r} does not fit its slot {slot!r}")
            cut.append(segs)
        for k, (text, var) in enumerate(cut[0]):
            values = [c[k][0] for c in cut]
            if var:
                pieces.append(("var", _char_class(values)))
            else:
                pieces.append(("lit", text))
    tails = {m.gaps[-1] for m in members}
    pieces.append(("gap", _gap_regex(tails)))
    template_parts: list[str] = []
    regex_parts: list[str] = ["^"]
    fields: list[str] = []
    taken: set[str] = set()
    before = ""
    for kind, text in pieces:
        if kind == "gap":
            regex_parts.append(text)
            template_parts.append(" ")
            before += " "
        elif kind == "lit":
            regex_parts.append(_escape(text))
            template_parts.append(text)
            before += text
        else:
            name = _field_name(before[-80:], taken, len(fields) + 1)
            fields.append(name)
            regex_parts.append(f"(?P<{name}>{text})")
            template_parts.append(VAR)
            before = ""
    regex_parts.append("$")
    template = " ".join("".join(template_parts).split())
    return template, "".join(regex_parts), tuple(fields)


def _slug(template: str) -> str:
    words: list[str] = []
    for tok in template.split():
        if VAR in tok:
            continue
        words += re.findall(r"[a-z0-9]+", _snake(tok))
        if len(words) >= 3:
            break
    return "-".join(words[:3]) or "line"


def _family_slug(family: str) -> str:
    s = re.sub(r"[^a-z0-9_.-]+", "-", family.lower()).strip("-.")
    return s or "log"


WORD_VALUES = 3  # words at one position that make it a variable (bench/induction.py: chosen leave-one-out)


def induce(lines: Sequence[str], family: str, word_values: int = WORD_VALUES) -> Induction:
    """Group similar lines and make one anchored RE2 pattern per group, deterministically: the same set of lines
    gives the same patterns in any order. Lines are text as runner decodes logs (invalid bytes replaced); a blank
    line belongs to no pattern. `word_values`: how many plain words at one position of otherwise alike lines
    make that position a variable (_merge_words; 0 never)."""
    read: list[_Line] = []
    index: list[int] = []
    for i, text in enumerate(lines):
        if text.strip():
            read.append(_read(text))
            index.append(i)
    groups = _merge_words(_group(read), word_values)
    built = []
    for group in groups:
        members = group.members
        template, regex, fields = _build(group, read)
        why = parse.re2_error(regex)
        if why is not None:  # a bug here, never the input's fault: every piece is escaped or a class of its own
            raise RuntimeError(f"induced regex {regex!r} does not compile under RE2: {why}")
        counts = Counter(read[i].text for i in members)
        examples = tuple(t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5])
        built.append((members, template, regex, fields, examples))
    built.sort(key=lambda b: (-len(b[0]), b[1], b[2]))
    fam = _family_slug(family)
    names: set[str] = set()
    patterns = []
    assignments: list[str | None] = [None] * len(lines)
    for members, template, regex, fields, examples in built:
        base = f"{fam}-{_slug(template)}"
        name, n = base, 2
        while name in names:
            name, n = f"{base}-{n}", n + 1
        names.add(name)
        patterns.append(InducedPattern(name, regex, template, fields, examples, len(members)))
        for i in members:
            assignments[index[i]] = name
    return Induction(tuple(patterns), tuple(assignments))
