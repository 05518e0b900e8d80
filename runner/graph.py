"""The DAG of intents: cycles, the default target, a target's closure, topological order and renderings."""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import compress

from .errors import Problem, SpecError, UsageError
from .globs import GLOB_CHARS, matches
from .spec import Spec


def _nx():
    import networkx  # the only importer of networkx; a warm no-op never needs it

    return networkx


def build_graph(spec: Spec):
    """A networkx DiGraph with edges from a dependency to its dependant; SpecError on a cycle."""
    nx = _nx()
    g = nx.DiGraph()
    for name, intent in spec.intents.items():
        g.add_node(name)
        for dep in intent.deps:
            g.add_edge(dep, name)
    cycles = []
    for component in nx.strongly_connected_components(g):
        if len(component) > 1:
            cycle = nx.find_cycle(g.subgraph(component))
            names = [edge[0] for edge in cycle]
            start = names.index(min(names))  # stable report: begin at the smallest name
            names = names[start:] + names[:start]
            cycles.append(names)
    if cycles:
        from .load import SPEC_FILE  # errors only: a warm run never loads the loader

        problems = []
        for names in sorted(cycles):
            # edges run dep -> dependant; a user reads "a depends on b", so print the reverse
            shown = list(reversed(names))
            start = shown.index(min(shown))
            shown = shown[start:] + shown[:start]
            text = " -> ".join(shown + [shown[0]])
            problems.append(
                Problem(
                    file=SPEC_FILE,
                    path=f"intent.{shown[0]}.deps",
                    message=f"dependency cycle: {text} (each depends on the next)",
                )
            )
        raise SpecError(problems=problems)
    return g


def topological_order(g) -> list[str]:
    """Deterministic: lexicographic among ready nodes, so output and snapshots are stable."""
    return list(_nx().lexicographical_topological_sort(g))


def spec_order(spec: Spec) -> list[str]:
    """Every intent in topological order, lexicographic among ready ones (networkx's
    lexicographical_topological_sort, in a few lines of stdlib): a cold `runner make` of a valid spec then
    never imports networkx (0.1-0.2 s here), which only finds and words a cycle."""
    import heapq

    dependants: dict[str, list[str]] = {name: [] for name in spec.intents}
    waiting: dict[str, int] = {}
    for name, intent in spec.intents.items():
        deps = set(intent.deps)
        waiting[name] = len(deps)
        for dep in deps:
            if dep not in dependants:
                return topological_order(build_graph(spec))
            dependants[dep].append(name)
    ready = [name for name, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        name = heapq.heappop(ready)
        order.append(name)
        for dependant in dependants[name]:
            waiting[dependant] -= 1
            if waiting[dependant] == 0:
                heapq.heappush(ready, dependant)
    if len(order) != len(waiting):  # a cycle: networkx finds it and build_graph reports it
        return topological_order(build_graph(spec))
    return order


def resolve_target(spec: Spec, target: str | None) -> str | None:
    """The target a command works on: the intent named (or the one declaring the output path named), else
    [project] default, else None (everything)."""
    if target is None:
        return spec.project.default
    return _resolve_one(spec, target)


def resolve_targets(spec: Spec, names: Sequence[str] | None) -> list[str] | None:
    """The targets named on a command line (intents or declared output paths, as `make build/report.md`),
    without repeats; none named: [project] default, else None (everything)."""
    if isinstance(names, str):  # one name is a str, which is a Sequence[str] of its letters too
        names = [names]
    if not names:
        return None if spec.project.default is None else [spec.project.default]
    return list(dict.fromkeys(_resolve_one(spec, name) for name in names))


def _resolve_one(spec: Spec, name: str) -> str:
    if name in spec.intents:
        return name
    path = name[2:] if name.startswith("./") else name
    producers = [n for n, intent in spec.intents.items() if any(matches(path, out) for out in intent.outputs)]
    if len(producers) == 1:
        return producers[0]
    if producers:
        raise UsageError(
            f"error: '{name}' is an output of several intents ({', '.join(producers)}); name the one to build"
        )
    from .load import did_you_mean

    known = list(spec.intents)
    if "/" in name or "." in name:  # it looks like a path: suggest the outputs too
        known += [out for intent in spec.intents.values() for out in intent.outputs if GLOB_CHARS.isdisjoint(out)]
    raise UsageError(
        f"error: unknown target '{name}'{did_you_mean(name, known)}: no intent has that name and none declares "
        "it among its outputs; `runner list` lists the targets"
    )


def selected_order(compiled, target: str | Sequence[str] | None) -> list[str]:
    """The targets (one, several, or None: every step) and everything they depend on, in the compiled spec's
    order (topological). Walked backwards from the targets over the positions of each step's dependencies
    (Compiled.graph), so each step is looked at once and no step's record is decoded (that took 0.7 s at
    100,000 steps)."""
    order = compiled.order
    if target is None:
        return list(order)
    wanted = [target] if isinstance(target, str) else target
    deps, ends, _declared, _declared_ends = compiled.arrays()
    keep = bytearray(len(order))
    if len(wanted) < 8:
        for name in wanted:
            keep[order.index(name)] = 1
    else:
        where = {name: i for i, name in enumerate(order)}
        for name in wanted:
            keep[where[name]] = 1
    for i in range(len(order) - 1, -1, -1):
        if keep[i]:
            for j in deps[ends[i - 1] if i else 0 : ends[i]]:
                keep[j] = 1
    return list(compress(order, keep))


# ---- renderings ------------------------------------------------------------------------------


def edges_of(spec: Spec, names: list[str]) -> list[list[str]]:
    keep = set(names)
    return sorted([dep, name] for name in names for dep in spec.intents[name].deps if dep in keep)


def render(spec: Spec, names: list[str], fmt: str, target: str | list[str] | None) -> str:
    edges = edges_of(spec, names)
    if fmt == "json":
        return json.dumps({"target": target, "nodes": names, "edges": edges}, indent=2)
    if fmt == "dot":
        lines = ["digraph runner {", "  rankdir=LR;"]
        for name in names:
            lines.append(f'  "{name}" [shape={_dot_shape(spec.intents[name].kind)}];')
        lines += [f'  "{a}" -> "{b}";' for a, b in edges]
        return "\n".join(lines + ["}"])
    if fmt == "mermaid":
        ids = {name: f"n{i}" for i, name in enumerate(names)}
        lines = ["graph LR"]
        for name in names:
            left, right = {"agent": ("([", "])"), "aggregate": ("{{", "}}")}.get(spec.intents[name].kind, ("[", "]"))
            lines.append(f'  {ids[name]}{left}"{name}"{right}')
        lines += [f"  {ids[a]} --> {ids[b]}" for a, b in edges]
        return "\n".join(lines)
    # text: one line per intent in topological order with its kind and dependencies
    width = max((len(n) for n in names), default=0)
    out = []
    for name in names:
        intent = spec.intents[name]
        deps = ", ".join(intent.deps)
        out.append((f"{name:<{width}}  {intent.kind:<9}" + (f"  <- {deps}" if deps else "")).rstrip())
    return "\n".join(out)


def _dot_shape(kind: str) -> str:
    return {"agent": "ellipse", "aggregate": "diamond"}.get(kind, "box")
