"""Collection errors of the graph build: grouped by cause, capped, and worded for a person.

One missing file named by a thousand markers is one error that lists a few of them and a
count; a cycle of two thousand tests shows its first edges and how many more; past
:data:`MAX_ERRORS` errors the rest are summed up in one. ``-v`` (pytest's verbosity) shows
everything. Messages never depend on the process (no addresses, no set order): the xdist
workers build them independently and must agree.

Every message of a collection problem is worded here, each by a function that takes the
facts: a bad declaration, a target that matches nothing, a cycle, a peer plugin's name that
names no test, a collection warning.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Callable

from pytest_depgraph.collect.origins import OriginKind, describe
from pytest_depgraph.core.graph.storage import Edge, Origin
from pytest_depgraph.plurals import noun

#: declarations listed under one grouped error (default verbosity)
SHOW = 3
#: edges of a cycle shown (default verbosity)
CYCLE_SHOW = 10
#: errors reported one by one (default verbosity); the rest are summed up in one more
MAX_ERRORS = 20
MORE = "-v shows all"


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

    def in_test_order(self, start: int, positions: Sequence[int]) -> None:
        """Put the problems found since there were ``start`` in the order of the first of
        ``positions`` (tests read and resolved together) each is for, those of one test in
        the order found: as if each test had been read and resolved alone, in turn."""
        if len(self._order) - start < 2:
            # nothing to sort, the usual batch: no table of its ranks (measured, callgrind:
            # real10k's resolve phase 382.8 -> 376.2 M instructions)
            return
        rank = {position: n for n, position in enumerate(positions)}
        last = len(positions)

        def first(entry: Problem | _Group) -> int:
            items = entry.problem.items if isinstance(entry, _Group) else entry.items
            return min((rank[p] for p in items if p in rank), default=last)

        self._order[start:] = sorted(self._order[start:], key=first)

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


# -- depends_on declarations: markers, decorators, fixtures ----------------------------------


def declaration_error(where: str, error: object, label: str, nodeid: str | None) -> str:
    """A ``depends_on`` declaration whose arguments are wrong (``error``: what is wrong),
    written at ``where`` as ``label``; ``nodeid``: the first test it is declared for (None
    for a fixture's, which applies to every test that uses the fixture)."""
    if nodeid is None:
        return f"depgraph: {where}: {error}\n  ({label})"
    return f"depgraph: {where}: {error}\n  ({label}, declared for {nodeid}{{more}})"


def unknown_keywords(names: Sequence[str]) -> str:
    """``depends_on`` given keywords it does not take (``names``, shortened, sorted)."""
    written = ", ".join(f"{name}=" for name in names)
    return (f"unknown keyword {noun(len(names), 'argument')} {written}; "
            "depends_on accepts targets and on_failure='skip' or 'run' only")


def bad_on_failure(value: str) -> str:
    """``on_failure=`` neither 'skip' nor 'run' (``value``: how it reads)."""
    return (f"on_failure={value} is not valid; use on_failure='skip' (run only if the targets "
            "passed) or on_failure='run' (order only)")


def cleanup_unknown_keywords(names: Sequence[str]) -> str:
    """``cleanup_of`` given keywords (``names``, shortened, sorted): it takes none."""
    written = ", ".join(f"{name}=" for name in names)
    return (f"unknown keyword {noun(len(names), 'argument')} {written}; "
            "cleanup_of accepts targets only (it runs whatever their outcomes)")


CLEANUP_NO_TARGET = (
    "cleanup_of() names no target; give one or more test names, node ids, test functions or "
    "test classes: the tests whose work this test cleans up"
)
NO_TARGET = (
    "depends_on() names no target; give one or more test names, node ids, test functions or "
    "test classes"
)
EMPTY_TARGET = "an empty string is not a target; name a test or a file"


def fixture_target(target: str) -> str:
    """A fixture (``target``: how it reads) given as a target."""
    return (f"the target is {target}, not a test. A test that uses the fixture gets the "
            "fixture's own dependencies: declare them on the fixture with `from pytest_depgraph "
            "import depends_on` and `@depends_on(...)` beside `@pytest.fixture`, or name the "
            "tests it needs here")


def not_a_test(target: str, kind: str) -> str:
    """A target that is neither a string, a function nor a class (``kind``: its type's name
    for a plain value, else "")."""
    kind_name = f" ({kind})" if kind else ""
    return (f"target {target}{kind_name} is not a test; a target is a string (test name or "
            "node id), a test function or a test class")


def fixture_label(name: str, output: bool) -> str:
    """What an error calls the declaration of fixture ``name`` (``output``: an output
    fixture's)."""
    return f"output_fixture '{name}'" if output else f"@depends_on on fixture '{name}'"


def _instead_of_mark(marker: str) -> str:
    """What to write instead of ``@pytest.mark.<marker>`` on a fixture."""
    if marker in ("depends_on", "resource_lock"):
        return (f"Use the decorator instead: `from pytest_depgraph import {marker}`, then "
                f"`@{marker}(...)` above or below `@pytest.fixture`")
    if marker == "cleanup_of":
        return ("A cleanup is a test: put @pytest.mark.cleanup_of on the test that cleans up, "
                "or clean up in the fixture's own teardown (after its `yield`)")
    return f"Put @pytest.mark.{marker} on the tests that use the fixture"


def marked_fixture(where: str, name: str, marker: str) -> str:
    """``@pytest.mark.<marker>`` on fixture ``name`` (defined at ``where``), which pytest
    ignores."""
    return (
        f"depgraph: {where}: @pytest.mark.{marker} on fixture '{name}' has no effect: pytest "
        f"ignores marks on fixtures.\n  {_instead_of_mark(marker)} on '{name}'."
    )


def cleanup_fixture(where: str, name: str) -> str:
    """``@cleanup_of`` on fixture ``name``: a cleanup is a test."""
    return (
        f"depgraph: {where}: @cleanup_of on fixture '{name}' has no effect: a cleanup is a "
        "test.\n  Put @pytest.mark.cleanup_of on the test that cleans up, or clean up in the "
        f"fixture's own teardown (after its `yield`) on '{name}'."
    )


def fixture_mark_hint(marker: str) -> str:
    """What to use instead of ``@pytest.mark.<marker>`` on a fixture, beside pytest 9's own
    error for it."""
    return (
        f"@pytest.mark.{marker} has no effect on a fixture: pytest does not allow marks on "
        f"fixtures.\n{_instead_of_mark(marker)}."
    )


# -- targets -------------------------------------------------------------------------------

UNRESOLVED_ADVICE = (
    "Name a test in the same class or module, or give a node id relative to the rootdir such "
    "as 'tests/test_other.py::test_name'; a test that is not collected cannot be a dependency."
)
OBJECT_ADVICE = (
    "A function or class target must be a test that pytest collects in this run (a test "
    "function, or a test class of a test module); for anything else, name the test as a string."
)
SELF_ADVICE = "A test cannot depend on itself: remove the target that names it."
CLEANUP_SELF_ADVICE = (
    "A test cannot be the cleanup of itself: name the tests whose work it cleans up, not the "
    "test itself (nor a class or file that holds it)."
)
SELF_ADVICE_INHERITED = (
    "A marker on a class or module applies to each of its tests, so a target that contains "
    "them names each test itself: name the other tests only, or move the marker to the tests "
    "that depend on the rest."
)


def left_out(path: str, ignored: bool) -> list[str]:
    """Why a target's existing file ``path`` is not collected (``ignored``: pytest is told to
    ignore it), and how to include it."""
    if ignored:
        return [f"  {path} is not collected: pytest is told to ignore it (--ignore, "
                "--ignore-glob, collect_ignore); stop ignoring it to run this test."]
    return [f"  {path} is not collected in this run: add it to the command line "
            f"(pytest ... {path})."]


def fixture_named(name: str) -> list[str]:
    """A target that names fixture ``name`` (quoted) rather than a test."""
    return [
        f"  {name} is a fixture, not a test. A test that uses a fixture gets the fixture's own "
        "dependencies: declare them on the fixture with `from pytest_depgraph import "
        "depends_on` and `@depends_on(...)` beside `@pytest.fixture`, and request the fixture "
        "in the test."
    ]


def did_you_mean(names: Sequence[str]) -> list[str]:
    """The names (each already quoted) a wrong one may have meant; nothing for none."""
    return ["  Did you mean " + " or ".join(names) + "?"] if names else []


def broken_dependent(dependent: str, broken: str) -> str:
    """Test ``dependent`` requires ``broken``, which cannot run."""
    return (f"depgraph: {dependent} depends on {broken}, which cannot run because of a "
            "dependency error reported above")


def inconsistency(stuck: Sequence[str]) -> str:
    """The graph left after validation still has a cycle through the tests ``stuck``: a bug
    of ours, which the user can only report."""
    shown = "\n".join(f"  {nodeid}" for nodeid in stuck[:CYCLE_SHOW])
    more = f"\n  … {len(stuck) - CYCLE_SHOW:,} more" if len(stuck) > CYCLE_SHOW else ""
    return (
        "depgraph: internal error: the order of these tests could not be found after the\n"
        "dependency cycles were checked (an inconsistency of pytest-depgraph, not of your\n"
        f"declarations); they and the tests that require them do not run:\n{shown}{more}\n"
        "  Please report it to the pytest-depgraph maintainers with the declarations of these\n"
        "  tests and the pytest-depgraph version; the other tests still run with\n"
        "  --continue-on-collection-errors."
    )


# -- the peer plugins' markers ---------------------------------------------------------------


def peer_argument(where: str, site: str, what: str, nodeid: str) -> str:
    """A peer plugin's marker or call (``site``) whose argument is wrong (``what``)."""
    return f"depgraph: {where}: {site}: {what} (declared for {nodeid}{{more}})."


def not_names(argument: str, value: str) -> str:
    """``argument=`` (pytest-dependency's ``depends``) is not a list of test names."""
    return f"{argument}={value} is not a list of test names"


def not_a_scope(value: str, scopes: Sequence[str]) -> str:
    """pytest-dependency's ``scope=`` is none of ``scopes``."""
    return f"scope={value} is not one of {', '.join(map(repr, scopes))}"


def dependency_skip(test: str, name: str) -> str:
    """pytest-dependency's own reason for skipping ``test`` that depends on ``name``."""
    return f"{test} depends on {name}"


def unknown_dependency(
    where: str, site: str, name: str, scope: str, nodeid: str, outside: bool, hints: list[str]
) -> str:
    """``name`` in pytest-dependency's marker or ``depends()`` call names no test it knows in
    ``scope`` (``outside``: the declaring test is in no such scope)."""
    lines = [
        f"depgraph: {where}: {site}: {name!r} names no test known to pytest-dependency in "
        f"{scope} scope (declared for {nodeid}{{more}})."
    ]
    if outside:
        lines.append(f"  {nodeid} is not inside a {scope}; use scope='module' or "
                     "scope='session'.")
    lines += hints
    lines.append(
        "  A test can be depended on only if it carries @pytest.mark.dependency (or "
        "automark_dependency is set); its name is its name= or its node id relative to the "
        "scope: 'test_x' or 'TestClass::test_x' in a module, the full node id "
        "'tests/test_mod.py::test_x' in session or package scope."
    )
    return "\n".join(lines)


def unmarked_dependency(nodeid: str) -> str:
    """Test ``nodeid`` has no ``dependency`` marker, so pytest-dependency does not know it."""
    return (f"  {nodeid} has no @pytest.mark.dependency: add @pytest.mark.dependency() to "
            "it.")


def known_as(nodeid: str, name: str) -> str:
    """Test ``nodeid`` is known to pytest-dependency by its ``name=``."""
    return f"  {nodeid} is known as {name!r} (its name=)."


def parametrized_name(name: str, instance: str | None) -> str:
    """``name`` names a parametrized test, whose instances pytest-dependency names one by
    one (``instance``: one of them)."""
    return f"  {name!r} is parametrized: name its instances, e.g. {instance!r}."


def order_not_names(keyword: str, value: str, nodeid: str, where: str, marker: str) -> str:
    """pytest-order's ``before=``/``after=`` (``keyword``) is not a name or a list of names."""
    return (f"depgraph: {where}: @pytest.mark.{marker}({keyword}={value}): {keyword}= takes a "
            f"test name or a list of test names (declared for {nodeid}{{more}}).")


def unknown_label(
    keyword: str, label: str, nodeid: str, where: str, marker: str, close: Sequence[str]
) -> str:
    """pytest-order's ``label`` matches no collected test (``close``: the names it may
    mean)."""
    hint = "  Did you mean " + " or ".join(map(repr, close)) + "?\n" if close else ""
    return (
        f"depgraph: {where}: @pytest.mark.{marker}({keyword}={label!r}): "
        f"{label!r} matches no collected test (declared for {nodeid}{{more}}).\n"
        f"{hint}"
        "  pytest-order names a test by the end of its node id ('test_name', "
        "'TestClass::test_name', 'test_module.py::test_name') within the test's module or a "
        "parent directory."
    )


def stale_warning(message: str, where: str, plugin: str, skips: bool) -> str:
    """The warning for a stale name in a peer plugin's marker (``message``: the error
    ``--depgraph-strict`` makes of it): that plugin's own treatment of it, without the place,
    which pytest shows beside the warning."""
    treatment = (f"The test is skipped, as {plugin} skips it" if skips else
                 f"The name is ignored, as {plugin} ignores it")
    lines = (message.replace("{more}", "").replace(f"depgraph: {where}: ", "depgraph: ", 1)
             .splitlines())
    text = "\n".join([lines[0], f"  {treatment} (--depgraph-strict makes this an error).",
                      *lines[1:]])
    return text.rstrip()


# -- collection warnings ---------------------------------------------------------------------


def imported_target(name: str, defined_in: str, module: str, nodeid: str, original: str) -> str:
    """Test function ``name`` of ``defined_in``, imported into ``module``, is collected there
    too (as ``nodeid``; ``original``: its own node id)."""
    return (
        f"depgraph: {name} is a test of {defined_in} imported into {module}, so pytest "
        f"collects it here too ({nodeid}) and runs it twice. Name it with a node "
        f"id instead ({original!r}), or import its module."
    )
