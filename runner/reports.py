"""A failed step's JUnit XML reports (junitparser's one importer): the counts and failing tests its test tool wrote,
read ahead of the log's text patterns, as GitHub, GitLab and Jenkins read them.

A report is trusted no further than the step declares it: only files its `reports` globs name (or its adapter
command's), inside the project, written since the run started (Jenkins' rule: an older file is a stale report of
an earlier run, such as Surefire's from before a compile error), read from disk after the step ran and never taken
from the cache. A file that is not JUnit XML is named with what is wrong with it; its counts are not used.
"""

from __future__ import annotations

import os
import time
import xml.etree.ElementTree as ET
from pathlib import Path

MAX_BYTES = 64 << 20  # a report larger than this is not read (a runaway system-out), and says so
MAX_FILES = 2000
_MESSAGE = 300  # characters of a failure's message kept


def run_started(run_id: str) -> float:
    """The time a run started, from its id (record.new_run_id: local time to the second, then microseconds)."""
    try:
        stamp = time.mktime(time.strptime(run_id[:15], "%Y%m%d-%H%M%S"))
        return stamp + int(run_id[16:21], 16) / 1e6
    except (ValueError, OverflowError):
        return 0.0


def read(root: str | Path, cwd: str, patterns: tuple[str, ...], since: float) -> dict | None:
    """What the reports the globs name (relative to the step's cwd) say, or None when they name no file written
    since `since`: {"files", "summary", "failed_tests", "failures", "problems", "stale"}."""
    from .globs import expand

    root = Path(root).resolve()
    folder = (root / cwd).resolve()
    found = expand(str(folder), patterns)[:MAX_FILES]
    out: dict = {"files": [], "stale": 0, "problems": []}
    counts = dict.fromkeys(("passed", "failed", "skipped", "errors", "total"), 0)
    failed: list[str] = []
    failures: list[dict] = []
    for rel in found:
        path = folder / rel
        shown = os.path.relpath(path, root)
        try:
            real = path.resolve()
            st = real.stat()
        except OSError:
            continue  # a literal path the step did not write
        if not real.is_relative_to(root):
            out["problems"].append(f"{shown}: points outside the project ({real}); not read")
            continue
        if st.st_mtime < since - 0.002:
            out["stale"] += 1  # an earlier run's report, still on disk
            continue
        if st.st_size > MAX_BYTES:
            out["problems"].append(
                f"{shown}: {st.st_size} bytes, more than the {MAX_BYTES >> 20} MiB a report is read to"
            )
            continue
        why = _read_one(real, counts, failed, failures, folder)
        if why:
            out["problems"].append(f"{shown}: {why}; its counts are not used")
            continue
        out["files"].append(shown)
    if not out["files"] and not out["problems"]:
        return None
    if out["files"]:
        out["summary"] = counts
        out["failed_tests"] = failed
        out["failures"] = failures
    return out


def _read_one(path: Path, counts: dict[str, int], failed: list[str], failures: list[dict], folder: Path) -> str | None:
    """Add one report's test cases to the counts; why it could not be read, or None. `folder`: where the tool
    ran (the step's cwd), against which pytest's test ids are found."""
    from junitparser import Error, Failure, JUnitXml, JUnitXmlError, Skipped, TestCase

    try:
        xml = JUnitXml.fromfile(str(path))
    except ET.ParseError as exc:
        return f"not well-formed XML ({exc})"
    except (JUnitXmlError, ValueError, TypeError) as exc:
        return f"not a JUnit XML report ({exc})"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    mine = dict.fromkeys(counts, 0)
    bad: list[str] = []
    cases: list[dict] = []
    # every test case in the document once, wherever it sits: junitparser's iteration of a <testsuites> sees only
    # the cases inside a <testsuite>, and node's JUnit reporter writes a top-level test straight under <testsuites>
    root = xml._elem
    parent_of = {child: parent for parent in root.iter() for child in parent}
    try:
        for elem in root.iter("testcase"):
            case = TestCase.fromelem(elem)
            suite = parent_of.get(elem)
            by_pytest = suite is not None and suite.get("name") == "pytest"  # pytest names every suite it writes so
            mine["total"] += 1
            results = list(case.result)
            kind = next((r for r in results if isinstance(r, (Failure, Error))), None)
            if kind is None:
                mine["skipped" if any(isinstance(r, Skipped) for r in results) else "passed"] += 1
                continue
            mine["errors" if isinstance(kind, Error) else "failed"] += 1
            name = f"{case.classname}.{case.name}" if case.classname else str(case.name)
            if by_pytest:
                name = _pytest_id(case.classname, str(case.name), case._elem.get("file"), folder) or name
            bad.append(name)
            message = (kind.message or kind.text or "").strip().split("\n", 1)[0].strip()
            cases.append(  # file and line: attributes junitparser does not model (pytest's xunit1, Gradle's none)
                {
                    "test": name,
                    "file": case._elem.get("file"),
                    "line": int(line) if (line := case._elem.get("line") or "").isdigit() else None,
                    "message": message[:_MESSAGE] or None,
                }
            )
    except (AttributeError, ValueError, TypeError) as exc:  # a document of another shape (no testsuite in it)
        return f"not a JUnit XML report ({exc})"
    for key, n in mine.items():
        counts[key] += n
    failed += [n for n in bad if n not in failed]
    failures += cases
    return None


def _pytest_id(classname: str | None, name: str, file: str | None, folder: Path) -> str | None:
    """pytest's own id of a test its report names by dotted class name (`tests.test_x.TestC` and `test_y`):
    `tests/test_x.py::TestC::test_y`, as its `FAILED` lines and `pytest ID` take it; the module is the report's
    `file` (xunit1) or the longest dotted prefix that is a file under the folder pytest ran in. None when neither
    tells where the module ends."""
    if not classname:
        return None
    parts = classname.split(".")
    if file and file.endswith(".py"):
        module = file[: -len(".py")].replace("/", ".").replace("\\", ".")
        if classname == module or classname.startswith(module + "."):
            return "::".join([file.replace("\\", "/"), *classname[len(module) :].split(".")[1:], name])
    for cut in range(len(parts), 0, -1):
        rel = "/".join(parts[:cut]) + ".py"
        if (folder / rel).is_file():
            return "::".join([rel, *parts[cut:], name])
    return None


def into(out: dict, read: dict | None) -> dict:
    """A failed step's event fields (excerpt.explain) with its reports' reading: their counts and failing tests in
    place of the log's, and `reports` (the files read, each failure's location and message, the problems)."""
    if read is None:
        return out
    found = out.setdefault("findings", {})
    if "summary" in read:  # the tool's own record of each test, ahead of what its log's text shows
        found["summary"] = {**(found.get("summary") or {}), **read.pop("summary")}
        found["failed_tests"] = read.pop("failed_tests")
    found["reports"] = read
    return out
