#!/usr/bin/env python3
"""A fake `codex` executable for unit tests of the codex worker's subprocess handling (stdlib only).

Driven by the JSON scenario file named in $FAKE_CODEX_SCENARIO (keys absent: a plain successful turn):
  "version": "codex-cli 0.0.0-fake"   printed for --version
  "files": {"rel/path": "content"}     written under -C DIR (else cwd) before any output
  "symlinks": {"rel/link": "target"}   symlinks made under -C DIR, like files
  "by_prompt": [{"match": "text", ...}] the first entry whose "match" is in the prompt replaces the scenario
                                       (an entry without "match" matches anything): a script per attempt
  "lines": [event dict | raw string]   printed one per line on stdout (default: a successful turn); "${ENV:X}"
                                       in a line prints the variable X; "line_delay": seconds between them
  "stderr": "text"                     written to stderr
  "partial": "text"                    written last with no newline (output stopping mid-line)
  "spawn_child": true                  start a grandchild (same process group) that sleeps forever
  "ignore_sigterm": true               so only SIGKILL ends it
  "hang": true | "sleep": N            then sleep forever / N seconds
  "signal": "SIGKILL"                  then die by this signal
  "exit": 0                            then exit with this code
Every invocation appends one JSON line to $FAKE_CODEX_RECORD (if set): argv, env var NAMES (never values),
cwd, pid, pgid, sid, the grandchild's pid and whether stdin was at EOF.
"""

import json
import os
import re
import select
import signal
import subprocess
import sys
import time

DEFAULT = {
    "lines": [
        {"type": "thread.started", "thread_id": "fake-thread"},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": "done"}},
        {"type": "turn.completed", "usage": {"input_tokens": 10, "cached_input_tokens": 2, "output_tokens": 3}},
    ]
}


def stdin_state() -> str:
    """ "eof" when stdin is closed or /dev/null, "data" when something was piped, "open" when a read would block."""
    try:
        ready, _, _ = select.select([sys.stdin], [], [], 0.3)
    except (ValueError, OSError):
        return "closed"
    if not ready:
        return "open"
    return "eof" if not os.read(sys.stdin.fileno(), 1) else "data"


def workdir(argv: list[str]) -> str:
    for flag in ("-C", "--cd"):
        if flag in argv and argv.index(flag) + 1 < len(argv):
            return argv[argv.index(flag) + 1]
    return os.getcwd()


def main() -> int:
    argv = sys.argv[1:]
    path = os.environ.get("FAKE_CODEX_SCENARIO")
    scenario = DEFAULT
    if path:
        with open(path, encoding="utf-8") as f:
            scenario = json.load(f)
    if argv[:1] in (["--version"], ["-V"]):
        print(scenario.get("version", "codex-cli 0.0.0-fake"))
        return 0
    if scenario.get("ignore_sigterm"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = None
    if scenario.get("spawn_child"):
        # A grandchild in our process group, as a shell command run by the agent would be.
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import signal,time\n"
                + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if scenario.get("ignore_sigterm") else "")
                + "while True: time.sleep(1)",
            ],
            stdin=subprocess.DEVNULL,
        )
    prompt_len = None
    if argv[-1:] == ["-"]:  # the prompt comes on stdin, which must then be closed
        prompt_len = len(sys.stdin.buffer.read())
    record = os.environ.get("FAKE_CODEX_RECORD")
    if record:
        with open(record, "a", encoding="utf-8") as f:
            f.write(
                json.dumps(
                    {
                        "argv": argv,
                        "env_names": sorted(os.environ),
                        "cwd": os.getcwd(),
                        "pid": os.getpid(),
                        "pgid": os.getpgid(0),
                        "sid": os.getsid(0),
                        "child_pid": child.pid if child else None,
                        "stdin": stdin_state(),
                        "stdin_prompt_len": prompt_len,
                    }
                )
                + "\n"
            )
    root = workdir(argv)
    for entry in scenario.get("by_prompt", []):
        if entry.get("match", "") in (argv[-1] if argv else ""):
            scenario = entry
            break
    for rel, target in scenario.get("symlinks", {}).items():
        os.symlink(target, os.path.join(root, rel))
    for rel, content in scenario.get("files", {}).items():
        target = os.path.join(root, rel)
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        with open(target, "w", encoding="utf-8") as f:
            f.write(content)
    if scenario.get("stderr"):
        sys.stderr.write(re.sub(r"\$\{ENV:(\w+)\}", lambda m: os.environ.get(m.group(1), ""), scenario["stderr"]))
        sys.stderr.flush()
    for line in scenario.get("lines", DEFAULT["lines"]):
        line = line if isinstance(line, str) else json.dumps(line)
        # "${ENV:NAME}" prints a variable's value, as a CLI echoing its key in an error would
        line = re.sub(r"\$\{ENV:(\w+)\}", lambda m: os.environ.get(m.group(1), ""), line)
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        if scenario.get("line_delay"):
            time.sleep(float(scenario["line_delay"]))
    if scenario.get("partial"):
        sys.stdout.write(scenario["partial"])
        sys.stdout.flush()
    if scenario.get("hang"):
        while True:
            time.sleep(1)
    if scenario.get("sleep"):
        time.sleep(float(scenario["sleep"]))
    if scenario.get("signal"):
        os.kill(os.getpid(), getattr(signal, scenario["signal"]))
        time.sleep(5)
    return int(scenario.get("exit", 0))


if __name__ == "__main__":
    sys.exit(main())
