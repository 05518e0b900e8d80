"""Run the build-tool benchmark (clean -j1/-j2, no-op, touch, edit) for runner, make, ninja, doit and Snakemake."""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
import dag as dagmod  # noqa: E402 - dag.py sits beside this script, on the path set just above

VENV_BIN = BENCH / ".venv" / "bin"
RUNNER_BIN = ROOT / ".venv" / "bin" / "runner"
RESULTS = BENCH / "results.json"
README = BENCH / "README.md"
FIG_START, FIG_END = "<!-- figures:start -->", "<!-- figures:end -->"

SCENARIOS = [
    "clean_j1",
    "clean_j2",
    "noop_first",
    "noop",
    "touch",
    "edit",
    "noop_after_edit",
    "spec_edit",
    "command_edit",
]
ALL_TOOLS = ["runner", "make", "ninja", "doit", "snakemake"]


# --- how each tool builds, what state it keeps, and how its output says what re-ran ----------------------


def _count(pattern: str) -> Callable[[str], dict]:
    rx = re.compile(pattern, re.MULTILINE)
    return lambda text: {"ran": len(rx.findall(text))}


def _runner_count(text: str) -> dict:
    ran = statuses = None
    counts: dict[str, int] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("event") == "step_finished":
            counts[ev.get("status", "?")] = counts.get(ev.get("status", "?"), 0) + 1
        elif ev.get("event") == "run_finished":
            statuses = {k: v for k, v in ev.items() if isinstance(v, int)}
            ran = ev.get("ran")
    out = {"ran": ran if ran is not None else counts.get("ran"), "statuses": counts}
    if statuses is not None:
        out["run_finished"] = statuses
    return out


@dataclass
class Tool:
    name: str
    argv: Callable[[Path, int], list[str]]
    state: list[str]  # files/dirs (in the work dir) holding the tool's own state: removed for a clean build
    count: Callable[[str], dict]
    version: list[str]
    build_file: str  # what the user edits to change the build (a `#` comment is one in each tool's syntax)


TOOLS: dict[str, Tool] = {
    "runner": Tool(
        "runner",
        lambda d, j: [str(RUNNER_BIN), "make", "-C", str(d), "-j", str(j), "--json"],
        [".runner"],
        _runner_count,
        [str(RUNNER_BIN), "--version"],
        "intents.toml",
    ),
    "make": Tool(
        "make",
        lambda d, j: ["make", f"-j{j}"],
        [],
        _count(r"^md5sum "),
        ["make", "--version"],
        "Makefile",
    ),
    "ninja": Tool(
        "ninja",
        lambda d, j: ["ninja", f"-j{j}", "-v"],
        [".ninja_log", ".ninja_deps"],
        _count(r"^(?:\[\d+/\d+\] )?md5sum "),
        ["ninja", "--version"],
        "build.ninja",
    ),
    "doit": Tool(
        "doit",
        lambda d, j: [str(VENV_BIN / "doit")] + (["-n", str(j), "-P", "thread"] if j > 1 else []),
        [".doit.db", ".doit.db.bak", ".doit.db.dat", ".doit.db.dir", "__pycache__"],
        _count(r"^\.  s\d+$"),
        [str(VENV_BIN / "doit"), "--version"],
        "dodo.py",
    ),
    "snakemake": Tool(
        "snakemake",
        lambda d, j: [str(VENV_BIN / "snakemake"), "--cores", str(j)],
        [".snakemake"],
        _count(r"^\s*(?:local)?rule step:"),
        [str(VENV_BIN / "snakemake"), "--version"],
        "Snakefile",
    ),
}


def runner_at(name: str, binary: str) -> Tool:
    """Another runner install measured beside this checkout's (`--runner-also NAME=PATH`): a commit before a
    change, timed in the same run, interleaved with it, on the same machine load."""
    return Tool(
        name,
        lambda d, j: [binary, "make", "-C", str(d), "-j", str(j), "--json"],
        [".runner"],
        _runner_count,
        [binary, "--version"],
        "intents.toml",
    )


# --- one timed child process ----------------------------------------------------------------------------


@dataclass
class Sample:
    seconds: float
    rss_kb: int  # max RSS of the largest process among the tool and the descendants it reaped
    rc: int
    output: str


