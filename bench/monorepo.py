"""Issue 41's figure: a monorepo of SUBS sub-projects of STEPS steps each beside the same steps in one intents.toml,
side by side: the warm no-op (the target: within 1.2x), the no-op after a comment in one sub-project's file
(the other layout: in its one file), which keeps the compiled spec (a comment changes no document), and
`runner list` after an edit of one step's run line there (its record made again: compiled._recompiled).

    .venv/bin/python bench/monorepo.py --subs 50 --steps 200 --reps 11

Each step is one `md5sum` of its inputs into its own output: in a sub-project, 10 layers, each step reading 2 of
the layer before; the first layer of each sub-project (but the first) reads the last output of the one before it,
so the DAG crosses every sub-project. The flat project holds the same steps with the same commands, run from the
same folders, its paths written from the root."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNNER = [sys.executable, "-m", "runner"]
LAYERS = 10


def _steps(sub: int, per: int) -> list[dict]:
    """One sub-project's steps, paths relative to its folder: name, command, inputs, outputs, deps."""
    width = per // LAYERS
    out = []
    for i in range(per):
        layer, pos = divmod(i, width)
        if layer == 0:
            inputs = [f"src/f{pos:03d}.txt"]
            deps: list[str] = []
            if sub and pos == 0:  # the previous sub-project's last output: the DAG crosses them all
                last = per - 1
                inputs.append(f"../p{sub - 1:02d}/out/s{last:03d}.md5")
                deps = [f"p{sub - 1:02d}:s{last:03d}"]
        else:
            picks = sorted({(layer - 1) * width + pos, (layer - 1) * width + (pos + 1) % width})
            inputs = [f"out/s{j:03d}.md5" for j in picks]
            deps = [f"s{j:03d}" for j in picks]
        output = f"out/s{i:03d}.md5"
        out.append(
            {
                "name": f"s{i:03d}",
                "run": f"md5sum {' '.join(inputs)} > {output}",
                "inputs": inputs,
                "outputs": [output],
                "deps": deps,
            }
        )
    return out


def _table(name: str, step: dict, cwd: str | None, inputs: list[str], outputs: list[str], deps: list[str]) -> str:
    lines = [f"[intent.{name}]", f"run = {json.dumps(step['run'])}"]
    lines.append(f"inputs = {json.dumps(inputs)}")
    lines.append(f"outputs = {json.dumps(outputs)}")
    if deps:
        lines.append(f"deps = {json.dumps(deps)}")
    if cwd:
        lines.append(f'cwd = "{cwd}"')
    return "\n".join(lines) + "\n"


def generate(root: Path, subs: int, per: int, mono: bool) -> None:
    """The project at `root`: sub-projects (mono) or one intents.toml holding the same steps (flat)."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    flat = ['[project]\nname = "flat"\n']
    for sub in range(subs):
        folder = f"p{sub:02d}"
        (root / folder / "src").mkdir(parents=True)
        (root / folder / "out").mkdir()
        for pos in range(per // LAYERS):
            (root / folder / f"src/f{pos:03d}.txt").write_text(f"{folder} {pos}\n")
        own = []
        for step in _steps(sub, per):
            if mono:
                own.append(_table(step["name"], step, None, step["inputs"], step["outputs"], step["deps"]))
                continue

            def rooted(path: str, folder=folder) -> str:
                return os.path.normpath(f"{folder}/{path}")

            deps = [d.replace(":", "_") if ":" in d else f"{folder}_{d}" for d in step["deps"]]
            flat.append(
                _table(
                    f"{folder}_{step['name']}",
                    step,
                    folder,
                    [rooted(p) for p in step["inputs"]],
                    [rooted(p) for p in step["outputs"]],
                    deps,
                )
            )
        if mono:
            (root / folder / "intents.toml").write_text("\n".join(own))
    if mono:
        (root / "intents.toml").write_text('[project]\nname = "mono"\ninclude = ["p*"]\n')
    else:
        (root / "intents.toml").write_text("\n".join(flat))


def _run(root: Path, *args: str, timeout: float = 3600) -> tuple[float, str]:
    began = time.perf_counter()
    done = subprocess.run([*RUNNER, *args], cwd=root, capture_output=True, text=True, timeout=timeout)
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"runner {' '.join(args)} in {root} failed ({done.returncode}): {done.stderr[-2000:]}")
    return took, done.stdout


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subs", type=int, default=50)
    ap.add_argument("--steps", type=int, default=200, help="steps a sub-project")
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--dir", type=Path, default=None, help="where to generate (default: a temp folder)")
    ap.add_argument("--reuse", action="store_true", help="the projects --dir holds, built by an earlier run")
    args = ap.parse_args(argv)
    base = args.dir or Path(tempfile.mkdtemp(prefix="runner-monorepo-bench-"))
    env_root = Path(__file__).resolve().parents[1]
    os.environ["PYTHONPATH"] = str(env_root) + os.pathsep + os.environ.get("PYTHONPATH", "")
    layouts = {"mono": base / "mono", "flat": base / "flat"}
    for name, root in layouts.items():
        if not (args.reuse and (root / ".runner").is_dir()):
            generate(root, args.subs, args.steps, name == "mono")
            took, out = _run(root, "make", "-j2")
            print(f"{name}: clean build {took:.1f} s: {out.strip().splitlines()[-1]}", flush=True)
        _run(root, "make")  # the proof and the stat cache settled
    noop: dict[str, list[float]] = {name: [] for name in layouts}
    for _rep in range(args.reps):
        for name, root in layouts.items():  # interleaved: the machine's moods fall on both
            took, out = _run(root, "make")
            assert "nothing to do" in out, out
            noop[name].append(took)
    comment: dict[str, list[float]] = {name: [] for name in layouts}
    for rep in range(args.reps):
        for name, root in layouts.items():
            edited = root / (f"p{args.subs // 2:02d}/intents.toml" if name == "mono" else "intents.toml")
            with open(edited, "a") as f:
                f.write(f"# comment {rep}\n")
            took, out = _run(root, "make")
            assert "nothing to do" in out, out
            comment[name].append(took)
    edit: dict[str, list[float]] = {name: [] for name in layouts}
    middle = f"p{args.subs // 2:02d}"
    for rep in range(args.reps):
        for name, root in layouts.items():  # one step's run line edited, then put back: `runner list` compiles it
            edited = root / (f"{middle}/intents.toml" if name == "mono" else "intents.toml")
            step = "s005" if name == "mono" else f"{middle}_s005"
            text = edited.read_text()
            at = text.index(f"[intent.{step}]\nrun = ")
            before, after = text[:at], text[at:]
            flag = "-b " if rep % 2 == 0 else "-t "
            edited.write_text(before + after.replace("md5sum ", f"md5sum {flag}", 1))
            took, _out = _run(root, "list")
            edit[name].append(took)
    result = {
        "subs": args.subs,
        "steps": args.subs * args.steps,
        "reps": args.reps,
        "noop_s": {name: statistics.median(v) for name, v in noop.items()},
        "comment_noop_s": {name: statistics.median(v) for name, v in comment.items()},
        "edit_list_s": {name: statistics.median(v) for name, v in edit.items()},
        "load": os.getloadavg()[0],
    }
    result["noop_ratio"] = result["noop_s"]["mono"] / result["noop_s"]["flat"]
    result["comment_ratio"] = result["comment_noop_s"]["mono"] / result["comment_noop_s"]["flat"]
    result["edit_ratio"] = result["edit_list_s"]["mono"] / result["edit_list_s"]["flat"]
    print(json.dumps(result, indent=2))
    if args.dir is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
