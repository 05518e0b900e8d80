"""One glob meaning for inputs, outputs and scope: for every row, the matcher (scope, outputs) and the expansion
over a real tree (inputs, outputs) give the expected answer, so they agree."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from runner.globs import expand, matches

ROWS = [
    # `*` stays within its folder
    ("notes/*.md", "notes/a.md", True),
    ("notes/*.md", "notes/deep/er/evil.md", False),
    ("notes/*.md", "notes/a.txt", False),
    ("src/*", "src/a/b.py", False),
    ("*/x.py", "a/x.py", True),
    ("*/x.py", "a/b/x.py", False),
    # `**` spans zero or more folders
    ("src/**/*.py", "src/x.py", True),
    ("src/**/*.py", "src/a/b/x.py", True),
    ("src/**/*.py", "srcx/x.py", False),
    ("src/**/*.py", "lib/src/x.py", False),
    ("**/*.md", "a.md", True),
    ("**/*.md", "a/b/c.md", True),
    ("tests/**", "tests/a", True),
    ("tests/**", "tests/a/b", True),
    ("tests/**", "tests", False),  # a file named like the folder is not below it
    ("tests/**", "other/tests/a", False),
    ("**", "a/b/c", True),
    ("a/**/b/**/c", "a/b/c", True),
    ("a/**/b/**/c", "a/x/b/y/z/c", True),
    ("a/**/b/**/c", "a/x/y/c", False),
    # `?` and `[...]`: one character of one name
    ("src/?.py", "src/x.py", True),
    ("src/?.py", "src/xy.py", False),
    ("a?b", "a/b", False),
    ("src/[ab].py", "src/a.py", True),
    ("src/[ab].py", "src/c.py", False),
    ("src/[!ab].py", "src/c.py", True),
    ("[a-c]*/x.py", "b1/x.py", True),
    ("[a-c]*/x.py", "d1/x.py", False),
    ("src/[[]x].py", "src/[x].py", True),
    # hidden names: a wildcard passes over them; a part that starts with "." or names them reaches them
    ("*", ".env", False),
    (".*", ".env", True),
    ("**", ".github/workflows/ci.yml", False),
    ("**/*.yml", ".github/workflows/ci.yml", False),
    (".github/**", ".github/workflows/ci.yml", True),
    (".github/*/*.yml", ".github/workflows/ci.yml", True),
    ("src/**/*.py", "src/.cache/x.py", False),
    ("src/*.py", "src/.x.py", False),
    ("src/?x.py", "src/.x.py", False),
    ("src/.*.py", "src/.x.py", True),
    ("**/.env", ".env", True),
    ("**/.env", "app/.env", True),
    ("**/.env", ".app/.env", False),
    ("tests/**", "tests/.fixtures/a", False),
    # a literal path names exactly itself, hidden or not
    ("docs/guide.md", "docs/guide.md", True),
    ("docs/guide.md", "docs/other.md", False),
    ("docs/guide.md", "docs/guide.md/x", False),
    (".env", ".env", True),
]


def _tree(root: Path, *paths: str) -> None:
    for rel in paths:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)


@pytest.mark.parametrize(("pattern", "path", "expected"), ROWS, ids=[f"{p} vs {q}" for p, q, _ in ROWS])
def test_the_matcher_and_the_expansion_give_each_path_the_same_answer(tmp_path, pattern, path, expected):
    _tree(tmp_path, path)
    assert matches(path, pattern) is expected
    assert (path in expand(str(tmp_path), (pattern,))) is expected


_NAMES = ["a", "b", "ab", ".h", "x.py", ".x.py", "a.md", "[a]"]
_PARTS = ["*", "**", "?", "a", "b", "[ab]", "[!a]", "*.py", ".*", ".h", "a*", "?b", "[[]a]", ".x.py"]


@pytest.mark.parametrize("seed", range(5))
def test_on_random_trees_the_matcher_selects_exactly_what_the_expansion_finds(tmp_path, seed):
    """The rows above are the cases a reader thinks of; random patterns over random trees find the rest."""
    rng = random.Random(seed)
    files: set[str] = set()
    for _ in range(40):
        rel = "/".join(rng.choice(_NAMES) for _ in range(rng.randint(1, 4)))
        clash = any(rel.startswith(f + "/") or f.startswith(rel + "/") for f in files)  # a file, or a folder
        if not clash:
            files.add(rel)
    _tree(tmp_path, *files)
    for _ in range(200):
        pattern = "/".join(rng.choice(_PARTS) for _ in range(rng.randint(1, 4)))
        found = set(expand(str(tmp_path), (pattern,))) & files  # a literal pattern is returned even if absent
        assert {f for f in files if matches(f, pattern)} == found, pattern
