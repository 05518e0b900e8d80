"""Prompt variants through the gate, with the fake Responses server: a variant waits for `runner approve` to enter
canary; there the agent steps in its slice are given it (the server sees its text), it is compared with the
template on the same steps, steps up, and waits for `runner approve` again to be promoted; a worse one is rolled
back with no human; the model proposes one for a template whose steps failed at the first attempt."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from gate_helpers import Tally

TEMPLATE = "TEMPLATE: {{goal}}\n\n{{inputs}}\n{{feedback}}"
VARIANT = "VARIANT: {{goal}} (write only src/checks.txt)\n\n{{inputs}}\n{{feedback}}"


def _answer(checks: str) -> str:
    return f"<<MIS:START>>\n<<MIS:FILE path=src/checks.txt>>\n{checks}\n<<MIS:END>>"


class Agentic(Tally):
    """The tally project with an agent step that makes its checks pass, served by the fake server."""

    def __init__(self, root: Path, base_url: str, log: Path):
        super().__init__(root)
        self.log = log
        (root / "prompts").mkdir()
        (root / "prompts" / "fix-checks.md").write_text(TEMPLATE)
        (root / "src" / "goal.txt").write_text("0\n")
        (root / "intents.toml").write_text(
            textwrap.dedent(
                f"""\
                [project]
                name = "tally-demo"
                default = "fix"

                [learn]
                canary_steps = [50, 99]
                canary_runs = 1
                max_failed_checks = 2

                [worker]
                kind = "openai"
                model = "gpt-test"
                base_url = "{base_url}"

                [policy.default]
                write_files = "auto"

                [intent.fix]
                goal = "Make every tally check pass"
                prompt = "fix-checks"
                inputs = ["src/goal.txt"]
                outputs = ["src/checks.txt"]
                adapter = "tally"
                verify = ["test"]
                """
            )
        )

    def variant(self, stage: str = "proposed") -> None:
        (self.root / "prompts" / "fix-checks.candidates.toml").write_text(
            '# our note on the variant\n\n[[candidate]]\nname = "terse"\n'
            f"stage = \"{stage}\"\ntext = '''{VARIANT}'''\n"
        )

    def agent_run(self) -> list[dict]:
        """One run of the agent step (a new goal.txt, a broken checks.txt): the prompts the server was sent."""
        self.edits += 1
        (self.root / "src" / "goal.txt").write_text(f"{self.edits}\n")
        (self.root / "src" / "checks.txt").write_text("broken=no\n")
        before = len(self.requests())
        done = self.run("make", "--json")
        assert done.returncode in (0, 1), done.stderr
        return self.requests()[before:]

    def requests(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [r for r in map(json.loads, self.log.read_text().splitlines()) if r["path"] == "/v1/responses"]

    def until_used(self, tries: int = 30) -> list[dict]:
        """Agent runs until one is given the variant (the step's key decides the slice)."""
        for _ in range(tries):
            sent = self.agent_run()
            if any(r["prompt"].startswith("VARIANT") for r in sent):
                return sent
        raise AssertionError(f"no run was given the variant in {tries} runs")


def _moves(project: Agentic) -> dict[str, dict]:
    return {m["pattern"]: m for m in project.learn()["moved"]}


def test_a_variant_waits_for_approve_goes_through_canary_and_is_promoted_by_approve(tmp_path, server):
    srv = server([{"steps": [{"message": _answer("good=ok")}]}])
    project = Agentic(tmp_path / "proj", srv.base_url, srv.log)
    project.variant("proposed")
    before = (project.root / "prompts" / "fix-checks.candidates.toml").read_text()

    # proposed: used nowhere, and the pass does not move it
    sent = project.agent_run()
    assert sent and all(r["prompt"].startswith("TEMPLATE") for r in sent)
    status = project.status()["prompt:fix-checks/terse"]
    assert status["stage"] == "proposed" and "runner approve --prompt" in status["next"]
    project.learn()
    assert (project.root / "prompts" / "fix-checks.candidates.toml").read_text() == before

    approved = project.run("approve", "--prompt", "fix-checks/terse")
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.strip() == "prompt:fix-checks/terse: proposed -> canary at 50%"
    text = (project.root / "prompts" / "fix-checks.candidates.toml").read_text()
    assert text.startswith("# our note on the variant\n")  # the user's comment kept

    project.until_used()
    assert _moves(project)["prompt:fix-checks/terse"]["to"] == "canary"
    assert project.status()["prompt:fix-checks/terse"]["weight"] == 99
    project.until_used()
    moved = _moves(project)["prompt:fix-checks/terse"]
    assert moved["to"] == "canary" and moved["why"].startswith("ready: waits for `runner approve --prompt`")
    assert (project.root / "prompts" / "fix-checks.md").read_text() == TEMPLATE  # not without a human

    promoted = project.run("approve", "--prompt", "fix-checks/terse")
    assert promoted.returncode == 0, promoted.stderr
    assert "canary -> active" in promoted.stdout
    assert (project.root / "prompts" / "fix-checks.md").read_text() == VARIANT
    candidates = (project.root / "prompts" / "fix-checks.candidates.toml").read_text()
    assert 'name = "before-terse"' in candidates and TEMPLATE in candidates  # the old text, kept retired


def test_a_variant_worse_than_the_template_is_rolled_back_without_a_human(tmp_path, server):
    # the variant's first attempts fail their verify; the template's pass
    srv = server(
        [
            {"match": "What the last attempt got wrong", "steps": [{"message": _answer("good=ok")}]},
            {"match": "VARIANT", "steps": [{"message": _answer("good=ok still=broken")}]},
            {"steps": [{"message": _answer("good=ok")}]},
        ]
    )
    project = Agentic(tmp_path / "proj", srv.base_url, srv.log)
    project.variant("canary")
    text = (project.root / "prompts" / "fix-checks.candidates.toml").read_text()
    (project.root / "prompts" / "fix-checks.candidates.toml").write_text(text + "[candidate.gate]\nweight = 50\n")
    for _ in range(2):
        seen = {"VARIANT": False, "TEMPLATE": False}
        for _ in range(30):
            for r in project.agent_run():
                seen[r["prompt"].split(":", 1)[0]] = True
            if all(seen.values()):
                break
        moved = _moves(project)["prompt:fix-checks/terse"]
    assert moved["to"] == "retired", moved
    assert "verify passed at the first attempt 0% of its uses, the template's 100%" in moved["why"]
    assert project.status()["prompt:fix-checks/terse"]["stage"] == "retired"


def test_the_model_proposes_a_variant_for_a_template_whose_steps_failed_first_and_it_waits(tmp_path, server):
    improved = "IMPROVED: {{goal}} Run the checks in your head first.\n\n{{inputs}}\n{{feedback}}"
    srv = server(
        [
            {
                "match": "You improve a prompt template",
                "steps": [{"message": f"<<MIS:START>>\n<<MIS:FILE path=template.md>>\n{improved}\n<<MIS:END>>"}],
            },
            {"match": "What the last attempt got wrong", "steps": [{"message": _answer("good=ok")}]},
            {"steps": [{"message": _answer("good=ok still=broken")}]},
        ]
    )
    project = Agentic(tmp_path / "proj", srv.base_url, srv.log)
    intents = (project.root / "intents.toml").read_text().replace("[learn]\n", "[learn]\nmodel_calls = 2\n")
    (project.root / "intents.toml").write_text(intents)
    project.agent_run()  # the first attempt fails its verify, the retry passes
    report = project.learn()
    assert report["projected_model_calls"] >= 1
    assert [p["name"] for p in report["proposed"] if p["kind"] == "prompt"] == [f"learned-{_today()}"]
    asked = [r for r in project.requests() if r["prompt"].startswith("You improve a prompt template")]
    assert len(asked) == 1 and "still" in asked[0]["prompt"]  # the failing check is in the request
    variant = project.status()[f"prompt:fix-checks/learned-{_today()}"]
    assert variant["stage"] == "proposed" and "runner approve --prompt" in variant["next"]
    assert (project.root / "prompts" / "fix-checks.md").read_text() == TEMPLATE


def _today() -> str:
    import datetime

    return datetime.date.today().isoformat()


def test_the_model_is_asked_within_the_default_policys_token_budget(tmp_path, server):
    """The pass's model calls spend under the budget any agent step spends under: once the default policy's
    tokens are spent, the calls left are not made, and the report says why."""
    srv = server(
        [
            {"match": "What the last attempt got wrong", "steps": [{"message": _answer("good=ok")}]},
            {"match": "TEMPLATE:", "steps": [{"message": _answer("good=ok still=broken")}]},
            {"steps": [{"message": '<<MIS:START>>\n<<MIS:FILE path=patterns.json>>\n{"patterns": []}\n<<MIS:END>>'}]},
        ]
    )
    project = Agentic(tmp_path / "proj", srv.base_url, srv.log)
    # the tool also prints a line induction cannot read: a group for the model, beside the template
    tool = (project.root / "tally.py").read_text()
    (project.root / "tally.py").write_text(
        tool.replace("sys.exit(", 'print("  \\u2717 widget broke (error)")\nsys.exit(', 1)
    )
    intents = (project.root / "intents.toml").read_text().replace("[learn]\n", "[learn]\nmodel_calls = 3\n")
    (project.root / "intents.toml").write_text(intents)
    project.agent_run()  # the first attempt fails its verify, the retry passes
    budget = intents.replace('write_files = "auto"\n', 'write_files = "auto"\nbudget = { tokens = 1 }\n')
    (project.root / "intents.toml").write_text(budget)
    report = project.learn()
    assert report["projected_model_calls"] == 2
    assert report["model_calls"] == 1 and report["model_tokens"] > 1
    assert any("the default policy's token budget (1) is spent" in note for note in report["notes"]), report