GNU_TIME = shutil.which("time", path="/usr/bin:/bin")


def run_child(argv: list[str], cwd: Path, timeout: float) -> Sample:
    """Run argv in cwd, output to a file; wall time around fork..reap; max RSS from GNU time's %M.

    A child's ru_maxrss starts from the RSS of the process it was forked from (Linux keeps the pre-exec
    high-water mark), so the rusage wait4 hands this ~20 MB harness would inflate a 3 MB make to 20 MB:
    GNU time, itself ~2 MB, forks the tool instead. Without it, wait4's figure is kept (an upper bound)."""
    log = cwd / ".bench-output.log"
    rss_file = cwd / ".bench-rss"
    wrapped = [GNU_TIME, "-f", "%M", "-o", str(rss_file), *argv] if GNU_TIME else argv
    with open(log, "wb") as fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            wrapped,
            cwd=cwd,
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        timer = threading.Timer(timeout, lambda: os.killpg(proc.pid, signal.SIGKILL))
        timer.start()
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = log.read_text(errors="replace")
    log.unlink()
    rss = ru.ru_maxrss
    if GNU_TIME:
        lines = rss_file.read_text().split() if rss_file.exists() else []
        digits = [x for x in lines if x.isdigit()]
        rss = int(digits[-1]) if digits else rss
        rss_file.unlink(missing_ok=True)
    return Sample(seconds, rss, proc.returncode, text)


# --- scenarios ------------------------------------------------------------------------------------------


