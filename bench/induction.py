"""Benchmark: runner's log-template induction against Drain (PyPI drain3, LOGPAI's logparser3) on Loghub-2k, and
runner's figure leave-one-system-out: its one setting (how many words at a naming position make a variable) chosen
on seven systems and scored on the eighth, each in turn."""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import importlib.util
import io
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from runner import parse  # noqa: E402 - the repository's runner, found through the path set just above
from runner.learn.induce import WORD_VALUES, induce  # noqa: E402

LOGHUB = Path("/work/shared/data/loghub")  # read in place; the data is never copied into the repository
README = BENCH / "README.md"
FIG_START, FIG_END = "<!-- induction:start -->", "<!-- induction:end -->"
TOOLS = ("runner", "drain3", "logpai")


# --- the data and the two measures ------------------------------------------------------------------------


def load_system(data: Path, system: str) -> tuple[list[str], list[str], list[str]]:
    """(Content, EventId, EventTemplate) per line of SYSTEM_2k.log_structured_corrected.csv."""
    path = data / system / f"{system}_2k.log_structured_corrected.csv"
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    return [r["Content"] for r in rows], [r["EventId"] for r in rows], [r["EventTemplate"] for r in rows]


def grouping_accuracy(predicted: Sequence[object], truth: Sequence[str]) -> float:
    """The share of lines whose predicted group is exactly the set of lines of their ground-truth EventId."""
    truth_size = Counter(truth)
    groups: dict[object, list[int]] = defaultdict(list)
    for i, p in enumerate(predicted):
        groups[p].append(i)
    good = 0
    for members in groups.values():
        events = {truth[i] for i in members}
        if len(events) == 1 and truth_size[truth[members[0]]] == len(members):
            good += len(members)
    return good / len(truth)


def parsing_accuracy(templates: Sequence[str], truth: Sequence[str]) -> float:
    """The share of lines whose template equals the ground truth's after whitespace normalisation."""
    return sum(" ".join(a.split()) == " ".join(b.split()) for a, b in zip(templates, truth, strict=True)) / len(truth)


# --- the three tools: each returns (group id, template) per line ------------------------------------------


def run_runner(lines: list[str], system: str, word_values: int = WORD_VALUES) -> tuple[list[object], list[str], dict]:
    result = induce(lines, family=system.lower(), word_values=word_values)
    by_name = {p.name: p for p in result.patterns}
    ids = [a or "" for a in result.assignments]
    templates = [by_name[a].template if a else "" for a in result.assignments]
    return ids, templates, {"patterns": len(result.patterns), "_result": result}


def check_runner(lines: list[str], result) -> dict:
    """Outside the timing: each line matched by its own pattern, and how many lines another pattern matches too."""
    own_misses = cross = 0
    patterns = result.patterns
    for line, name in zip(lines, result.assignments, strict=True):
        if name is None:
            continue
        hits = [p.name for p in patterns if parse.re2_fullmatch(p.regex, line) is not None]
        own_misses += name not in hits
        cross += any(h != name for h in hits)
    return {"own_misses": own_misses, "cross_matched": cross}


def run_drain3(lines: list[str], system: str) -> tuple[list[object], list[str], dict]:
    from drain3 import TemplateMiner
    from drain3.template_miner_config import TemplateMinerConfig

    miner = TemplateMiner(config=TemplateMinerConfig())  # drain3's defaults: sim_th 0.4, depth 4, no masking
    ids = [miner.add_log_message(line)["cluster_id"] for line in lines]
    final = {c.cluster_id: c.get_template() for c in miner.drain.clusters}
    return ids, [final[i] for i in ids], {"patterns": len(final)}


def logpai_settings() -> dict[str, dict]:
    """The per-dataset Drain settings LOGPAI publishes (logparser/Drain/benchmark.py of logparser3), read from
    the installed package rather than retyped: the file runs its benchmark when imported, so it is parsed."""
    spec = importlib.util.find_spec("logparser")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("logparser3 is not installed: pip install -r bench/requirements.txt")
    path = Path(next(iter(spec.submodule_search_locations))) / "Drain" / "benchmark.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "benchmark_settings" for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise SystemExit(f"no benchmark_settings in {path}")


