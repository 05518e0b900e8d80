"""`runner status` / `make -n` / `explain`: the reasons a user reads, and snapshots of the three outputs."""

from __future__ import annotations

import json
import re


def status(project, *args) -> dict:
    result = project.run("status", "--json", *args)
    assert result.code == 0, result.err
    return {s["intent"]: (s["action"], s["reasons"]) for s in json.loads(result.out)["steps"]}


def test_status_json_contract_in_topological_order(chain):
    result = chain.run("status", "--json")
    data = json.loads(result.out)
    assert data["target"] == "all"
    names = [s["intent"] for s in data["steps"]]
    assert names.index("a") < names.index("b") < names.index("all")
    assert all(set(s) == {"intent", "action", "reasons"} for s in data["steps"])


def test_reasons_for_each_kind_of_change(chain):
    assert status(chain)["a"] == ("run", ["no cache entry"])
    assert status(chain)["b"] == ("run", ["dependency a will run"])
    chain.make()
    assert status(chain)["a"] == ("skip", ["up to date"])
    chain.write("src/x.txt", "new\n")
    assert status(chain)["a"] == ("run", ["input src/x.txt changed"])
    chain.make()
    assert status(chain, "-B")["c"] == ("run", ["forced"])
    chain.spec(chain.read("intents.toml").replace("wc -c <", "wc -c  <"))
    assert status(chain)["c"] == ("run", ["definition changed"])
    chain.make()
    (chain.root / "out/c.txt").unlink()
    assert status(chain)["c"] == ("skip", ["output out/c.txt missing: restore from cache"])


def test_dependency_produced_new_outputs(chain):
    chain.make()
    chain.write("src/x.txt", "other\n")
    chain.make("a")  # only a: b is now behind a's new outputs
    assert status(chain)["b"] == ("run", ["input out/a.txt changed", "dependency a produced new outputs"])


def test_glob_inputs_added_and_removed(project):
    project.spec("""
        [intent.count]
        run = "cat src/*.txt | wc -l > n.txt"
        inputs = ["src/*.txt"]
        outputs = ["n.txt"]
    """)
    project.write("src/one.txt", "1\n")
    project.make()
    project.write("src/two.txt", "2\n")
    assert status(project)["count"] == ("run", ["input src/two.txt added"])
    project.make()
    (project.root / "src/one.txt").unlink()
    assert status(project)["count"] == ("run", ["input src/one.txt removed"])


def test_make_dry_run_runs_nothing(chain):
    result = chain.run("make", "-n")
    assert result.code == 0
    assert "run   a    no cache entry" in result.out
    assert not chain.exists("out/a.txt")
    assert not list((chain.root / ".runner").glob("runs/*"))


def _stable(text: str) -> str:
    return re.sub(
        r"\d{8}-\d{6}-[0-9a-f]{6}", "<run-id>", re.sub(r"\(key ([0-9a-f]{12}), [0-9.]+s\)", r"(key \1, <time>)", text)
    )


def test_status_snapshot(chain, snapshot):
    chain.make("a")
    chain.write("src/y.txt", "changed\n")
    assert chain.run("status").out == snapshot


def test_explain_snapshot(chain, snapshot):
    chain.age_all()
    chain.make()
    chain.write("src/x.txt", "edited\n")
    result = chain.run("explain", "b")
    assert result.code == 0
    assert _stable(result.out) == snapshot
    data = json.loads(chain.run("explain", "b", "--json").out)
    assert data["action"] == "run" and data["reasons"] == ["dependency a will run"]
    assert data["last_run"]["outputs"].keys() == {"out/b.txt"}


def test_explain_unknown_intent(chain):
    result = chain.run("explain", "zz")
    assert result.code == 2
    assert result.err.strip() == (
        "error: unknown target 'zz': no intent has that name and none declares it among its outputs; "
        "`runner list` lists the targets"
    )


def test_graph_snapshots(chain, snapshot):
    for fmt in ("text", "dot", "mermaid", "json"):
        result = chain.run("graph", "--format", fmt)
        assert result.code == 0
        assert result.out == snapshot(name=fmt)


def test_graph_json_contract_and_target(chain):
    data = json.loads(chain.run("graph", "b", "--json").out)
    assert data == {"target": "b", "nodes": ["a", "b"], "edges": [["a", "b"]]}


def test_the_order_without_networkx_is_networkx_lexicographic_order():
    """A valid spec is ordered with the stdlib (networkx only finds cycles): the same order, on random DAGs
    with repeated dependencies and names that sort differently from their declaration order."""
    import random
    from types import SimpleNamespace

    import networkx as nx

    from runner.graph import spec_order

    for seed in range(200):
        rng = random.Random(seed)
        names = [f"n{rng.randint(0, 999)}_{i}" for i in range(rng.randint(1, 60))]
        rng.shuffle(names)
        intents = {
            name: SimpleNamespace(deps=tuple(rng.choice(names[:i]) for _ in range(rng.randint(0, 3) if i else 0)))
            for i, name in enumerate(names)
        }
        spec = SimpleNamespace(intents=dict(rng.sample(list(intents.items()), len(intents))))
        g = nx.DiGraph()
        g.add_nodes_from(spec.intents)
        g.add_edges_from((dep, name) for name, intent in spec.intents.items() for dep in intent.deps)
        assert spec_order(spec) == list(nx.lexicographical_topological_sort(g)), f"seed {seed}"


def test_each_cycle_is_named_once_from_its_smallest_intent_the_shortest_way_back():
    """graph.cycles on random graphs: one cycle for each strongly connected component of two or more intents,
    each a real cycle (each depends on the next, the last on the first), starting at the component's smallest
    name, as short as any cycle through it; self-dependencies and unknown names are no cycle; none in a DAG."""
    import random

    import networkx as nx

    from runner.graph import cycles

    for seed in range(300):
        rng = random.Random(seed)
        names = [f"n{i}" for i in range(rng.randint(1, 25))]
        deps = {
            name: tuple(rng.choice(names + ["ghost"]) for _ in range(rng.randint(0, 3)))
            for name in rng.sample(names, len(names))
        }
        g = nx.DiGraph()
        g.add_nodes_from(deps)
        g.add_edges_from((n, d) for n, ds in deps.items() for d in ds if d != n and d in deps)
        components = [c for c in nx.strongly_connected_components(g) if len(c) > 1]
        found = cycles(deps)
        assert found == sorted(found), f"seed {seed}"
        assert sorted(min(c) for c in components) == sorted(cycle[0] for cycle in found), f"seed {seed}"
        for cycle in found:
            assert all(b in deps[a] for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True)), f"seed {seed}"
            assert len(set(cycle)) == len(cycle), f"seed {seed}"
            reach = nx.single_source_shortest_path_length(g, cycle[0])
            shortest = min(reach[before] + 1 for before in g.predecessors(cycle[0]) if before in reach)
            assert len(cycle) == shortest, f"seed {seed}"
