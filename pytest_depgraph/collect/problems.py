"""Collection errors of the graph build: grouped by cause, capped, and worded for a person.

One missing file named by a thousand markers is one error that lists a few of them and a
count; a cycle of two thousand tests shows its first edges and how many more; past
:data:`MAX_ERRORS` errors the rest are summed up in one. ``-v`` (pytest's verbosity) shows
everything. Messages never depend on the process (no addresses, no set order): the xdist
workers build them independently and must agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Callable

from pytest_depgraph.collect.origins import OriginKind, describe
from pytest_depgraph.core.graph import Edge, Origin
from pytest_depgraph.words import noun

#: declarations listed under one grouped error (default verbosity)
SHOW = 3
#: edges of a cycle shown (default verbosity)
CYCLE_SHOW = 10
#: errors reported one by one (default verbosity); the rest are summed up in one more
MAX_ERRORS = 20
MORE = "-v shows all"


# (plain classes, not dataclasses: every pytest process imports this module, and a dataclass
# is made at import by compiling its methods)


class Problem:
    """One bad declaration or cycle: reported as a collection error."""

    __slots__ = ("items", "message", "report_nodeid")

    def __init__(self, message: str, report_nodeid: str, items: set[int] | None = None) -> None:
        self.message = message
        #: node id the collection error is reported under (the declaring test's module)
        self.report_nodeid = report_nodeid
        #: indices (into all collected items) of the tests that cannot run because of it
        self.items: set[int] = set() if items is None else items


class _Site:
    """One declaration (marker, decorator) that names a target, and the tests it is for."""

    __slots__ = ("label", "origin", "tests", "text", "written")

    def __init__(
        self, label: str, origin: Origin, written: str | None, text: str,
        tests: list[str] | None = None,
    ) -> None:
        self.label = label
        self.origin = origin
        #: where it was written, when that is not the origin's place
        self.written = written
        self.text = text
        self.tests: list[str] = [] if tests is None else tests

    @property
    def where(self) -> str:
        """Where it was written (``file:line``)."""
        return self.origin.where if self.written is None else self.written

    def line(self, what: str) -> str:
        return f"{self.where}: {what} ({self.label}, declared for {self.declared()})"

    def declared(self) -> str:
        more = len(self.tests) - 1
        return self.tests[0] + (f" and {more:,} more {noun(more, 'test')}" if more else "")


class _Group:
    """Declarations that fail for one cause: one error."""

    __slots__ = ("advice", "hints", "kind", "missing_path", "problem", "sites")

    def __init__(
        self, kind: str, missing_path: str, problem: Problem, hints: Callable[[], list[str]],
        advice: str,
    ) -> None:
        #: "unresolved" (the target matches nothing) or "self" (it contains the declaring test)
        self.kind = kind
        #: for an unresolved path whose file is not collected: that path, else ""
        self.missing_path = missing_path
        self.problem = problem
        #: hint lines for the first declaration (close names...): computed only if shown
        self.hints = hints
        self.advice = advice
        self.sites: dict[tuple[int, str], _Site] = {}


class Problems:
    """The problems of one build, in the order found (which every xdist worker shares)."""

    def __init__(self, verbosity: int = 0) -> None:
        self.verbosity = verbosity
        self._by_message: dict[str, Problem] = {}
        self._groups: dict[tuple[str, ...], _Group] = {}
        self._order: list[Problem | _Group] = []

    def add(self, message: str, report_nodeid: str) -> Problem:
        """The problem with this message, made once however many tests share it.

        ``{more}`` in the message becomes " and N more tests" when it is finished.
        """
        problem = self._by_message.get(message)
        if problem is None:
            problem = self._by_message[message] = Problem(message, report_nodeid)
            self._order.append(problem)
        return problem

    def grouped(
        self,
        key: tuple[str, ...],
        site: tuple[str, Origin, str | None, str],
        nodeid: str,
        position: int,
        *,
        kind: str,
        missing_path: str = "",
        hints: Callable[[], list[str]] = list,
        advice: str = "",
    ) -> None:
        """Record that the declaration ``site`` (label, origin, where written, target text)
        fails for the cause ``key`` on the test ``nodeid``."""
        group = self._groups.get(key)
        if group is None:
            problem = Problem("", nodeid.split("::", 1)[0])
            group = self._groups[key] = _Group(kind, missing_path, problem, hints, advice)
            self._order.append(group)
        label, origin, written, text = site
        found = group.sites.get((id(origin), text))
        if found is None:
            found = group.sites[(id(origin), text)] = _Site(label, origin, written, text)
        if not found.tests or found.tests[-1] != nodeid:
            found.tests.append(nodeid)
        group.problem.items.add(position)

    def __len__(self) -> int:
        """How many problems (and groups of them) were found so far."""
        return len(self._order)

    def finished(self) -> list[Problem]:
        """Every problem with its final message."""
        problems = []
        for k, entry in enumerate(self._order):
            if isinstance(entry, _Group):
                # past the errors shown one by one, close names are not worth looking for
                shown = self.verbosity > 0 or k < MAX_ERRORS
                entry.problem.message = self._group_message(entry, shown)
                problems.append(entry.problem)
            else:
                more = len(entry.items) - 1
                entry.message = entry.message.replace(
                    "{more}", f" and {more:,} more {noun(more, 'test')}" if more else ""
                )
                problems.append(entry)
        return problems

    def _group_message(self, group: _Group, hints: bool) -> str:
        sites = _one_per_place(group.sites.values())
        first = sites[0]
        if group.kind == "self":
            what = f"self reference: target {first.text} includes the test itself"
        elif group.missing_path:
            what = (f"target {first.text} matches no collected test: "
                    f"{group.missing_path} is not a collected file or folder")
        else:
            what = f"target {first.text} matches no collected test"
        lines = [f"depgraph: {first.line(what)}."]
        others = sites[1:]
        if others:
            names = "that file or folder" if group.missing_path else "the same target"
            if group.kind == "self":
                names = "a target that includes the test itself"
            verb = "names" if len(others) == 1 else "name"
            lines.append(f"  {len(others):,} more {noun(len(others), 'declaration')} {verb} "
                         f"{names}:")
            shown = others if self.verbosity > 0 else others[:SHOW]
            lines += [f"    {site.line('target ' + site.text)}" for site in shown]
            if len(shown) < len(others):
                lines.append(f"    … and {len(others) - len(shown):,} more ({MORE})")
        if hints:
            lines += group.hints()
        if group.advice:
            lines.append(f"  {group.advice}")
        return "\n".join(lines)


def _one_per_place(sites: Iterable[_Site]) -> list[_Site]:
    """One site per written declaration: a marker on a class is read once per class that
    inherits it or module that imports it (each resolves its targets in its own scope), yet
    it is one declaration, for all of their tests. In the order first seen."""
    merged: dict[tuple[str, str, str], _Site] = {}
    for site in sites:
        key = (site.where, site.label, site.text)
        found = merged.get(key)
        if found is None:
            merged[key] = _Site(site.label, site.origin, site.written, site.text, list(site.tests))
        else:
            found.tests = list(dict.fromkeys([*found.tests, *site.tests]))
    return list(merged.values())


def capped(problems: list[Problem], verbosity: int) -> list[Problem]:
    """The problems to report: past :data:`MAX_ERRORS` (below ``-v``), the rest in one."""
    if verbosity > 0 or len(problems) <= MAX_ERRORS:
        return problems
    shown, rest = problems[: MAX_ERRORS - 1], problems[MAX_ERRORS - 1 :]
    items: set[int] = set()
    for problem in rest:
        items |= problem.items
    firsts = [f"  {problem.message.splitlines()[0]}" for problem in rest[:SHOW]]
    if len(rest) > SHOW:
        firsts.append(f"  … and {len(rest) - SHOW:,} more")
    summary = Problem(
        f"depgraph: {len(rest):,} more dependency errors ({MORE}):\n" + "\n".join(firsts),
        rest[0].report_nodeid,
        items,
    )
    return [*shown, summary]


def cycle_message(cycle: Sequence[Edge], nodeids: Sequence[str], verbosity: int) -> str:
    """One cycle as a loop of node ids, each edge with its origin; long loops shortened."""
    if len(cycle) == 1:
        edge = cycle[0]
        return (
            "depgraph: self reference\n"
            f"  {nodeids[edge.dependent]} depends on itself   "
            f"{_describe(edge.origin)}\n"
            "  Remove the target that names the test itself."
        )
    shown = list(cycle)
    hidden = 0
    if verbosity <= 0 and len(cycle) > CYCLE_SHOW + 1:
        hidden = len(cycle) - CYCLE_SHOW - 1
        shown = [*cycle[:CYCLE_SHOW], cycle[-1]]
    width = max(len(nodeids[edge.dependency]) for edge in shown)
    lines = [
        f"depgraph: dependency cycle ({len(cycle):,} tests)", f"  {nodeids[cycle[0].dependent]}"
    ]
    for k, edge in enumerate(shown):
        if hidden and k == CYCLE_SHOW:
            lines.append(f"    … {hidden:,} more ({MORE})")
        lines.append(f"    -> {nodeids[edge.dependency]:<{width}}   "
                     f"{_describe(edge.origin)}")
    lines.append("  A test cannot run before itself: remove or reverse one of these dependencies.")
    return "\n".join(lines)


def _describe(origin: Origin) -> str:
    """The origin of an edge; a fixture's with the file:line of its definition."""
    text = describe(origin)
    if origin.kind in (OriginKind.FIXTURE, OriginKind.OUTPUT) and origin.where:
        text += f" at {origin.where}"
    return text