class Failed(Exception):
    pass


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.results: dict = {}

    def reset(self, tool: Tool, d: Path) -> None:
        for name in tool.state + ["out"]:
            p = d / name
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
        (d / "out").mkdir()

    def once(self, tool: Tool, d: Path, jobs: int, scenario: str, rec: dict) -> Sample:
        argv = tool.argv(d, jobs)
        s = run_child(argv, d, self.args.timeout)
        if s.rc != 0:
            tail = "\n".join(s.output.splitlines()[-30:])
            raise Failed(f"{' '.join(argv)} (cwd {d}) exited {s.rc} in scenario {scenario}:\n{tail}")
        counted = tool.count(s.output)
        r = rec.setdefault(scenario, {"seconds": [], "rss_kb": [], "ran": [], "jobs": jobs})
        r["seconds"].append(round(s.seconds, 4))
        r["rss_kb"].append(s.rss_kb)
        r["ran"].append(counted.get("ran"))
        if "statuses" in counted:
            r.setdefault("statuses", []).append(counted["statuses"])
        print(
            f"  {tool.name:<10} {scenario:<10} -j{jobs} {s.seconds:9.3f} s  ran={counted.get('ran')}  "
            f"rss={s.rss_kb / 1024:.0f} MB",
            flush=True,
        )
        return s

    def size(self, n: int, tools: list[str]) -> dict:
        a = self.args
        dag = dagmod.build(n, a.layers, a.seed)
        meta = dag.meta()
        base = a.work / str(n)
        # --reuse-work: the tools' folders as an earlier run at this size built them (the same seeded DAG)
        reuse = a.reuse_work and all((base / t / "out").is_dir() for t in tools)
        if not reuse:
            dagmod.write(dag, base / "base")
        dirs = {}
        for t in tools:
            d = base / t
            if not reuse:
                if d.exists():
                    shutil.rmtree(d)
                shutil.copytree(base / "base", d)
            dirs[t] = d
        slow = n >= a.slow_above
        recs: dict[str, dict] = {t: {} for t in tools}
        errors: dict[str, str] = {}
        live = list(tools)

        def attempt(t: str, fn: Callable[[], None]) -> None:
            if t not in live:
                return
            try:
                fn()
            except Failed as e:
                print(f"  !! {t} failed: {e}", flush=True)
                errors[t] = str(e)
                live.remove(t)

        def reps_for(t: str, reps: int, slow_reps: int) -> int:
            return min(reps, slow_reps) if (slow and t in a.slow_tools) else reps

        def rotated(rep: int) -> list[str]:
            k = rep % len(live) if live else 0
            return live[k:] + live[:k]

        print(f"== {n} steps: {json.dumps(meta)}{' (reusing the built folders)' if reuse else ''}", flush=True)
        # clean builds: each repetition interleaves the tools, -j1 then -j2
        for rep in range(0 if reuse else a.clean_reps):
            for jobs in (1, 2):
                for t in rotated(rep):
                    if rep >= reps_for(t, a.clean_reps, a.slow_clean_reps):
                        continue
                    tool, d = TOOLS[t], dirs[t]

                    def clean(tool=tool, d=d, jobs=jobs):
                        self.reset(tool, d)
                        self.once(tool, d, jobs, f"clean_j{jobs}", recs[tool.name])

                    attempt(t, clean)

        # every tool built the same bytes?
        built = list(live) if reuse else [t for t in live if recs[t].get("clean_j1") or recs[t].get("clean_j2")]
        digests = {t: _tree_digest(dirs[t] / "out") for t in built}
        # reused folders hold each tool's own earlier edits (unique bytes per tool): nothing to compare
        same_outputs = None if reuse else len(set(digests.values())) <= 1

        # a tool given no clean build at this size starts from another tool's outputs (same bytes, mtimes kept)
        seeded = {}
        donors = [t for t in ("make", "ninja", *live) if t in digests]
        for t in live:
            if t not in digests and donors:
                self.reset(TOOLS[t], dirs[t])
                shutil.rmtree(dirs[t] / "out")
                shutil.copytree(dirs[donors[0]] / "out", dirs[t] / "out")
                seeded[t] = donors[0]
                print(
                    f"  {t:<10} no clean build at this size: out/ copied from {donors[0]}",
                    flush=True,
                )

        # the first no-op after the last clean build, once
        for t in list(live) if not reuse else []:
            attempt(
                t,
                lambda t=t: self.once(TOOLS[t], dirs[t], a.jobs, "noop_first", recs[t]),
            )

        # each repetition runs one scenario across all tools before the next. "noop" always follows another
        # no-op (the steady state); "noop_after_edit" is the first no-op after the build that followed an edit;
        # "spec_edit" follows a comment appended to the build file (intents.toml, the Makefile, ...): what the
        # tool pays to read its changed description when no step's command changed (the next rep's "noop"
        # follows it, so the comment stays and the file grows by a line a repetition); "command_edit" follows
        # the edit leaf's command respelled in the build file (an extra space, then back), in the tools whose build
        # file spells each step's command (runner, make; make does not notice a changed recipe and runs nothing)
        for rep in range(a.reps):
            for scenario in ("noop", "touch", "edit", "noop_after_edit", "spec_edit", "command_edit"):
                for t in rotated(rep):
                    if rep >= reps_for(t, a.reps, a.slow_reps):
                        continue
                    if scenario == "command_edit" and not _respelled(dirs[t] / TOOLS[t].build_file, dag.edit_source):
                        continue
                    d, src = dirs[t], dirs[t] / dag.edit_source
                    if scenario == "touch":
                        st = src.stat()
                        now = max(time.time_ns(), st.st_mtime_ns + 1_000_000)
                        os.utime(src, ns=(now, now))
                    elif scenario == "edit":
                        src.write_text(dagmod.source_text(int(dag.edit_leaf[1:])) + f"edit {rep} {uuid.uuid4()}\n")
                    elif scenario == "spec_edit":
                        with open(d / TOOLS[t].build_file, "a") as f:
                            f.write(f"# bench: a comment, repetition {rep}\n")
                    attempt(
                        t,
                        lambda t=t, d=d, scenario=scenario: self.once(TOOLS[t], d, a.jobs, scenario, recs[t]),
                    )

        return {
            "dag": meta,
            "tools": recs,
            "errors": errors,
            "same_outputs": same_outputs,
            "out_digests": digests,
            "seeded_from": seeded,
            "slow_tools_limited": sorted(set(a.slow_tools) & set(tools)) if slow else [],
            "reused_work": reuse,
        }


def _respelled(build_file: Path, source: str) -> bool:
    """The command that reads `source` spelled with an extra space, or back without it; False where the build
    file does not spell that command (ninja's rule, doit's and Snakemake's templates)."""
    text = build_file.read_text()
    one, two = f"md5sum {source} ", f"md5sum  {source} "
    if two in text:
        text = text.replace(two, one, 1)
    elif one in text:
        text = text.replace(one, two, 1)
    else:
        return False
    build_file.write_text(text)
    return True


