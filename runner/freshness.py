"""Whether a step is up to date: the one rule, its wording of reasons, and the list of every shortcut that gives its
answer faster (each lives in a module of its own; this docstring says where, on what it rests, and which test goes
red when it is wrong).

The rule (`decide`)
    A step is up to date when its key matches a recorded success and its declared outputs hold the recorded bytes.
    The key digests the step's definition, prompt, adapter, regexes, worker and policy (the compiled spec's static
    digest; an agent step's also holds the worker's version), the contents of its inputs, and its dependencies'
    output digests, so a dependency that ran again and wrote the same bytes changes nothing (early cutoff). An input
    that is also the step's output counts as the bytes it had before the step ran (absent, for a file it created
    where its input globs look), for as long as it holds what the step produced: a step never chases its own tail. A
    recorded success is the step's last good result (the state index) or any cache record of the key. An output that
    lost its bytes is restored from the blob store; the step runs only if the blob is gone; an agent step's output a
    person edited is never written over, but kept as its result (edits.py). An aggregate is up to date when its
    dependencies are; a step that declares nothing to key on runs every time, like a phony make rule; `-B` runs
    everything. Each reason a step runs is worded beside the condition that makes it (`decide`, `_check_outputs`,
    `why_missed`), as ninja keeps each dirty condition next to its EXPLAIN line. The rule asks its caller
    (plan.Planner) for nothing: the step's input files, static digest and last result come in as arguments (`Asked`).

The shortcuts, each answering as the rule does: where it lives, the invariant it rests on, and the test that goes
red when it is wrong (tests/core/ unless named otherwise)
    1. Digests from stats (stat_cache.StatCache.digest), as git's index. A file's digest is reused while its
       stats (size, mtime, ctime, inode) equal those taken when it was hashed and its mtime and ctime are older
       than the hashing by more than RACY_NS. Invariant: a write changes ctime, which no user can set back, and
       mtime; only a write within one clock tick of the hashing could leave every stat as it was, and the
       racy window refuses to vouch for that tick (git's "racily clean" rule).
       Red: test_freshness.py::test_a_digest_taken_in_the_clock_tick_of_a_write_is_not_trusted,
       test_racy_window.py::test_the_no_op_trusts_an_outputs_stats_once_the_window_set_has_passed (the racy window
       broken; test_differential.py stays green then: its edits never land within a clock tick of a read).
    2. The in-run racy skip (StatCache.fresh). A file this process hashed is not hashed again within the run
       while its stats are unchanged, though they are too fresh to vouch. Invariant: the run's own writes go
       through `written`/`remember`, which drop the path from `fresh`; a write from outside within the tick is
       what the input re-check after each step catches (inputs_held.py), and the path's view keeps the hashing
       time, so the proof keeps its digest and checks its bytes.
       Red: test_freshness.py::test_a_digest_taken_in_the_clock_tick_of_a_write_is_not_trusted (the skip taken for
       any entry); with the re-check it rests on broken, test_differential.py and test_inputs_held.py::
       test_an_input_rewritten_with_the_same_bytes_while_the_step_runs_is_not_cached_either.
    3. The compiled spec reused by stats (compiled.load_compiled), while each spec file's stats equal those
       taken when it was compiled, none of them modified within RACY_NS before the compile began (a spec whose
       files were that fresh is used once and not kept). Invariant: as 1, with the clock started before the
       first read, so an edit made while the spec was read falls inside the window.
       Red: test_freshness.py::test_an_edit_to_intents_toml_that_keeps_size_mtime_and_inode_is_seen.
    4. The compiled spec reused by bytes or by document (compiled._unchanged). A spec file whose stats moved
       but whose bytes are those the loader read (a touch, a checkout), or whose TOML document is the one it
       parsed (a comment, spacing), keeps the compilation. Invariant: the loader makes the same spec of the
       same document; a file the loader did not read itself (a prompt, an adapter folder) must keep its stats.
       Red: test_freshness.py::test_a_comment_in_intents_toml_keeps_its_compilation_and_decides_nothing,
       test_freshness.py::test_a_touch_of_intents_toml_keeps_its_compilation_and_decides_nothing,
       test_recompile.py::test_a_commands_edit_is_not_a_full_load.
    5. The splice after an edit (compiled._recompiled). An edit of a few intents recompiles those and splices
       them into the last compilation. Invariant: what it makes equals what a full compile of the same files
       makes; an edit of the graph (deps, the order) or of another file is a full compile.
       Red: test_recompile.py::test_an_edit_compiles_to_what_a_full_compile_makes,
       test_recompile.py::test_an_edit_of_the_graph_is_a_full_compile.
    6. The target's proof (noop.prove_target, recorded by proof.record_proof: the warm no-op). A good run
       records, for each spec file and declared path of its target, the stats its verdicts rested on: for a
       step the rule decided, the stats its decision read, and those of its outputs once it wrote or restored
       them; for a step that shortcut 9 proved, the stats as the run began; for a spec file, those the compiled
       spec was made from. A path seen in two states by two verdicts, a spec file changed between the compile
       and the run, and a path too fresh for its stats to vouch for bytes nobody hashed, are recorded as a stat
       no file has (NEVER). Where the stats could not vouch for the bytes the run used, their digest is kept
       and checked. A run that finds every recorded stat (and kept digest) again would decide each step as the
       recorded run did: nothing to do. Invariant: 1, and every file a step reads is a declared path (a glob,
       or a step that runs every time, leaves its target without a proof: what a glob expands to also rests on
       the ignore rules, runner/ignore.py, which no declared path shows). The values of the variables `env`
       values read ($NAME) are part of keys: the proof keeps their digest, and holds only while it is the same.
       The proof is found by the targets as typed and the intents file (`-f`, proof.proof_name), in this
       folder (its device and inode: a copy's proof is the original's, proof.slot_of): the spec files' stats
       vouch that those names still select the same steps.
       Red: test_freshness.py::test_the_no_op_proof_checks_the_bytes_its_stats_could_not_vouch_for,
       test_freshness.py::test_a_copied_project_builds_its_own_files_not_the_originals, test_differential.py.
    7. The touch (noop._touched). When a few declared files (no spec file the loader did not read) have new
       stats, the proof still holds if each one's bytes now are the bytes the proof vouched for: its kept
       digest, the loader's digest of a spec file (`spec_read`), or the stat cache's digest of a file with
       exactly the recorded stats, hashed when they vouched for it (1). The proof then records the new stats
       (with a kept digest while they are too fresh). Invariant: 6 and 1; every byte a verdict rested on is
       the same.
       Red: test_freshness.py::test_a_touch_never_trusts_a_stat_cache_digest_its_stats_did_not_vouch_for,
       test_freshness.py::test_a_touch_is_answered_by_the_fast_no_op_and_an_edit_is_not.
    8. Digests the no-op vouched for, given to the stat cache (noop._vouched). When the no-op drops a kept
       digest whose stats now vouch, or a touch found the bytes the same, it writes a stat cache entry with the
       stats taken before its bytes were read. `read_after=True` (the dropped kept digests) writes them without
       taking the stats again. Invariant: a write after those stats, which vouched (their ctime older than the
       hashing by the racy window), gave the file a later ctime, so the entry is never matched again.
       Red: test_freshness.py::
       test_a_stat_cache_entry_made_from_stats_taken_before_a_write_never_stands_for_the_written_bytes.
    9. The edit's cone (cone.first_look, cone.doubtful_steps). Against that proof, a path whose stats differ
       is changed; a step that declares no changed path, is no agent step, has a last good result, and depends
       on no step left to decide, is up to date as the recorded run found it. Only the cone downstream of the
       changed paths is decided by the rule (all of it when a variable `env` reads changed, or a worker file).
       Invariant: 6, path by path. A no-op that failed hands what it read and stat'ed to the pipeline
       (proof.Missed), which stands on it only if no other runner held the lock meanwhile.
       Red: test_freshness.py::test_a_file_changed_during_an_edit_run_dirties_the_steps_proved_before_it,
       test_freshness.py::test_a_step_after_an_edit_keys_on_what_its_proven_dependency_produced,
       test_differential.py.
    10. The cone after an edit of the spec (cone.FirstLook.after_edit). A proof made from the compilation this
       one replaced (compiled.Compiled.previous) still stands for a step whose fingerprint (its static digest
       and its dependencies, all a key takes from the spec) is the same in both, which it was in the last
       proof's order, and whose declared paths are as that proof recorded them; the edited steps and the cone
       below them are decided. A proof from any older compilation, or a worker file changed, proves nothing.
       Invariant: 6, and the fingerprint of every step holds what its key takes from the spec files.
       Red: test_freshness.py::test_every_step_an_edit_of_intents_toml_changed_is_decided,
       test_freshness.py::test_a_proof_stands_only_beside_the_compilation_that_replaced_its_own.
    11. A dependency only an aggregate reads (execute.py, `_UNREAD`). In an edit's run, a proven step whose only
       reader is an aggregate that no selected step depends on is given the digest "unread" instead of its last
       result's, which is never decoded. Invariant: an aggregate's "outputs" are its dependencies' digests,
       seen only by steps that depend on it; with none selected, no key holds them.
       Red: test_freshness.py::test_the_no_op_after_an_edit_still_leaves_the_aggregate_out,
       test_differential.py.
    12. Only what a run changed is settled in the next proof (proof._to_settle). Given the paths that differ
       from the last proof, a path no verdict saw, that did not differ and had no kept digest keeps the stat
       the run began with, vouched for by the last proof. Invariant: 6.
       Red: test_freshness.py::test_an_edit_run_keeps_the_digests_the_last_proof_kept_for_the_steps_it_did_not_decide.
    13. The toolchain's witness (toolchain.witness, in the proof's sources as a worker's files are; PATH and the
       variables a version manager reads among the proof's variables). A step's key holds what its runtime
       commands print (its adapter's and its own), run once a run when a step that uses them is decided; the
       proof does not run them but stats, for each command, every folder of PATH up to the one holding its
       program, the program, the folder of its real path (a venv's interpreter is a link to its base's), and the
       files pyenv, nodenv, asdf and rustup read to pick a version (in the command's folder and each parent, and
       the global ones). Any of them changed, or PATH, leaves every step to decide (9); the commands then run
       again, and a step whose toolchain printed the same is up to date. Invariant: a tool installed, upgraded or
       removed adds, removes or replaces a file in a folder of PATH it is found through, or in its interpreter's
       folder (pip writes a package's scripts beside the interpreter of its environment), or is picked by one of
       those files or variables. Not seen by the no-op: a package without scripts put into an interpreter's
       site-packages from outside (`python -m pip install` under pyenv's shims): `runner make -B` asks again.
       The same witness keeps a command's output between runs (toolchain.Versions, .runner/toolchain), with its
       stats taken before the command ran: taken again while they are the same and vouch, so a target left without
       a proof (an input glob) does not run `pytest --version` at each run.
       Red: tests/core/test_toolchain_key.py::
       test_a_new_version_of_a_runtime_tool_runs_the_step_again_and_the_same_one_does_not (the witness left out),
       tests/core/test_toolchain_key.py::test_another_program_first_on_path_is_not_a_no_op (PATH left out),
       tests/core/test_toolchain_key.py::
       test_a_target_without_a_proof_runs_its_runtime_commands_only_when_their_witness_moved (nothing kept),
       and the property tests/core/test_toolchain_key.py::
       test_whatever_moves_on_path_the_step_ran_with_the_tool_found_first_and_only_when_it_changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import TYPE_CHECKING, Any, NamedTuple

from .keys import step_key, with_canaries
from .memory import FIELDS, PART_PREFIX
from .spec import STEP_AGENT, STEP_AGGREGATE, Intent, runs_always
from .stat_cache import input_digests

if TYPE_CHECKING:
    from .cache import LastResult, StepRecord
    from .edits import KeptEdit
    from .plan import Planner

RUN, SKIP = "run", "skip"
ALWAYS = "no inputs or dependencies declared: runs every time (declare inputs to cache it)"


class Asked(NamedTuple):
    """What the rule is asked about one step, as the plan gathered it (plan.Planner.ask): its name and intent, its
    input files (the globs expanded), its static digest (None while a dependency has yet to run: not needed, and an
    agent step's asks the worker for its version), and its last good result."""

    name: str
    intent: Intent
    files: list[str]
    static: str | None
    last: LastResult | None


UP_TO_DATE = "up to date"  # the reason of a step whose last result stands


class Decision:
    """RUN or SKIP for one step, with the reasons and what its key was made of."""

    kept: KeptEdit | None = None  # a person's edit to an agent step's output, kept first (runner/edits.py)

    def __init__(
        self,
        intent: str,
        action: str,
        reasons: list[str],
        key: str | None = None,
        outputs: dict | None = None,
        restore: dict | None = None,
        inputs: dict | None = None,
        dep_digests: dict | None = None,
        inplace: dict | None = None,
        slice_key: str | None = None,
        seen: dict | None = None,
    ):
        self.intent = intent
        self.action = action  # RUN | SKIP
        self.reasons = reasons
        self.key = key  # None when it depends on a step that has not run yet
        self.outputs: dict[str, str | None] = {} if outputs is None else outputs  # known outputs (SKIP)
        self.restore: dict[str, str] = {} if restore is None else restore  # output path -> blob to restore
        self.inputs: dict[str, str | None] = {} if inputs is None else inputs
        self.dep_digests: dict[str, str | None] = {} if dep_digests is None else dep_digests
        self.inplace: dict[str, str | None] = {} if inplace is None else inplace  # pre-run digests of in-place inputs
        # the key without canary patterns: where the step falls in each canary's slice (parse.Pattern.used_for)
        self.slice_key = key if slice_key is None else slice_key
        # input path -> the stat cache entry its digest came from (None: no file): what inputs_held re-checks
        self.seen: dict[str, bytes | None] = {} if seen is None else seen

    def __repr__(self) -> str:
        return f"Decision({self.intent!r}, {self.action!r}, {self.reasons!r})"

    def to_json(self) -> dict:
        return {"intent": self.intent, "action": self.action, "reasons": self.reasons}


def waiting_on(intent: Intent, dep_outputs: Mapping[str, str | None]) -> list[str]:
    """The dependencies of `intent` whose outputs are not known yet (None: yet to run)."""
    return [d for d in intent.deps if dep_outputs.get(d) is None]


def decide(
    planner: Planner, asked: Asked, dep_outputs: Mapping[str, str | None], pending: Set[str] = frozenset()
) -> Decision:
    """The rule, for one step. `dep_outputs[dep]` is the digest of the dep's outputs, or None if the dep has
    yet to run (`pending`: those that will). The planner gives what the rule checks against: the stat cache,
    the state, the cache and -B."""
    name, intent, last = asked.name, asked.intent, asked.last
    waiting = waiting_on(intent, dep_outputs)
    if intent.kind == STEP_AGGREGATE:
        reasons = [f"aggregate of {len(intent.deps)} step{'s' if len(intent.deps) != 1 else ''}"]
        if waiting:
            return Decision(name, SKIP, reasons)
        # an aggregate "produces" its dependencies' outputs, so a step depending on it sees them
        return Decision(name, SKIP, reasons, key="aggregate", outputs={d: dep_outputs[d] for d in intent.deps})
    entries: dict[str, bytes | None] = {}
    inputs = input_digests(planner.stat, planner.root, asked.files, name, entries)
    inplace = {}
    if last and last.inplace:
        # an input the step edits in place counts as the bytes it had before the step ran, while it holds
        # exactly what the step produced
        for path, before in last.inplace.items():
            if path in inputs and inputs[path] == last.outputs.get(path):
                if before is None:
                    del inputs[path]  # a file the step created where its inputs look: absent, as it was
                else:
                    inputs[path] = before
                inplace[path] = before
    if waiting:
        reasons = [f"dependency {d} will run" for d in waiting if d in pending] or [
            f"dependency {d} has not run" for d in waiting
        ]
        return Decision(name, RUN, reasons, inputs=inputs, inplace=inplace, seen=entries)
    deps = {d: dep_outputs[d] for d in intent.deps}
    assert asked.static is not None  # known once no dependency is waiting (Planner.ask)
    key = slice_key = step_key(asked.static, inputs, deps)
    if intent.kind == STEP_AGENT and (gates := planner.compiled.gates.get(name)):
        key = with_canaries(key, gates)  # the canary patterns whose slice it is in read its verify output
    made: dict[str, Any] = {
        "key": key,
        "inputs": inputs,
        "dep_digests": deps,
        "inplace": inplace,
        "slice_key": slice_key,
        "seen": entries,
    }
    if planner.force:
        return Decision(name, RUN, ["forced"], **made)
    if name in planner.forced:
        return Decision(name, RUN, ["runner improve: run again with feedback"], **made)
    if runs_always(intent):
        return Decision(name, RUN, [ALWAYS], **made)
    if last and last.key == key:
        return _check_outputs(planner, name, last.outputs, made, [UP_TO_DATE])
    record, refused = planner.record(name, key)  # refused: it names what the step may not write (runner/confine.py)
    if refused:
        return Decision(name, RUN, [refused], **made)
    remote = planner.cache.remote_why(key)  # the shared cache's word on a local miss (runner/stores)
    if record is None:
        old = planner.cache.get_record(last.key) if last else None
        why = why_missed(old, planner.parts(name), intent, inputs, deps, planner.toolchain(name))
        return Decision(name, RUN, why + [remote] if remote else why, **made)
    return _check_outputs(planner, name, record.outputs, made, [remote or "inputs match an earlier cached run"])


def _check_outputs(planner: Planner, name: str, outputs: Mapping, made: dict, why: list[str]) -> Decision:
    """SKIP if each recorded output holds its bytes or can get them back from the blob store, else RUN."""
    restore, reasons = {}, []
    for path, want in outputs.items():
        have = planner.stat.digest(planner.root, path, name)
        if have == want or want is None:
            continue
        state = "missing" if have is None else "changed"
        if not planner.cache.has_blob(want):
            return Decision(name, RUN, [f"output {path} {state} and its cached copy is gone"], **made)
        restore[path] = want
        reasons.append(f"output {path} {state}: restore from cache")
    if reasons and why[0] == UP_TO_DATE:
        why = []
    return Decision(name, SKIP, why + reasons, outputs=dict(outputs), restore=restore, **made)


def why_missed(
    before: StepRecord | None,
    parts: Mapping[str, str],
    intent: Intent,
    inputs: dict,
    deps: dict,
    toolchain: Mapping[str, str] | None = None,
) -> list[str]:
    """Why a step with no recorded success for its key must run: its last recorded run (`before`) compared
    ingredient by ingredient with what its key is made of now (`parts`: the digest of each ingredient but the
    files, plan.Planner.parts; `toolchain`: what its runtime commands print, plan.Planner.toolchain)."""
    if before is None:
        return ["no cache entry"]
    ingredients = before.ingredients
    reasons = []
    old_parts = ingredients.get("parts", {})
    # the memory's fields in one reason, added and dropped ones too (an intent without memory has no part)
    memory = [p for p in FIELDS if old_parts.get(PART_PREFIX + p) != parts.get(PART_PREFIX + p)]
    if memory:
        reasons.append(f"intent memory changed: {', '.join(memory)}")
    for part, value in parts.items():
        if part.startswith(PART_PREFIX):
            continue
        if old_parts.get(part) != value:
            label = {"definition": "definition changed", "env": "a variable its env reads changed"}.get(part)
            if part == "prompt":
                label = f"prompt {intent.prompt} changed"
            elif part == "toolchain":
                from .toolchain import changed

                label = changed(ingredients.get("toolchain"), toolchain or {})
            reasons.append(label or f"{part} changed")
    old_inputs = ingredients.get("inputs", {})
    for path in sorted(set(inputs) | set(old_inputs)):
        if path not in old_inputs:
            reasons.append(f"input {path} added")
        elif path not in inputs:
            reasons.append(f"input {path} removed")
        elif inputs[path] != old_inputs[path]:
            reasons.append(f"input {path} {'deleted' if inputs[path] is None else 'changed'}")
    old_deps = ingredients.get("deps", {})
    for dep, value in deps.items():
        if dep not in old_deps:
            reasons.append(f"new dependency {dep}")
        elif old_deps[dep] != value:
            reasons.append(f"dependency {dep} produced new outputs")
    for dep in old_deps:
        if dep not in deps:
            reasons.append(f"dependency {dep} removed")
    return reasons or ["no cache entry for this combination of inputs"]
