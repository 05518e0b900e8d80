"""The DAG of intents: cycles, the default target, a target's closure, topological order and renderings."""

from __future__ import annotations

import heapq
import json
from collections.abc import Mapping, Sequence
from itertools import compress

from .errors import UsageError
from .globs import GLOB_CHARS, matches
from .spec import Spec


def _nx():
    import networkx  # the only importer of networkx; a valid spec's run never needs it

    return networkx


def cycles(deps: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """The dependency cycles among `deps` (an intent -> the intents it depends on, in its declared order): one
    for each strongly connected component, as [a, b, c] for a -> b -> c -> a where each depends on the next,
    starting at the component's smallest name and taking the shortest way back to it (the first found, in
    declaration order), so the report is stable. A dependency on itself or on no intent is left to its own
    message. A stdlib pass first: networkx, 0.1-0.2 s to import, finds and words only a cycle that is there."""
    if _acyclic(deps):
        return []
    nx = _nx()
    g = nx.DiGraph()
    g.add_nodes_from(deps)
    g.add_edges_from((name, dep) for name, wanted in deps.items() for dep in wanted if dep != name and dep in deps)
    found = []
    for component in nx.strongly_connected_components(g):
        if len(component) < 2:
            continue
        start = min(component)
        paths = nx.single_source_shortest_path(g.subgraph(component), start)  # breadth first, in found order
        last = next(node for node in paths if g.has_edge(node, start))
        found.append(paths[last])
    return sorted(found)


def cycle_words(cycle: list[str]) -> str:
    """What a user reads of a cycle: "dependency cycle: a -> b -> a (each depends on the next)"."""
    return f"dependency cycle: {' -> '.join(cycle + cycle[:1])} (each depends on the next)"


def _acyclic(deps: Mapping[str, Sequence[str]]) -> bool:
    """No intent depends on itself through others (a depth-first walk: an intent reached again while its own
    dependencies are being walked closes a cycle); dependencies on itself or on no intent are passed over."""
    walking, done = 1, 2
    state: dict[str, int] = {}
    for root in deps:
        if root in state:
            continue
        state[root] = walking
        stack = [(root, iter(deps[root]))]
        while stack:
            node, rest = stack[-1]
            for dep in rest:
                seen = state.get(dep)
                if seen is None:
                    if dep in deps:
                        state[dep] = walking
                        stack.append((dep, iter(deps[dep])))
                        break
                elif seen == walking and dep != node:
                    return False
            else:
                state[node] = done
                stack.pop()
    return True


def _ordered(deps: Mapping[str, Sequence[str]]) -> list[str]:
    """Every intent whose dependencies can all come before it (Kahn's), lexicographic among ready ones as
    networkx's lexicographical_topological_sort orders; dependencies on itself or on no intent are passed over.
    Shorter than `deps` exactly when there is a cycle."""
    dependants: dict[str, list[str]] = {name: [] for name in deps}
    waiting = dict.fromkeys(deps, 0)
    for name, wanted in deps.items():
        for dep in set(wanted) if len(wanted) > 1 else wanted:
            if dep != name and dep in dependants:
                dependants[dep].append(name)
                waiting[name] += 1
    ready = [name for name, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        name = heapq.heappop(ready)
        order.append(name)
        for dependant in dependants[name]:
            waiting[dependant] -= 1
            if not waiting[dependant]:
                heapq.heappush(ready, dependant)
    return order


def spec_order(spec: Spec) -> list[str]:
    """Every intent of a loaded spec in topological order, lexicographic among ready ones. The stdlib's, not
    networkx's: a cold `runner make` of a valid spec never imports networkx. The loader refused every cycle
    and every unknown dependency (load._cross_check), so every intent is ordered."""
    order = _ordered({name: intent.deps for name, intent in spec.intents.items()})
    assert len(order) == len(spec.intents), "spec_order: a spec the loader would have refused (a cycle)"
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
    from .suggest import did_you_mean

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