def _tree_digest(d: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    for p in sorted(d.iterdir()):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


# --- machine facts and baselines ------------------------------------------------------------------------


def _version(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unavailable ({e.__class__.__name__})"
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if text else f"exit {out.returncode}"


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def machine(tools: list[str]) -> dict:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass

    def med_pass(py: str) -> float:
        xs = []
        for _ in range(7):
            t0 = time.perf_counter()
            subprocess.run([py, "-c", "pass"], check=True)
            xs.append(time.perf_counter() - t0)
        return round(statistics.median(xs), 4)

    m = {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "python_c_pass_s": med_pass("python3"),
        "versions": {t: _version(TOOLS[t].version) for t in tools},
        "md5sum": _version(["md5sum", "--version"]),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "runner_commit": _git("rev-parse", "--short", "HEAD"),
        "runner_dirty": bool(_git("status", "--porcelain", "--", "runner")),
    }
    if (VENV_BIN / "python").exists():
        m["bench_venv_python_c_pass_s"] = med_pass(str(VENV_BIN / "python"))
    if (ROOT / ".venv" / "bin" / "python").exists():
        m["runner_venv_python_c_pass_s"] = med_pass(str(ROOT / ".venv" / "bin" / "python"))
    return m


# --- summary: medians, ratios, targets ------------------------------------------------------------------


def _measured(results: dict) -> dict:
    """When, by what command and on which commit one size was measured (sizes kept from an earlier run
    with --keep-sizes say so under their own table)."""
    m, cfg = results.get("machine", {}), results.get("config", {})
    return {
        "date": m.get("date"),
        "command": cfg.get("command"),
        "runner_commit": m.get("runner_commit"),
        "runner_dirty": m.get("runner_dirty"),
    }


def _kept_sizes(path: Path, measuring: list[int]) -> dict:
    """The sizes an earlier run wrote to `path` that this run does not measure again."""
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    kept = {}
    for n, size in old.get("sizes", {}).items():
        if int(n) not in measuring:
            size.setdefault("measured", _measured(old))
            kept[n] = size
    return kept


def _by_size(sizes: dict) -> dict:
    return dict(sorted(sizes.items(), key=lambda kv: int(kv[0])))


def med(rec: dict, scenario: str) -> float | None:
    xs = rec.get(scenario, {}).get("seconds") or []
    return statistics.median(xs) if xs else None


def _label(scenario: str) -> str:
    return {
        "clean_j1": "clean -j1",
        "clean_j2": "clean -j2",
        "noop_first": "first no-op after clean",
        "noop": "no-op",
        "touch": "touch",
        "edit": "edit",
        "noop_after_edit": "first no-op after edit",
        "spec_edit": "a comment in the build file",
        "command_edit": "a step's command respelled",
    }[scenario]


def summarize(results: dict) -> str:
    """Markdown: per size a table of medians (and re-run counts), ratios vs runner, peak memory, targets."""
    out: list[str] = []
    m = results.get("machine", {})
    cfg = results.get("config", {})
    for n, size in results["sizes"].items():
        tools = list(size["tools"])
        meta = size["dag"]
        out.append(f"### {int(n):,} steps")
        out.append("")
        when = size.get("measured")
        if when and when.get("command") != cfg.get("command"):
            out.append(
                f"Measured {when['date']} by another run: `{when['command']}`; runner at commit "
                f"{when.get('runner_commit') or '?'}"
                f"{' (with uncommitted changes under runner/)' if when.get('runner_dirty') else ''}."
            )
            out.append("")
        out.append(
            f"{meta['layers']} layers, {meta['leaves']} leaves, {meta['edges']} edges; the edited leaf "
            f"`{meta['edit_leaf']}` has {meta['edit_expected']} steps downstream (itself included). "
            + (
                ""
                if size.get("reused_work")
                else f"All tools built byte-identical `out/`: {'yes' if size.get('same_outputs') else 'NO'}."
            )
        )
        out.append("")
        out.append("Median wall seconds (repetitions) · steps re-run:")
        out.append("")
        out.append("| scenario | " + " | ".join(tools) + " |")
        out.append("|---|" + "---|" * len(tools))
        for sc in SCENARIOS:
            cells = []
            for t in tools:
                r = size["tools"][t].get(sc)
                if not r:
                    cells.append("failed" if t in size["errors"] else "—")
                    continue
                ran = sorted({x for x in r["ran"] if x is not None})
                ran_s = "/".join(str(x) for x in ran) if ran else "?"
                cells.append(f"{statistics.median(r['seconds']):.3f} ({len(r['seconds'])}) · {ran_s}")
            out.append(f"| {_label(sc)} | " + " | ".join(cells) + " |")
        out.append("")
        if "runner" in tools and size["tools"]["runner"]:
            rr = size["tools"]["runner"]
            others = [t for t in tools if t != "runner"]
            out.append("Ratio: other tool's median ÷ runner's median (> 1: runner is faster):")
            out.append("")
            out.append("| scenario | " + " | ".join(others) + " |")
            out.append("|---|" + "---|" * len(others))
            for sc in SCENARIOS:
                mr = med(rr, sc)
                cells = []
                for t in others:
                    mt = med(size["tools"][t], sc)
                    cells.append(f"{mt / mr:.2f}×" if (mr and mt) else "—")
                out.append(f"| {_label(sc)} | " + " | ".join(cells) + " |")
            out.append("")
        out.append("Peak RSS (MB, max over repetitions; the largest single process of the tool's tree):")
        out.append("")
        out.append("| | " + " | ".join(tools) + " |")
        out.append("|---|" + "---|" * len(tools))
        for sc in ("clean_j2", "noop", "edit"):
            cells = []
            for t in tools:
                r = size["tools"][t].get(sc)
                cells.append(f"{max(r['rss_kb']) / 1024:.0f}" if r else "—")
            out.append(f"| {_label(sc)} | " + " | ".join(cells) + " |")
        out.append("")
        if size.get("reused_work"):
            out.append(
                "No clean build in this run (`--reuse-work`): no-op, touch and edit were measured in the folders "
                "an earlier run at this size had built."
            )
            out.append("")
        for t, donor in size.get("seeded_from", {}).items():
            out.append(
                f"{t} had no clean build at this size; its `out/` was copied from {donor}'s "
                f"(byte-identical, mtimes kept) before the no-op, touch and edit runs."
            )
            out.append("")
        if size.get("slow_tools_limited"):
            out.append(
                f"Fewer repetitions at this size for: {', '.join(size['slow_tools_limited'])} "
                f"(clean: {cfg.get('slow_clean_reps')}, no-op/touch/edit: {cfg.get('slow_reps')})."
            )
            out.append("")
        for t, err in size["errors"].items():
            out.append(f"**{t} failed**:")
            out.append("")
            out.append("```")
            out.append(err.strip())
            out.append("```")
            out.append("")
        tg = targets(n, size, m)
        if tg:
            out.append("runner against its targets:")
            out.append("")
            out.extend(f"- {line}" for line in tg)
            out.append("")
    return "\n".join(out)


def targets(n: str, size: dict, machine_: dict) -> list[str]:
    tools = size["tools"]
    rr = tools.get("runner") or {}
    if not rr:
        return []
    lines = []
    meta = size["dag"]

    def mark(ok: bool) -> str:
        return "met" if ok else "**missed**"

    big = int(n) >= 100000  # issue 16's targets for the 100,000-step graph
    noop = med(rr, "noop")
    if noop is not None and int(n) >= 10000:
        limit = 0.5 if big else 0.25
        lines.append(f"no-op {noop:.3f} s ≤ {limit} s: {mark(noop <= limit)}")
    if noop is not None:
        for t, want in (("doit", 3), ("snakemake", 20)):
            mt = med(tools.get(t, {}), "noop")
            if mt:
                lines.append(f"no-op {mt / noop:.1f}× faster than {t} (target ≥ {want}×): {mark(mt / noop >= want)}")
    touch = rr.get("touch")
    if touch:
        ran = sorted(set(touch["ran"]))
        lines.append(f"touch re-ran {ran} steps (target 0): {mark(ran == [0])}")
        tm = med(rr, "touch")
        if big and noop and tm:
            # "a touch at no-op cost": within a quarter of the steady no-op (a touch also rewrites the proof)
            lines.append(f"touch {tm:.3f} s = {tm / noop:.2f}× the no-op (target ≤ 1.25×): {mark(tm <= 1.25 * noop)}")
    edit = rr.get("edit")
    if edit:
        ran = sorted(set(edit["ran"]))
        exp = meta["edit_expected"]
        lines.append(f"edit re-ran {ran} steps, expected {exp}: {mark(ran == [exp])}")
        c1 = med(rr, "clean_j1")
        if noop is not None and c1:
            budget = noop + exp * (c1 / meta["steps"])
            em = med(rr, "edit")
            lines.append(
                f"edit {em:.3f} s vs no-op + {exp} steps at runner's own clean -j1 per-step cost = "
                f"{budget:.3f} s: {mark(em <= budget)}"
            )
            make = tools.get("make", {})
            mk = med(make, "clean_j1")
            if mk:
                b2 = noop + exp * (mk / meta["steps"])
                lines.append(
                    f"edit {em:.3f} s vs no-op + {exp} steps at GNU make's clean -j1 per-step cost = "
                    f"{b2:.3f} s: {mark(em <= b2)}"
                )
                m_noop, m_edit = med(make, "noop"), med(make, "edit")
                if m_noop is not None and m_edit:
                    # the same rule applied to make: its steps cost more in an edit than in a clean build
                    own = m_noop + exp * (mk / meta["steps"])
                    lines.append(
                        f"(GNU make by that rule: edit {m_edit:.3f} s vs its no-op + {exp} steps at its clean "
                        f"-j1 per-step cost = {own:.3f} s: {'within' if m_edit <= own else 'over'})"
                    )
            for other in ("make", "ninja"):
                o_noop, o_edit = med(tools.get(other, {}), "noop"), med(tools.get(other, {}), "edit")
                if o_noop is not None and o_edit:
                    b3 = noop + (o_edit - o_noop)
                    name = "GNU make" if other == "make" else other
                    lines.append(
                        f"edit {em:.3f} s vs no-op + the same {exp} steps as {name} runs them in this edit "
                        f"({o_edit:.3f} − {o_noop:.3f} s) = {b3:.3f} s: {mark(em <= b3)}"
                    )
        em, m_edit = med(rr, "edit"), med(tools.get("make", {}), "edit")
        if big and em and m_edit:
            lines.append(f"edit {em:.3f} s vs GNU make's {m_edit:.3f} s (target: no slower): {mark(em <= m_edit)}")
    c2, m2 = med(rr, "clean_j2"), med(tools.get("make", {}), "clean_j2")
    if c2 and m2:
        want = 1.1 if big else 1.3
        lines.append(f"clean -j2 {c2 / m2:.2f}× GNU make -j2 (target ≤ {want}×): {mark(c2 / m2 <= want)}")
    peak = max((max(r["rss_kb"]) for r in rr.values() if r.get("rss_kb")), default=0) / 1024
    if peak and rr.get("clean_j2"):  # the build is the peak: without one (--reuse-work) the target is not measured
        # MB here are MiB (GNU time's kB are KiB): issue 16's "≤ 300 MiB" at 100,000 steps
        lines.append(f"peak RSS {peak:.0f} MB (target ≤ 300 MB): {mark(peak <= 300)}")
    return lines


def write_readme(results: dict) -> None:
    text = README.read_text() if README.exists() else f"# Benchmarks\n\n{FIG_START}\n{FIG_END}\n"
    if FIG_START not in text or FIG_END not in text:
        raise SystemExit(f"{README} lacks the {FIG_START} … {FIG_END} markers")
    head, rest = text.split(FIG_START, 1)
    _, tail = rest.split(FIG_END, 1)
    m = results["machine"]
    cfg = results["config"]
    body = [
        (
            f"Measured {m['date']} on {m['cpu'] or 'unknown CPU'}, {m['cores']} cores, Linux {m['kernel']}, "
            f"Python {m['python']} (`python3 -c pass`: {m['python_c_pass_s']:.3f} s). "
            f"Command: `{cfg['command']}`; runner at commit {m.get('runner_commit') or '?'}"
            f"{' (with uncommitted changes under runner/)' if m.get('runner_dirty') else ''}."
        ),
        "",
        "Versions: " + "; ".join(f"{t}: {v}" for t, v in m["versions"].items()) + ".",
        "",
        summarize(results),
    ]
    README.write_text(head + FIG_START + "\n" + "\n".join(body).rstrip() + "\n" + FIG_END + tail)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--reps", type=int, default=9, help="repetitions of no-op, touch and edit")
    ap.add_argument("--clean-reps", type=int, default=3, help="repetitions of each clean build")
    ap.add_argument("--tools", default=",".join(ALL_TOOLS))
    ap.add_argument("--jobs", type=int, default=1, help="-j for the no-op, touch and edit scenarios")
    ap.add_argument(
        "--slow-tools",
        default="snakemake",
        help="tools given fewer repetitions at large sizes",
    )
    ap.add_argument(
        "--slow-above",
        type=int,
        default=10000,
        help="sizes at or above this are 'large'",
    )
    ap.add_argument("--slow-reps", type=int, default=3)
    ap.add_argument(
        "--slow-clean-reps",
        type=int,
        default=0,
        help="clean builds of slow tools at large sizes; with 0 their out/ is copied from make's",
    )
    ap.add_argument("--layers", type=int, default=dagmod.DEFAULT_LAYERS)
    ap.add_argument("--seed", type=int, default=dagmod.DEFAULT_SEED)
    ap.add_argument("--timeout", type=float, default=3600, help="seconds before one run is killed")
    ap.add_argument("--work", type=Path, default=BENCH / "work")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument(
        "--readme",
        action="store_true",
        help="rewrite the figures section of bench/README.md",
    )
    ap.add_argument(
        "--render-only",
        action="store_true",
        help="print (and with --readme write) from --results",
    )
    ap.add_argument(
        "--reuse-work",
        action="store_true",
        help="no clean builds: measure no-op, touch and edit in the folders an earlier run at the same size built",
    )
    ap.add_argument(
        "--keep-sizes",
        action="store_true",
        help="keep the sizes of --results that this run does not measure (each with its own command and commit)",
    )
    ap.add_argument(
        "--runner-also",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="also time the runner at PATH (another venv's bin/runner) as tool NAME: main=/tmp/main/.venv/bin/runner",
    )
    a = ap.parse_args(argv)
    for also in a.runner_also:
        name, eq, binary = also.partition("=")
        if not eq or not name or name in TOOLS:
            ap.error(f"--runner-also {also!r}: expected NAME=PATH with a NAME that is no tool's ({ALL_TOOLS})")
        TOOLS[name] = runner_at(name, binary)
    a.slow_tools = [t for t in a.slow_tools.split(",") if t]

    if a.render_only:
        results = json.loads(a.results.read_text())
    else:
        tools = [t.strip() for t in a.tools.split(",") if t.strip()]
        unknown = [t for t in tools if t not in TOOLS]
        if unknown:
            ap.error(f"unknown tools {unknown}; choose from {ALL_TOOLS}")
        if "runner" in tools:
            # as a pip install would have: this machine sets PYTHONDONTWRITEBYTECODE=1, so an editable
            # runner would otherwise compile every module from source on each of its runs
            subprocess.run(
                [str(RUNNER_BIN.parent / "python"), "-m", "compileall", "-q", str(ROOT / "runner")], check=True
            )
        results = {
            "machine": machine(tools),
            "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()},
            "sizes": {},
        }
        results["config"]["command"] = "python bench/run.py " + " ".join(argv if argv is not None else sys.argv[1:])
        kept = _kept_sizes(a.results, a.steps) if a.keep_sizes else {}
        bench = Bench(a)
        for n in a.steps:
            size = bench.size(n, tools)
            size["measured"] = _measured(results)
            results["sizes"][str(n)] = size
            sizes = {**kept, **results["sizes"]}
            # keep what is done if a later size dies
            a.results.write_text(json.dumps({**results, "sizes": _by_size(sizes)}, indent=1) + "\n")
        results["sizes"] = _by_size({**kept, **results["sizes"]})
    print()
    print(summarize(results))
    if a.readme:
        write_readme(results)
        print(f"wrote the figures into {README}")


if __name__ == "__main__":
    main()
