"""pytest-order's markers as graph sources, and its ordinals when pytest-order is absent.

``@pytest.mark.order(after=..., before=...)`` becomes *after* edges (``before`` reversed),
resolved as pytest-order does: a label is the end of a node id, matched within the declaring
test's module and its parent directories. Ordinals (``order(1)``, ``"first"``, ``"last"``...)
sort the tests when pytest-order is not installed (:class:`OrderIndex`), and tie the ordinal
groups with *after* edges for parallel runs (:meth:`OrderReader.ordinal_edges`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from pytest_depgraph.collect.compat.names import ORDER, ORDINAL, Settings
from pytest_depgraph.collect.compat.shared import PeerReader
from pytest_depgraph.collect.context import Context, Source
from pytest_depgraph.collect.markers import Declaration
from pytest_depgraph.core import safe
from pytest_depgraph.core.graph import Kind, Origin

#: pytest-order's words for positions
_ORDER_WORDS = {
    "first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "sixth": 5, "seventh": 6,
    "eighth": 7, "last": -1, "second_to_last": -2, "third_to_last": -3, "fourth_to_last": -4,
    "fifth_to_last": -5, "sixth_to_last": -6, "seventh_to_last": -7, "eighth_to_last": -8,
}

#: consecutive ordinal groups get every pair as an edge up to this many edges per test of the
#: two groups; beyond it the smaller group is chained and only its end is tied to the other
_PAIRS_PER_TEST = 8


class OrderReader(PeerReader):
    """Reads ``order`` markers; its label indexes and ``before=`` targets are made at once."""

    def __init__(
        self, context: Context, settings: Settings, warned: set[tuple[str, str]] | None = None
    ) -> None:
        super().__init__(context, settings, warned)
        self._by_last: dict[str, list[int]] = {}
        self._by_class: dict[str, list[int]] = {}
        #: position -> (declaring position, where, label): pytest-order ``before=`` aimed at it
        self._before_of: dict[int, list[tuple[int, str, str]]] = {}
        #: position -> pytest-order's index of the test, with the node and mark that give it
        self._ordinals: dict[int, tuple[int, Any, pytest.Mark]] = {}
        #: declaring position -> problems of its ``before=`` labels: (message, where, label or
        #: None for a bad type)
        self._before_problems: dict[int, list[tuple[str, str, object]]] = {}
        self._index_order()

    def _index_order(self) -> None:
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
                    index = _index_of(mark)
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
                        if match != position:
                            self._before_of.setdefault(match, []).append((position, where, label))

    def sources(self, position: int) -> Iterator[Source]:
        """Sources from the ``order`` markers of one test, and the ``before=`` aimed at it."""
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
                self.report(position, f"depgraph: {where}: @pytest.mark.{ORDER}(after="
                            f"{safe.describe(after)}): after= takes a test name or a list of "
                            "test names "
                            f"(declared for {item.nodeid}{{more}}).")
                continue
            for label in labels:
                found = self._order_matches(label, position, node)
                matches = tuple(m for m in found if m != position)  # pytest-order: a no-op
                if matches:
                    yield Source(
                        Declaration((label,), Kind.AFTER, where), Origin(ORDER, where),
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
                Declaration((label,), Kind.AFTER, where), Origin(ORDER, where),
                f"@pytest.mark.{ORDER}(before={label!r}) on "
                f"{self.context.collected[declarer].nodeid}",
                False, (declarer,),
            )

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
        item = self.context.collected[position]
        if not safe.is_str(label):
            return (f"depgraph: {where}: @pytest.mark.{ORDER}({keyword}={safe.describe(label)}): "
                    f"{keyword}= "
                    f"takes a test name or a list of test names (declared for "
                    f"{item.nodeid}{{more}}).")
        own = item.nodeid.rpartition("::")[2].partition("[")[0]
        pool = [name for name in self._by_last if name != own]
        close = difflib.get_close_matches(label.split("::")[-1], pool, n=3, cutoff=0.6)
        hint = "  Did you mean " + " or ".join(map(repr, close)) + "?\n" if close else ""
        return (
            f"depgraph: {where}: @pytest.mark.{ORDER}({keyword}={label!r}): "
            f"{label!r} matches no collected test (declared for {item.nodeid}{{more}}).\n"
            f"{hint}"
            "  pytest-order names a test by the end of its node id ('test_name', "
            "'TestClass::test_name', 'test_module.py::test_name') within the test's module or a "
            "parent directory."
        )

    def ordinal_edges(
        self, run: Sequence[int], order: Sequence[int], broken: Any, graph: Any
    ) -> int:
        """Add AFTER edges that keep pytest-order's ordinal groups apart when tests run at once.

        Every test of an ordinal group (``order(1)``, ``"first"``, the unordered tests,
        ``"last"``...) waits for every test of the group before it, as the serial order already
        has it; a pair that the serial ``order`` puts the other way round (an edge contradicts
        the index) gets no edge. Only consecutive groups are tied: |A|*|B| edges, linear for
        the usual few ordered tests beside many unordered ones. When that product is large the
        smaller group is chained in serial order, and only its last (or first) test is tied to
        the other group: |A|+|B| edges, at the price of running that group one test at a time.
        ``run[n]`` is the builder position of graph node ``n``; returns the number of edges
        added.
        """
        keyed: dict[tuple[int, int], list[int]] = {}
        #: the origin of the edges of each ordered test: its order marker
        origin_of: dict[int, Origin] = {}
        origins: dict[str, Origin] = {}
        ordinals = self._ordinals
        for n, position in enumerate(run):
            if n in broken:
                continue
            found = ordinals.get(position)
            if found is None:
                keyed.setdefault((1, 0), []).append(n)
                continue
            index, node, mark = found
            keyed.setdefault(_ordinal_key(index), []).append(n)
            where = self.where(node, mark)
            origin_of[n] = origins.setdefault(where, Origin(ORDINAL, where))
        if len(keyed) < 2:
            return 0
        at = {v: i for i, v in enumerate(order)}
        after = Kind.AFTER
        edges: list[tuple[int, int, Kind, Origin]] = []
        append = edges.append
        groups = [sorted(keyed[key], key=at.__getitem__) for key in sorted(keyed)]
        # a pair the serial order puts the other way round gets no edge: an edge put it there
        for earlier, later in zip(groups, groups[1:]):
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
                    append((u, v, after, origin_of.get(u) or origin_of[v]))
        graph.add_edges(edges)
        return len(edges)


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


def order_index(item: pytest.Item) -> int | None:
    """pytest-order's position of a test: ``order(1)``, ``order(index=1)``, ``"first"``..."""
    for mark in item.iter_markers(name=ORDER):
        value = _index_of(mark)
        if value is not None:
            return value
    return None


def _index_of(mark: pytest.Mark) -> int | None:
    value = mark.args[0] if mark.args else mark.kwargs.get("index")
    if safe.is_str(value):  # a user object: read as a plain string, never compared itself
        value = _ORDER_WORDS.get(safe.exact_str(value))
    if type(value) is int:
        return value
    return None


def _ordinal_key(index: int | None) -> tuple[int, int]:
    """pytest-order's sort key: indexes >= 0 by index, then unordered tests, then negative
    indexes (``-1``/``"last"`` at the very end)."""
    if index is None:
        return (1, 0)
    return (0, index) if index >= 0 else (2, index)


def sort_by_index(items: list[pytest.Item]) -> None:
    """pytest-order's ``order(index)`` sorting, in place, for suites run without pytest-order.

    Tests with an index >= 0 come first, by index; then the tests without one; then those with
    a negative index (``-1``/``"last"`` at the very end). The sort is stable.
    """
    indexes = [order_index(item) for item in items]
    keyed = sorted(range(len(items)), key=lambda i: _ordinal_key(indexes[i]))
    items[:] = [items[i] for i in keyed]
