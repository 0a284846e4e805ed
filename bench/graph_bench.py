"""Time each graph phase of pytest-depgraph on large synthetic graphs.

Run: ``python bench/graph_bench.py`` (``--repeat N`` for another median). Prints a Markdown
table, one row per graph, one column per phase, each the median of the runs in seconds (the
graph is built twice: edge by edge, and from edge arrays as the plugin's build makes it; it is
ordered twice: keeping the classes and modules of a suite laid out as ``real10k``, as the
build orders, and without scopes); then
the reduction's two exact methods side by side on each graph (CPU seconds and peak memory of
the reduction alone); then the transitive reduction beside ``networkx.transitive_reduction``
on the 10k graph.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import time
import tracemalloc
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_depgraph.core.graph.paths import critical_path
from pytest_depgraph.core.graph.reduction import (
    reduce_by_closures,
    reduce_by_search,
    transitive_reduction,
)
from pytest_depgraph.core.graph.storage import Graph, Kind, Origin
from pytest_depgraph.core.graph.tarjan import find_cycles, strongly_connected_components
from pytest_depgraph.core.graph.toposort import stable_topological_order

ORIGIN = Origin("marker", "tests/test_bench.py:1")
Edges = list[tuple[int, int, Kind]]


def kind(rng: random.Random) -> Kind:
    # most declared dependencies are requires edges; a fifth are ordering-only
    return Kind.AFTER if rng.random() < 0.2 else Kind.REQUIRES


def chain(n: int) -> tuple[int, Edges]:
    """Test i depends on test i-1."""
    return n, [(i, i - 1, Kind.REQUIRES) for i in range(1, n)]


def random_dag(n: int, per_node: int, seed: int) -> tuple[int, Edges]:
    """Each test depends on ``per_node`` distinct random earlier tests."""
    rng = random.Random(seed)
    edges = []
    for i in range(1, n):
        for d in rng.sample(range(i), min(i, per_node)):
            edges.append((i, d, kind(rng)))
    return n, edges


def shuffled(case: tuple[int, Edges], seed: int) -> tuple[int, Edges]:
    """The same graph with its ids permuted: dependencies come after their dependents as
    often as before them, so the serial order moves half the tests (the stable order's worst
    case; the others keep a dependency before its dependent)."""
    size, edges = case
    perm = list(range(size))
    random.Random(seed).shuffle(perm)
    return size, [(perm[u], perm[d], k) for u, d, k in edges]


def layered(layers: int, width: int, seed: int) -> tuple[int, Edges]:
    """``layers`` layers of ``width`` tests; each depends on two tests of the layer before
    and one of the layer before that, so some edges are implied by others."""
    rng = random.Random(seed)
    edges = []
    for layer in range(1, layers):
        for i in range(width):
            v = layer * width + i
            previous = layer - 1
            for d in rng.sample(range(width), 2):
                edges.append((v, previous * width + d, kind(rng)))
            if layer >= 2:
                edges.append((v, (layer - 2) * width + rng.randrange(width), kind(rng)))
    return layers * width, edges


def build(size: int, edges: Edges) -> Graph:
    graph = Graph(size)
    add = graph.add_edge
    for dependent, dependency, k in edges:
        add(dependent, dependency, k, ORIGIN)
    return graph


def from_arrays(size: int, edges: Edges) -> Graph:
    """The graph as the plugin's build makes it: from edge columns (timed with them)."""
    return Graph.from_arrays(
        size, array("i", [e[0] for e in edges]), array("i", [e[1] for e in edges]),
        bytearray(e[2] for e in edges), array("i", bytes(4 * len(edges))), [ORIGIN],
    )


