"""Benchmark: runner's log-template induction against Drain (PyPI drain3, LOGPAI's logparser3) on Loghub-2k, twice:
with the same settings on all eight systems (runner's defaults, drain3's defaults, LOGPAI's published per-dataset
settings), and leave-one-system-out: every setting of each tool chosen on seven systems from a small declared grid
(the best average grouping accuracy), then scored on the eighth, each system in turn."""

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


def run_drain3(
    lines: list[str], system: str, sim_th: float | None = None, depth: int | None = None
) -> tuple[list[object], list[str], dict]:
    from drain3 import TemplateMiner
    from drain3.template_miner_config import TemplateMinerConfig

    config = TemplateMinerConfig()  # drain3's defaults: sim_th 0.4, depth 4, no masking
    if sim_th is not None:
        config.drain_sim_th = sim_th
    if depth is not None:
        config.drain_depth = depth
    miner = TemplateMiner(config=config)
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


def run_logpai(
    lines: list[str],
    system: str,
    st: float | None = None,
    depth: int | None = None,
    regex: Sequence[str] | None = None,
) -> tuple[list[object], list[str], dict]:
    """LOGPAI's Drain; each setting not given is LOGPAI's published one for this system."""
    import pandas as pd
    from logparser.Drain import LogParser

    published = logpai_settings()[system]
    setting = {
        "st": published["st"] if st is None else st,
        "depth": published["depth"] if depth is None else depth,
        "regex": published["regex"] if regex is None else list(regex),
    }

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
# Leave one system out: each tool's settings, the grid each is chosen from (in this order; a tie goes to the first).
# runner: `word_values` is the one setting of runner/learn/induce.py that changes how it groups (LONG_LINE, the other
# number there, is a cost bound: past 128 tokens a line joins others only by shape; no Loghub-2k line here is longer
# than 105). Drain: its similarity threshold and its tree's depth, the two settings LOGPAI tunes per dataset. LOGPAI's
# per-dataset masking regexes are knowledge of each system too: in this mode each system is read with the union of
# the other seven systems' published regexes, never its own.
RUNNER_GRID = tuple({"word_values": k} for k in (0, 2, 3, 4, 6))
DRAIN_GRID = tuple({"st": st, "depth": d} for st in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7) for d in (3, 4, 5, 6))
GRIDS: dict[str, tuple[dict, ...]] = {"runner": RUNNER_GRID, "drain3": DRAIN_GRID, "logpai": DRAIN_GRID}


def others_regex(system: str) -> list[str]:
    """The masking regexes LOGPAI publishes for every other system, each once, in a fixed order."""
    out: list[str] = []
    for name, setting in sorted(logpai_settings().items()):
        if name != system:
            out += [rx for rx in setting["regex"] if rx not in out]
    return out


def run_setting(tool: str, lines: list[str], system: str, setting: dict) -> list[object]:
    """The group of each line under one setting of the grid."""
    if tool == "runner":
        return run_runner(lines, system, word_values=setting["word_values"])[0]
    if tool == "drain3":
        return run_drain3(lines, system, sim_th=setting["st"], depth=setting["depth"])[0]
    return run_logpai(lines, system, st=setting["st"], depth=setting["depth"], regex=others_regex(system))[0]


def leave_one_out(data: Path, systems: list[str], tools: Sequence[str]) -> dict:
    """Each tool's grouping accuracy leave-one-system-out: for each system, the setting of the tool's grid that
    gives the best average on the other seven (ties: the first in the grid), scored on it. Every setting is run on
    every system once."""
    loaded = {system: load_system(data, system) for system in systems}
    out: dict = {"grids": {t: list(GRIDS[t]) for t in tools}, "by_setting": {}, "systems": {}, "average": {}}
    for tool in tools:
        grid = GRIDS[tool]
        ga = [
            {s: round(grouping_accuracy(run_setting(tool, loaded[s][0], s, setting), loaded[s][1]), 4) for s in systems}
            for setting in grid
        ]
        out["by_setting"][tool] = ga
        for held in systems:
            rest = [s for s in systems if s != held]
            best = max(range(len(grid)), key=lambda k: (round(sum(ga[k][s] for s in rest) / len(rest), 6), -k))
            out["systems"].setdefault(held, {})[tool] = {"setting": grid[best], "grouping_accuracy": ga[best][held]}
        scores = [out["systems"][s][tool]["grouping_accuracy"] for s in systems]
        out["average"][tool] = round(sum(scores) / len(systems), 4)
        print(f"leave one out: {tool:7} average GA {out['average'][tool]:.4f}", file=sys.stderr)
    return out


