"""`runner new GOAL`'s draft: the repository put compactly in a prompt (project, toolchains, file tree, the intents
there are), one question to the model through the openai worker, its answer checked into [intent.NAME] tables
appended to intents.toml as text (every byte before them kept), and the fallback without a model: one intent
for the goal that fails saying it has no recipe yet.

What a drafted intent is: an agent step (`goal`, `outputs` it must have, `inputs`, `deps` on intents there are or
drafted ones, `acceptance`, and `verify`: commands of a detected adapter). Names are slugs of what the model
gave, made unique against the file's intents; whether the whole file then loads is `runner new`'s last check."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import NamedTuple

from .. import toml_write
from ..errors import UserError
from .intents import appended
from .markdown import slug, unique

ANSWER_FILE = "draft.json"
MAX_PATHS = 300  # the file tree in the prompt: enough to ground it, short enough to stay cheap
NOTHING = "nothing written"

PROMPT = """\
You plan work for `runner`, a Make for coding agents. Each intent is a step a coding agent carries out
alone, verified by the project's own commands. Draft the intents that reach this goal:

GOAL: {goal}

The repository{project}:
- toolchains detected (adapter: commands usable in verify): {adapters}
- what it already runs: {runs}
- intents it has (name: outputs): {intents}
- files ({shown} of {total}{cut}):
{files}

