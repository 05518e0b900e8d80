"""One glob meaning for inputs, outputs and scope: for every row, the matcher (scope, outputs) and the expansion
over a real tree (inputs, outputs) give the expected answer, so they agree."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from runner.globs import covers, expand, matches

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


@pytest.mark.parametrize("seed", range(5))
def test_on_random_trees_an_exclude_takes_out_what_it_matches_and_nothing_else(tmp_path, seed):
    """The walk does not enter a folder an exclude `X/**` takes whole (globs._pruned): what it yields is still the
    expansion without the exclude, less what the exclude matches."""
    rng = random.Random(seed)
    files: set[str] = set()
    for _ in range(40):
        rel = "/".join(rng.choice(_NAMES) for _ in range(rng.randint(1, 4)))
        if not any(rel.startswith(f + "/") or f.startswith(rel + "/") for f in files):
            files.add(rel)
    _tree(tmp_path, *files)
    for _ in range(200):
        pattern = "/".join(rng.choice(_PARTS) for _ in range(rng.randint(1, 4)))
        exclude = tuple("/".join(rng.choice(_PARTS) for _ in range(rng.randint(1, 3))) + "/**" for _ in range(2))
        whole = set(expand(str(tmp_path), (pattern,))) & files
        found = set(expand(str(tmp_path), (pattern,), exclude=exclude)) & files
        assert found == {f for f in whole if not any(matches(f, x) for x in exclude)}, (pattern, exclude)


COVERS = [
    # (outer, inner, whether every path inner matches is one outer matches)
    ("api/src/**/*.py", "api/src/**/*.py", True),
    ("api/src/**/*.py", "api/src/otel/*.py", True),
    ("api/src/**/*.py", "api/src/otel/trace/__init__.py", True),
    ("api/src/**/*.py", "api/src/test_*.py", True),
    ("api/src/**/*.py", "api/**/*.py", False),  # wider: api/tests/x.py
    ("api/src/**/*.py", "api/src/**", False),  # wider: api/src/x.txt
    ("api/src/**/*.py", "api/src/**/*", False),
    ("api/src/**/*.py", "api/src/.cache/*.py", False),  # the dependency's `**` passes over hidden folders
    ("api/**", "api/**/*.py", True),
    ("api/**", "api/src", True),
    ("api/**", "api", False),
    ("**", "a/b/*.md", True),
    ("a/**/b", "a/b", True),
    ("a/**/b", "a/x/**/b", True),
    ("a/*", "a/**", False),
    ("a/[ab].py", "a/[ab].py", True),
    ("a/[ab].py", "a/?.py", False),
    ("a/*.py", "a/x.py", True),
    ("a/x.py", "a/*.py", False),  # a glob is never covered by one literal path
]


@pytest.mark.parametrize(("outer", "inner", "expected"), COVERS, ids=[f"{o} over {i}" for o, i, _ in COVERS])
def test_covers_says_whether_one_pattern_takes_in_another(outer, inner, expected):
    assert covers(outer, inner) is expected


@pytest.mark.parametrize("seed", range(5))
def test_covers_never_says_yes_where_a_path_matches_the_inner_pattern_only(seed):
    """`covers` is allowed to say no when unsure, never yes wrongly: over random paths, each one a covered pattern
    matches, the covering one matches too (and pairs it says yes to turn up, so the check checks something)."""
    rng = random.Random(seed)
    paths = {"/".join(rng.choice(_NAMES) for _ in range(rng.randint(1, 5))) for _ in range(400)}
    said_yes = 0
    for _ in range(3000):
        outer = "/".join(rng.choice(_PARTS) for _ in range(rng.randint(1, 4)))
        inner = "/".join(rng.choice(_PARTS) for _ in range(rng.randint(1, 4)))
        if covers(outer, inner):
            said_yes += outer != inner
            assert all(matches(p, outer) for p in paths if matches(p, inner)), (outer, inner)
    assert said_yes > 20


def test_an_excluded_folder_is_not_walked(tmp_path):
    """An un-ignored node_modules/ (a project from `npm pack` has no .gitignore) under `exclude` is never listed:
    its 100,000 files would be walked by every run only to be dropped after."""
    _tree(tmp_path, "index.js", "example/parse.js", "node_modules/dep/index.js")
    locked = tmp_path / "node_modules" / "dep"
    entered: list[str] = []
    import os

    real_scandir = os.scandir

    def watching(path):
        entered.append(str(path))
        return real_scandir(path)

    os.scandir = watching  # the standard library's, watched: which folders the walk lists
    try:
        found = expand(str(tmp_path), ("**/*.js",), exclude=("**/node_modules/**",))
    finally:
        os.scandir = real_scandir
    assert found == ["example/parse.js", "index.js"]
    assert not any(str(locked.parent) in p for p in entered)


def test_the_expansion_tells_each_link_it_follows(tmp_path):
    """`links` (confine.Folders.reached: a sub-project reading another's files only where they lie): a link to a
    folder it enters, a link to a file it yields; not a link it passes by, nor one under an excluded folder."""
    _tree(tmp_path, "src/a.py", "real/b.py", "real/c.txt", "out/d.py")
    os.symlink("../real", tmp_path / "src/linked")
    os.symlink("../out/d.py", tmp_path / "src/d.py")
    os.symlink("../real", tmp_path / "src/skipped")
    os.symlink("real", tmp_path / "elsewhere")
    followed: list[str] = []
    found = expand(str(tmp_path), ("src/**/*.py",), exclude=("src/skipped/**",), links=followed)
    assert found == ["src/a.py", "src/d.py", "src/linked/b.py"]
    assert sorted(followed) == ["src/d.py", "src/linked"]
