"""Hermetic steps on a Dask cluster: a worker that does not share the checkout gets exactly a step's declared
inputs and its dependencies' outputs from the remote cache, runs the command in a scratch folder and puts the
outputs back there.

Runner side (`Hermetic`): the step's manifest {relpath: digest}, each blob put in the remote first when it is
not there yet (once a run: put is idempotent, the check is one request); after the step, the words for a read
of a file the step did not declare. Worker side (`run_hermetic`, the Dask task): a fresh scratch folder, each
manifest file fetched by digest (checked: a refused copy fails the step naming the file), the command run there
as in shared-filesystem mode, the declared outputs expanded with the project's glob meaning, hashed and put,
the scratch folder removed. The runner then restores those outputs through its cache (execute.py).

An agent attempt (`run_hermetic_attempt`): the same manifest materialised in a scratch folder that stands in for
the project (the attempt's copy is made from it, and a refused or verify-side write is put back from it), the
project's regex files beside it for the verify's findings; the attempt runs as on a shared filesystem
(steps/agent.py `detached_attempt`) and its AttemptDone comes back, to be applied here by the journaled apply.
A verify that failed naming a project file the step was not given says which declaration is missing
(`Hermetic.attempt_done`).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Collection
from pathlib import Path

from ..globs import expand
from ..keys import digest_bytes
from ..spec import STEP_AGGREGATE
from ..steps.base import StepContext, StepOutcome
from ..stores.remote import RemoteError, RemoteStore

# a token of a command's output that may be a path: what lies between blanks, quotes and punctuation
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")  # Python's ModuleNotFoundError
_TOKEN = re.compile(r"[^\s'\"`:;,()\[\]{}<>=]+")
_SCAN_LIMIT = 1 << 20  # bytes of a failed step's output searched for an undeclared read
_PROTECTED = (".git", ".runner")


class HermeticError(Exception):
    """A step's manifest could not be put in the remote cache: the step fails with these words."""


class Hermetic:
    """The runner's side of hermetic steps over one RemoteStore (the run's remote cache)."""

    def __init__(self, store: RemoteStore):
        self.store = store
        self.url = store.url
        self.timeout = store.timeout  # the workers' bound on one request, as the runner's
        self._there: set[str] = set()  # digests known to be in the remote in this run
        self._lock = threading.Lock()

    def manifest(self, ctx: StepContext, inputs: dict[str, str | None]) -> dict[str, str]:
        """{relpath: digest} of what the step may read: its declared inputs as planned (`inputs`, the
        decision's) and its dependencies' outputs as the project holds them now (written or restored before
        the step was released). Every blob is in the remote when this returns, or HermeticError says why."""
        root = ctx.spec.root
        manifest = {rel: digest for rel, digest in inputs.items() if digest is not None}
        datas: dict[str, bytes] = {}
        for rel in _dependency_outputs(ctx, ctx.intent.deps, set()):
            if rel in manifest:
                continue
            data = _read_or_say(os.path.join(root, rel), f"dependency output '{rel}'")
            manifest[rel] = digest_bytes(data)
            datas[manifest[rel]] = data
        self._carry(root, manifest, datas)
        return manifest

    def library(self, root: str, folder: str = "") -> dict[str, str]:
        """{path: digest} of the project's regexes/*.toml and, for a step of the sub-project `folder`, its own
        folder's (paths relative to the root), put in the remote: what an attempt's verify output is parsed with
        on the worker, as here (the patterns a step uses are part of its key)."""
        files: dict[str, str] = {}
        datas: dict[str, bytes] = {}
        for rel in ("regexes", f"{folder}/regexes") if folder else ("regexes",):
            try:
                names = sorted(n for n in os.listdir(os.path.join(root, rel)) if n.endswith(".toml"))
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                raise HermeticError(f"the project's {rel}/ could not be listed: {exc.strerror}") from None
            for name in names:
                data = _read_or_say(os.path.join(root, rel, name), f"{rel}/{name}")
                files[f"{rel}/{name}"] = digest_bytes(data)
                datas[files[f"{rel}/{name}"]] = data
        self._carry(root, files, datas, "regex file")
        return files

    def _carry(self, root: str, files: dict[str, str], datas: dict[str, bytes], what: str = "input") -> None:
        """Put each file's blob in the remote, unless this run knows it is there: `datas` holds the bytes
        already read (by digest); the others are read from `root` and checked against their digest. `what`
        the files are, for the messages."""
        for rel, digest in sorted(files.items()):
            with self._lock:
                if digest in self._there:
                    continue
            try:
                if not self.store.has_blob(digest):
                    held = datas.get(digest)
                    self.store.put_blob(digest, _read(root, rel, digest, what) if held is None else held)
            except RemoteError as exc:
                raise HermeticError(f"{what} '{rel}' could not be put in the remote cache {self.url}: {exc}") from None
            with self._lock:
                self._there.add(digest)

    def outcome(self, ctx: StepContext, outcome: StepOutcome, result: dict, manifest: dict[str, str]) -> StepOutcome:
        """The worker's answer as the step's outcome: its outputs (path -> digest) for execute.py to restore; a
        declared output it did not write; or, when the command failed, the undeclared file it tried to read."""
        if outcome.ok:
            if result.get("missing"):
                return StepOutcome(
                    ok=False, exit_code=0, error=f"declared output {result['missing']} was not produced",
                    log=outcome.log, worker=outcome.worker,
                )  # fmt: skip
            outcome.produced = dict(result.get("outputs") or {})
            return outcome
        if outcome.exit_code:
            read = undeclared_read(ctx, result.get("output", b""), manifest, result.get("scratch"))
            if read is not None:
                outcome.error = (
                    f"step {ctx.intent.name} read '{read}', which is not among its inputs: add it to inputs "
                    "(hermetic steps see only what they declare)"
                )
        return outcome

    def attempt_done(self, ctx: StepContext, done, manifest: dict[str, str]):
        """A hermetic attempt's AttemptDone as the step sees it: a verify that failed naming a project file the
        attempt was not given (neither in its manifest, nor written by the agent, nor a declared output) says
        which declaration is missing; a retry cannot declare it, so the candidate ends there ("config")."""
        if done.ok or done.kind != "logic" or not done.verify_log:
            return done
        given = set(manifest) | set(done.change.files) | set(expand(ctx.spec.root, ctx.intent.outputs))
        read = undeclared_read(ctx, done.verify_log, given, done.workspace)
        if read is not None:
            done.kind = "config"
            done.error = (
                f"the verification of step {ctx.intent.name} read '{read}', which is not among its inputs: add it "
                "to inputs (hermetic steps see only what they declare)"
            )
        return done


