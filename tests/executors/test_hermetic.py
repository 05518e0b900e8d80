"""Hermetic steps on a real Dask cluster: the workers do not run in the project (each step runs in a scratch
folder that holds only its declared inputs and its dependencies' outputs, carried by a file:// remote cache)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from executor_helpers import project, runner
from test_dask import OUTPUTS, SPEC

from runner.keys import digest_bytes


def _remote(shared: Path) -> str:
    return f'\n[cache]\nremote = "{shared.as_uri()}"\n'


def test_a_hermetic_diamond_gives_the_local_bytes_then_a_noop(cluster, tmp_path: Path):
    address, workers = cluster
    shared = tmp_path / "shared"
    here = project(tmp_path / "here", SPEC)
    table = f'\n[executor]\nkind = "dask"\naddress = "{address}"\nhermetic = true\n'
    there = project(tmp_path / "there", SPEC + _remote(shared) + table)
    assert runner(here, "make", "--executor", "local").code == 0

    built = runner(there, "make", "--json", "-j", "4")
    assert built.code == 0, built.err
    for rel in OUTPUTS:  # restored into the project from the remote: the workers never wrote here
        assert (there / rel).read_bytes() == (here / rel).read_bytes(), rel
    ran = built.finished("ran")
    assert sorted(e["intent"] for e in ran) == ["fan", "join", "left", "right", "seed"]
    assert {e["worker"] for e in ran} <= set(workers)
    for rel in OUTPUTS:  # each output's blob is in the shared cache, put there by a worker
        digest = digest_bytes((here / rel).read_bytes())
        assert (shared / "v1" / "blobs" / digest[:2] / digest).read_bytes() == (here / rel).read_bytes()

    again = runner(there, "make", "--json")
    assert again.code == 0
    assert again.events()[-1]["ran"] == 0 and again.events()[-1]["cached"] == 5


def test_a_hermetic_step_runs_elsewhere_and_sees_only_what_it_declares(cluster, tmp_path: Path):
    address, _workers = cluster
    spec = (
        '[intent.look]\nrun = "seen=$(find . -type f | sort); pwd > where.txt; echo \\"$seen\\" > seen.txt"\n'
        'inputs = ["src/a.txt"]\noutputs = ["where.txt", "seen.txt"]\n' + _remote(tmp_path / "shared")
    )
    root = project(tmp_path / "p", spec)
    (root / "src").mkdir()
    (root / "src" / "a.txt").write_text("a\n")
    (root / "src" / "secret.txt").write_text("not declared\n")
    result = runner(root, "make", "--json", "--executor", address, "--hermetic")
    assert result.code == 0, result.err
    where = (root / "where.txt").read_text().strip()
    assert where != str(root) and not where.startswith(str(root) + "/")
    assert "runner-hermetic-" in where
    assert (root / "seen.txt").read_text() == "./src/a.txt\n"  # neither secret.txt nor intents.toml
    assert not Path(where).exists()  # the scratch folder is removed


def test_an_undeclared_read_fails_and_names_the_missing_declaration(cluster, tmp_path: Path):
    address, workers = cluster
    spec = (
        '[intent.leak]\nrun = "cat src/a.txt src/secret.txt > out.txt"\n'
        'inputs = ["src/a.txt"]\noutputs = ["out.txt"]\n' + _remote(tmp_path / "shared")
    )
    root = project(tmp_path / "p", spec)
    (root / "src").mkdir()
    (root / "src" / "a.txt").write_text("a\n")
    (root / "src" / "secret.txt").write_text("not declared\n")
    result = runner(root, "make", "--json", "--executor", address, "--hermetic")
    assert result.code == 1
    [failed] = result.finished("failed")
    assert failed["error"] == (
        "step leak read 'src/secret.txt', which is not among its inputs: add it to inputs "
        "(hermetic steps see only what they declare)"
    )
    assert failed["worker"] in workers
    assert not (root / "out.txt").exists()
    # declared, it runs
    (root / "intents.toml").write_text(spec.replace('["src/a.txt"]', '["src/*.txt"]'))
    assert runner(root, "make", "--executor", address, "--hermetic").code == 0
    assert (root / "out.txt").read_text() == "a\nnot declared\n"


def test_an_undeclared_python_module_fails_naming_the_file_its_import_would_have_found(cluster, tmp_path: Path):
    address, _workers = cluster
    spec = (
        f"[intent.use]\nrun = \"PYTHONPATH=src {sys.executable} -c 'import acme.util' > out.txt\"\n"
        'inputs = ["src/acme/__init__.py"]\noutputs = ["out.txt"]\n' + _remote(tmp_path / "shared")
    )
    root = project(tmp_path / "p", spec)
    (root / "src/acme").mkdir(parents=True)
    (root / "src/acme/__init__.py").write_text("")
    (root / "src/acme/util.py").write_text("print('util')\n")
    result = runner(root, "make", "--json", "--executor", address, "--hermetic")
    assert result.code == 1
    [failed] = result.finished("failed")
    assert failed["error"] == (
        "step use read 'src/acme/util.py', which is not among its inputs: add it to inputs "
        "(hermetic steps see only what they declare)"
    )
    (root / "intents.toml").write_text(spec.replace('["src/acme/__init__.py"]', '["src/**/*.py"]'))
    assert runner(root, "make", "--executor", address, "--hermetic").code == 0
    assert (root / "out.txt").read_text() == "util\n"


def test_a_damaged_remote_copy_of_an_input_fails_the_step_naming_the_file(cluster, tmp_path: Path):
    address, workers = cluster
    shared = tmp_path / "shared"
    spec = '[intent.copy]\nrun = "cp a.txt b.txt"\ninputs = ["a.txt"]\noutputs = ["b.txt"]\n' + _remote(shared)
    root = project(tmp_path / "p", spec)
    (root / "a.txt").write_text("the input\n")
    assert runner(root, "make", "--executor", address, "--hermetic").code == 0
    digest = digest_bytes(b"the input\n")
    (shared / "v1" / "blobs" / digest[:2] / digest).write_bytes(b"the inpu")  # truncated

    result = runner(root, "make", "--json", "-B", "--executor", address, "--hermetic")
    assert result.code == 1
    [failed] = result.finished("failed")
    assert failed["error"] == (
        f"input 'a.txt' refused on {failed['worker']}: remote copy of {digest[:12]} is damaged "
        "(8 bytes do not match its digest)"
    )
    assert failed["worker"] in workers
    assert not (root / "b.txt").exists()  # a failed step's outputs are removed, as locally


@pytest.mark.parametrize(
    ("args", "table", "message"),
    [
        (
            ("--executor", "dask://127.0.0.1:1", "--hermetic"),
            "",
            "error: hermetic steps need a remote cache to carry their inputs and outputs: add [cache] "
            'remote = "URL" to intents.toml (s3://bucket/prefix, file:///mnt/shared/cache), or pass --remote URL\n',
        ),
        (
            ("--hermetic",),
            "",
            'error: hermetic steps run on a Dask cluster: add [executor] kind = "dask" and '
            'address = "tcp://HOST:PORT" to intents.toml, or pass --executor dask://HOST:PORT\n',
        ),
        (
            ("--executor", "dask://127.0.0.1:1", "--remote-mode", "read"),
            '[executor]\nhermetic = true\n\n[cache]\nremote = "file:///tmp/nowhere"\n\n',
            "error: hermetic steps need to read and write the remote cache file:///tmp/nowhere, whose mode here "
            "is read: use --remote-mode readwrite (and set the signing key's variable, if [cache] names one)\n",
        ),
    ],
)
def test_hermetic_without_what_it_needs_is_a_usage_error(tmp_path: Path, args, table: str, message: str):
    root = project(tmp_path / "p", table + '[intent.a]\nrun = "touch a.txt"\noutputs = ["a.txt"]\n')
    result = runner(root, "make", *args)
    assert (result.code, result.err) == (2, message)
    assert not (root / "a.txt").exists() and not (root / ".runner" / "runs").exists()


def test_a_dependency_output_reaches_the_worker_undeclared_as_an_input(cluster, tmp_path: Path):
    address, _workers = cluster
    spec = (
        '[intent.first]\nrun = "mkdir -p out && echo one > out/one.txt"\noutputs = ["out/one.txt"]\n\n'
        '[intent.all]\ndeps = ["first"]\n\n'
        '[intent.second]\nrun = "cat ../out/one.txt > two.txt"\ncwd = "sub"\ndeps = ["all"]\n'
        'outputs = ["sub/two.txt"]\n' + _remote(tmp_path / "shared")
    )
    root = project(tmp_path / "p", spec)
    (root / "sub").mkdir()
    result = runner(root, "make", "--json", "--executor", address, "--hermetic", "second")
    assert result.code == 0, result.err
    assert (root / "sub" / "two.txt").read_text() == "one\n"


def test_a_hermetic_build_through_moto_s3(moto, tmp_path: Path, monkeypatch):
    """The remote is moto's S3 server: the workers reach it with the standard AWS variables, as the runner does."""
    from distributed import LocalCluster

    bucket = moto.bucket()
    for name, value in moto.env.items():  # the cluster's worker processes and the runner inherit them
        monkeypatch.setenv(name, value)
    spec = (
        f'[cache]\nremote = "s3://{bucket}/team"\n\n'
        '[intent.up]\nrun = "tr a-z A-Z < a.txt > up.txt"\ninputs = ["a.txt"]\noutputs = ["up.txt"]\n\n'
        '[intent.twice]\nrun = "cat up.txt up.txt > twice.txt"\ndeps = ["up"]\noutputs = ["twice.txt"]\n'
    )
    root = project(tmp_path / "p", spec)
    (root / "a.txt").write_text("shared\n")
    with LocalCluster(
        processes=True, n_workers=1, threads_per_worker=2, host="127.0.0.1", dashboard_address=":0"
    ) as local:
        result = runner(root, "make", "--json", "--executor", local.scheduler_address, "--hermetic")
    assert result.code == 0, result.err
    assert (root / "twice.txt").read_text() == "SHARED\nSHARED\n"
    digest = digest_bytes(b"SHARED\nSHARED\n")
    assert moto.objects(bucket)[f"team/v1/blobs/{digest[:2]}/{digest}"] == b"SHARED\nSHARED\n"


def test_executor_local_runs_a_hermetic_project_here_in_place(tmp_path: Path):
    table = '[executor]\nkind = "dask"\naddress = "tcp://127.0.0.1:1"\nhermetic = true\n\n'
    root = project(tmp_path / "p", table + '[intent.a]\nrun = "touch a.txt"\noutputs = ["a.txt"]\n')
    result = runner(root, "make", "--executor", "local")
    assert result.code == 0, result.err
    assert (root / "a.txt").exists()
