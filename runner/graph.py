"""The DAG of intents: cycles, the default target, a target's closure, topological order and renderings."""

from __future__ import annotations

import heapq
import json
from collections.abc import Mapping, Sequence
from itertools import compress
from posixpath import normpath

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
    found = _resolve_one(spec, target)
    if isinstance(found, list):  # a sub-project named whole (PATH:): its default, or one intent to name
        if len(found) == 1:
            return found[0]
        raise UsageError(f"error: '{target}' is a sub-project with no [project] default; name one of its intents")
    return found


def resolve_targets(spec: Spec, names: Sequence[str] | None) -> list[str] | None:
    """The targets named on a command line (intents or declared output paths, as `make build/report.md`; PATH: a
    sub-project's default, else all of its intents), without repeats; none named: [project] default, else None
    (everything)."""
    if isinstance(names, str):  # one name is a str, which is a Sequence[str] of its letters too
        names = [names]
    if not names:
        return None if spec.project.default is None else [spec.project.default]
    found: list[str] = []
    for name in names:
        one = _resolve_one(spec, name)
        found += one if isinstance(one, list) else [one]
    return list(dict.fromkeys(found))


def _resolve_one(spec: Spec, name: str) -> str | list[str]:
    if name in spec.intents:
        return name
    path = name[2:] if name.startswith("./") else name
    if spec.subprojects and ":" in name:
        return _qualified_target(spec, name)
    if spec.subprojects and ":" not in name:
        claimed = [n for n in spec.intents if n.endswith(f":{name}")]
        if len(claimed) == 1:
            return claimed[0]
        if claimed:
            raise UsageError(
                f"error: '{name}' is an intent of {len(claimed)} sub-projects ({', '.join(sorted(claimed))}) and "
                "not of the root; name the one meant (PATH:NAME)"
            )
    return _producer(spec, name, path)


def _qualified_target(spec, name: str) -> str | list[str]:
    """What a target with a ':' names: `:NAME` the root's intent, `PATH:` the sub-project's default (else all of its
    intents), `PATH:NAME` its intent, else its declared output PATH/NAME."""
    from .names import split
    from .suggest import did_you_mean

    folder, own = split(name)
    folders = {f: default for f, default in spec.subprojects}
    if not folder:
        if own in spec.intents and ":" not in own:
            return own
        roots = [n for n in spec.intents if ":" not in n]
        raise UsageError(
            f"error: unknown target '{name}'{did_you_mean(own, roots)}: the root's intents.toml has no intent "
            f"'{own}'; `runner list` lists the targets"
        )
    if folder not in folders:
        raise UsageError(
            f"error: unknown target '{name}': '{folder}' is no sub-project{did_you_mean(folder, folders)} "
            f"(those [project] include names: {', '.join(sorted(folders)) or 'none'})"
        )
    if not own:
        default = folders[folder]
        return [default] if default else [n for n in spec.intents if n.startswith(f"{folder}:")]
    return _producer(spec, name, normpath(f"{folder}/{own}"))


def _producer(spec: Spec, name: str, path: str) -> str:
    """The one intent declaring the output `path` (`name` as typed), or the error for none or several."""
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
    clusters = _clusters(spec, names)  # a sub-project's intents drawn in a box of their own
    if fmt == "dot":
        lines = ["digraph runner {", "  rankdir=LR;"]
        for i, (folder, members) in enumerate(clusters):
            indent = "    " if folder else "  "
            if folder:
                lines += [f'  subgraph "cluster_{i}" {{', f"    label={json.dumps(folder + '/')};"]
            for name in members:
                lines.append(f'{indent}"{name}" [shape={_dot_shape(spec.intents[name].kind)}];')
            if folder:
                lines.append("  }")
        lines += [f'  "{a}" -> "{b}";' for a, b in edges]
        return "\n".join(lines + ["}"])
    if fmt == "mermaid":
        ids = {name: f"n{i}" for i, name in enumerate(names)}
        lines = ["graph LR"]
        for i, (folder, members) in enumerate(clusters):
            indent = "    " if folder else "  "
            if folder:
                lines.append(f'  subgraph c{i}["{folder}/"]')
            for name in members:
                kind = spec.intents[name].kind
                left, right = {"agent": ("([", "])"), "aggregate": ("{{", "}}")}.get(kind, ("[", "]"))
                lines.append(f'{indent}{ids[name]}{left}"{name}"{right}')
            if folder:
                lines.append("  end")
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


def _clusters(spec: Spec, names: list[str]) -> list[tuple[str, list[str]]]:
    """(sub-project folder, its intents among `names`), the root's first (folder ""): one group of every name
    where there are no sub-projects, so a project without `include` renders as it always has."""
    if not spec.subprojects:
        return [("", names)]
    groups: dict[str, list[str]] = {"": []}
    for name in names:
        groups.setdefault(name.rpartition(":")[0], []).append(name)
    return list(groups.items())


def _dot_shape(kind: str) -> str:
    return {"agent": "ellipse", "aggregate": "diamond"}.get(kind, "box")