def _read(root: str, rel: str, digest: str, what: str = "input") -> bytes:
    data = _read_or_say(os.path.join(root, rel), f"{what} '{rel}'")
    if digest_bytes(data) != digest:
        raise HermeticError(f"{what} '{rel}' changed after the run planned this step: run again")
    return data


def _dependency_outputs(ctx: StepContext, deps: tuple[str, ...], seen: set[str]) -> list[str]:
    """The declared outputs of the step's dependencies, through aggregates (which produce nothing themselves)."""
    intents = ctx.spec.intents
    found: list[str] = []
    for dep in deps:
        if dep in seen:
            continue
        seen.add(dep)
        intent = intents[dep]
        if intent.kind == STEP_AGGREGATE:
            found.extend(_dependency_outputs(ctx, intent.deps, seen))
        else:
            found.extend(expand(ctx.spec.root, intent.outputs))
    return found


def undeclared_read(ctx: StepContext, output: bytes, manifest: Collection[str], scratch: str | None) -> str | None:
    """The first project file that a failed step's output names and its manifest does not hold: lines saying
    "No such file or directory" first, then a Python module it could not import (the file that import would
    have found), then any token that is such a path. None when there is none."""
    root, cwd = ctx.spec.root, ctx.intent.cwd
    lines = output[-_SCAN_LIMIT:].decode("utf-8", "replace").splitlines()
    missing = [line for line in lines if "No such file" in line or "not found" in line.lower()]
    for line in missing:
        if (rel := _named_path(root, line, cwd, manifest, scratch)) is not None:
            return rel
    for line in lines:
        for module in _NO_MODULE.findall(line):
            if (rel := _module_file(root, cwd, module, manifest)) is not None:
                return rel
    for line in lines:
        if (rel := _named_path(root, line, cwd, manifest, scratch)) is not None:
            return rel
    return None


def _named_path(root: str, line: str, cwd: str, manifest: Collection[str], scratch: str | None) -> str | None:
    for token in _TOKEN.findall(line):
        rel = _project_path(token, cwd, scratch)
        if rel is not None and rel not in manifest and os.path.isfile(os.path.join(root, rel)):
            return rel
    return None


def _module_file(root: str, cwd: str, module: str, manifest: Collection[str]) -> str | None:
    """The project file `import module` would have found, not among what the step was given: module.py or its
    package's __init__.py, under the step's folder, src/, or a folder holding what it was given (where its
    sys.path would point)."""
    path = module.replace(".", "/")
    given = sorted({str(parent) for rel in manifest for parent in Path(rel).parents})
    for base in dict.fromkeys([cwd, "src", *given]):
        for name in (f"{path}.py", f"{path}/__init__.py"):
            rel = os.path.normpath(os.path.join(base, name))
            if rel not in manifest and rel.split("/")[0] not in _PROTECTED and os.path.isfile(os.path.join(root, rel)):
                return rel
    return None


def _project_path(token: str, cwd: str, scratch: str | None) -> str | None:
    if scratch and token.startswith(scratch.rstrip("/") + "/"):
        rel = token[len(scratch.rstrip("/")) + 1 :]
    elif os.path.isabs(token):
        return None
    else:
        rel = os.path.join(cwd, token)
    rel = os.path.normpath(rel)
    if rel in (".", "") or rel.startswith("../") or rel == ".." or rel.split("/")[0] in _PROTECTED:
        return None
    return rel


