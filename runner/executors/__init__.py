"""Where shell steps run: the executor a run uses, from `--executor` or the spec's `[executor]` table."""

from __future__ import annotations

import re

from ..errors import UsageError
from ..spec import ExecutorSettings, Spec

_DASK = re.compile(r"^(?:dask|tcp)://([^\s/:]+):([0-9]{1,5})$")


def parse_flag(value: str) -> ExecutorSettings:
    """`--executor local` or `--executor dask://HOST:PORT` (tcp://HOST:PORT, as Dask writes it, too)."""
    if value == "local":
        return ExecutorSettings()
    found = _DASK.match(value)
    if found is None or not 0 < int(found.group(2)) < 65536:
        raise UsageError(f"error: --executor: '{value}' is neither local nor dask://HOST:PORT (a port 1-65535)")
    return ExecutorSettings(kind="dask", address=f"tcp://{found.group(1)}:{found.group(2)}")


def build(spec: Spec, flag: str | None):
    """The executor for this run: `flag` (--executor) over the spec's [executor]; local unless either says dask.
    A Dask one is connected (a few seconds at most) or a UsageError says why not."""
    settings = parse_flag(flag) if flag else spec.executor
    if settings.kind != "dask":
        from .local import LocalExecutor

        return LocalExecutor()
    from .dask import DaskExecutor

    assert settings.address is not None  # the schema asks for it, parse_flag makes it
    where = "--executor" if flag else f"{spec.file}: executor.address"
    return DaskExecutor.connect(settings.address, where)
