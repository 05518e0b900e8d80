"""The compiled spec's table format: the Compiled object, each step's record (its intent, dependencies, dependants,
declared files, static digests) marshal bytes in one packed table decoded on first use, and the graph as arrays."""

from __future__ import annotations

import marshal
from array import array
from collections.abc import Iterable, Iterator, Mapping
from itertools import accumulate, chain

from .index_file import PackedTable
from .spec import Intent, Spec


def _step_record(blob: bytes) -> tuple:
    record = marshal.loads(blob)
    return (Intent._make(record[0]),) + record[1:]


class _Column(Mapping):
    """One field of every step's compiled record, by step name (the records are decoded on first use)."""

    def __init__(self, records: PackedTable, index: int):
        self._records = records
        self._index = index

    def __getitem__(self, name: str):
        return self._records[name][self._index]

    def __contains__(self, name) -> bool:
        return name in self._records

    def __iter__(self):
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)


# the per-step tables, in the order of a step's record after its intent
_COLUMNS = ("deps", "dependants", "declared", "static", "static_replay", "parts")


class Compiled:
    """The spec with what every run needs worked out once: the order, and per step its dependencies and
    dependants, declared files and static digests."""

    def __init__(
        self,
        spec: Spec,
        order: list[str],
        sources: list[str],
        *,
        deps: Mapping[str, tuple[str, ...]],
        dependants: Mapping[str, tuple[str, ...]],
        declared: Mapping[str, tuple[str, ...]],
        static: Mapping[str, str],
        static_replay: Mapping[str, str],
        parts: Mapping[str, dict[str, str]],
        declared_by: Mapping[str, tuple[str, ...]],
        agents: frozenset[str],
        unprovable: frozenset[str],
        token: str,
        produced: tuple[str, ...] = (),
        env_names: tuple[str, ...] = (),
        gates: Mapping[str, tuple] | None = None,
        aggregates: frozenset[str] = frozenset(),
        graph: tuple[bytes, bytes, bytes, bytes],
        fingerprints: bytes = b"",
        previous: tuple[str, bytes] | None = None,
        runtimes: Mapping[str, tuple] | None = None,
    ):
        self.spec = spec
        self.order = order  # every intent, topologically sorted (deterministic)
        self.sources = sources  # files and folders the spec depends on
        self.deps = deps
        self.dependants = dependants  # intent -> the intents that need it
        self.declared = declared  # intent -> its inputs, then outputs
        self.static = static  # intent -> digest of everything but its files and dependencies
        self.static_replay = static_replay  # the same without the worker part
        self.parts = parts  # intent -> digest per key ingredient
        self.declared_by = declared_by  # literal path -> the intents naming it
        self.agents = agents  # agent steps
        # targets with only deps: no step of their own, so a run neither reports nor counts them
        self.aggregates = aggregates
        # steps no stat snapshot can prove up to date: they run every time, or a glob could match a new file
        self.unprovable = unprovable
        # every intent's declared outputs: an input glob reads what they name even where git ignores it
        self.produced = produced
        # the variables of runner's environment that `env` values read ($NAME): their values are part of the
        # keys of the steps that read them, so the target's proof holds them (as a digest) with the files
        self.env_names = env_names
        # step -> the candidate patterns (shadow, canary: compiled._gate_entry) its adapter commands are read with:
        # a run records what they find beside the active patterns; an agent step in a canary's slice keys on it
        self.gates = gates or {}
        # a step's static "toolchain" part -> its runtime commands, cwd and env PATH (toolchain.entry_of): what the
        # plan runs once a run (their output is in the key) and what the proof's witness is made from
        self.runtimes = runtimes or {}
        self.token = token  # names this compilation: a no-op snapshot made from it may reuse its order and paths
        # FINGERPRINT bytes a step, in `order`: a digest of what its key takes from the spec (static, deps)
        self.fingerprints = fingerprints
        # (token, fingerprints in `order`, zeros for a step it had not) of the compilation this one replaced
        # (load_compiled): a proof made from that one stands for the steps the edit left alone (edited_since)
        self.previous = previous
        # array("I") bytes, step by step in `order`: the positions in `order` of its dependencies, where each
        # step's end; the positions in `declared_by` of its declared paths, where each step's end (_graph). A walk
        # of the whole graph reads these, not every step's record (decoding them all took 0.7 s at 100,000)
        self.graph = graph
        self._arrays: list[array] | None = None
        # the stats of `sources` the spec was compiled from, and the digests of those too fresh for their
        # stats to vouch for the bytes read: what the target's proof records for them
        self.spec_stats: list = []
        self.spec_kept: dict[str, str | None] = {}
        # spec file -> digest of the bytes its loader read (the files it read itself: not folders, prompts, regexes);
        # the fast no-op's proof keeps them, so that a touch of intents.toml is proved by one hash
        self.spec_read: dict[str, str] = {}

    def packed(self) -> tuple[tuple, Iterator[bytes]]:
        """(a picklable header, the pieces to write after it, in order): what `unpacked` reads back."""
        intents = self.spec.intents
        columns = [getattr(self, name) for name in _COLUMNS]
        keys = list(self.order)
        records_pieces: Iterable
        paths_pieces: Iterable
        table = _records_table(intents, columns)
        if table is not None:  # read from a file (or spliced, _recompiled): its bytes are written as they are
            blob, records_ends = table.raw()
            records_pieces = [blob]
        else:

            def records():  # each step's record made as it is encoded: every step's at once was ~40 MB at 100,000
                return ((tuple(intents[name]), *(column[name] for column in columns)) for name in keys)

            records_pieces, records_ends = PackedTable.pack(records)
        paths = list(self.declared_by)
        if isinstance(self.declared_by, PackedTable):
            blob, paths_ends = self.declared_by.raw()
            paths_pieces = [blob]
        else:
            paths_pieces, paths_ends = PackedTable.pack(lambda: map(self.declared_by.__getitem__, paths))
        header = (
            self.spec._replace(intents={}),
            self.sources,
            self.agents,
            self.unprovable,
            self.token,
            self.produced,
            self.env_names,
            self.gates,
            self.runtimes,
            self.aggregates,
            self.fingerprints,
            self.previous,
            self.graph,
            keys,
            records_ends,
            array("Q", records_ends)[-1] if records_ends else 0,
            paths,
            paths_ends,
            PackedTable.sorted_positions(keys),
            PackedTable.sorted_positions(paths),
        )
        return header, chain(records_pieces, paths_pieces)

    @classmethod
    def unpacked(cls, header: tuple, blobs, release=None) -> Compiled:
        """The compiled spec over `blobs` (a memoryview of the file, mapped: only the records a run asks
        for are read from it); `release()` hands the mapped pages read so far back (PackedTable)."""
        (
            spec,
            sources,
            agents,
            unprovable,
            token,
            produced,
            env_names,
            gates,
            runtimes,
            aggregates,
            fingerprints,
            previous,
            graph,
            order,
            records_ends,
            split,
            paths,
            paths_ends,
            order_by_name,
            paths_by_name,
        ) = header
        if len(blobs) != split + (array("Q", paths_ends)[-1] if paths_ends else 0):
            raise ValueError("the compiled spec's records are cut short")  # load_compiled makes it again
        steps = PackedTable(order, blobs[:split], records_ends, _step_record, order_by_name, release=release)
        columns = {name: _Column(steps, index) for index, name in enumerate(_COLUMNS, start=1)}
        return cls(
            spec._replace(intents=_Column(steps, 0)),
            order,
            sources,
            agents=agents,
            unprovable=unprovable,
            token=token,
            produced=produced,
            env_names=env_names,
            gates=gates,
            runtimes=runtimes,
            aggregates=aggregates,
            fingerprints=fingerprints,
            previous=previous,
            graph=graph,
            declared_by=PackedTable(paths, blobs[split:], paths_ends, by_key=paths_by_name, release=release),
            **columns,
        )

    def arrays(self) -> list[array]:
        """`graph` as four arrays (made once)."""
        if self._arrays is None:
            self._arrays = [array("I", part) for part in self.graph]
        return self._arrays

    def declared_paths(self, order: list[str]) -> list[str]:
        """The paths the steps of `order` declare (inputs, then outputs), each once, in that order."""
        _deps, _dep_ends, at, ends = self.arrays()
        if order == self.order:  # the whole graph: its paths' positions are `at` itself
            positions = at
        else:
            where = {name: i for i, name in enumerate(self.order)}
            positions = array("I")
            for i in map(where.__getitem__, order):
                positions.extend(at[ends[i - 1] if i else 0 : ends[i]])
        paths = list(self.declared_by)
        return [paths[j] for j in dict.fromkeys(positions)]


def _records_table(intents: Mapping, columns: list) -> PackedTable | None:
    """The one table of packed records that the intents and every column read, if they do (Compiled.unpacked)."""
    if not isinstance(intents, _Column):
        return None
    table = intents._records
    if all(isinstance(column, _Column) and column._records is table for column in columns):
        return table
    return None


def _graph(order: list[str], deps: Mapping, declared: Mapping, paths: Mapping[str, int]) -> tuple:
    """Compiled.graph, from the dicts compile_spec made (`paths`: path -> its position in declared_by)."""
    position = {name: i for i, name in enumerate(order)}
    return (
        array("I", [position[d] for name in order for d in deps[name]]).tobytes(),
        array("I", accumulate(len(deps[name]) for name in order)).tobytes(),
        array("I", [paths[p] for name in order for p in declared[name]]).tobytes(),
        array("I", accumulate(len(declared[name]) for name in order)).tobytes(),
    )