def twice(case: tuple[int, Edges], seed: int) -> tuple[int, Edges]:
    """The same graph with one edge in a hundred declared a second time, further on (as a
    test that names one dependency twice): the build's arrays then merge repeated pairs."""
    size, edges = case
    rng = random.Random(seed)
    return size, [*edges, *rng.sample(edges, len(edges) // 100)]


#: CPU seconds of every timed call, per graph: on a shared machine the wall clock (what the
#: table shows) also counts time spent waiting for a core, the CPU time does not.
CPU: list[float] = []


def median_time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        cpu, start = time.process_time(), time.perf_counter()
        result = fn()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    CPU.append(statistics.median(cpus))
    return statistics.median(walls), result


PHASES = [
    "build", "from arrays", "tarjan SCC", "find_cycles", "stable order", "(no scopes)",
    "reduction", "critical path",
]
#: the columns left out of the totals: other ways of doing a phase the totals count
NOT_TOTALLED = ("from arrays", "(no scopes)")


def scope_chains(size: int) -> list[tuple[str, ...]]:
    """The scopes of each test as the build reads them from a suite shaped as ``real10k``: 100
    tests a module, 40 of them in two classes, folders without ``__init__.py`` (no packages);
    one tuple per module or class, shared by its tests."""
    chains: dict[tuple[int, int], tuple[str, ...]] = {}
    found = []
    for i in range(size):
        module, j = divmod(i, 100)
        cls = j // 20 if 40 <= j < 80 else 0
        chain = chains.get((module, cls))
        if chain is None:
            path = f"tests/d{module // 25}/test_m{module:04d}.py"
            chain = chains[module, cls] = (path, f"{path}::TestC{cls}") if cls else (path,)
        found.append(chain)
    return found


def bench(size: int, edges: Edges, repeat: int) -> tuple[list[float], Graph, Graph]:
    t_build, graph = median_time(lambda: build(size, edges), repeat)
    t_arrays, again = median_time(lambda: from_arrays(size, edges), repeat)
    assert again.columns() == graph.columns()
    t_scc, _ = median_time(lambda: strongly_connected_components(graph), repeat)
    t_cycles, cycles = median_time(lambda: find_cycles(graph), repeat)
    assert cycles == []
    # as the build orders: classes and modules kept together
    scopes = scope_chains(size)
    t_order, order = median_time(lambda: stable_topological_order(graph, scopes), repeat)
    t_plain, _ = median_time(lambda: stable_topological_order(graph), repeat)
    t_reduce, reduced = median_time(lambda: transitive_reduction(graph, order), repeat)
    weights = [1.0] * size
    t_critical, _ = median_time(lambda: critical_path(reduced, weights), repeat)
    times = [t_build, t_arrays, t_scc, t_cycles, t_order, t_plain, t_reduce, t_critical]
    return times, graph, reduced


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cases = [
        ("chain 100k", chain(100_000)),
        ("random DAG 10k", random_dag(10_000, 3, seed=1)),
        ("random DAG 10k, ids shuffled", shuffled(random_dag(10_000, 3, seed=1), seed=3)),
        ("random DAG 10k, 1% of pairs twice", twice(random_dag(10_000, 3, seed=1), seed=4)),
        ("layered DAG 100k", layered(100, 1_000, seed=2)),
        # rand100k's shape: every test depends on 3 random earlier ones (reach spans the order)
        ("random DAG 100k", random_dag(100_000, 3, seed=1)),
    ]
    print(f"Python {platform.python_version()} on {platform.machine()}, median of {args.repeat}")
    print()
    header = ["graph", "nodes", "edges", "removed", *PHASES, "total", "total CPU"]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
    graphs = {}
    for name, (size, edges) in cases:
        CPU.clear()
        times, graph, reduced = bench(size, edges, args.repeat)
        graphs[name] = graph
        removed = graph.edge_count - reduced.edge_count
        cells = [f"{t:.3f}" for t in times]
        # the totals count one way of building the graph (edge by edge, as before) and the
        # order the build makes
        counted = [i for i, phase in enumerate(PHASES) if phase not in NOT_TOTALLED]
        print(
            f"| {name} | {size:,} | {graph.edge_count:,} | {removed:,} | "
            + " | ".join(cells)
            + f" | **{sum(times[i] for i in counted):.3f}** | "
            f"{sum(CPU[i] for i in counted):.3f} |"
        )
    compare_methods(graphs, args.repeat)
    compare_networkx(graphs["random DAG 10k"], args.repeat)


def compare_methods(graphs: dict[str, Graph], repeat: int) -> None:
    """The reduction's two methods (same result) on each graph: the search that
    ``transitive_reduction`` tries first, and the bitset closures it falls back to."""
    print()
    print("| reduction method (CPU s, peak MiB) | " + " | ".join(graphs) + " |")
    print("|---|" + "---:|" * len(graphs))
    methods: dict[str, Callable[[Graph, list[int]], list[int] | None]] = {
        "search (`reduce_by_search`)": reduce_by_search,
        "closures (`reduce_by_closures`)": reduce_by_closures,
    }
    for label, method in methods.items():
        cells = []
        for graph in graphs.values():
            order: list[int] = []
            find_cycles(graph, order)
            cpus = []
            for _ in range(repeat):
                start = time.process_time()
                method(graph, order)
                cpus.append(time.process_time() - start)
            tracemalloc.start()
            found = method(graph, order)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            cells.append(
                f"{statistics.median(cpus):.3f}, {peak / 2**20:.1f}"
                + (" (over budget)" if found is None else "")
            )
        print(f"| {label} | " + " | ".join(cells) + " |")


def compare_networkx(graph: Graph, repeat: int) -> None:
    """Reduction of the 10k graph with every edge taken as REQUIRES, beside networkx."""
    try:
        import networkx as nx
    except ImportError:
        print("\nnetworkx not installed: comparison skipped")
        return
    plain = Graph(graph.size)
    for e in graph.edges():
        plain.add_edge(e.dependent, e.dependency, Kind.REQUIRES, e.origin)
    ours_t, ours = median_time(lambda: transitive_reduction(plain), repeat)
    g = nx.DiGraph()
    g.add_nodes_from(range(graph.size))
    g.add_edges_from((e.dependent, e.dependency) for e in plain.edges())
    theirs_t, theirs = median_time(lambda: nx.transitive_reduction(g), repeat)
    same = {(e.dependent, e.dependency) for e in ours.edges()} == set(theirs.edges())
    print()
    print("| reduction of random DAG 10k, all edges REQUIRES | seconds | edges kept |")
    print("|---|---:|---:|")
    print(
        f"| pytest_depgraph.core.graph.reduction.transitive_reduction | {ours_t:.3f} "
        f"| {ours.edge_count:,} |"
    )
    print(f"| networkx.transitive_reduction | {theirs_t:.3f} | {theirs.number_of_edges():,} |")
    print()
    print(f"Same edge set: {same}. networkx is not run on the 100k graphs: it takes minutes.")


if __name__ == "__main__":
    main()
