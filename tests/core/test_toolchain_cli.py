"""`runner adapters`, `runner init` and `runner parse` through the real CLI."""

from __future__ import annotations

import json

import runner_cli


def test_adapters_init_parse(project):
    project.write("pyproject.toml", '[project]\nname = "x"\n')
    project.write("tests/test_a.py", "def test_a():\n    assert True\n")
    detected = json.loads(project.run("adapters", "--json").out)["detected"]
    assert [d["adapter"] for d in detected] == ["python"]
    assert detected[0]["commands"]["test"]["parse"][0] == "pytest"

    first = project.run("init")
    assert first.code == 0, first.err
    assert first.out.startswith(f"wrote {project.root / 'intents.toml'} (python detected)")
    assert project.run("validate").code == 0
    second = project.run("init")
    assert second.code == 2
    assert second.err.startswith(
        f"error: {project.root / 'intents.toml'} already exists; runner init never overwrites it."
    )

    log = "tests/test_a.py::test_a FAILED\n==== 1 failed, 2 passed in 0.10s ====\n"
    parsed = runner_cli.run(
        ["parse", "--adapter", "python", "--command", "test", "--json", "-"], project.root, input=log
    )
    assert parsed.returncode == 0, parsed.stderr
    found = json.loads(parsed.stdout)
    assert found["summary"]["failed"] == 1 and found["summary"]["passed"] == 2
    assert found["complete"] is True

    wrong = project.run("parse", "--adapter", "pyhton", "--command", "test", "x.log")
    assert wrong.code == 2 and "did you mean 'python'" in wrong.err