Rules: small intents, each writing a few files (outputs: paths relative to the repository root, no file another
intent writes); deps only on the intents above or on ones you draft; verify only commands of a detected adapter
(name it in "adapter"); acceptance: short checkable sentences.
Answer with one FILE block, path={answer}, holding JSON:
{{"intents": [{{"name": "lowercase-with-dashes", "goal": "...", "deps": [], "inputs": ["..."],
"outputs": ["..."], "adapter": "...", "verify": ["..."], "acceptance": ["..."]}}]}}
"""


class Grounding(NamedTuple):
    project: str
    adapters: dict[str, tuple[str, ...]]  # detected adapter -> its command names, surest first
    runs: list[str]  # Makefile targets, npm scripts, tox environments, as `runner init` offers them
    intents: dict[str, tuple[str, ...]]  # the file's intents -> their outputs
    files: list[str]  # at most MAX_PATHS
    total: int  # how many files there are


def files_of(root: Path) -> list[str]:
    """The project's files: git's tracked and untracked-not-ignored ones in a git work tree, else a walk that
    honours .gitignore (runner/ignore.py); sorted, state folders left out."""
    try:
        proc = subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"],
            cwd=root,
            capture_output=True,
            timeout=30,
        )
        if proc.returncode == 0:
            found = [p for p in proc.stdout.decode("utf-8", "replace").split("\0") if p]
            return sorted(p for p in found if not p.startswith((".runner/", ".git/")))
    except (OSError, subprocess.SubprocessError):
        pass
    from ..ignore import IgnoreRules

    rules = IgnoreRules(str(root))
    out: list[str] = []
    for folder, dirs, names in os.walk(root):
        rel = os.path.relpath(folder, root)
        rel = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        dirs[:] = sorted(d for d in dirs if d not in (".git", ".runner") and not rules.ignored(rel + d, True))
        out.extend(rel + n for n in sorted(names) if not rules.ignored(rel + n, False))
        if len(out) > 20 * MAX_PATHS:  # a huge tree: the prompt shows MAX_PATHS of them anyway
            break
    return sorted(out)


def ground(root: Path, data: dict) -> Grounding:
    """What the prompt says about the repository; `data`: intents.toml as read ({} when there is none)."""
    from ..adapters import detect
    from ..load import load_project_adapters
    from ..manifests import offered, project_name

    adapters = load_project_adapters(root)
    detected = {d.adapter: tuple(c.name for c in adapters[d.adapter].commands) for d in detect(root, adapters)}
    named = project_name(root)
    intents = data.get("intent") if isinstance(data.get("intent"), dict) else {}
    existing = {
        str(name): tuple(str(o) for o in (table.get("outputs") or ()) if isinstance(table, dict))
        for name, table in (intents or {}).items()
        if isinstance(table, dict)
    }
    files = files_of(root)
    return Grounding(
        project=named[0] if named else root.name,
        adapters=detected,
        runs=[o.run for o in offered(root)],
        intents=existing,
        files=files[:MAX_PATHS],
        total=len(files),
    )


def prompt(goal: str, g: Grounding) -> str:
    return PROMPT.format(
        goal=goal,
        project=f" ({g.project})" if g.project else "",
        adapters="; ".join(f"{a}: {', '.join(c)}" for a, c in g.adapters.items()) or "none",
        runs=", ".join(g.runs) or "nothing found",
        intents="; ".join(f"{n}: {', '.join(o) or '-'}" for n, o in g.intents.items()) or "none",
        shown=len(g.files),
        total=g.total,
        cut="; the rest left out" if g.total > len(g.files) else "",
        files="\n".join(f"  {p}" for p in g.files) or "  (none)",
        answer=ANSWER_FILE,
    )


def ask(spec, text: str, root: Path) -> tuple[object, int]:
    """The model's answer (the JSON it wrote) and the tokens spent (0: an answer kept from before); a UserError
    when no draft came back.

    An answer is kept in `.runner/drafts/`, keyed by the prompt (goal and grounding) and the worker's model and
    base_url: `runner new GOAL` to read the diff, then `runner new GOAL --yes` to write it, pays for one call and
    writes the draft that was shown. A changed repository, goal or model asks again."""
    from ..keys import digest_bytes
    from ..workers import ask as ask_worker

    w = spec.worker
    kept = root / ".runner" / "drafts" / (digest_bytes(f"{w.model}\0{w.base_url}\0{text}".encode())[:32] + ".json")
    try:
        return json.loads(kept.read_text(encoding="utf-8")), 0
    except (OSError, ValueError):
        pass  # none kept (or a damaged one): ask
    result = ask_worker(spec, text, "new", "new")
    if not result.ok:
        raise UserError(f"the model gave no draft: {result.error or 'no answer'}; {NOTHING}")
    raw = (result.files or {}).get(ANSWER_FILE) or ""
    try:
        answer = json.loads(raw)
    except ValueError:
        raise UserError(f"the model's answer has no {ANSWER_FILE} holding JSON; {NOTHING}") from None
    kept.parent.mkdir(parents=True, exist_ok=True)
    tmp = kept.with_name(f".{kept.name}.{os.getpid()}.tmp")
    tmp.write_text(raw, encoding="utf-8")
    os.replace(tmp, kept)  # whole or not at all: a reader never takes half an answer for a draft
    return answer, result.usage.total


def _strings(item: dict, key: str, name: str) -> list[str]:
    value = item.get(key) or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UserError(f"the model's draft intent {name}: {key} is not a list of strings; {NOTHING}")
    return [v.strip() for v in value if v.strip()]


def checked(answer: object, g: Grounding) -> list[dict]:
    """The model's intents as tables to write: named uniquely, each an agent step with outputs, its deps on
    intents there are or drafted ones, verify commands under a detected adapter. A UserError naming the first
    problem otherwise (nothing is written)."""
    items = answer.get("intents") if isinstance(answer, dict) else None
    if not isinstance(items, list) or not items or not all(isinstance(i, dict) for i in items):
        raise UserError(f"the model's answer has no intents list in {ANSWER_FILE}; {NOTHING}")
    taken = set(g.intents)
    renamed: dict[str, str] = {}  # the name the model gave -> the one written (its first intent of that name)
    names = []
    for item in items:
        given = str(item.get("name") or item.get("goal") or "intent")
        names.append(unique(slug(given, "intent"), taken))
        renamed.setdefault(given, names[-1])
    drafted = []
    for item, name in zip(items, names, strict=True):
        goal = item.get("goal")
        if not isinstance(goal, str) or not goal.strip():
            raise UserError(f"the model's draft intent {name} has no goal; {NOTHING}")
        outputs = _strings(item, "outputs", name)
        if not outputs:
            raise UserError(
                f"the model's draft intent {name} has no outputs (an agent step declares the files it writes); "
                f"{NOTHING}"
            )
        deps = []
        for dep in _strings(item, "deps", name):
            found = renamed.get(dep, dep)
            if found not in g.intents and found not in names:
                raise UserError(
                    f"the model's draft intent {name} depends on {dep}, which is neither in the intents file nor "
                    f"in the draft; {NOTHING}"
                )
            deps.append(found)
        fields: dict = {"goal": goal.strip()}
        if deps:
            fields["deps"] = list(dict.fromkeys(deps))
        inputs = _strings(item, "inputs", name)
        if inputs:
            fields["inputs"] = inputs
        fields["outputs"] = outputs
        verify = _strings(item, "verify", name)
        adapter = item.get("adapter") if isinstance(item.get("adapter"), str) else None
        if verify:
            if adapter not in g.adapters:
                adapter = next((a for a, cmds in g.adapters.items() if set(verify) <= set(cmds)), adapter)
            if adapter is None:
                raise UserError(
                    f"the model's draft intent {name} verifies with {', '.join(verify)} but no toolchain was "
                    f"detected here to run them; {NOTHING}"
                )
            fields["adapter"] = adapter
            fields["verify"] = verify
        acceptance = _strings(item, "acceptance", name)
        if acceptance:
            fields["acceptance"] = acceptance
        drafted.append({"name": name, **fields})
    return drafted


def fallback(goal: str, g: Grounding, shown: str) -> list[dict]:
    """Without a model: one intent for the goal, a shell step that fails saying it has no recipe yet (an agent
    step needs outputs, which only a plan can name), as `runner import` does for a task naming no file."""
    name = unique(slug(goal, "intent"), set(g.intents))
    message = (
        f"{shown}: intent {name} has no recipe yet (drafted without a model); give [intent.{name}] "
        "outputs (an agent step) or a run line"
    )
    return [{"name": name, "description": goal, "run": f"echo {shlex.quote(message)} >&2; exit 1"}]


def text_with(old: str | None, drafted: list[dict], project: str) -> str:
    """intents.toml with the drafted tables at its end; a new file when there is none."""
    tables = "\n".join(
        toml_write.table_text(["intent", d["name"]], {k: v for k, v in d.items() if k != "name"}) for d in drafted
    )
    if old is None:
        head = (
            "# Intents drafted by `runner new` (the README says what each is). Edit them freely.\n\n"
            f"[project]\nname = {toml_write.value_text(project)}\n"
        )
        return head + "\n" + tables
    return appended(old, tables)
