"""pytest-order's markers as graph sources, and its ordinals when pytest-order is absent.

``@pytest.mark.order(after=..., before=...)`` becomes *after* edges (``before`` reversed),
resolved as pytest-order does: a label is the end of a node id, matched within the declaring
test's module and its parent directories. Ordinals (``order(1)``, ``"first"``, ``"last"``...)
sort the tests when pytest-order is not installed (:class:`OrderIndex`), and tie the ordinal
groups with *after* edges for parallel runs (:meth:`OrderReader.ordinal_edges`).

pytest-order's scopes hold as it documents them (they exist only when it is installed):
``--order-scope=module``/``class`` and ``--order-scope-level`` order only within each module,
class or directory -- a marker that names a test outside it makes no edge, and positions are
compared within it only; ``--order-group-scope`` orders tests within each class or module,
then the classes or modules as wholes, by their first position and by the markers between
them (:meth:`OrderReader.ordinal_edges` ties the whole groups).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from pytest_depgraph.collect import problems, safe
from pytest_depgraph.collect.context import Context, Source
from pytest_depgraph.collect.dependency_markers import Declaration
from pytest_depgraph.collect.origins import OriginKind
from pytest_depgraph.collect.peer_plugins import (
    ORDER,
    ORDER_SCOPES,
    UNORDERED,
    Marks,
    index_of,
    ordinal_key,
)
from pytest_depgraph.collect.readers.base import Found, Ordered, Place
from pytest_depgraph.collect.readers.peer_reader import PeerReader
from pytest_depgraph.core.graph.storage import Graph, Kind, Origin

#: consecutive ordinal groups get every pair as an edge up to this many edges per test of the
#: two groups; beyond it the smaller group is chained and only its end is tied to the other
_PAIRS_PER_TEST = 8


class OrderReader(PeerReader):
    """Reads ``order`` markers; its label indexes and ``before=`` targets are made when the
    first test is read."""

    calls = frozenset({"order"})
    kinds = frozenset({OriginKind.ORDER, OriginKind.ORDINAL})

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self._indexed = False
        self._by_last: dict[str, list[int]] = {}
        self._by_class: dict[str, list[int]] = {}
        #: position -> (declaring position, where, label): pytest-order ``before=`` aimed at it
        self._before_of: dict[int, list[tuple[int, str, str]]] = {}
        #: position -> pytest-order's index of the test, with the node and mark that give it
        self._ordinals: dict[int, tuple[int, Any, pytest.Mark]] = {}
        #: declaring position -> problems of its ``before=`` labels: (message, where, label or
        #: None for a bad type)
        self._before_problems: dict[int, list[tuple[str, str, object]]] = {}

    def declares(self, marks: Marks) -> bool:
        return ORDER in marks

    def _index_order(self) -> None:
        if self._indexed:
            return
        self._indexed = True
        collected = self.context.collected
        for position, item in enumerate(collected):
            nodeid = item.nodeid
            last = nodeid.rpartition("::")[2]
            if "[" in last:
                last = last.rpartition("[")[0]
            self._by_last.setdefault(last, []).append(position)
            parts = nodeid.split("::")
            if len(parts) == 3:
                self._by_class.setdefault(parts[1], []).append(position)
        for position, item in enumerate(collected):
            for node, mark in item.iter_markers_with_node(name=ORDER):
                if position not in self._ordinals:
                    index = index_of(mark)
                    if index is not None:
                        self._ordinals[position] = (index, node, mark)
                labels = _labels(mark.kwargs.get("before"))
                if labels == []:
                    continue
                where = self.where(node, mark)
                if labels is None:
                    self._before_problems.setdefault(position, []).append(
                        (self._unknown_label(position, "before", mark.kwargs["before"], where),
                         where, None)
                    )
                    continue
                for label in labels:
                    matches = self._order_matches(label, position, node)
                    if not matches:
                        self._before_problems.setdefault(position, []).append(
                            (self._unknown_label(position, "before", label, where), where,
                             label)
                        )
                    for match in matches:
                        if match != position and self._in_scope(match, position):
                            self._before_of.setdefault(match, []).append((position, where, label))

    def read(self, place: Place, position: int) -> Found:
        """What the ``order`` markers of one test declare, and the ``before=`` aimed at it."""
        self._index_order()
        return Found(list(self._sources(position)))

    def _sources(self, position: int) -> Iterator[Source]:
        item = self.context.collected[position]
        for message, where, label in self._before_problems.get(position, ()):
            if isinstance(label, str):
                self.stale(position, message, where, label, "pytest-order")
            else:
                self.report(position, message)
        for node, mark in item.iter_markers_with_node(name=ORDER):
            after = mark.kwargs.get("after")
            labels = _labels(after)
            where = self.where(node, mark)
            if labels is None:
                self.report(position, problems.order_not_names(
                    "after", safe.describe(after), item.nodeid, where, ORDER
                ))
                continue
            for label in labels:
                found = self._order_matches(label, position, node)
                # itself: a no-op for pytest-order; outside its scope: ignored, without warning
                matches = tuple(m for m in found if m != position and self._in_scope(m, position))
                if matches:
                    yield Source(
                        Declaration((label,), Kind.AFTER, where), Origin(OriginKind.ORDER, where),
                        f"@pytest.mark.{ORDER}(after={label!r})",
                        not isinstance(node, pytest.Item), matches,
                    )
                elif not found and isinstance(label, str):
                    self.stale(position, self._unknown_label(position, "after", label, where),
                               where, label, "pytest-order")
                elif not found:
                    self.report(position, self._unknown_label(position, "after", label, where))
        for declarer, where, label in self._before_of.get(position, ()):
            yield Source(
                Declaration((label,), Kind.AFTER, where), Origin(OriginKind.ORDER, where),
                f"@pytest.mark.{ORDER}(before={label!r}) on "
                f"{self.context.collected[declarer].nodeid}",
                False, (declarer,),
            )

    def _in_scope(self, other: int, position: int) -> bool:
        """Whether pytest-order orders the tests at ``other`` and ``position`` relative to each
        other: both in one ``--order-scope`` (everything, by default)."""
        settings = self.settings
        if settings.order_scope == "session" and not settings.order_scope_level:
            return True
        collected = self.context.collected
        scope, level = settings.order_scope, settings.order_scope_level
        return (_scope_key(collected[other].nodeid, scope, level)
                == _scope_key(collected[position].nodeid, scope, level))

    def _order_matches(self, label: str, position: int, node: object) -> list[int]:
        """pytest-order's ``items_from_label`` and ``items_from_class_label``."""
        if not safe.is_str(label):
            return []
        collected = self.context.collected
        item = collected[position]
        item_id = item.nodeid
        is_class_mark = getattr(item, "cls", None) is not None and not isinstance(
            node, pytest.Item
        )
        last = label.split("/")[-1].split("::")[-1]
        matches = []
        for candidate in self._by_last.get(last, ()):
            nodeid = collected[candidate].nodeid
            if nodeid.endswith(label):
                start = nodeid[: -len(label)]
            elif nodeid.endswith("]") and nodeid.rpartition("[")[0].endswith(label):
                start = nodeid.rpartition("[")[0][: -len(label)]
            else:
                continue
            if is_class_mark and start.count("::") == 2:
                continue
            if item_id.startswith(start):
                matches.append(candidate)
        if not matches and is_class_mark and "::" not in label:
            for candidate in self._by_class.get(label, ()):
                nodeid = collected[candidate].nodeid
                start = nodeid[: nodeid.rindex("::") - len(label)]
                if item_id.startswith(start):
                    matches.append(candidate)
        return matches

    def _unknown_label(self, position: int, keyword: str, label: object, where: str) -> str:
        import difflib  # only for an error

        item = self.context.collected[position]
        if not safe.is_str(label):
            return problems.order_not_names(keyword, safe.describe(label), item.nodeid, where,
                                            ORDER)
        own = item.nodeid.rpartition("::")[2].partition("[")[0]
        pool = [name for name in self._by_last if name != own]
        close = difflib.get_close_matches(label.split("::")[-1], pool, n=3, cutoff=0.6)
        return problems.unknown_label(keyword, label, item.nodeid, where, ORDER, close)

    def order_edges(self, ordered: Ordered) -> dict[str, int]:
        """pytest-order's ordinal groups tied (:meth:`ordinal_edges`); their count."""
        self._index_order()
        added = self.ordinal_edges(ordered.run, ordered.order, ordered.broken, ordered.graph,
                                   ordered.declared)
        return {OriginKind.ORDINAL: added} if added else {}

    def ordinal_edges(
        self, run: Sequence[int], order: Sequence[int], broken: Any, graph: Graph,
        declared: Graph | None = None,
    ) -> int:
        """Add AFTER edges that keep pytest-order's ordinal groups apart when tests run at once.

        Every test of an ordinal group (``order(1)``, ``"first"``, the unordered tests,
        ``"last"``...) waits for every test of the group before it, as the serial order already
        has it; a pair that the serial ``order`` puts the other way round (an edge contradicts
        the index) gets no edge. Only consecutive groups are tied: |A|*|B| edges, linear for
        the usual few ordered tests beside many unordered ones. When that product is large the
        smaller group is chained in serial order, and only its last (or first) test is tied to
        the other group: |A|+|B| edges, at the price of running that group one test at a time.

        Positions are compared within each of pytest-order's scopes only (``--order-scope``,
        ``--order-scope-level``; the whole session by default). With ``--order-group-scope``
        they are compared within each class or module, and the classes or modules of a scope
        are then tied as wholes, the same way: by their group's position (its smallest index
        >= 0, else its largest negative one), and for each ``after=``/``before=`` edge of
        ``declared`` (the graph before reduction) between two of them.
        ``run[n]`` is the builder position of graph node ``n``; returns the number of edges
        added.
        """
        #: ordered node -> its ordinal key, and the origin of its edges: its order marker
        key_of: dict[int, tuple[int, int]] = {}
        origin_of: dict[int, Origin] = {}
        origins: dict[str, Origin] = {}
        ordinals = self._ordinals
        for n, position in enumerate(run):
            found = ordinals.get(position)
            if found is None or n in broken:
                continue
            index, node, mark = found
            key_of[n] = ordinal_key(index)
            where = self.where(node, mark)
            origin_of[n] = origins.setdefault(where, Origin(OriginKind.ORDINAL, where))
        levels = self._levels()
        if not key_of and len(levels) == 1:
            return 0
        count = len(run)
        at = {v: i for i, v in enumerate(order)}
        edges: list[tuple[int, int, Kind, Origin]] = []
        collected = self.context.collected
        # the nodes of each group of the innermost level, in serial order
        innermost: dict[str, list[int]] = {}
        scope, level = levels[0]
        for n in order:
            if n < count and n not in broken:
                key = _scope_key(collected[run[n]].nodeid, scope, level) if scope else ""
                innermost.setdefault(key, []).append(n)
        for members in innermost.values():
            classes: dict[tuple[int, int], list[int]] = {}
            for n in members:
                classes.setdefault(key_of.get(n, UNORDERED), []).append(n)
            _tie_consecutive([classes[k] for k in sorted(classes)], at, origin_of, edges)
        children = innermost
        for (scope, level), (inner, _) in zip(levels[1:], levels):
            # each child group as one "test": its group's position, from the first of its tests
            child_key: dict[str, tuple[int, int]] = {}
            for child, members in children.items():
                keys = [key_of[n] for n in members if n in key_of]
                starts = [k for k in keys if k[0] == 0]
                ends = [k for k in keys if k[0] == 2]
                child_key[child] = min(starts) if starts else max(ends) if ends else UNORDERED
                keyed = [n for n in members if key_of.get(n) == child_key[child]]
                for n in members:  # the edges of a whole group name the marker that placed it
                    if keyed:
                        origin_of.setdefault(n, origin_of[keyed[0]])
            parents: dict[str, dict[tuple[int, int], list[int]]] = {}
            for child, members in children.items():
                parent = _scope_key(collected[run[members[0]]].nodeid, scope, level)
                parents.setdefault(parent, {}).setdefault(child_key[child], []).extend(members)
            for classes in parents.values():
                _tie_consecutive([sorted(classes[k], key=at.__getitem__) for k in sorted(classes)],
                                 at, origin_of, edges)
            if declared is not None:
                self._tie_related(declared, run, children, inner, scope, level, at, edges)
            children = {
                parent: sorted((n for members in classes.values() for n in members),
                               key=at.__getitem__)
                for parent, classes in parents.items()
            }
        before = graph.edge_count
        graph.add_edges(edges)  # (a pair that already has an edge keeps it)
        return graph.edge_count - before

    def _levels(self) -> list[tuple[str, int]]:
        """The groups pytest-order sorts within, innermost first, each as (scope, directory
        level): the ``--order-group-scope`` and every scope above it up to the
        ``--order-scope``, whose groups are the last level ("" for the whole session)."""
        settings = self.settings
        scope, level = settings.order_scope, settings.order_scope_level
        top = ("" if scope == "session" and not level else scope, level)
        inner = ORDER_SCOPES[ORDER_SCOPES.index(settings.order_group_scope):
                             ORDER_SCOPES.index(scope)]
        return [*((s, 0) for s in inner), top]

    def _tie_related(
        self, declared: Graph, run: Sequence[int], children: dict[str, list[int]], inner: str,
        scope: str, level: int, at: dict[int, int], edges: list[tuple[int, int, Kind, Origin]],
    ) -> None:
        """For each ``after=``/``before=`` edge between two child groups (of scope ``inner``)
        of one group (of ``scope``), tie the whole groups: pytest-order moves them as wholes."""
        collected = self.context.collected
        count = len(run)
        dependents, dependencies, _ = declared.columns()
        table, origin_index = declared.origin_indexes()
        order_origins = {i for i, origin in enumerate(table) if origin.kind == OriginKind.ORDER}
        tied: set[tuple[str, str]] = set()
        for e, o in enumerate(origin_index):
            if o not in order_origins:
                continue
            u, v = dependents[e], dependencies[e]
            if u >= count or v >= count:
                continue
            nodeid_u, nodeid_v = collected[run[u]].nodeid, collected[run[v]].nodeid
            later, earlier = _scope_key(nodeid_u, inner, 0), _scope_key(nodeid_v, inner, 0)
            if (later == earlier or (later, earlier) in tied
                    or later not in children or earlier not in children
                    or _scope_key(nodeid_u, scope, level) != _scope_key(nodeid_v, scope, level)):
                continue
            tied.add((later, earlier))
            marker = Origin(OriginKind.ORDINAL, table[o].where)
            _tie_consecutive([children[earlier], children[later]], at,
                             dict.fromkeys(children[later], marker), edges)


