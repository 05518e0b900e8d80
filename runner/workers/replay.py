"""The replay worker: serves recorded exchanges from replays/<intent>/<key16>-<attempt>.json, and
record_exchange() writes them (redacted, indented, one transcript line per JSON string, so they diff well)."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from runner.names import stored
from runner.redact import redact_obj, secret_values
from runner.workers.base import CONFIG, PERMANENT, Usage, WorkerConfig, WorkerRequest, WorkerResult, failed
from runner.workers.setup import Check

REPLAY_FORMAT = 1
KEY_PREFIX = 16
_FORBIDDEN_TOP = {".git", ".runner"}


def _safe_name(intent: str) -> str:
    if ":" in intent:  # a sub-project's PATH:NAME: one folder name, which no other name shares (names.stored)
        return stored(intent)
    return re.sub(r"[^A-Za-z0-9._-]", "_", intent) or "_"


def recording_path(replays_dir: Path, intent: str, step_key: str, attempt: int) -> Path:
    return Path(replays_dir) / _safe_name(intent) / f"{step_key[:KEY_PREFIX]}-{attempt}.json"


def resolve_replays_dir(config: WorkerConfig, workspace: Path | None = None) -> Path:
    """config.replays_dir if absolute; else under extra["project_root"]; else under the nearest ancestor of the
    workspace holding intents.toml (attempt workspaces live inside the project); else under the cwd."""
    d = Path(config.replays_dir)
    if d.is_absolute():
        return d
    if config.extra.get("project_root"):
        return Path(config.extra["project_root"]) / d
    if workspace is not None:
        for parent in [Path(workspace).resolve(), *Path(workspace).resolve().parents]:
            if (parent / "intents.toml").is_file():
                return parent / d
    return Path.cwd() / d


def record_exchange(
    replays_dir: Path | str, request: WorkerRequest, result: WorkerResult, files_changed: dict[str, str | None]
) -> Path:
    """Write one attempt's exchange (redacted) for the replay worker and the learning pass; returns its path.
    files_changed: what the attempt changed in its workspace (found by digests), path -> content (None: deleted)."""
    env = os.environ if request.env is None else request.env
    secrets = secret_values([request.config.env_key, *request.config.secret_names], environ=env)
    doc = {
        "format": REPLAY_FORMAT,
        "intent": request.intent,
        "step_key": request.step_key,
        "attempt": request.attempt,
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "worker": request.config.kind,
        "model": result.model,
        "worker_version": result.worker_version,
        "ok": result.ok,
        "failure": result.failure,
        "error": result.error,
        "usage": result.usage.to_json(),
        "duration_s": round(result.duration_s, 3),
        "prompt": request.prompt,
        "final_message": result.final_message,
        "files": dict(sorted(files_changed.items())),
        "transcript": result.transcript.splitlines(),  # a list of lines diffs far better than one string
    }
    doc = redact_obj(doc, secrets)
    path = recording_path(Path(replays_dir), request.intent, request.step_key, request.attempt)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def _load(path: Path) -> dict | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def find_recording(replays_dir: Path, request: WorkerRequest) -> tuple[Path, dict] | None:
    """The exact recording for (intent, step_key, attempt); with extra match="intent", else the newest one of
    the intent (same attempt number preferred)."""
    path = recording_path(replays_dir, request.intent, request.step_key, request.attempt)
    doc = _load(path)
    if doc is not None and doc.get("step_key") == request.step_key:
        return path, doc
    if request.config.extra.get("match") != "intent":
        return None
    candidates = []
    for p in (Path(replays_dir) / _safe_name(request.intent)).glob("*.json"):
        d = _load(p)
        if d is not None and d.get("intent") == request.intent:
            candidates.append((d.get("attempt") == request.attempt, d.get("recorded_at", ""), p.name, p, d))
    if not candidates:
        return None
    best = max(candidates, key=lambda c: c[:3])
    return best[3], best[4]


def _target(workspace: Path, rel: str) -> Path | None:
    """workspace/rel if rel stays inside the workspace (no absolute path, .., symlink escape, .git/.runner)."""
    p = PurePosixPath(rel)
    if p.is_absolute() or ".." in p.parts or not p.parts or p.parts[0] in _FORBIDDEN_TOP or "\\" in rel:
        return None
    root = workspace.resolve()
    target = (root / p).resolve()
    if target == root or not target.is_relative_to(root):
        return None
    return target


def apply_files(workspace: Path, files: dict[str, str | None]) -> str | None:
    """Write files into the workspace (None deletes). Returns the first refused path's reason, writing nothing."""
    targets = {}
    for rel in files:
        t = _target(Path(workspace), rel)
        if t is None:
            return f"refused path {rel!r}: it escapes the workspace or touches .git/.runner"
        targets[rel] = t
    for rel, content in files.items():
        t = targets[rel]
        if content is None:
            if t.is_file() or t.is_symlink():
                t.unlink()
        else:
            t.parent.mkdir(parents=True, exist_ok=True)
            t.write_text(content, encoding="utf-8")
    return None


