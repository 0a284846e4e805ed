"""Dependencies declared for other plugins (pytest-dependency, pytest-order), as graph sources.

pytest-dependency's ``@pytest.mark.dependency(name=, depends=, scope=)`` becomes *requires*
edges, resolved with its naming rules: a test is known by name only when its closest
``dependency`` marker exists (or ``automark_dependency`` is set), under its ``name=`` or its node
id relative to the scope (session and package: the node id; module: ``[Class::]test[params]``;
class: ``test[params]``). Literal runtime calls ``depends(request, ["name", ...])`` in a test or
in its fixtures are read from the source and become *requires* edges too.

pytest-order's ``@pytest.mark.order(after=..., before=...)`` becomes *after* edges (``before``
reversed), resolved as pytest-order does: a label is the end of a node id, matched within the
declaring test's module and its parent directories.

What pytest-dependency's own skip check needs on xdist workers is done at run time by
:mod:`pytest_depgraph.run.dependency_runtime`.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import linecache
import re
import textwrap
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

from pytest_depgraph.collect.context import Context, Source
from pytest_depgraph.collect.locate import first_line
from pytest_depgraph.collect.markers import Declaration
from pytest_depgraph.core import safe
from pytest_depgraph.core.graph import Kind, Origin

DEPENDENCY = "dependency"
ORDER = "order"
DEPENDENCY_HELP = (
    "dependency(name=None, depends=[], scope='module'): pytest-dependency's marker; "
    "pytest-depgraph runs this test after the tests it depends on and skips it unless they "
    "passed (pytest-dependency itself is not installed)."
)
ORDER_HELP = (
    "order(index=None, before=None, after=None): pytest-order's marker; pytest-depgraph runs "
    "this test after the tests in after= and before the tests in before= (pytest-order itself "
    "is not installed)."
)
SCOPES = ("session", "package", "module", "class")
#: origin kind (and edge-count key) of the edges between pytest-order's ordinal groups: they
#: order, they do not make tests one group (shards ignore them)
ORDINAL = "ordinal"

#: pytest-order's words for positions
_ORDER_WORDS = {
    "first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "sixth": 5, "seventh": 6,
    "eighth": 7, "last": -1, "second_to_last": -2, "third_to_last": -3, "fourth_to_last": -4,
    "fifth_to_last": -5, "sixth_to_last": -6, "seventh_to_last": -7, "eighth_to_last": -8,
}


@dataclass(frozen=True)
class Settings:
    """pytest-dependency's options, when it is installed, and ``--depgraph-strict``."""

    automark: bool = False
    ignore_unknown: bool = False
    #: ``--depgraph-strict``: a name that matches no test is an error, not a warning
    strict: bool = False


#: the session's :class:`Settings`, stored by :func:`register`
SETTINGS_KEY = pytest.StashKey[Settings]()


def settings(config: pytest.Config) -> Settings:
    """The settings :func:`register` stored (the defaults before it ran)."""
    return config.stash.get(SETTINGS_KEY, Settings())


# -- graph sources ---------------------------------------------------------------------------


def reader(builder: Context, settings: Settings) -> _Compat | None:
    """What reads ``dependency`` and ``order`` markers for ``builder``; None when the session
    has neither (the common case, which then costs one pass over the marks)."""
    compat = _Compat(builder, settings)
    return compat if compat.has_dependency or compat.has_order else None


def scope_key(node: Any, scope: str) -> str | None:
    """Node id of the node that holds pytest-dependency's results for ``node`` in ``scope``
    (``node`` is a test, or the module or class of a fixture's ``request.node``)."""
    if scope == "session":
        return ""
    cls = {"package": pytest.Package, "module": pytest.Module, "class": pytest.Class}[scope]
    parent = node.getparent(cls) if hasattr(node, "getparent") else None
    return None if parent is None else str(parent.nodeid)


def default_name(nodeid: str, scope: str) -> str | None:
    """pytest-dependency's name of an unnamed test in ``scope`` (None: not in such a scope)."""
    if scope in ("session", "package"):
        return nodeid
    parts = nodeid.split("::", 2 if scope == "class" else 1)
    wanted = 3 if scope == "class" else 2
    return parts[-1] if len(parts) == wanted else None


