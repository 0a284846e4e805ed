"""Pinned groups: tests that must run on one xdist worker, one at a time, in serial order.

Three rules make a group (docs/parallel.md, docs/choices.md):

* **Computed names.** A module whose tests or their fixtures call pytest-dependency's
  ``depends(request, names)`` with names that cannot be read from the source (computed at run
  time, or passed through a helper) has edges nobody can see, and pytest-dependency checks them
  against results recorded in the process that ran the test. All of the module's tests form one
  group, so the module runs as it would serially.
* **Shared fixture instance.** Two tests of one module linked by a dependency edge that use the
  same module-scoped fixture definition (same parameter), or the same class-scoped one in the
  same class, expect the state the earlier one left in that instance: they join one group
  (union-find over such edges). Session-scoped fixtures do not pin: that would serialise whole
  suites. Nor does another plugin's private fixture -- a name starting with ``_`` defined
  outside the rootdir, such as pytest-django's autouse ``_django_setup_unittest``: nobody
  declared state in it, and pinning on it would tie every linked test of a class to one worker.
* **Another plugin's dependency within a module.** Suites written for pytest-dependency or
  pytest-order hand state over in module globals and class attributes: a producer fills a
  global, the tests that depend on it (``dependency(depends=...)``, ``depends()`` with
  literal names, ``order(after=...)``/``before=``) read it. Tests of one module linked by
  such an edge, directly or through others of that module, join one group, so they run in
  one process as serially. Edges across modules do not pin (they are spread), nor do
  ``depends_on`` edges: a suite written for this plugin hands values over with outputs, or
  keeps its state in a module-scoped fixture (the rule above).

Each group is chained with AFTER edges between consecutive members in the serial (stable
topological) order, so the order, the DOT file and the walk all see it; the chain follows an
order that is already valid, so it never makes a cycle. The walker binds a group to the worker
that starts its first test (:class:`~pytest_depgraph.core.walk.walker.Walker`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_depgraph.collect import safe
from pytest_depgraph.collect.context import Context
from pytest_depgraph.collect.origins import OriginKind
from pytest_depgraph.core.graph.disjoint import DisjointSets
from pytest_depgraph.core.graph.storage import Graph, Kind, Origin
from pytest_depgraph.hosts.pytest import (
    fixture_closure,
    fixture_function,
    fixture_info,
    fixtures_by_name,
    param_index,
)

_SCOPES = ("module", "class")
_SCOPE_WORD = {False: "the module", True: "the class"}
_PLUGIN: dict[str, str] = {
    OriginKind.DEPENDENCY: "pytest-dependency", OriginKind.ORDER: "pytest-order"
}


class Pins:
    """What :func:`pin` found. (A plain class: as a dataclass, its making cost every process
    whose plan has edges 1.8 M instructions at import, measured with callgrind: this module's
    import, its imports loaded first, 3.4 -> 1.6 M.)"""

    __slots__ = ("edges", "groups", "warnings")

    def __init__(
        self,
        warnings: list[str] | None = None,
        groups: list[list[int]] | None = None,
        edges: int = 0,
    ) -> None:
        #: one per module with ``depends()`` calls whose names cannot be read
        self.warnings: list[str] = [] if warnings is None else warnings
        #: groups of graph nodes, each in serial order
        self.groups: list[list[int]] = [] if groups is None else groups
        #: AFTER edges added to chain the groups
        self.edges = edges

    def counts(self) -> dict[str, int]:
        """Edge counts by origin kind, for the plan's summary."""
        return {OriginKind.PIN: self.edges} if self.edges else {}


