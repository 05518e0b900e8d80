"""Profile one `runner make` on a generated bench project: import times (-X importtime) and cProfile top costs."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = ROOT / ".venv" / "bin" / "python"

_PROFILE = """
import cProfile, sys
out = sys.argv[1]
sys.argv = ["runner", *sys.argv[2:]]
from runner.entry import main
pr = cProfile.Profile()
pr.enable()
try:
    main()
except SystemExit:
    pass
pr.disable()
pr.dump_stats(out)
"""


def importtime(project: Path, argv: list[str], top: int) -> str:
    """The `top` slowest imports by cumulative time, as -X importtime reports them for one run."""
    code = f"import sys; sys.argv = ['runner', *{argv!r}]\nfrom runner.entry import main\nmain()"
    r = subprocess.run(
        [str(PY), "-X", "importtime", "-c", code],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    rows = []
    for line in r.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        self_us, cum_us, name = line.replace("import time:", "").split("|")
        name = name.rstrip()
        rows.append((int(cum_us), int(self_us), name[1:]))  # keep the nesting indent, less one space
    total_top = sum(c for c, _, n in rows if not n.startswith(" "))
    rows.sort(reverse=True)
    out = [
        f"top-level imports, cumulative: {total_top / 1000:.1f} ms",
        "cumulative ms  self ms  module",
    ]
    out += [f"{c / 1000:13.1f}  {s / 1000:7.1f}  {n}" for c, s, n in rows[:top]]
    return "\n".join(out)


def cprofile(project: Path, argv: list[str], top: int) -> str:
    """cProfile of one in-process run, sorted by cumulative and by own time."""
    import io
    import pstats

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "prof")
        subprocess.run(
            [str(PY), "-c", _PROFILE, out, *argv],
            cwd=project,
            stdout=subprocess.DEVNULL,
            check=False,
        )
        buf = io.StringIO()
        st = pstats.Stats(out, stream=buf)
        st.sort_stats("cumulative").print_stats(top)
        st.sort_stats("tottime").print_stats(top)
    return "\n".join(line for line in buf.getvalue().splitlines() if line.strip())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("project", type=Path, help="a built project, e.g. bench/work/10000/runner")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument(
        "--no-importtime",
        action="store_true",
        help="cProfile only: the first run after a touch or edit is the one that sees the change",
    )
    ap.add_argument("--runner-args", default="make -j 1 --json", help="what follows `runner`")
    a = ap.parse_args(argv)
    args = a.runner_args.split()
    if not a.no_importtime:
        print("# -X importtime\n" + importtime(a.project, args, a.top))
    print("\n# cProfile\n" + cprofile(a.project, args, a.top))


if __name__ == "__main__":
    sys.exit(main())
