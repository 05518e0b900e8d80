"""An input edited while a step reads it poisons no shared cache (runner/inputs_held.py): the run that saw the edit
uploads nothing for the step, and a second clone holding the old bytes runs the step itself rather than restore an
output made from the new ones."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from store_helpers import Clone, records

# the step waits at this gate, decided (its key made from in.txt as it was) and before it reads in.txt
GATE = "if [ -e hold ]; then : > started; while [ ! -e go ]; do sleep 0.01; done; rm -f hold go started; fi; "


def _spec(shared) -> str:
    return (
        f'[cache]\nremote = "{shared.as_uri()}"\n\n'
        f'[intent.copy]\nrun = "{GATE}cat in.txt > out/copy.txt"\ninputs = ["in.txt"]\noutputs = ["out/copy.txt"]\n'
    )


def test_a_clone_holding_the_old_bytes_does_not_get_the_output_made_from_an_edit_during_the_run(tmp_path, shared):
    first = Clone(tmp_path / "first")
    first.write("intents.toml", _spec(shared))
    first.write("in.txt", "old\n")
    (first.root / "out").mkdir()
    first.write("hold", "")
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "make", "--json"],
        cwd=first.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=first.env,
    )
    deadline = time.monotonic() + 60
    while not (first.root / "started").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    first.write("in.txt", "new\n")  # read by the step, which was decided on "old"
    first.write("go", "")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    done = [json.loads(line) for line in out.splitlines() if line.startswith("{")][-1]
    assert done["remote"]["uploaded"] == 0 and records(shared) == []
    assert done["inputs_changed"] == ["copy"]
    first.write("in.txt", "old\n")  # undone: the first clone holds the bytes the step's key named

    second = first.clone(tmp_path / "second")
    served = second.make()
    assert served.code == 0, served.err
    assert served.statuses() == {"copy": "ran"}  # not restored from the shared cache
    assert served.remote()["hits"] == 0
    assert (second.root / "out/copy.txt").read_text() == "old\n"
    # that run read what its key names: its record is the one the team gets
    assert served.remote()["uploaded"] == 1
    third = first.clone(tmp_path / "third")
    restored = third.make()
    assert restored.statuses() == {"copy": "restored"}
    assert (third.root / "out/copy.txt").read_text() == "old\n"