def pin(
    builder: Context,
    run: Sequence[int],
    graph: Graph,
    order: Sequence[int],
    broken: Any,
    computed: Mapping[int, list[str]],
) -> Pins:
    """Find the pinned groups of the run, chain each in ``order`` with AFTER edges added to
    ``graph``; return the groups (graph nodes, in order) and a warning per module with
    computed ``depends()`` names.

    ``run[n]`` is the builder position of graph node ``n`` (later nodes are external);
    ``broken`` holds the nodes that cannot run; ``computed`` maps a position to the sites of
    its ``depends()`` calls whose names cannot be read. O(V + E) when something is pinned; O(E) (a
    module comparison per edge) otherwise, nothing at all for a graph without edges and
    without pytest-dependency.
    """
    count = len(run)
    if not (graph.edge_count or computed):
        return Pins()
    sets = DisjointSets(count)
    find = sets.find
    joined: list[int] = []
    why: dict[int, Origin] = {}

    def union(a: int, b: int, origin: Origin) -> None:
        if sets.union(a, b):
            joined.extend((a, b))
            why.setdefault(a, origin)

    warnings = _computed_modules(builder, computed, run, broken, union)
    _peer_edges_in_modules(builder, run, graph, union)
    # the module/class fixture instances of each test with an edge, made when first needed
    instances: list[frozenset[tuple[Any, ...]] | None] = [None] * count
    private = _PluginPrivate(builder.rootpath)
    for dependent, dependency, _kind in graph.triples() if _any_shared(builder, private) else ():
        if dependent >= count or dependency >= count:
            continue
        mine = instances[dependent]
        if mine is None:
            mine = instances[dependent] = _instances(builder, run[dependent], private)
        if not mine:
            continue
        theirs = instances[dependency]
        if theirs is None:
            theirs = instances[dependency] = _instances(builder, run[dependency], private)
        if mine.isdisjoint(theirs) or find(dependent) == find(dependency):
            continue
        # the same reason on every xdist worker (ids differ between processes): by name
        key = min(mine & theirs, key=lambda k: str(k[4]))
        why_pinned = f"both use {_SCOPE_WORD[key[2] is not None]} fixture '{key[4]}'"
        union(dependent, dependency, Origin(OriginKind.PIN, why_pinned, key[4]))

    members: dict[int, set[int]] = {}
    for n in joined:
        members.setdefault(find(n), set()).add(n)
    pins = Pins(warnings=warnings)
    if not members:
        return pins
    rank = {n: i for i, n in enumerate(order)}
    edges = graph.edge_count
    for joined_set in members.values():
        group = sorted((n for n in joined_set if n not in broken), key=rank.__getitem__)
        if len(group) < 2:
            continue
        origin = next(why[n] for n in group if n in why)
        graph.add_edges(
            (after, before, Kind.AFTER, origin) for before, after in zip(group, group[1:])
        )
        pins.groups.append(group)
    pins.groups.sort(key=lambda group: rank[group[0]])
    pins.edges = graph.edge_count - edges
    return pins


def _computed_modules(
    builder: Context, sites: Mapping[int, list[str]], run: Sequence[int], broken: Any, union: Any
) -> list[str]:
    """Join every test of a module with computed ``depends()`` names; a warning per module."""
    if not sites:
        return []
    collected = builder.collected
    by_module: dict[str, list[str]] = {}
    for position, wheres in sites.items():
        module = collected[position].nodeid.split("::", 1)[0]
        found = by_module.setdefault(module, [])
        found.extend(w for w in wheres if w not in found)
    first: dict[str, int] = {}
    origins = {
        module: Origin(
            OriginKind.PIN, f"depends() with names computed at run time at {wheres[0]}"
        )
        for module, wheres in by_module.items()
    }
    for n, position in enumerate(run):
        module = collected[position].nodeid.split("::", 1)[0]
        if module in by_module and n not in broken:
            union(first.setdefault(module, n), n, origins[module])
    # one warning per module: a suite with such calls tends to have dozens in a module
    warnings = []
    for module in sorted(by_module):
        wheres = by_module[module]
        more = f" (and {len(wheres) - 1} more in this module)" if len(wheres) > 1 else ""
        warnings.append(
            f"depgraph: {wheres[0]}: depends() with names computed at run time{more}: "
            f"{module} runs on one worker in file order"
        )
    return warnings


