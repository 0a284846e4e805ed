"""pytest-dependency's markers and ``depends()`` calls as graph sources.

``@pytest.mark.dependency(name=, depends=, scope=)`` becomes *requires* edges, resolved with
pytest-dependency's naming rules: a test is known by name only when its closest ``dependency``
marker exists (or ``automark_dependency`` is set), under its ``name=`` or its node id relative
to the scope (session and package: the node id; module: ``[Class::]test[params]``; class:
``test[params]``). Literal runtime calls ``depends(request, ["name", ...])`` in a test or in
its fixtures are read from the source and become *requires* edges too; the sites of the calls
whose names cannot be read are claims of their test, for the worker pins
(:mod:`~pytest_depgraph.collect.pinning`).

What pytest-dependency's own skip check needs on xdist workers is done at run time by
:mod:`pytest_depgraph.run.xdist.dependency_runtime`.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Iterator, Sequence
from typing import Any, Callable, NamedTuple

import pytest

from pytest_depgraph.collect import problems, safe
from pytest_depgraph.collect.context import Context, Source
from pytest_depgraph.collect.dependency_markers import Declaration
from pytest_depgraph.collect.origins import OriginKind
from pytest_depgraph.collect.peer_plugins import DEPENDENCY, Marks
from pytest_depgraph.collect.readers.base import Claim, ClaimKind, Found, Place
from pytest_depgraph.collect.readers.peer_reader import PeerReader
from pytest_depgraph.core.graph.storage import Kind, Origin
from pytest_depgraph.hosts.pytest import (
    fixture_closure,
    fixture_function,
    fixture_info,
    fixtures_by_name,
)

SCOPES = ("session", "package", "module", "class")


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


class DependencyReader(PeerReader):
    """Reads ``dependency`` markers and ``depends()`` calls; its name index is made once."""

    calls = frozenset({"dependency"})
    kinds = frozenset({OriginKind.DEPENDENCY})

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self._names: DependencyNames | None = None
        self._calls: dict[int, tuple[list[_RuntimeCall], list[str]]] = {}

    def declares(self, marks: Marks) -> bool:
        return DEPENDENCY in marks or self.settings.automark

    @property
    def names(self) -> DependencyNames:
        if self._names is None:
            self._names = DependencyNames(self.context.collected, self.settings.automark)
        return self._names

    def read(self, place: Place, position: int) -> Found:
        """What the ``dependency`` marker and the ``depends()`` calls of one test declare; the
        sites of the calls whose names cannot be read (computed at run time, or passed
        through a helper), in the test or its fixtures, are its claims."""
        calls, computed = self._runtime_calls(position)
        return Found(list(self._sources(position, calls)),
                     claims=[Claim(ClaimKind.COMPUTED_NAMES, where) for where in computed])

    def _sources(self, position: int, calls: list[_RuntimeCall]) -> Iterator[Source]:
        item = self.context.collected[position]
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
                    Declaration((name,), Kind.REQUIRES, where),
                    Origin(OriginKind.DEPENDENCY, where), label, inherited, resolved,
                )
        for call in calls:
            label = f"depends(request, {list(call.names)!r})"
            site = label
            for name, resolved in self._resolve_names(
                position, call.names, call.scope, call.where, site
            ):
                yield Source(
                    Declaration((name,), Kind.REQUIRES, call.where),
                    Origin(OriginKind.DEPENDENCY, call.where), label, False, resolved,
                )

    def _resolve_names(
        self, position: int, depends: object, scope: object, where: str, site: str
    ) -> Iterator[tuple[str, tuple[int, ...]]]:
        item = self.context.collected[position]
        # marker arguments are user objects: read as plain strings and lists, never compared
        # or printed through their own methods
        names = _depends_names(depends)
        scope = safe.exact_str(scope) if safe.is_str(scope) else scope
        if not (safe.is_str(scope) and scope in SCOPES) or names is None:
            what = (problems.not_names("depends", safe.describe(depends)) if names is None
                    else problems.not_a_scope(safe.describe(scope), SCOPES))
            self.report(position, problems.peer_argument(where, site, what, item.nodeid))
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
                skip = (problems.dependency_skip(item.name, name)
                        if site.startswith(f"@pytest.mark.{DEPENDENCY}") else None)
                self.stale(position, message, where, name, "pytest-dependency", skip)

    def _unknown_name(
        self, position: int, name: str, scope: str, key: str | None, where: str, site: str
    ) -> str:
        nodeid = self.context.nodeids[position]
        hints = [] if key is None else self._hints(position, name, scope, key)
        return problems.unknown_dependency(where, site, name, scope, nodeid, key is None, hints)

    def _hints(self, position: int, name: str, scope: str, key: str) -> list[str]:
        item = self.context.collected[position]
        names = self.names
        hints = []
        # the node id (rule of depends_on) names an existing test that pytest-dependency cannot
        for match in self.context.index.resolve(name, item.nodeid)[:3]:
            other = self.context.collected[match]
            if other.get_closest_marker(DEPENDENCY) is None and not self.settings.automark:
                hints.append(problems.unmarked_dependency(other.nodeid))
            elif match in names.named:
                hints.append(problems.known_as(other.nodeid, names.named[match]))
            elif "[" in other.nodeid and "[" not in name:
                hints.append(problems.parametrized_name(name, default_name(other.nodeid, scope)))
                break
        if not hints:
            import difflib  # only for an error

            close = difflib.get_close_matches(name, names.names_in(scope, key), n=3, cutoff=0.6)
            hints += problems.did_you_mean([repr(c) for c in close])
        return hints

    def _runtime_calls(self, position: int) -> tuple[list[_RuntimeCall], list[str]]:
        """Literal ``depends(request, [...])`` calls in the test and the fixtures it uses, and
        the sites of the other calls."""
        item = self.context.collected[position]
        found: list[_RuntimeCall] = []
        functions: list[object] = [getattr(item, "function", None)]
        info = fixture_info(item)
        if info is not None:
            by_name = fixtures_by_name(info)
            for name in fixture_closure(info):
                functions.extend(fixture_function(d) for d in by_name.get(name, ()))
        computed: list[str] = []
        for function in functions:
            if function is None:
                continue
            cached = self._calls.get(id(function))
            if cached is None:
                cached = self._calls[id(function)] = _depends_calls(
                    function, self.context.relative
                )
            found.extend(cached[0])
            computed.extend(cached[1])
        return found, computed


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


class _RuntimeCall(NamedTuple):
    """A ``depends(request, [literal names], scope=...)`` call found in a function's source."""

    names: tuple[str, ...]
    scope: str
    where: str


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
