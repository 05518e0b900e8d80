"""Benchmark: the regex library's whole parse (re2.Set candidates) vs a plain `re` loop over the same patterns."""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runner.findings import clean_log, parse_findings  # noqa: E402 - after the path is set
from runner.parse import builtin_dir, load_library  # noqa: E402

LOGHUB = Path("/work/shared/data/loghub")  # read in place, never copied into the repository
CORPUS = ROOT / "tests" / "parse" / "logs"


def build_text(target_mb: float) -> str:
    """Real log text: the test-runner corpus interleaved with loghub's 2k-line samples, repeated to the target size."""
    parts = [p.read_bytes().decode("utf-8", "replace") for p in sorted(CORPUS.glob("*/*.log"))]
    parts += [p.read_text("utf-8", "replace") for p in sorted(LOGHUB.glob("*/*_2k.log"))]
    block = "\n".join(parts)
    want = int(target_mb * 1024 * 1024)
    return (block * (want // len(block) + 1))[:want]


def to_python_re(regex: str) -> str:
    """RE2 spellings Python's re writes differently (only what the shipped patterns use)."""
    return regex.replace("\\z", "\\Z")


def plain_re_loop(text: str, families) -> int:
    """What a hand-written parser does: every pattern on every line (text-scope ones over the whole text)."""
    compiled = []
    for fam in families:
        for p in fam.select(("active",)):
            compiled.append((p.scope, re.compile(to_python_re(p.full_regex))))
    hits = 0
    lines = text.split("\n")
    for scope, rx in compiled:
        if scope == "text":
            hits += sum(1 for _ in rx.finditer(text))
        else:
            for line in lines:
                if rx.search(line):
                    hits += 1
    return hits


def median_time(fn, runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mb", type=float, default=10.0, help="size of the synthetic log (default 10 MB)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs; the median is reported (default 5)")
    args = ap.parse_args()
    lib = load_library([builtin_dir()])
    families = [f for name, f in sorted(lib.families.items()) if name != "protocol"]
    text = clean_log(build_text(args.mb))
    n_patterns = sum(len(f.select(("active",))) for f in families)
    print(
        f"log: {len(text) / 1e6:.1f} MB, {text.count(chr(10)) + 1} lines; {n_patterns} patterns in "
        f"{len(families)} families"
    )
    t_lib, found = median_time(lambda: parse_findings(text, families), args.runs)
    t_naive, found_naive = median_time(lambda: parse_findings(text, families, naive=True), 1)
    t_re, re_hits = median_time(lambda: plain_re_loop(text, families), args.runs)
    print(f"library parse (re2.Set + one match per candidate): {t_lib * 1000:.0f} ms  ({len(found.matches)} matches)")
    print(
        f"naive RE2 loop, every pattern x every line (1 run): {t_naive * 1000:.0f} ms  "
        f"({len(found_naive.matches)} matches)"
    )
    print(f"plain Python re loop, every pattern x every line:  {t_re * 1000:.0f} ms  ({re_hits} hits)")
    print(f"ratio re loop / library: {t_re / t_lib:.1f}x; MB/s library: {len(text) / 1e6 / t_lib:.1f}")


if __name__ == "__main__":
    main()
