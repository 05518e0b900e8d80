"""Benchmark: how today's runner reads real logs, scored against the hand-read truth of tests/parse/real/.

Every log in tests/parse/real/INDEX.json has NAME.truth.json beside it: for a test run, the counts the tool printed
and the ids of the tests that failed; for a failing log, the lines a person points at (read by hand, never copied
from runner). Each log is read the way a user would get it by default: the adapter command its index entry names
(`reader`), with the variants detection would pick in the project the log came from, else the generic families a
plain `run` line gets; and, as runner does, every test runner's family whose identifying lines the log holds. The
split is by source: the held part is the headline, the tuning part is what rules may be
fitted to. Printed for each part apart (held first):

- test logs read exactly: passed, failed, errors and skipped equal to the truth, and the same failing test ids;
- failing tests reported that did not fail, over every log (passing logs and non-test logs included);
- the excerpt's coverage of the pointed-at lines beside the last 60 lines and a grep for error words, each within
  the same 60-line budget (bench/excerpt.py's scoring), and the logs where the excerpt shows fewer pointed-at lines
  than the tail.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import excerpt as excerpt_bench  # noqa: E402 - bench/excerpt.py: the excerpt's scoring, reused

from runner import identify  # noqa: E402 - after bench/excerpt.py put the repository on the path
from runner.adapters import resolve  # noqa: E402
from runner.excerpt import GENERIC_FAMILIES, MAX_LINES, excerpt  # noqa: E402
from runner.findings import BASE_COUNTS, decode_log, parse_findings  # noqa: E402

CORPUS = excerpt_bench.ROOT / "tests" / "parse" / "real"
LIB = excerpt_bench.LIB
PARTS = ("held", "tuning")
# a grep for error words, as a person would run it on a log: the last MAX_LINES matching lines
_ERROR_WORDS = re.compile(r"\b(?:error|errors|fail|failed|failure|failures|fatal|exception|panic|panicked)\b", re.I)


def load() -> list[dict]:
    """The index's logs, each with its text and truth."""
    index = json.loads((CORPUS / "INDEX.json").read_text("utf-8"))
    out = []
    for item in index["logs"]:
        log = CORPUS / item["log"]
        truth = json.loads(log.with_name(log.stem + ".truth.json").read_text("utf-8"))
        out.append({**item, "text": decode_log(log.read_bytes()), "truth": truth})
    return out


def family_names(reader: dict | None) -> list[str]:
    """The families a user gets by default: the named adapter command's, or the generic ones."""
    if reader is None:
        return list(GENERIC_FAMILIES)
    res = resolve(reader["adapter"], CORPUS, excerpt_bench.ADAPTERS, variants=tuple(reader["variants"]))
    return list(res.command(reader["command"]).parse)


def grep_errors(text: str, limit: int = MAX_LINES) -> list[list[int]]:
    hits = [k for k, line in enumerate(text.splitlines(), 1) if _ERROR_WORDS.search(line)]
    return [[k, k] for k in hits[-limit:]]


def read(case: dict) -> dict:
    """What runner makes of one log, scored against its truth."""
    families = identify.families(LIB, family_names(case["reader"]), case["text"])
    found = parse_findings(case["text"], families)
    truth = case["truth"]
    got_counts = {k: found.summary.get(k) for k in BASE_COUNTS}
    want_failed = set(truth["failed_tests"])
    row = {
        "families": [f.name for f in families],
        "counts": got_counts,
        "failed": list(found.failed_tests),
        "invented": [name for name in found.failed_tests if name not in want_failed],
    }
    if truth["counts"] is not None:
        want_counts = {k: truth["counts"].get(k) for k in BASE_COUNTS}
        row["exact"] = got_counts == want_counts and set(found.failed_tests) == want_failed
    if truth["lines"]:
        want = excerpt_bench.pointed({"lines": truth["lines"]})
        ways = {
            "excerpt (the runner's families)": excerpt(case["text"], families),
            "last 60 lines": excerpt_bench.last_lines(case["text"]),
            "grep for error words (last 60 hits)": grep_errors(case["text"]),
        }
        row["lines"] = {}
        for way, ranges in ways.items():
            got = excerpt_bench.shown(ranges)
            row["lines"][way] = (len(want & got), len(want), len(got))
    return row


