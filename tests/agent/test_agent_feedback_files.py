"""An agent step's retry prompt names each finding with its file, also where the tool names the file once above its
findings (eslint's stylish output, the format a project's own `npm run lint` prints): the real log of issue 37's
defect, from the corpus's tuning part, as the verify command's output."""

from __future__ import annotations

import shutil
from pathlib import Path

from agent_helpers import PASSING_TEST

STYLISH = Path(__file__).parents[1] / "parse" / "real" / "eslint" / "rec__minimist_eslint_stylish.log"
FEEDBACK = "What the last attempt got wrong"


def test_the_retry_prompt_names_the_file_of_each_eslint_stylish_finding(agent):
    shutil.copy(STYLISH, agent.root / "lint.log")
    # the lint fails while the test file still says BAD (the first attempt), and passes once it does not
    (agent.root / "adapters/local.toml").write_text(
        'name = "local"\n[commands.lint]\n'
        'run = "if grep -q BAD tests/test_calc.py; then cat lint.log; exit 1; fi"\nparse = ["diagnostics"]\n'
    )
    scenario = {
        "by_prompt": [
            {"match": FEEDBACK, "files": {"tests/test_calc.py": PASSING_TEST}},
            {"files": {"tests/test_calc.py": "# BAD\n" + PASSING_TEST}},
        ]
    }
    agent.spec(agent.fake_codex_worker(scenario), intent_extra="")
    spec = (agent.root / "intents.toml").read_text().replace('verify = ["test"]', 'verify = ["lint"]')
    (agent.root / "intents.toml").write_text(spec)
    result = agent.make()
    assert result.code == 0, result.err
    _first, second = agent.prompts()
    assert "- /tmp/mm/package/index.js:14:6: 'spare' is defined but never used" in second
    assert "- /tmp/mm/package/example/parse.js:3:46: No magic number: 2" in second
