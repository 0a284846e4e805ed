"""Hypothesis strategies for dependency graphs, small and large, and the property tests' settings.

Drawing hundreds of edges one by one makes hypothesis slow and its examples huge, so a graph
is drawn as a few choices -- a shape, a size, a density, a seed -- and built from them with
``random.Random(seed)``. Shrinking still works on those choices (smaller size, simpler
shape). The shapes are the ones real suites and the algorithms' corner cases have: long
chains with shortcuts, wide fans in and out, a dense core, layers, and plain random DAGs;
node ids are shuffled so that the id order is not already a topological order.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from pytest_depgraph.core.graph.storage import Graph, Kind

from .helpers import A, M, R, make

#: the largest graph drawn
MAX_NODES = 300

# ``DEPGRAPH_PROPERTY_EXAMPLES`` scales the runs up (a nightly job) or down (a quick check).
settings.register_profile(
    "depgraph-properties",
    # 200 random graphs per property on a developer's run; CI's oldest and newest
    # environments run 500 (DEPGRAPH_PROPERTY_EXAMPLES)
    max_examples=int(os.environ.get("DEPGRAPH_PROPERTY_EXAMPLES", "200")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
#: the settings of every large-graph property test
PROPERTIES = settings.get_profile("depgraph-properties")

Pairs = list[tuple[int, int]]


def _random(rng: random.Random, size: int, density: float) -> Pairs:
    """Each node depends on a few earlier nodes anywhere."""
    pairs = []
    for v in range(1, size):
        for _ in range(rng.randint(0, max(1, round(density * 4)))):
            pairs.append((v, rng.randrange(v)))
    return pairs


def _chain(rng: random.Random, size: int, density: float) -> Pairs:
    """One long chain, with shortcuts that the reduction must drop (or keep, by kind)."""
    pairs = [(v, v - 1) for v in range(1, size)]
    for v in range(2, size):
        if rng.random() < density:
            pairs.append((v, v - rng.randint(2, min(v, 12))))
    return pairs


def _fans(rng: random.Random, size: int, density: float) -> Pairs:
    """A few hubs: many tests depend on one (fan-in), one test depends on many (fan-out)."""
    hubs = max(1, size // 60)
    pairs = []
    for v in range(hubs, size - hubs):
        pairs.append((v, rng.randrange(hubs)))
        if rng.random() < density / 4 and v > hubs:
            pairs.append((v, rng.randrange(hubs, v)))
    for sink in range(max(hubs, size - hubs), size):
        pairs.extend((sink, u) for u in range(hubs, sink) if rng.random() < 0.5 + density / 2)
    return pairs


def _dense_core(rng: random.Random, size: int, density: float) -> Pairs:
    """A dense core (every pair with high probability) inside a sparse random rim."""
    core = min(size, 12 + round(28 * density))
    pairs = [(v, u) for v in range(core) for u in range(v) if rng.random() < 0.6]
    for v in range(core, size):
        pairs.extend((v, rng.randrange(v)) for _ in range(rng.randint(0, 2)))
    return pairs


def _layers(rng: random.Random, size: int, density: float) -> Pairs:
    """Layers of tests, each depending on some of the layers below."""
    width = rng.randint(1, max(1, size // 4))
    pairs = []
    for v in range(width, size):
        layer = v // width
        for _ in range(rng.randint(1, 1 + round(3 * density))):
            below = rng.randint(max(0, layer - 3), layer - 1)
            u = below * width + rng.randrange(width)
            pairs.append((v, u))
    return pairs


SHAPES: dict[str, Callable[[random.Random, int, float], Pairs]] = {
    "random": _random,
    "chain": _chain,
    "fans": _fans,
    "dense core": _dense_core,
    "layers": _layers,
}


@st.composite
def digraphs(draw: st.DrawFn, max_size: int = 12, acyclic: bool = False) -> Graph:
    """Random graphs; acyclic ones point only from higher to lower ids, then get relabelled."""
    size = draw(st.integers(1, max_size))
    pairs = st.tuples(st.integers(0, size - 1), st.integers(0, size - 1))
    raw = draw(st.lists(st.tuples(pairs, st.sampled_from([R, A])), max_size=size * 3))
    if acyclic:
        perm = draw(st.permutations(range(size)))
        raw = [((perm[max(u, v)], perm[min(u, v)]), k) for (u, v), k in raw if u != v]
    return make(size, [(u, v, k) for (u, v), k in raw])


class Drawn:
    """A drawn graph and the choices it was built from (hypothesis prints them on failure)."""

    def __init__(self, graph: Graph, shape: str, seed: int, after: float) -> None:
        self.graph, self.shape, self.seed, self.after = graph, shape, seed, after

    def __repr__(self) -> str:
        return (
            f"Drawn({self.shape}, {self.graph.size} nodes, {self.graph.edge_count} edges, "
            f"seed={self.seed}, after={self.after})"
        )


@st.composite
def dags(draw: st.DrawFn, max_size: int = MAX_NODES, back_edges: bool = False) -> Drawn:
    """A large DAG of REQUIRES and AFTER edges (``back_edges``: plus some that close cycles)."""
    shape = draw(st.sampled_from(sorted(SHAPES)))
    size = draw(st.integers(1, max_size))
    density = draw(st.sampled_from([0.0, 0.1, 0.3, 0.6, 1.0]))
    after = draw(st.sampled_from([0.0, 0.2, 0.5, 1.0]))
    shuffle = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    return build_dag(shape, size, density, after, shuffle, seed, back_edges)


def build_dag(shape: str, size: int, density: float, after: float, shuffle: bool, seed: int,
              back_edges: bool = False) -> Drawn:
    """The DAG :func:`dags` draws from these choices (an explicit example of a failure)."""
    rng = random.Random(seed)
    pairs = SHAPES[shape](rng, size, density)
    if back_edges:
        for _ in range(rng.choice([0, 1, 1, 2, 3, size // 20 + 1])):
            u, v = rng.randrange(size), rng.randrange(size)
            pairs.append((min(u, v), max(u, v)))  # points up the order: a cycle when v reaches u
    # shuffled ids: the id order is no longer a topological order; unshuffled: it is
    label = list(range(size))
    if shuffle:
        rng.shuffle(label)
    graph = Graph(size)
    for dependent, dependency in pairs:
        kind = A if rng.random() < after else R
        graph.add_edge(label[dependent], label[dependency], kind, M)
    return Drawn(graph, shape, seed, after)


def reachable(graph: Graph, kinds: tuple[Kind, ...] = (R, A)) -> list[int]:
    """For each node, the bitset of the nodes its edges of ``kinds`` lead to (itself not
    included), in a plain depth-first post-order of its own (an acyclic graph; networkx's
    graph building cost more than the checks it served)."""
    out: list[list[int]] = [[] for _ in range(graph.size)]
    for u, v, kind in graph.triples():
        if kind in kinds:
            out[u].append(v)
    reach = [0] * graph.size
    done = [False] * graph.size
    for root in range(graph.size):
        if done[root]:
            continue
        stack = [(root, 0)]
        while stack:  # a node's bits once all the nodes it leads to have theirs
            v, i = stack.pop()
            if i < len(out[v]):
                stack.append((v, i + 1))
                w = out[v][i]
                if not done[w]:
                    stack.append((w, 0))
                continue
            bits = 0
            for w in out[v]:
                bits |= (1 << w) | reach[w]
            reach[v] = bits
            done[v] = True
    return reach


#: the scopes of each node, outermost first (folders, a module, classes): as the build names them
Scopes = list[tuple[str, ...]]


def scope_layout(rng: random.Random, size: int, interleaved: bool = False) -> Scopes:
    """Scopes for nodes in id order as pytest collects a suite: runs of tests in a class
    (sometimes nested), in a module, in a folder (sometimes nested). ``interleaved``: a few
    nodes swap places, so some scopes are no longer contiguous in id order, as pytest-order's
    positions or ``--ff`` leave them."""
    chains: Scopes = []
    folders: list[str] = []
    module = ""
    classes: list[str] = []
    for v in range(size):
        r = rng.random()
        if not chains or r < 0.05:  # a new folder, at the top or inside the current one
            folders = folders[: rng.randint(0, len(folders))]
            folders.append(f"{folders[-1] if folders else ''}d{v}/")
            module, classes = "", []
        if not module or r < 0.15:
            module, classes = f"{folders[-1]}m{v}.py", []
        elif r < 0.3:
            classes = [f"{module}::C{v}"]
        elif r < 0.35 and classes:
            classes = [*classes, f"{classes[-1]}::C{v}"]
        elif r < 0.45:
            classes = classes[:-1]
        chains.append((*folders, module, *classes))
    if interleaved:
        for _ in range(rng.randint(1, max(1, size // 10))):
            i, j = rng.randrange(size), rng.randrange(size)
            chains[i], chains[j] = chains[j], chains[i]
    return chains