def summarize(cases: list[dict], rows: list[dict]) -> list[str]:
    tests = [(c, r) for c, r in zip(cases, rows, strict=True) if "exact" in r]
    exact = sum(r["exact"] for _c, r in tests)
    invented = sum(len(r["invented"]) for r in rows)
    invented_logs = sum(bool(r["invented"]) for r in rows)
    passing_invented = sum(bool(r["invented"]) for c, r in zip(cases, rows, strict=True) if not c["truth"]["lines"])
    sources = {c["source"].get("repo") or c["source"].get("recorded") for c in cases}
    out = [
        f"{len(cases)} logs from {len(sources)} sources, {len({c['tool'] for c in cases})} tools",
        f"- test logs read exactly (counts and failing test ids): {exact}/{len(tests)}"
        + (f" ({exact / len(tests):.0%})" if tests else ""),
        f"- failing tests reported that did not fail: {invented} in {invented_logs} logs "
        f"({passing_invented} of them logs where nothing failed)",
    ]
    failing = [r for r in rows if "lines" in r]
    if failing:
        out += [
            "",
            f"{len(failing)} failing logs, {sum(r['lines']['last 60 lines'][1] for r in failing)} pointed-at lines:",
            "",
            "| lines chosen by | recall (pooled) | recall (mean per log) | logs covered (half or more) "
            "| logs fully covered | lines shown (mean / max) |",
            "|---|---|---|---|---|---|",
        ]
        for way in failing[0]["lines"]:
            hits = [r["lines"][way] for r in failing]
            hit, want = sum(h for h, _w, _s in hits), sum(w for _h, w, _s in hits)
            covered = sum(2 * h >= w for h, w, _s in hits)
            full = sum(h == w for h, w, _s in hits)
            sizes = [s for _h, _w, s in hits]
            out.append(
                f"| {way} | {hit / want:.0%} ({hit}/{want}) | {statistics.mean(h / w for h, w, _s in hits):.0%} | "
                f"{covered}/{len(hits)} | {full}/{len(hits)} | {statistics.mean(sizes):.1f} / {max(sizes)} |"
            )
        worse = sum(r["lines"]["excerpt (the runner's families)"][0] < r["lines"]["last 60 lines"][0] for r in failing)
        out += [
            "",
            f"- logs where the excerpt shows fewer pointed-at lines than the last 60 lines: {worse}/{len(failing)}",
        ]
    return out


def per_log(cases: list[dict], rows: list[dict]) -> list[str]:
    out = []
    for case, row in zip(cases, rows, strict=True):
        bits = [case["log"], f"[{'+'.join(row['families'])}]"]
        if "exact" in row:
            bits.append("exact" if row["exact"] else f"counts {row['counts']} failed {row['failed'][:5]}")
        if row["invented"]:
            bits.append(f"invented {row['invented'][:3]}")
        if "lines" in row:
            bits.append(" | ".join(f"{h}/{w} in {s}" for h, w, s in row["lines"].values()))
        out.append("  ".join(bits))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-log", action="store_true", help="also print what runner made of each log")
    ap.add_argument("--part", choices=PARTS, help="only this part")
    args = ap.parse_args()
    cases = load()
    for part in PARTS:
        if args.part and part != args.part:
            continue
        chosen = [c for c in cases if c["part"] == part]
        rows = [read(c) for c in chosen]
        print(f"## {part} part\n")
        print("\n".join(summarize(chosen, rows)))
        if args.per_log:
            print()
            print("\n".join(per_log(chosen, rows)))
        print()


if __name__ == "__main__":
    main()