class DependencyNames:
    """pytest-dependency's names: (scope, scope node id, name) -> tests, built in one pass."""

    def __init__(self, items: Sequence[pytest.Item], automark: bool) -> None:
        self.items = items
        self._by_name: dict[tuple[str, str, str], list[int]] = {}
        #: the ``name=`` of every named test, by position (for "is known as" hints)
        self.named: dict[int, str] = {}
        for position, item in enumerate(items):
            mark = item.get_closest_marker(DEPENDENCY)
            if mark is None and not automark:
                continue
            name = _name(mark.kwargs.get("name")) if mark is not None else ""
            if name:
                self.named[position] = name
            for scope in SCOPES:
                key = scope_key(item, scope)
                known = name if name else default_name(item.nodeid, scope)
                if key is not None and known is not None:
                    self._by_name.setdefault((scope, key, known), []).append(position)

    def lookup(self, scope: str, key: str, name: str) -> list[int]:
        return self._by_name.get((scope, key, name), [])

    def names_in(self, scope: str, key: str) -> list[str]:
        return [n for (s, k, n) in self._by_name if s == scope and k == key]


@dataclass
class _Compat:
    """Per-builder indexes for the other plugins' markers, made once so resolution is linear."""

    builder: Context
    settings: Settings
    has_dependency: bool = False
    has_order: bool = False
    _names: DependencyNames | None = None
    _by_last: dict[str, list[int]] = field(default_factory=dict)
    _by_class: dict[str, list[int]] = field(default_factory=dict)
    #: position -> (declaring position, where, label): pytest-order ``before=`` aimed at it
    _before_of: dict[int, list[tuple[int, str, str]]] = field(default_factory=dict)
    #: position -> pytest-order's index of the test, with the node and mark that give it
    _ordinals: dict[int, tuple[int, Any, pytest.Mark]] = field(default_factory=dict)
    #: declaring position -> problems of its ``before=`` labels: (message, where, label or
    #: None for a bad type)
    _before_problems: dict[int, list[tuple[str, str, object]]] = field(default_factory=dict)
    #: (where, name) of the stale names already warned about (one warning per marker and name)
    _warned: set[tuple[str, str]] = field(default_factory=set)
    _where: dict[tuple[int, str], str] = field(default_factory=dict)
    _calls: dict[int, tuple[list[_RuntimeCall], list[str]]] = field(default_factory=dict)
    #: position -> ``file:line`` of each ``depends()`` call whose names cannot be read (computed
    #: at run time, or passed through a helper) in the test or its fixtures
    computed: dict[int, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        marked = _marker_names(self.builder.collected)
        self.has_dependency = DEPENDENCY in marked or self.settings.automark
        self.has_order = ORDER in marked
        if self.has_order:
            self._index_order()

    def sources(self, position: int) -> Iterator[Source]:
        """Sources from ``dependency`` and ``order`` markers on the item at ``position``."""
        if self.has_dependency:
            yield from self.dependency_sources(position)
        if self.has_order:
            yield from self.order_sources(position)

    # -- pytest-dependency -------------------------------------------------------------------

    @property
    def names(self) -> DependencyNames:
        if self._names is None:
            self._names = DependencyNames(self.builder.collected, self.settings.automark)
        return self._names

    def dependency_sources(self, position: int) -> Iterator[Source]:

        item = self.builder.collected[position]
        found = next(item.iter_markers_with_node(name=DEPENDENCY), None)
        if found is not None:
            node, mark = found
            where = self.where(node, mark)
            label = f"@pytest.mark.{DEPENDENCY}"
            site = label  # the message leads with the place: said once
            depends = mark.kwargs.get("depends")
            scope = mark.kwargs.get("scope", "module")
            inherited = not isinstance(node, pytest.Item)
            for name, resolved in self._resolve_names(position, depends, scope, where, site):
                yield Source(
                    Declaration((name,), Kind.REQUIRES, where), Origin(DEPENDENCY, where), label,
                    inherited, resolved,
                )
        for call in self._runtime_calls(position):
            label = f"depends(request, {list(call.names)!r})"
            site = label
            for name, resolved in self._resolve_names(
                position, call.names, call.scope, call.where, site
            ):
                yield Source(
                    Declaration((name,), Kind.REQUIRES, call.where),
                    Origin(DEPENDENCY, call.where), label, False, resolved,
                )

    def _resolve_names(
        self, position: int, depends: object, scope: object, where: str, site: str
    ) -> Iterator[tuple[str, tuple[int, ...]]]:
        item = self.builder.collected[position]
        # marker arguments are user objects: read as plain strings and lists, never compared
        # or printed through their own methods
        names = _depends_names(depends)
        scope = safe.exact_str(scope) if safe.is_str(scope) else scope
        if not (safe.is_str(scope) and scope in SCOPES) or names is None:
            what = (f"depends={safe.describe(depends)} is not a list of test names"
                    if names is None else
                    f"scope={safe.describe(scope)} is not one of {', '.join(map(repr, SCOPES))}")
            self._report(position, f"depgraph: {where}: {site}: {what} "
                         f"(declared for {item.nodeid}{{more}}).")
            return
        key = scope_key(item, str(scope))
        for name in names:
            matches = self.names.lookup(str(scope), key, name) if key is not None else []
            if matches:
                yield name, tuple(matches)
            elif not self.settings.ignore_unknown:
                message = self._unknown_name(position, name, str(scope), key, where, site)
                # a marker skips its test, as pytest-dependency does; a depends() call skips
                # it at run time by itself
                skip = (f"{item.name} depends on {name}"
                        if site.startswith(f"@pytest.mark.{DEPENDENCY}") else None)
                self._stale(position, message, where, name, "pytest-dependency", skip)

    def _unknown_name(
        self, position: int, name: str, scope: str, key: str | None, where: str, site: str
    ) -> str:
        item = self.builder.collected[position]
        lines = [
            f"depgraph: {where}: {site}: {name!r} names no test known to pytest-dependency in "
            f"{scope} scope (declared for {item.nodeid}{{more}})."
        ]
        if key is None:
            lines.append(f"  {item.nodeid} is not inside a {scope}; use scope='module' or "
                         "scope='session'.")
        else:
            lines.extend(self._hints(position, name, scope, key))
        lines.append(
            "  A test can be depended on only if it carries @pytest.mark.dependency (or "
            "automark_dependency is set); its name is its name= or its node id relative to the "
            "scope: 'test_x' or 'TestClass::test_x' in a module, the full node id "
            "'tests/test_mod.py::test_x' in session or package scope."
        )
        return "\n".join(lines)

    def _stale(
        self, position: int, message: str, where: str, name: str, plugin: str,
        skip: str | None = None,
    ) -> None:
        """A name in another plugin's marker that matches no test: with ``--depgraph-strict`` a
        collection error; else that plugin's own treatment -- a warning at the marker, then the
        marker ignored (pytest-order) or the dependent skipped with ``skip`` as its reason
        (pytest-dependency) -- so that a suite with a stale name still runs unedited."""
        if self.settings.strict:
            self._report(position, message)
            return
        if skip is not None:
            item = self.builder.collected[position]
            if not any(m.kwargs.get("reason") == skip for m in item.iter_markers("skip")):
                item.add_marker(pytest.mark.skip(reason=skip))
        if (where, name) in self._warned:
            return
        self._warned.add((where, name))
        treatment = (f"The test is skipped, as {plugin} skips it" if skip is not None else
                     f"The name is ignored, as {plugin} ignores it")
        # pytest shows the marker's file:line beside the warning: the message need not
        lines = (message.replace("{more}", "").replace(f"depgraph: {where}: ", "depgraph: ", 1)
                 .splitlines())
        text = "\n".join([lines[0], f"  {treatment} (--depgraph-strict makes this an error).",
                          *lines[1:]])
        try:
            _warn_at(text.rstrip(), self.builder.rootpath, where)
        except Warning:  # -W error: the warning is an error, reported as one
            self._report(position, message)

    def _hints(self, position: int, name: str, scope: str, key: str) -> list[str]:
        item = self.builder.collected[position]
        names = self.names
        hints = []
        # the node id (rule of depends_on) names an existing test that pytest-dependency cannot
        for match in self.builder.index.resolve(name, item.nodeid)[:3]:
            other = self.builder.collected[match]
            if other.get_closest_marker(DEPENDENCY) is None and not self.settings.automark:
                hints.append(f"  {other.nodeid} has no @pytest.mark.dependency: add "
                             "@pytest.mark.dependency() to it.")
            elif match in names.named:
                hints.append(f"  {other.nodeid} is known as {names.named[match]!r} (its name=).")
            elif "[" in other.nodeid and "[" not in name:
                hints.append(f"  {name!r} is parametrized: name its instances, e.g. "
                             f"{default_name(other.nodeid, scope)!r}.")
                break
        if not hints:
            close = difflib.get_close_matches(name, names.names_in(scope, key), n=3, cutoff=0.6)
            if close:
                hints.append("  Did you mean " + " or ".join(map(repr, close)) + "?")
        return hints

    def _runtime_calls(self, position: int) -> list[_RuntimeCall]:
        """Literal ``depends(request, [...])`` calls in the test and the fixtures it uses; the
        sites of the other calls go to :attr:`computed`."""
        item = self.builder.collected[position]
        found: list[_RuntimeCall] = []
        functions: list[object] = [getattr(item, "function", None)]
        info = getattr(item, "_fixtureinfo", None)
        if info is not None:
            for name in getattr(item, "fixturenames", ()):
                functions.extend(getattr(d, "func", None)
                                 for d in info.name2fixturedefs.get(name, ()))
        computed: list[str] = []
        for function in functions:
            if function is None:
                continue
            cached = self._calls.get(id(function))
            if cached is None:
                cached = self._calls[id(function)] = _depends_calls(
                    function, self.builder.relative
                )
            found.extend(cached[0])
            computed.extend(cached[1])
        if computed:
            self.computed[position] = computed
        return found

    # -- pytest-order ------------------------------------------------------------------------

    def _index_order(self) -> None:
        collected = self.builder.collected
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

    def order_sources(self, position: int) -> Iterator[Source]:

        item = self.builder.collected[position]
        for message, where, label in self._before_problems.get(position, ()):
            if isinstance(label, str):
                self._stale(position, message, where, label, "pytest-order")
            else:
                self._report(position, message)
        for node, mark in item.iter_markers_with_node(name=ORDER):
            after = mark.kwargs.get("after")
            labels = _labels(after)
            where = self.where(node, mark)
            if labels is None:
                self._report(position, f"depgraph: {where}: @pytest.mark.{ORDER}(after="
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
                    self._stale(position, self._unknown_label(position, "after", label, where),
                                where, label, "pytest-order")
                elif not found:
                    self._report(position, self._unknown_label(position, "after", label, where))
        for declarer, where, label in self._before_of.get(position, ()):
            yield Source(
                Declaration((label,), Kind.AFTER, where), Origin(ORDER, where),
                f"@pytest.mark.{ORDER}(before={label!r}) on "
                f"{self.builder.collected[declarer].nodeid}",
                False, (declarer,),
            )

    def _order_matches(self, label: str, position: int, node: object) -> list[int]:
        """pytest-order's ``items_from_label`` and ``items_from_class_label``."""
        if not safe.is_str(label):
            return []
        item = self.builder.collected[position]
        item_id = item.nodeid
        is_class_mark = getattr(item, "cls", None) is not None and not isinstance(
            node, pytest.Item
        )
        last = label.split("/")[-1].split("::")[-1]
        matches = []
        for candidate in self._by_last.get(last, ()):
            nodeid = self.builder.collected[candidate].nodeid
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
                nodeid = self.builder.collected[candidate].nodeid
                start = nodeid[: nodeid.rindex("::") - len(label)]
                if item_id.startswith(start):
                    matches.append(candidate)
        return matches

    def _unknown_label(self, position: int, keyword: str, label: object, where: str) -> str:
        item = self.builder.collected[position]
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

    # -- shared ------------------------------------------------------------------------------

    def _report(self, position: int, message: str) -> None:
        item = self.builder.collected[position]
        problem = self.builder.problem(message, report_nodeid=item.nodeid.split("::", 1)[0])
        problem.items.add(position)

    def where(self, node: Any, mark: pytest.Mark) -> str:
        """``file:line`` of the decorator, ``pytestmark`` or ``pytest.param`` with ``mark``."""
        path = getattr(node, "path", None)
        if path is None:
            return str(node.nodeid)
        obj = getattr(node, "obj", None)
        key = (id(obj), mark.name)
        if key not in self._where:
            self._where[key] = self._find_where(node, obj, str(path), mark.name)
        return self._where[key]

    def _find_where(self, node: object, obj: object, filename: str, name: str) -> str:
        rel = self.builder.relative(filename)
        lines = linecache.getlines(filename)
        if isinstance(node, pytest.Module):
            for number, text in enumerate(lines, 1):
                if re.match(r"\s*pytestmark\b", text):
                    return f"{rel}:{number}"
            return rel
        first = first_line(obj)
        if not first:
            return rel
        for number in range(first, min(first + 200, len(lines)) + 1):
            text = lines[number - 1]
            if re.match(r"\s*(async\s+def|def|class)\s", text):
                break
            if f"mark.{name}" in text:
                return f"{rel}:{number}"
        return f"{rel}:{first}"


def _warn_at(message: str, rootpath: Path, where: str) -> None:
    """Warn at ``where`` (``file:line`` relative to ``rootpath``): pytest's warnings summary
    shows the marker's place, not ours."""
    filename, _, line = where.rpartition(":")
    if not line.isdigit():
        filename, line = where, "0"
    warnings.warn_explicit(
        pytest.PytestWarning(message), pytest.PytestWarning, str(rootpath / filename),
        int(line),
    )


def _marker_names(items: Iterable[pytest.Item]) -> set[str]:
    """Names of every mark on the items and their parents; each node is looked at once."""
    names: set[str] = set()
    seen: set[int] = set()
    for item in items:
        node: Any = item
        while node is not None and id(node) not in seen:
            seen.add(id(node))
            for mark in node.own_markers:
                names.add(mark.name)
            node = node.parent
    return names


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


def _name(value: object) -> str:
    """A pytest-dependency ``name=`` as a plain string ("" for none)."""
    if value is None:
        return ""
    if safe.is_str(value):
        return safe.exact_str(value)
    return safe.describe(value)


def _depends_names(value: object) -> list[str] | None:
    """pytest-dependency's ``depends=`` as plain strings; None when it is not a list of names.
    A set's names are sorted: its order differs between processes."""
    if value is None:
        return []
    if safe.is_str(value):
        return [safe.exact_str(value)] if value else []
    kind = type(value)
    if issubclass(kind, (list, tuple)):
        return [_name(v) for v in value]  # type: ignore[attr-defined]
    if issubclass(kind, (set, frozenset)):
        return sorted(_name(v) for v in value)  # type: ignore[attr-defined]
    return None


@dataclass(frozen=True)
class _RuntimeCall:
    """A ``depends(request, [literal names], scope=...)`` call found in a function's source."""

    names: tuple[str, ...]
    scope: str
    where: str


def computed_sites(compat: _Compat | None) -> dict[int, list[str]]:
    """Position -> sites of the ``depends()`` calls whose names cannot be read, found while
    the builder read the dependency sources (nothing when pytest-dependency is not used)."""
    return compat.computed if compat is not None else {}


def _depends_calls(
    function: object, relative: Callable[[str], str]
) -> tuple[list[_RuntimeCall], list[str]]:
    """Calls of pytest-dependency's ``depends`` in ``function``: those with literal names, and
    the sites of the others -- names computed at run time, or any ``depends`` call in a helper
    function of the same globals that ``function`` calls (its names are the helper's
    arguments). O(size of the source); a function that names neither costs a set lookup per
    global name it uses."""
    # every global a test names is read here: a werkzeug LocalProxy (flask.session) raises
    # RuntimeError on any attribute outside a request, so only real functions are looked into
    function = _unwrapped(function)
    if not safe.is_function(function):
        return [], []
    code = function.__code__  # type: ignore[attr-defined]
    calls: list[_RuntimeCall] = []
    computed: list[str] = []
    if "depends" in code.co_names:
        calls, computed = _parse_depends_calls(function, code, relative)
    namespace = function.__globals__  # type: ignore[attr-defined]
    for name in code.co_names:
        helper = namespace.get(name)
        if not safe.is_function(helper) or helper is function:
            continue
        helper_code = helper.__code__
        if (
            "depends" not in helper_code.co_names
            or safe.text_attr(helper, "__module__").startswith("pytest_dependency")
        ):
            continue
        literal, other = _parse_depends_calls(helper, helper_code, relative)
        computed.extend([call.where for call in literal] + other)
    return calls, computed


def _unwrapped(function: object) -> object:
    """``inspect.unwrap`` that stops at anything strange (a proxy, a loop of wrappers)."""
    for _ in range(100):
        inner = safe.attr(function, "__wrapped__")
        if inner is None or inner is function:
            break
        function = inner
    return function


def _parse_depends_calls(
    function: object, code: Any, relative: Callable[[str], str]
) -> tuple[list[_RuntimeCall], list[str]]:
    try:
        lines, first = inspect.getsourcelines(function)  # type: ignore[arg-type]
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except Exception:  # no source, or source that does not parse alone
        return [], []
    calls = []
    computed = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or len(node.args) < 2:
            continue
        callee = node.func
        called = callee.id if isinstance(callee, ast.Name) else getattr(callee, "attr", "")
        if called != "depends":
            continue
        names = _literal_strings(node.args[1])
        scope_node = node.args[2] if len(node.args) > 2 else next(
            (k.value for k in node.keywords if k.arg == "scope"), None
        )
        scope = "module" if scope_node is None else _literal_string(scope_node)
        where = relative(f"{code.co_filename}:{first + node.lineno - 1}")
        if names is None or scope is None:
            computed.append(where)  # names computed at run time: nothing to read here
            continue
        calls.append(_RuntimeCall(tuple(names), scope, where))
    return calls, computed


def _literal_strings(node: ast.expr) -> list[str] | None:
    if isinstance(node, (ast.List, ast.Tuple)):
        values = [_literal_string(e) for e in node.elts]
        return None if any(v is None for v in values) else [v for v in values if v is not None]
    return None


def _literal_string(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


# -- registration ------------------------------------------------------------------------


def loaded_plugin(config: pytest.Config, module: str) -> Any:
    """The loaded plugin module called ``module`` (or one of its submodules), or None."""
    for plugin in config.pluginmanager.get_plugins():
        name = getattr(plugin, "__name__", "")
        if isinstance(name, str) and (name == module or name.startswith(module + ".")):
            return plugin
    return None


def register(config: pytest.Config, strict: bool = False) -> None:
    """Register the other plugins' markers when they are absent, and store the
    :class:`Settings`; ``strict``: names that match no test are errors (``--depgraph-strict``).
    """
    dependency = loaded_plugin(config, "pytest_dependency")
    if dependency is None:
        config.addinivalue_line("markers", DEPENDENCY_HELP)
        config.stash[SETTINGS_KEY] = Settings(strict=strict)
    else:
        config.stash[SETTINGS_KEY] = Settings(
            automark=bool(_option(lambda: config.getini("automark_dependency"))),
            ignore_unknown=bool(
                _option(lambda: config.getoption("--ignore-unknown-dependency"))
            ),
            strict=strict,
        )
    if loaded_plugin(config, "pytest_order") is None:
        config.addinivalue_line("markers", ORDER_HELP)
        config.pluginmanager.register(OrderIndex(), "depgraph-order-index")


def _option(read: Callable[[], object]) -> object:
    try:
        return read()
    except (ValueError, KeyError, AttributeError):
        return False


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


#: consecutive ordinal groups get every pair as an edge up to this many edges per test of the
#: two groups; beyond it the smaller group is chained and only its end is tied to the other
_PAIRS_PER_TEST = 8


def ordinal_edges(
    compat: _Compat | None, run: Sequence[int], order: Sequence[int], broken: Any, graph: Any
) -> int:
    """Add AFTER edges that keep pytest-order's ordinal groups apart when tests run at once.

    Every test of an ordinal group (``order(1)``, ``"first"``, the unordered tests,
    ``"last"``...) waits for every test of the group before it, as the serial order already
    has it; a pair that the serial ``order`` puts the other way round (an edge contradicts the
    index) gets no edge. Only consecutive groups are tied: |A|*|B| edges, linear for the usual
    few ordered tests beside many unordered ones. When that product is large the smaller
    group is chained in serial order, and only its last (or first) test is tied to the other
    group: |A|+|B| edges, at the price of running that group one test at a time.
    ``run[n]`` is the builder position of graph node ``n``; returns the number of edges added.
    """
    if compat is None or not compat.has_order:
        return 0
    keyed: dict[tuple[int, int], list[int]] = {}
    #: the origin of the edges of each ordered test: its order marker
    origin_of: dict[int, Origin] = {}
    origins: dict[str, Origin] = {}
    ordinals = compat._ordinals
    for n, position in enumerate(run):
        if n in broken:
            continue
        found = ordinals.get(position)
        if found is None:
            keyed.setdefault((1, 0), []).append(n)
            continue
        index, node, mark = found
        keyed.setdefault(_ordinal_key(index), []).append(n)
        where = compat.where(node, mark)
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


class OrderIndex:
    """pytest-order's ``order(index)`` sorting, for suites run without pytest-order.

    Tests with an index >= 0 come first, by index; then the tests without one; then those with
    a negative index (``-1``/``"last"`` at the very end). The sort is stable, and it runs
    before the graph is built, so edges win where they contradict it.
    """

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        if ORDER not in _marker_names(items):
            return
        indexes = [order_index(item) for item in items]
        keyed = sorted(range(len(items)), key=lambda i: _ordinal_key(indexes[i]))
        items[:] = [items[i] for i in keyed]