def run_logpai(lines: list[str], system: str) -> tuple[list[object], list[str], dict]:
    import pandas as pd
    from logparser.Drain import LogParser

    setting = logpai_settings()[system]

    class ContentDrain(LogParser):
        """LOGPAI's Drain fed the same Content column as the others (its own loader splits the raw log file)."""

        def load_data(self) -> None:
            self.df_log = pd.DataFrame({"LineId": range(1, len(lines) + 1), "Content": lines})

    with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(io.StringIO()):
        drain = ContentDrain(
            log_format="<Content>",
            indir=out,
            outdir=out,
            depth=setting["depth"],
            st=setting["st"],
            rex=setting["regex"],
            keep_para=False,
        )
        drain.parse(f"{system}.log")
        templates = list(drain.df_log["EventTemplate"])
    return templates, templates, {"patterns": len(set(templates))}


RUNS: dict[str, Callable] = {"runner": run_runner, "drain3": run_drain3, "logpai": run_logpai}
GRID = (0, 2, 3, 4, 6)  # runner's setting: words at a naming position that make a variable (0: never)


def leave_one_out(data: Path, systems: list[str]) -> dict:
    """runner's grouping accuracy leave-one-system-out: for each system, the setting that gives the best average
    on the other seven (ties: the smaller), scored on it. Every setting is run on every system once."""
    ga: dict[int, dict[str, float]] = {}
    for k in GRID:
        ga[k] = {}
        for system in systems:
            lines, events, _ = load_system(data, system)
            ids, _templates, _extra = run_runner(lines, system, word_values=k)
            ga[k][system] = round(grouping_accuracy(ids, events), 4)
    out: dict = {"grid": list(GRID), "by_setting": ga, "systems": {}}
    for held in systems:
        rest = [s for s in systems if s != held]
        best = max(GRID, key=lambda k: (round(sum(ga[k][s] for s in rest) / len(rest), 6), -k))
        out["systems"][held] = {"setting": best, "grouping_accuracy": ga[best][held]}
    out["average"] = round(sum(r["grouping_accuracy"] for r in out["systems"].values()) / len(systems), 4)
    return out


def render_loo(loo: dict) -> str:
    lines = [
        "",
        "Leave one system out (runner's one setting, `word_values`: how many plain words after a naming word such "
        "as `user` or `host` make that position a variable, chosen from "
        + ", ".join(str(k) for k in loo["grid"])
        + " by the best average grouping accuracy on the other seven systems, then scored on the held-out one):",
        "",
        "| held out | setting chosen on the other 7 | GA on the held-out system |",
        "|---|---|---|",
    ]
    lines += [f"| {s} | {r['setting']} | {r['grouping_accuracy']:.3f} |" for s, r in loo["systems"].items()]
    lines.append(f"| **average** | | **{loo['average']:.3f}** |")
    return "\n".join(lines)


# --- the run and its table ----------------------------------------------------------------------------------


def measure(data: Path, systems: list[str], tools: Sequence[str]) -> dict:
    out: dict = {"systems": {}}
    for system in systems:
        lines, events, truth = load_system(data, system)
        row: dict = {"lines": len(lines), "events": len(set(events))}
        for tool in tools:
            t0 = time.perf_counter()
            ids, templates, extra = RUNS[tool](lines, system)
            seconds = time.perf_counter() - t0
            result = extra.pop("_result", None)
            row[tool] = {
                "grouping_accuracy": round(grouping_accuracy(ids, events), 4),
                "parsing_accuracy": round(parsing_accuracy(templates, truth), 4),
                "seconds": round(seconds, 3),
                **extra,
            }
            if result is not None:
                row[tool].update(check_runner(lines, result))
            print(
                f"{system:10} {tool:7} GA {row[tool]['grouping_accuracy']:.4f}  PA {row[tool]['parsing_accuracy']:.4f}"
                f"  {seconds:.2f} s  {extra.get('patterns')} groups ({row['events']} events)",
                file=sys.stderr,
            )
        out["systems"][system] = row
    out["average"] = {
        tool: {
            key: round(sum(r[tool][key] for r in out["systems"].values()) / len(systems), 4)
            for key in ("grouping_accuracy", "parsing_accuracy", "seconds")
        }
        for tool in tools
    }
    return out


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for dist in ("drain3", "logparser3", "google-re2"):
        try:
            found[dist] = version(dist)
        except PackageNotFoundError:
            found[dist] = "not installed"
    return found