def _setting_text(setting: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in setting.items())


def render_loo(loo: dict) -> str:
    tools = [t for t in TOOLS if t in loo["average"]]
    head = {"runner": "runner", "drain3": "drain3", "logpai": "LOGPAI Drain"}
    others = len(loo["systems"]) - 1
    grids = {
        "runner": "`word_values` (how many plain words after a naming word such as `user` or `host` make that "
        "position a variable) from 0, 2, 3, 4, 6",
        "drain3": "similarity threshold from 0.2, 0.3, 0.4, 0.5, 0.6, 0.7 (LOGPAI publishes 0.2 to 0.7) and depth "
        "from 3, 4, 5, 6",
        "logpai": "`st` and `depth` from the same grid as drain3, with the other systems' masking regexes",
    }
    lines = [
        "",
        "",
        "**Leave one system out** (the figure that says how the rules carry to a system they were not tuned on): "
        f"for each system, each tool's settings are chosen on the other {others} (the best average grouping accuracy "
        "over a declared grid; a tie goes to the first setting in the grid) and the held-out system is scored with "
        "that choice. Grids: "
        + "; ".join(f"{head[t]}, {grids[t]}" for t in tools)
        + ". The table above is the other figure: one setting for all eight systems (runner's and drain3's "
        "defaults, LOGPAI's per-dataset settings), scored on the systems they were chosen with.",
        "",
        "| held out | "
        + " | ".join(f"{head[t]}: setting chosen on the other {others} | GA {head[t]}" for t in tools)
        + " |",
        "|---|" + "---|---|" * len(tools),
    ]
    for system, row in loo["systems"].items():
        best = max(row[t]["grouping_accuracy"] for t in tools)
        cells = []
        for t in tools:
            v = row[t]["grouping_accuracy"]
            cells += [_setting_text(row[t]["setting"]), f"**{v:.3f}**" if v == best else f"{v:.3f}"]
        lines.append(f"| {system} | " + " | ".join(cells) + " |")
    best = max(loo["average"][t] for t in tools)
    avg = [f"**{loo['average'][t]:.3f}**" if loo["average"][t] == best else f"{loo['average'][t]:.3f}" for t in tools]
    lines.append("| **average** | " + " | ".join(f" | {a}" for a in avg) + " |")
    if "runner" in tools:
        # where runner's setting matters at all: a system it leaves unchanged says nothing of the choice
        ga = loo["by_setting"]["runner"]
        grid = loo["grids"]["runner"]
        moved = [s for s in loo["systems"] if len({row[s] for row in ga}) > 1]
        if not moved:
            return "\n".join([*lines, "", "runner's setting changes the grouping of no system here."])
        lines += [
            "",
            "runner's setting changes the grouping of "
            + ", ".join(moved)
            + " alone ("
            + "; ".join(
                f"{s}: " + ", ".join(f"{_setting_text(g)} {row[s]:.3f}" for g, row in zip(grid, ga, strict=True))
                for s in moved
            )
            + f"): held out, the other {others} cannot tell its settings apart, and the first of the grid is chosen.",
        ]
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
        "**One setting on all eight systems** (runner's default `word_values` "
        f"{WORD_VALUES}, drain3's defaults, LOGPAI's published per-dataset settings): each scored on systems its "
        "settings were chosen with.",
        "",
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
    ap.add_argument("--no-loo", action="store_true", help="skip the leave-one-system-out figures (a minute here)")
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
    if not a.no_loo:
        results["leave_one_out"] = leave_one_out(a.data, systems, tools)
    text = render(results) + (render_loo(results["leave_one_out"]) if "leave_one_out" in results else "")
    print(text)
    if a.json:
        a.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if a.readme:
        write_readme(text)


if __name__ == "__main__":
    main()