def _peer_edges_in_modules(builder: Context, run: Sequence[int], graph: Graph, union: Any) -> None:
    """Join the two tests of every pytest-dependency or pytest-order edge inside one module.
    O(E)."""
    # (an enum member read once: each read costs 0.15 us, twice per origin of the table)
    peers = (OriginKind.DEPENDENCY, OriginKind.ORDER)
    kinds = {i: origin.kind for i, origin in enumerate(graph.origins()) if origin.kind in peers}
    if not kinds:
        return
    # the edges' origins only when a peer declared some (measured, callgrind: layer100k,
    # 296,000 edges and none of a peer, the order phase but the serial order 274.2 -> 227.6 M
    # instructions: taken before the origins were looked at -> after)
    _, origin_index = graph.origin_indexes()
    count = len(run)
    collected = builder.collected
    modules: dict[int, str] = {}
    # one reason per module and marker (the declaration's file:line is read only on demand:
    # xdist workers leave it out of their plans)
    reasons: dict[tuple[str, str], Origin] = {}
    dependents, dependencies, _ = graph.columns()
    for e, o in enumerate(origin_index):
        kind = kinds.get(o)
        if kind is None:
            continue
        a, b = dependents[e], dependencies[e]
        if a >= count or b >= count:
            continue
        module_a, module_b = modules.get(a), modules.get(b)
        if module_a is None:
            module_a = modules[a] = collected[run[a]].nodeid.split("::", 1)[0]
        if module_b is None:
            module_b = modules[b] = collected[run[b]].nodeid.split("::", 1)[0]
        if module_a != module_b:
            continue
        reason = reasons.get((kind, module_a))
        if reason is None:
            reason = reasons[kind, module_a] = Origin(
                OriginKind.PIN,
                f"{module_a}: tests linked by {_PLUGIN[kind]} share the module's state",
            )
        union(a, b, reason)


def _any_shared(builder: Context, private: _PluginPrivate) -> bool:
    """Whether any test uses a module- or class-scoped fixture that can pin (else no edge
    can pin). O(fixture definitions) when the session defines no such fixture at all, else
    O(V)."""
    definitions = builder.fixture_definitions()
    if definitions is not None and not any(
        safe.attr(definition, "scope") in _SCOPES and not private(name, definition)
        for name, definition in definitions
    ):
        return False
    seen: set[int] = set()
    for item in builder.collected:
        info = fixture_info(item)
        if info is None or id(info) in seen:
            continue
        seen.add(id(info))
        for name, used in fixtures_by_name(info).items():
            if (used and used[-1].scope in _SCOPES
                    and not private(name, used[-1])):
                return True
    return False


class _PluginPrivate:
    """Whether a fixture is another plugin's private one: its name starts with ``_`` and its
    function is defined outside the rootdir (an installed plugin, not the suite's own test
    modules, conftest.py files or local plugins). Each definition is looked at once."""

    def __init__(self, rootpath: Path) -> None:
        self._root = rootpath.resolve()
        self._known: dict[int, bool] = {}

    def __call__(self, name: str, definition: Any) -> bool:
        if not name.startswith("_"):
            return False
        found = self._known.get(id(definition))
        if found is None:
            found = self._known[id(definition)] = self._outside_root(definition)
        return found

    def _outside_root(self, definition: Any) -> bool:
        code = getattr(fixture_function(definition), "__code__", None)
        filename = getattr(code, "co_filename", "")
        try:
            return not filename or self._root not in Path(filename).resolve().parents
        except OSError:
            return True


def _instances(
    builder: Context, position: int, private: _PluginPrivate
) -> frozenset[tuple[Any, ...]]:
    """The module- and class-scoped fixture instances a test uses: (definition, module,
    class, parameter index, name) -- a parametrized fixture has one instance per parameter."""
    item = builder.collected[position]
    info = fixture_info(item)
    function = builder.functions[position]
    if info is None or function is None:
        return _NONE
    found: list[tuple[Any, ...]] = []
    # functions of one module share its globals: a cheap module identity
    module = id(getattr(function, "__globals__", None))
    by_name = fixtures_by_name(info)
    for name in fixture_closure(info):
        definitions = by_name.get(name)
        if not definitions:
            continue
        definition = definitions[-1]
        scope = definition.scope
        if scope not in _SCOPES or private(name, definition):
            continue
        owner = id(builder.classes[position]) if scope == "class" else None
        found.append((id(definition), module, owner, param_index(item, name), name))
    return frozenset(found) if found else _NONE


_NONE: frozenset[tuple[Any, ...]] = frozenset()
