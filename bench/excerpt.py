"""Benchmark: the failure excerpt against the plain last 60 lines, over the failing-log corpus.

Every log in tests/parse/failing/ has NAME.excerpt.json: the lines a person points at to explain the failure
(read by hand), the adapter command that would have run it (or none), and for some the same step's passing log.
For each way of choosing lines this prints, over the corpus: the recall of the pointed-at lines (all lines
pooled, and the mean per log), how many logs have every pointed-at line shown, and the lines shown.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runner.adapters import resolve  # noqa: E402 - after the path is set
from runner.excerpt import GENERIC_FAMILIES, MAX_LINES, excerpt  # noqa: E402
from runner.findings import decode_log  # noqa: E402
from runner.load import load_project_adapters  # noqa: E402
from runner.parse import builtin_dir, load_library  # noqa: E402

CORPUS = ROOT / "tests" / "parse" / "failing"
LIB = load_library([builtin_dir()])
ADAPTERS = load_project_adapters(CORPUS)  # the built-in ones: the corpus folder adds none


def cases() -> list[tuple[str, str, dict]]:
    out = []
    for meta in sorted(CORPUS.glob("*.excerpt.json")):
        name = meta.name[: -len(".excerpt.json")]
        out.append((name, decode_log((CORPUS / f"{name}.log").read_bytes()), json.loads(meta.read_text("utf-8"))))
    return out


def families(meta: dict) -> list:
    """The families the runner parses this log with: its adapter command's, or the generic ones."""
    a = meta.get("adapter")
    if not a:
        return [LIB.family(f) for f in GENERIC_FAMILIES]
    cmd = resolve(a["name"], CORPUS, ADAPTERS, variants=tuple(a.get("variants", ()))).command(a["command"])
    return [LIB.family(f) for f in cmd.parse]


def pointed(meta: dict) -> set[int]:
    return {k for a, b in meta["lines"] for k in range(a, b + 1)}


def shown(ranges) -> set[int]:
    return {k for a, b in ranges for k in range(a, b + 1)}


def last_lines(text: str, n: int = MAX_LINES) -> list[list[int]]:
    total = len(text.splitlines())
    return [[max(1, total - n + 1), total]] if total else []


def methods(name: str, text: str, meta: dict) -> dict[str, list[list[int]]]:
    base = None
    if meta.get("baseline"):
        base = decode_log((CORPUS / meta["baseline"]).read_bytes())
    return {
        "last 60 lines": last_lines(text),
        "excerpt, no family (generic evidence only)": excerpt(text, []),
        "excerpt, the runner's families": excerpt(text, families(meta)),
        "excerpt, families + baseline (where recorded)": excerpt(text, families(meta), base),
    }


def measure(which: str = "tuned") -> tuple[list[str], dict[str, dict]]:
    """which: "tuned" (the logs the excerpt was tuned on), "heldout", or "baseline" (tuned logs with a baseline)."""
    rows: dict[str, dict] = {}
    names = []
    for name, text, meta in cases():
        if bool(meta.get("heldout")) != (which == "heldout"):
            continue
        if which == "baseline" and not meta.get("baseline"):
            continue
        names.append(name)
        want = pointed(meta)
        for method, ranges in methods(name, text, meta).items():
            got = shown(ranges)
            r = rows.setdefault(method, {"hit": 0, "want": 0, "recalls": [], "full": 0, "sizes": [], "per": {}})
            hit = len(want & got)
            r["hit"] += hit
            r["want"] += len(want)
            r["recalls"].append(hit / len(want))
            r["full"] += want <= got
            r["sizes"].append(len(got))
            r["per"][name] = (hit, len(want), len(got))
    return names, rows


def table(names: list[str], rows: dict[str, dict]) -> str:
    out = [
        "| lines chosen by | recall (pooled) | recall (mean per log) | logs fully covered | lines shown (mean / max) |",
        "|---|---|---|---|---|",
    ]
    for method, r in rows.items():
        out.append(
            f"| {method} | {r['hit'] / r['want']:.0%} ({r['hit']}/{r['want']}) | "
            f"{statistics.mean(r['recalls']):.0%} | {r['full']}/{len(names)} | "
            f"{statistics.mean(r['sizes']):.1f} / {max(r['sizes'])} |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-log", action="store_true", help="also print each log's pointed lines found / shown")
    args = ap.parse_args()
    names, rows = measure("tuned")
    want = rows["last 60 lines"]["want"]
    print(f"{len(names)} failing logs (the excerpt was tuned on these), {want} pointed-at lines\n")
    print(table(names, rows))
    held, held_rows = measure("heldout")
    print(f"\n{len(held)} held-out failing logs (pointed at before the excerpt saw them, never tuned on):\n")
    print(table(held, held_rows))
    with_base, base_rows = measure("baseline")
    print(f"\nthe {len(with_base)} logs with a recorded passing baseline ({', '.join(with_base)}):\n")
    print(table(with_base, base_rows))
    if args.per_log:
        print()
        for table_rows, table_names in ((rows, names), (held_rows, held)):
            for name in table_names:
                r = table_rows
                cells = [f"{x['per'][name][0]}/{x['per'][name][1]} in {x['per'][name][2]}" for x in r.values()]
                print(f"{name:28} " + " | ".join(cells))


if __name__ == "__main__":
    main()