class ReplayWorker:
    kind = "replay"

    def version(self, config: WorkerConfig) -> str:
        return f"replay-{REPLAY_FORMAT}"

    def check(self, config: WorkerConfig, environ: Mapping[str, str], steps=()) -> list[Check]:
        """A recording of each step's first attempt (by its key when known, else any of the intent's)."""
        replays = resolve_replays_dir(config)
        missing = []
        for intent, key in steps:
            if key is not None:
                request = WorkerRequest(prompt="", workspace=replays, intent=intent, step_key=key, config=config)
                if find_recording(replays, request) is None:
                    missing.append(f"{intent} (key {key[:KEY_PREFIX]}…)")
            elif not any((replays / _safe_name(intent)).glob("*.json")):
                missing.append(intent)
        if missing:
            return [
                Check(
                    "recordings",
                    False,
                    f"no recording in {replays}/ for {', '.join(missing)}: run once with a live worker and "
                    "`runner make --record`",
                )
            ]
        n = len(steps)
        return [Check("recordings", True, f"{replays}/ holds a recording for {n} agent step{'s' if n != 1 else ''}")]

    def run(self, request: WorkerRequest) -> WorkerResult:
        t0 = time.monotonic()
        cfg = request.config
        replays = resolve_replays_dir(cfg, request.workspace)
        found = find_recording(replays, request)
        if found is None:
            return failed(
                CONFIG,
                f"no recording for intent {request.intent} with key {request.step_key[:KEY_PREFIX]}… "
                f"(attempt {request.attempt}) in {replays}/: run once with a live worker and "
                "`runner make --record`",
                model=cfg.model,
                worker_version=self.version(cfg),
            )
        path, doc = found
        transcript_lines = doc.get("transcript") or []
        if isinstance(transcript_lines, str):
            transcript_lines = transcript_lines.splitlines()
        transcript = "".join(line + "\n" for line in transcript_lines)
        events: list[dict] = [
            {
                "type": "runner.replay",
                "file": str(path),
                "recorded_worker": doc.get("worker"),
                "recorded_worker_version": doc.get("worker_version"),
                "step_key": doc.get("step_key"),
            }
        ]
        for line in transcript_lines:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if isinstance(ev, dict):
                events.append(ev)
        files = doc.get("files") or {}
        problem = apply_files(request.workspace, files)
        if problem:
            return failed(
                PERMANENT,
                f"recording {path} is unsafe: {problem}",
                model=doc.get("model", ""),
                worker_version=self.version(cfg),
                events=events,
                transcript=transcript,
            )
        return WorkerResult(
            ok=bool(doc.get("ok")),
            final_message=doc.get("final_message") or "",
            events=events,
            transcript=transcript,
            usage=Usage.from_json(doc.get("usage")),
            duration_s=time.monotonic() - t0,
            model=doc.get("model", ""),
            failure=doc.get("failure"),
            error=doc.get("error"),
            files=files,
            worker_version=self.version(cfg),
        )