# ---- on the worker ------------------------------------------------------------------------------------
def run_hermetic(
    run: Callable[..., dict],
    whoami: Callable[[], str],
    line: str,
    cwd: str,
    env: dict[bytes, bytes],
    manifest: dict[str, str],
    outputs: tuple[str, ...],
    url: str,
    remote_timeout: float,
    timeout: float | None,
    token: str,
) -> dict:
    """The Dask task of a hermetic step: materialise the manifest in a fresh scratch folder from the remote
    cache, run the command there, put the declared outputs back; the scratch folder is removed whatever
    happens. Returns as dask.run_command does, with `outputs` (path -> digest), or `missing` (a declared
    output not written), or `error` (a manifest file refused or not fetched, the remote failing). `run` and
    `whoami`: dask.run_command and dask.worker_name, given by the submitter (distributed stays dask.py's)."""
    name = whoami()
    scratch = tempfile.mkdtemp(prefix="runner-hermetic-")
    try:
        store, why = materialise(url, remote_timeout, manifest, scratch, name)
        if store is None:
            return {"worker": name, "error": why}
        where = os.path.normpath(os.path.join(scratch, cwd))
        os.makedirs(where, exist_ok=True)
        env = {**env, b"PWD": os.fsencode(where)}
        result = run(line, where, env, timeout, token)
        result["scratch"] = scratch
        if "error" in result or result["code"] != 0 or result.get("timed_out"):
            return result
        produced: dict[str, str] = {}
        blobs: dict[str, bytes] = {}
        for rel in expand(scratch, outputs):
            try:
                with open(os.path.join(scratch, rel), "rb") as f:
                    data = f.read()
            except (FileNotFoundError, IsADirectoryError):
                result["missing"] = rel
                return result
            produced[rel] = digest_bytes(data)
            blobs[produced[rel]] = data
        try:
            store.put_many(blobs, [])
        except RemoteError as exc:
            return {"worker": name, "error": f"the outputs could not be put in the remote cache {url}: {exc}"}
        result["outputs"] = produced
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def materialise(
    url: str, remote_timeout: float, manifest: dict[str, str], folder: str, name: str, label: str = "input"
) -> tuple[RemoteStore | None, str]:
    """Write each file of `manifest` ({relpath: digest}) under `folder`, fetched from the remote cache at `url`
    by digest and checked: (the store, "") or (None, why not, naming the file). `name`: this Dask worker."""
    try:
        store = RemoteStore(url, timeout=remote_timeout)
        for rel, digest in sorted(manifest.items()):
            data = store.get_blob(digest)
            if data is None:
                why = store.refusals.get(digest)
                if why:
                    return None, f"{label} '{rel}' refused on {name}: {why}"
                return None, f"{label} '{rel}' ({digest[:12]}) is not in the remote cache {url}"
            dest = os.path.join(folder, rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "wb") as f:
                f.write(data)
    except RemoteError as exc:
        return None, f"the remote cache {url} failed on {name}: {exc}"
    return store, ""


def run_hermetic_attempt(
    attempt: Callable[..., object],
    whoami: Callable[[], str],
    job,
    manifest: dict[str, str],
    library: dict[str, str],
    url: str,
    remote_timeout: float,
    token: str,
):
    """The Dask task of a hermetic agent attempt (job: steps/agent.py AttemptJob): the step's manifest
    materialised in a scratch folder that stands in for the project, the project's regex files beside it;
    then `attempt` (dask.run_attempt: detached_attempt, stopped by kill_run) with the job pointed there. Its
    AttemptDone comes back; a manifest file refused or not fetched fails the attempt naming the file (a retry
    would meet the same remote: final). The scratch folder is removed whatever happens."""
    from ..steps.agent import AttemptDone
    from ..workers.base import failed

    name = whoami()
    scratch = tempfile.mkdtemp(prefix="runner-hermetic-")
    try:
        # the project's regexes/ folders, laid out as at its root (libraries.regex_dirs reads them there)
        base, regexes = os.path.join(scratch, "project"), os.path.join(scratch, "library")
        os.makedirs(base)
        os.makedirs(regexes)
        store, why = materialise(url, remote_timeout, manifest, base, name)
        if store is not None:
            store, why = materialise(url, remote_timeout, library, regexes, name, label="regex file")
        if store is None:
            done = AttemptDone(answer=failed("permanent", why), change=_no_change(), kind="permanent", error=why)
            done.called, done.worker = False, name
            return done
        return attempt(dataclasses.replace(job, root=Path(base), hermetic=True, regexes=Path(regexes)), token)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _no_change():
    from ..attempt import Change

    return Change()


def _read_or_say(path: str, what: str) -> bytes:
    """A file the step's manifest carries, or HermeticError naming `what` could not be read and why."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise HermeticError(f"{what} could not be read: {exc.strerror}") from None
