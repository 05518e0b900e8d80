"""Make the repository importable when the package is not installed (the venv has no editable install)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The fixture projects hold deliberately failing and broken tests for the tools to run; never collect them here.
collect_ignore_glob = ["fixtures/*", "logs/*"]
