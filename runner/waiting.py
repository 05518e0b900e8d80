"""What waits for approval, shown before anyone says yes: which planned steps wait (`runner status`), and one
waiting change's diff, verify result and drift flags (`runner approve INTENT --show`), read from its pending
entry without applying anything."""

from __future__ import annotations

import os
from pathlib import Path

from .apply import load_pending
from .approve import edited_since
from .spec import Spec


def reason(name: str) -> str:
    return (
        f"waiting for approval: `runner approve {name} --show` shows the change, `runner approve {name}` applies it "
        f"(no model call), `runner approve {name} --reject` drops it"
    )


def waiting(state_dir: Path, decisions: list) -> set[str]:
    """The planned steps whose verified change waits for approval under the key they would run with: `runner make`
    would not call a model for them, but wait for `runner approve`."""
    pending = load_pending(state_dir)
    return {d.intent for d in decisions if d.key and d.intent in pending and pending[d.intent].get("key") == d.key}


def views(spec: Spec, state_dir: Path, names: list[str]) -> list[dict]:
    """Each waiting change (of `names`, or every one): its intent, run, files, diff, verify result and drift."""
    pending = load_pending(state_dir)
    return [_view(spec, name, pending[name]) for name in (names or sorted(pending)) if name in pending]


def _view(spec: Spec, name: str, entry: dict) -> dict:
    root = Path(spec.root)
    intent = spec.intents.get(name)
    transcript = (entry.get("version") or {}).get("transcript")
    log = Path(transcript).with_name("verify.log") if transcript else None
    edited = edited_since(root, entry.get("files", {}), entry.get("base") or {})
    return {
        "intent": name,
        "run_id": entry.get("run_id"),
        "saved": entry.get("saved"),
        "policy": intent.policy if intent else None,
        "files": sorted(entry.get("files", {})),
        # a change waits only once every verify command passed on it (steps/agent.py): what ran, and its log
        "verify": {
            "passed": True,
            "commands": list(intent.verify) if intent else [],
            "log": os.path.relpath(log, root) if log is not None and log.exists() else None,
        },
        "drift": entry.get("drift") or [],
        "edited": edited,  # changed since it was drafted: approving would be refused
        "diff": entry.get("diff", ""),
    }


def render(view: dict) -> list[str]:
    name = view["intent"]
    files = view["files"]
    lines = [
        f"{name}: a verified change to {len(files)} file(s) waits for approval (run {view['run_id']}, "
        f"{view['saved']}; policy '{view['policy']}')"
    ]
    verify = view["verify"]
    ran = ", ".join(verify["commands"]) or "no verify commands"
    lines.append(f"verify: {'passed' if verify['passed'] else 'failed'} ({ran})")
    if verify["log"]:
        lines.append(f"  log: {verify['log']}")
    if view["drift"]:
        lines += [f"drift: {len(view['drift'])} flag(s)"] + [f"  DRIFT {name}: {d['message']}" for d in view["drift"]]
    else:
        lines.append("drift: none")
    if view["edited"]:
        lines.append(f"edited since it was drafted: {', '.join(view['edited'])} (approving it would be refused)")
    lines.append("")
    lines += view["diff"].rstrip("\n").splitlines()
    lines += ["", f"`runner approve {name}` applies it, `runner approve {name} --reject` drops it"]
    return lines
