"""Take the README's screenshots of `runner serve` and `runner report --html` (docs/web/*.png): the quickstart built
in a temporary folder (its agent steps served by the replay worker), a page per picture, in Debian's chromium.

    .venv/bin/python tools/web_screenshots.py
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "web"
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin"}
BROKEN = """
[intent.lint]
description = "A check that fails, for the picture"
run = "echo 'checking src/calc'; echo 'src/calc/__init__.py:3:1: E302 expected 2 blank lines, found 1'; exit 1"
inputs = ["src/calc/*.py"]
"""


def runner(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "runner", *args],
        cwd=root,
        env={**ENV, "HOME": str(root)},
        capture_output=True,
        text=True,
    )


def quickstart(into: Path, manual: bool) -> Path:
    example = ROOT / "examples" / "quickstart"
    generated = {".runner", "build", "tests", "docs"}
    shutil.copytree(example, into, ignore=lambda d, names: generated & set(names) if Path(d) == example else set())
    spec = into / "intents.toml"
    text = spec.read_text()
    if manual:
        text = text.replace("budget = { attempts = 3 }\n", 'budget = { attempts = 3 }\napproval = "manual"\n')
    spec.write_text(text + BROKEN)
    return into


def large(into: Path) -> Path:
    """2,000 steps in five layers of 400 (each on one of the layer before, the last layer's gathered by `all`): more
    than the steps table lists, its graph collapsed to its layers."""
    into.mkdir(parents=True)
    spec = "".join(
        f'[intent.s{i:04d}]\nrun = "true"\n' + (f'deps = ["s{i - 400:04d}"]\n' if i >= 400 else "") + "\n"
        for i in range(2000)
    )
    deps = ", ".join(f'"s{i:04d}"' for i in range(1600, 2000))
    (into / "intents.toml").write_text(f"{spec}[intent.all]\ndeps = [{deps}]\n")
    runner(into, "make", "-j", "2", "all")
    return into


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        built = quickstart(Path(tmp) / "quickstart", manual=False)
        runner(built, "make", "-j", "2", "all")
        runner(built, "make", "-j", "2", "-k", "all", "lint")
        waiting = quickstart(Path(tmp) / "waiting", manual=True)
        runner(waiting, "make", "docs")
        runner(waiting, "approve", "docs")
        runner(waiting, "make", "docs")
        first_build = sorted(p.name for p in (built / ".runner" / "runs").iterdir())[0]
        runner(built, "report", first_build, "--html", "-o", str(Path(tmp) / "report.html"))
        big = large(Path(tmp) / "large")
        servers = []
        try:
            urls = {}
            for name, root in (("built", built), ("waiting", waiting), ("large", big)):
                proc = subprocess.Popen(
                    [sys.executable, "-m", "runner", "serve", "--port", "0"],
                    cwd=root,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
                servers.append(proc)
                urls[name] = proc.stdout.readline().strip()
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(urls["built"])
                page.screenshot(path=str(OUT / "runs.png"))
                first = page.locator("tr[data-run] a").nth(1)  # the first full build (the newest is the failed one)
                first.click()
                page.screenshot(path=str(OUT / "run.png"), full_page=True)
                page.go_back()
                page.locator("tr[data-run] a").first.click()
                run_url = page.url
                page.screenshot(path=str(OUT / "run-failed.png"))
                page.goto(re.sub(r"/runs/.*", "", run_url) + "/learning")
                page.screenshot(path=str(OUT / "learning.png"))
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(urls["waiting"])
                page.click("text=Approvals")
                page.screenshot(path=str(OUT / "approvals.png"))
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto((Path(tmp) / "report.html").as_uri())
                page.locator("#agents").scroll_into_view_if_needed()
                page.screenshot(path=str(OUT / "report-agents.png"))
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(urls["large"])
                page.locator("tr[data-run] a").first.click()
                page.fill("#search", "s1999")  # beyond the table's listed rows: the server's table of what it finds
                page.locator("tr[data-name='s1999']").wait_for()
                page.screenshot(path=str(OUT / "run-large.png"))
                browser.close()
        finally:
            for proc in servers:
                proc.terminate()
                proc.wait(10)
    print(f"wrote {', '.join(sorted(p.name for p in OUT.glob('*.png')))} in {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
