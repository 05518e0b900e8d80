"""Helpers of the learning tests: `tidyq`, a made-up checker whose output no built-in regex family reads, its
adapter and the regex family that teaches the runner to read it. A module of its own (not conftest.py): conftests
collide when imported by name."""

from __future__ import annotations

# prints a banner, one `path:line: error CODE message` per file with a problem, and a count: exit 1 on a problem
TIDYQ = """\
import pathlib
import sys

folder = pathlib.Path(sys.argv[1])
files = sorted(folder.glob("*.txt"))
print(f"tidyq 1.0: checking {len(files)} files in {folder}")
bad = 0
for f in files:
    for n, line in enumerate(f.read_text().splitlines(), 1):
        if line.count('"') % 2:
            print(f"{f.as_posix()}:{n}: error TQ12 unbalanced quote")
        elif line.startswith("\\t"):
            print(f"{f.as_posix()}:{n}: error TQ40 tab at the start of a line")
        else:
            continue
        bad += 1
        break
print(f"tidyq: {len(files) - bad} passed, {bad} failed")
sys.exit(1 if bad else 0)
"""

ADAPTER = """\
name = "tidyq"
description = "a made-up checker of notes"
[detect]
files = ["tools/tidyq.py"]
[commands.test]
run = "python3 tools/tidyq.py notes"
parse = [{families}]
"""

FAMILY = """\
family = "tidyq"
description = "tidyq's findings and its closing count"

[[pattern]]
name = "finding"
regex = '^(?P<file>[^\\s:]+):(?P<line>\\d+): error (?P<code>TQ\\d+) (?P<message>.+)$'
fields = ["file", "line", "code", "message"]
kind = "diagnostic"
[[pattern.example]]
text = "notes/a.txt:2: error TQ12 unbalanced quote"
expect = { file = "notes/a.txt", line = "2", code = "TQ12" }

[[pattern]]
name = "count"
regex = '^tidyq: (?P<passed>\\d+) passed, (?P<failed>\\d+) failed$'
fields = ["passed", "failed"]
kind = "summary"
[[pattern.example]]
text = "tidyq: 1 passed, 2 failed"
expect = { passed = "1", failed = "2" }
"""

SPEC = """\
[project]
name = "notes"

[intent.check]
run = "test"
adapter = "tidyq"
inputs = ["notes/*.txt", "tools/tidyq.py"]

[intent.plain]
run = "python3 tools/tidyq.py notes"
inputs = ["notes/*.txt", "tools/tidyq.py"]
"""

# what tidyq prints on the notes below (the log's line 1 is the runner's `$ command`)
BANNER = "tidyq 1.0: checking 3 files in notes"
FINDING_A = "notes/a.txt:2: error TQ12 unbalanced quote"
FINDING_B = "notes/b.txt:3: error TQ40 tab at the start of a line"
COUNT = "tidyq: 1 passed, 2 failed"


def tidyq_project(project, families: str = '"diagnostics", "causes"'):
    """A project whose two steps run tidyq on three notes, two of them wrong: `check` through the tidyq adapter
    (read by `families`), `plain` as a plain shell line."""
    project.spec(SPEC)
    project.write("tools/tidyq.py", TIDYQ)
    project.write("adapters/tidyq.toml", ADAPTER.format(families=families))
    project.write("notes/a.txt", 'line one\nsay "hi\n')
    project.write("notes/b.txt", "x\ny\n\tindented\n")
    project.write("notes/c.txt", "fine\n")
    return project


def teach_tidyq(project) -> None:
    """The project's own regexes/tidyq.toml, and the adapter reading tidyq's output with it first."""
    project.write("regexes/tidyq.toml", FAMILY)
    project.write("adapters/tidyq.toml", ADAPTER.format(families='"tidyq", "diagnostics", "causes"'))