def render(results: dict) -> str:
    tools = [t for t in TOOLS if t in results["average"]]
    head = {"runner": "runner", "drain3": "drain3", "logpai": "LOGPAI Drain"}
    lines = [
        f"Measured {results['when']} on {results['machine']} (load average {results['load']} at the start: the "
        "machine is shared, so read the seconds as rough); "
        f"runner at commit {results['commit']}. "
        f"Command: `{results['command']}`.",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in results["versions"].items()) + ".",
        "",
        "| system | lines | events | "
        + " | ".join(f"GA {head[t]}" for t in tools)
        + " | "
        + " | ".join(f"PA {head[t]}" for t in tools)
        + " | "
        + " | ".join(f"s {head[t]}" for t in tools)
        + " |",
        "|---|---|---|" + "---|" * (3 * len(tools)),
    ]

    def cells(row: dict, key: str, fmt: str) -> list[str]:
        values = [row[t][key] for t in tools]
        best = max(values) if key != "seconds" else min(values)
        return [(f"**{v:{fmt}}**" if v == best and key != "seconds" else f"{v:{fmt}}") for v in values]

    for system, row in results["systems"].items():
        lines.append(
            f"| {system} | {row['lines']} | {row['events']} | "
            + " | ".join(cells(row, "grouping_accuracy", ".3f"))
            + " | "
            + " | ".join(cells(row, "parsing_accuracy", ".3f"))
            + " | "
            + " | ".join(cells(row, "seconds", ".2f"))
            + " |"
        )
    avg = results["average"]
    lines.append(
        "| **average** | | | "
        + " | ".join(cells(avg, "grouping_accuracy", ".3f"))
        + " | "
        + " | ".join(cells(avg, "parsing_accuracy", ".3f"))
        + " | "
        + " | ".join(cells(avg, "seconds", ".2f"))
        + " |"
    )
    if "runner" in tools:
        lines += [
            "",
            "runner's patterns, checked outside the timing (every line against every pattern, RE2 full match):",
            "",
            "| system | patterns | lines their own pattern misses | lines another pattern matches too |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {s} | {r['runner']['patterns']} | {r['runner']['own_misses']} | {r['runner']['cross_matched']} |"
            for s, r in results["systems"].items()
        ]
    return "\n".join(lines)


def write_readme(text: str) -> None:
    readme = README.read_text(encoding="utf-8")
    a, b = readme.index(FIG_START) + len(FIG_START), readme.index(FIG_END)
    README.write_text(readme[:a] + "\n" + text + "\n" + readme[b:], encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=LOGHUB, help=f"the Loghub-2k folder (default {LOGHUB})")
    ap.add_argument("--systems", nargs="*", help="systems to run (default: every folder with a corrected CSV)")
    ap.add_argument("--tools", default=",".join(TOOLS), help="comma-separated, of runner,drain3,logpai")
    ap.add_argument("--json", type=Path, help="also write the figures as JSON to this file")
    ap.add_argument("--readme", action="store_true", help="write the table into bench/README.md")
    a = ap.parse_args()
    systems = a.systems or sorted(
        p.parent.name
        for p in a.data.glob("*/*_2k.log_structured_corrected.csv")
        if p.name.split("_2k.log")[0] == p.parent.name
    )
    if not systems:
        raise SystemExit(f"no Loghub-2k systems under {a.data}")
    tools = [t for t in a.tools.split(",") if t]
    load = f"{os.getloadavg()[0]:.1f}"
    results = measure(a.data, systems, tools)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    results.update(
        when=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        machine=f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        commit=commit.stdout.strip() or "unknown",
        command="python bench/induction.py " + " ".join(sys.argv[1:]),
        versions=versions(),
        load=load,
    )
    if "runner" in tools:
        results["leave_one_out"] = leave_one_out(a.data, systems)
    text = render(results) + (render_loo(results["leave_one_out"]) if "leave_one_out" in results else "")
    print(text)
    if a.json:
        a.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if a.readme:
        write_readme(text)


if __name__ == "__main__":
    main()
