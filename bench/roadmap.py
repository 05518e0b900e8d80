"""`runner import` on a generated 2,000-item roadmap, printed (`--json`) and written (`--yes`): the whole command,
timed as a user runs it.

The roadmap mixes what real ones hold: 20 phases of 100 tasks, checkboxes (a quarter done), three levels of
nesting, numbered items, backticked and bare file paths, emoji and prose markers in the text, fenced code and
notes. Seeded, so every run reads the same file. A figure, never a timed test:

    .venv/bin/python bench/roadmap.py            # prints the median of --reps runs and writes nothing else
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = "parse render cache index export import token session report schema login search queue retry"
WORDS_LIST = WORDS.split()


def roadmap(items: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    lines = ["# Generated roadmap", ""]
    phases = max(1, items // 100)
    for p in range(phases):
        lines += [f"## Phase {p + 1}: {rng.choice(WORDS_LIST).title()} 🚧", ""]
        for t in range(items // phases):
            depth = 0 if t % 4 == 0 else rng.choice((0, 1, 1, 2))
            box = "[x]" if rng.random() < 0.25 else "[ ]"
            bullet = f"{t % 9 + 1}." if t % 7 == 0 else "-"
            words = " ".join(rng.choice(WORDS_LIST) for _ in range(rng.randint(3, 8)))
            path = rng.choice(("", f" in `src/m{p}/t{t}.py`", f" (see docs/p{p}/t{t}.md)", " for README.md"))
            marker = rng.choice(("", "", " (planned)", " ✅"))
            lines.append(f"{'  ' * depth}{bullet} {box} Task {p}.{t}: {words}{path}{marker}")
            if t % 10 == 0:
                lines.append(f"{'  ' * depth}  - a note on {rng.choice(WORDS_LIST)}")
            if t % 50 == 0:
                lines += ["", "```sh", "- [ ] inside code, not a task", "```", ""]
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "ROADMAP.md").write_text(roadmap(args.items), encoding="utf-8")
        for how in ("--json", "--yes"):
            times, found = [], ""
            for _ in range(args.reps):
                (root / "intents.toml").unlink(missing_ok=True)  # --yes writes a new intents.toml each time
                started = time.perf_counter()
                out = subprocess.run(
                    [sys.executable, "-m", "runner", "import", "ROADMAP.md", how],
                    cwd=root,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                times.append(time.perf_counter() - started)
                if how == "--json":
                    found = f" -> {len(json.loads(out)['intents'])} phases and tasks"
                else:
                    found = f" -> intents.toml of {len((root / 'intents.toml').read_bytes()):,} bytes"
            print(
                f"runner import {how}: {args.items} items{found}; "
                f"median {statistics.median(times):.3f} s, "
                f"min {min(times):.3f} s, max {max(times):.3f} s over {args.reps} runs"
            )


if __name__ == "__main__":
    main()
