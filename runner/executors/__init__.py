"""Where steps run: the executor a run uses, from `--executor` or the spec's `[executor]` table."""

from __future__ import annotations

import re

from ..errors import UsageError
from ..spec import STEP_AGENT, ExecutorSettings, Spec

_DASK = re.compile(r"^(?:dask|tcp)://([^\s/:]+):([0-9]{1,5})$")


def parse_flag(value: str) -> ExecutorSettings:
    """`--executor local` or `--executor dask://HOST:PORT` (tcp://HOST:PORT, as Dask writes it, too)."""
    if value == "local":
        return ExecutorSettings()
    found = _DASK.match(value)
    if found is None or not 0 < int(found.group(2)) < 65536:
        raise UsageError(f"error: --executor: '{value}' is neither local nor dask://HOST:PORT (a port 1-65535)")
    return ExecutorSettings(kind="dask", address=f"tcp://{found.group(1)}:{found.group(2)}")


def build(spec: Spec, flag: str | None, hermetic: bool = False, mirror=None):
    """The executor for this run: `flag` (--executor) over the spec's [executor]; local unless either says dask.
    A Dask one is connected (a few seconds at most) or a UsageError says why not. `hermetic` (--hermetic, or
    [executor] hermetic): steps see only what they declare, carried by the run's remote cache `mirror`
    (runner/stores/mirror.py), which must be there to read and write."""
    settings = parse_flag(flag) if flag else spec.executor
    # [executor] hermetic goes with the cluster: `--executor local` runs here, in place, all the same
    hermetic = hermetic or (spec.executor.hermetic and (settings.kind == "dask" or not flag))
    if hermetic:
        _check_hermetic(spec, settings, mirror)
        agents = sorted(name for name, intent in spec.intents.items() if intent.kind == STEP_AGENT)
        if agents:  # an attempt copies the whole project and verifies there: not a step's declared manifest
            raise UsageError(
                f"error: agent steps ({', '.join(agents)}) need the project at the same path on the Dask workers, "
                "which hermetic workers do not have: run without --hermetic (a shared filesystem) or with "
                "--executor local"
            )
    if settings.kind != "dask":
        from .local import LocalExecutor

        return LocalExecutor()
    from .dask import DaskExecutor

    assert settings.address is not None  # the schema asks for it, parse_flag makes it
    where = "--executor" if flag else f"{spec.file}: executor.address"
    carrier = None
    if hermetic:
        from .hermetic import Hermetic

        carrier = Hermetic(mirror.store)
    return DaskExecutor.connect(settings.address, where, carrier)


def _check_hermetic(spec: Spec, settings: ExecutorSettings, mirror) -> None:
    if settings.kind != "dask":
        raise UsageError(
            'error: hermetic steps run on a Dask cluster: add [executor] kind = "dask" and '
            f'address = "tcp://HOST:PORT" to {spec.file}, or pass --executor dask://HOST:PORT'
        )
    if mirror is None:
        raise UsageError(
            "error: hermetic steps need a remote cache to carry their inputs and outputs: add [cache] "
            f'remote = "URL" to {spec.file} (s3://bucket/prefix, file:///mnt/shared/cache), or pass --remote URL'
        )
    if not (mirror.reads and mirror.writes):
        raise UsageError(
            f"error: hermetic steps need to read and write the remote cache {mirror.url}, whose mode here is "
            f"{mirror.mode}: use --remote-mode readwrite (and set the signing key's variable, if [cache] names one)"
        )


def stop_abandoned(address: str, token: str) -> str | None:
    """workspace.recover_inflight's `stop_cluster`: kill what a killed run left on the Dask cluster at `address`
    (dask.stop_run); `distributed` is imported only when a journal names a cluster."""
    from .dask import stop_run

    return stop_run(address, token)