def _tie_consecutive(
    classes: list[list[int]], at: dict[int, int], origin_of: dict[int, Origin],
    edges: list[tuple[int, int, Kind, Origin]],
) -> None:
    """AFTER edges that make every node of each class (in serial order) wait for every node
    of the class before it (:meth:`OrderReader.ordinal_edges`), appended to ``edges``; a pair
    the serial order puts the other way round gets none: an edge put it there."""
    after = Kind.AFTER
    for earlier, later in zip(classes, classes[1:]):
        # the marker that tied these two classes: on the later one's tests, else the earlier's
        tie = next((origin_of[n] for n in (*later, *earlier) if n in origin_of), None)
        if tie is None:
            continue
        if len(earlier) * len(later) > _PAIRS_PER_TEST * (len(earlier) + len(later)):
            chained = earlier if len(earlier) <= len(later) else later
            pairs = list(zip(chained[1:], chained))
            if chained is earlier:
                pairs += [(u, earlier[-1]) for u in later]
            else:
                pairs += [(later[0], v) for v in earlier]
        else:
            pairs = [(u, v) for u in later for v in earlier]
        for u, v in pairs:
            if at[v] < at[u]:
                edges.append((u, v, after, origin_of.get(u) or origin_of.get(v) or tie))


def _scope_key(nodeid: str, scope: str, level: int) -> str:
    """The group of a test under pytest-order's scope ``scope`` (``--order-scope-level``
    ``level`` for "session"): its module, its class (a module's functions outside classes are
    one group), its directory at that level, or "" for the whole session."""
    if scope == "module":
        return nodeid.split("::", 1)[0]
    if scope == "class":
        parts = nodeid.split("::", 2)
        return "::".join(parts[:2]) if len(parts) == 3 else parts[0]
    if level:
        return "/".join(nodeid.split("::", 1)[0].split("/")[:level])
    return ""


def _labels(value: object) -> list[Any] | None:
    """pytest-order's ``before=``/``after=`` as a list; None when it is neither str nor list.

    Strings come out plain (``str``), so that no user method runs on them later."""
    if value is None:
        return []
    if safe.is_str(value):
        return [safe.exact_str(value)]
    if issubclass(type(value), (list, tuple)):
        return [safe.exact_str(v) if safe.is_str(v) else v for v in value]  # type: ignore[attr-defined]
    return None
