"""Whether a regex backtracks catastrophically: a static check every pattern passes before it is used, so that a
pattern stays safe in any engine (RE2 runs it here; a user may copy it to grep or Python)."""

from __future__ import annotations

import re


def check_redos(regex: str) -> str | None:
    """Why a regex backtracks catastrophically (an unbounded repeat of a group holding another), or None.

    Conservative and static: it refuses every nested unbounded repetition, even unambiguous ones like
    (?:\\w+\\.)+, because the rewrite ([\\w.]+ and a check in code) is always possible and cheap.
    """
    stack: list[list] = [[0, False]]  # per open group: [start offset, holds an unbounded repeat]
    i, n = 0, len(regex)
    last: tuple[int, bool] | None = None  # the previous atom: (start offset, holds an unbounded repeat)
    while i < n:
        c = regex[i]
        if c == "\\":
            j = i + 2
            if i + 1 < n and regex[i + 1] in "pPx" and j < n and regex[j] == "{":
                j = regex.find("}", j) + 1 or n
            elif i + 1 < n and regex[i + 1] in "pP":
                j = i + 3
            last, i = (i, False), j
        elif c == "[":
            j = i + 1
            if j < n and regex[j] == "^":
                j += 1
            if j < n and regex[j] == "]":
                j += 1
            while j < n and regex[j] != "]":
                if regex[j] == "\\":
                    j += 1
                elif regex.startswith("[:", j):
                    j = regex.find(":]", j) + 1 or n
                j += 1
            last, i = (i, False), j + 1
        elif c == "(":
            stack.append([i, False])
            last, i = None, i + 1
            if regex.startswith("?", i):  # (?:  (?P<name>  (?<name>  (?i)  (?i:
                j = i + 1
                while j < n and regex[j] not in ":)":
                    if regex[j] == "<":
                        j = regex.find(">", j)
                    j += 1
                if j < n and regex[j] == ")":  # a bare flag group is an empty atom, not a group
                    stack.pop()
                i = j + 1
        elif c == ")":
            start, inner = stack.pop() if len(stack) > 1 else (0, False)
            last, i = (start, inner), i + 1
            if inner:
                stack[-1][1] = True
        elif c in "*+?{":
            j, unbounded = i + 1, c in "*+"
            if c == "{":
                close = regex.find("}", i)
                body = regex[i + 1 : close] if close > 0 else ""
                if not re.fullmatch(r"\d+(,\d*)?", body):
                    last, i = (i, False), i + 1  # a literal brace
                    continue
                j, unbounded = close + 1, body.endswith(",")
            if j < n and regex[j] == "?":
                j += 1
            if unbounded and last is not None:
                if last[1]:
                    return (
                        f"the group {regex[last[0] : j]!r} repeats without bound a part that itself repeats "
                        "without bound (star height 2)"
                    )
                stack[-1][1] = True
            last, i = None, j
        else:
            last, i = (i, False), i + 1
    return None
