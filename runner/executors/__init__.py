"""Where steps run: the executor a run uses, from `--executor` or the spec's `[executor]` table."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable

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


def build(
    spec: Spec,
    flag: str | None,
    hermetic: bool = False,
    mirror=None,
    selected: Callable[[], Iterable[str]] | None = None,
    worker: str | None = None,
):
    """The executor for this run: `flag` (--executor) over the spec's [executor]; local unless either says dask.
    A Dask one is connected (a few seconds at most) or a UsageError says why not. `hermetic` (--hermetic, or
    [executor] hermetic): steps see only what they declare, carried by the run's remote cache `mirror`
    (runner/stores/mirror.py), which must be there to read and write. `selected()`: the steps the run's
    targets select (asked only when hermetic; None: every step); `worker`: --worker, over [worker] kind."""
    settings = parse_flag(flag) if flag else spec.executor
    # [executor] hermetic goes with the cluster: `--executor local` runs here, in place, all the same
    hermetic = hermetic or (spec.executor.hermetic and (settings.kind == "dask" or not flag))
    if hermetic:
        _check_hermetic(spec, settings, mirror)
        _check_hermetic_agents(spec, spec.intents if selected is None else selected(), worker)
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


def _check_hermetic_agents(spec: Spec, names: Iterable[str], worker: str | None) -> None:
    """What an agent attempt cannot do on a worker without the checkout, among the steps this run selects: the
    replay worker reads its recordings from the project's replays/ folder, which no manifest carries (they are
    no step's input). Every other worker runs there on the step's manifest (hermetic.run_hermetic_attempt)."""
    kind = worker or spec.worker.kind
    if kind != "replay" or os.path.isabs(spec.worker.replays_dir):  # an absolute folder: the workers' own mount
        return
    agents = sorted(name for name in names if spec.intents[name].kind == STEP_AGENT)
    if agents:
        raise UsageError(
            f"error: agent steps ({', '.join(agents)}) use the replay worker, which reads its recordings from the "
            f"project's {spec.worker.replays_dir}/ folder, which hermetic workers do not have: give [worker] "
            "replays_dir as an absolute path the workers mount, run without --hermetic (a shared filesystem) or "
            "with --executor local"
        )


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
