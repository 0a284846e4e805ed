"""Dependency declarations: the ``depends_on`` marker's arguments and the fixture decorator.

A declaration is what one ``@pytest.mark.depends_on(...)`` or one ``@depends_on(...)`` on a
fixture says: some targets, an edge kind, and where it was written. Validation happens when the
graph is built, so a bad declaration becomes a collection error that names the test using it,
not an import-time traceback.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Literal, NamedTuple, TypeVar

from pytest_depgraph.collect import problems, safe
from pytest_depgraph.collect.process_registry import REGISTRY
from pytest_depgraph.core.graph.storage import Kind
from pytest_depgraph.hosts.pytest import (
    fixture_name,
    install_mark,
    uninstall_mark,
)

MARKER = "depends_on"
#: attribute holding the declarations made with :func:`depends_on` on a function or fixture
ATTRIBUTE = "_depgraph_depends_on"
MARKER_HELP = (
    "depends_on(*targets, on_failure='skip'): run this test after the target tests "
    "(names, node ids, test functions or classes); skip it unless they passed "
    "(on_failure='run': order only). "
    "See the 'Declaring dependencies' page of the pytest-depgraph docs (docs/markers.md)."
)

_ON_FAILURE = {"skip": Kind.REQUIRES, "run": Kind.AFTER}

CLEANUP_MARKER = "cleanup_of"
#: attribute holding the declarations made with :func:`cleanup_of` on a test function or class
CLEANUP_ATTRIBUTE = "_depgraph_cleanup_of"
CLEANUP_HELP = (
    "cleanup_of(*targets): this test cleans up after the target tests (names, node ids, test "
    "functions or classes): it runs after them and after every test that depends on them, "
    "whatever their outcomes, and is skipped when none of them ran. "
    "See the 'Declaring dependencies' page of the pytest-depgraph docs (docs/markers.md)."
)

F = TypeVar("F")


class Declaration(NamedTuple):
    """One ``depends_on`` as written: targets, kind, and where (``file:line``)."""

    targets: tuple[object, ...]
    kind: Kind
    where: str


class RawDeclaration(NamedTuple):
    """A ``depends_on`` call before validation."""

    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    where: str


class DeclarationError(Exception):
    """A ``depends_on`` whose arguments are wrong; the message is for a person."""


def cleanup_of(*targets: object, **unknown: object) -> Callable[[F], F]:
    """Make a test function or class the cleanup of ``targets``, as
    ``@pytest.mark.cleanup_of(*targets)`` would: it runs after each target and after every test
    that depends on one, whatever their outcomes, and is skipped when no target ran. An
    unknown keyword is reported at collection, as the marker's is."""
    frame = sys._getframe(1)
    raw = RawDeclaration(args=targets, kwargs=unknown,
                         where=f"{frame.f_code.co_filename}:{frame.f_lineno}")

    def decorate(obj: F) -> F:
        declare(obj, raw, CLEANUP_ATTRIBUTE)
        return obj

    return decorate


def depends_on(
    *targets: object, on_failure: Literal["skip", "run"] = "skip", **unknown: object
) -> Callable[[F], F]:
    """Declare dependencies on a fixture: every test using the fixture gets them.

    Takes exactly the arguments of ``@pytest.mark.depends_on`` and works above or below
    ``@pytest.fixture``. Targets are resolved as if the marker were written on each test
    whose fixture closure contains the fixture. An unknown keyword is reported at collection,
    as the marker's is.
    """
    frame = sys._getframe(1)
    raw = RawDeclaration(
        args=targets, kwargs={"on_failure": on_failure, **unknown},
        where=f"{frame.f_code.co_filename}:{frame.f_lineno}",
    )

    def decorate(obj: F) -> F:
        declare(obj, raw)
        return obj

    return decorate


def declare(obj: object, raw: RawDeclaration, attribute: str = ATTRIBUTE) -> None:
    """Attach a declaration to a function or fixture (and to what it wraps)."""
    if attribute == CLEANUP_ATTRIBUTE:
        REGISTRY.cleanup_of = True
    else:
        REGISTRY.depends_on_objects.append(obj)
    for target in wrapped_chain(obj):
        existing: list[RawDeclaration] = list(_own_declarations(target, attribute))
        # a bound method cannot take attributes: its function carries them
        with contextlib.suppress(Exception):
            setattr(target, attribute, [*existing, raw])


def _own_declarations(obj: object, attribute: str = ATTRIBUTE) -> list[RawDeclaration]:
    found = safe.attr(obj, attribute)
    if type(found) is not list:
        return []
    return [raw for raw in found if type(raw) is RawDeclaration]


def wrapped_chain(obj: object) -> list[object]:
    """The object and what it wraps (pytest >= 8.4 wraps fixture functions)."""
    chain = [obj]
    seen = {id(obj)}
    while len(chain) < 100:
        inner = safe.attr(chain[-1], "_fixture_function") or safe.attr(chain[-1], "__wrapped__")
        if inner is None or id(inner) in seen:
            break
        seen.add(id(inner))
        chain.append(inner)
    return chain


def declarations_of(obj: object, attribute: str = ATTRIBUTE) -> Sequence[RawDeclaration]:
    """Declarations made with :func:`depends_on` (or, with ``attribute``, :func:`cleanup_of`)
    on a function, fixture, or what it wraps."""
    for target in wrapped_chain(obj):
        found = _own_declarations(target, attribute)
        if found:
            return found
    return ()


def validate(raw: RawDeclaration) -> Declaration:
    """Check a declaration's arguments; DeclarationError says what is wrong and what to do.

    Arguments are user objects of any type: they are read only through :mod:`.safe`, and a
    message describes them without ``repr`` (an address would differ between xdist workers).
    """
    kind = Kind.REQUIRES  # the usual declaration: targets only
    if raw.kwargs:
        unknown = sorted(str(name) for name in raw.kwargs if name != "on_failure")
        if unknown:
            raise DeclarationError(
                problems.unknown_keywords([safe.shorten(n) for n in unknown])
            )
        on_failure = raw.kwargs.get("on_failure", "skip")
        chosen = _ON_FAILURE.get(safe.exact_str(on_failure)) if safe.is_str(on_failure) else None
        if chosen is None:
            raise DeclarationError(problems.bad_on_failure(safe.describe(on_failure)))
        kind = chosen
    if not raw.args:
        raise DeclarationError(problems.NO_TARGET)
    return Declaration(_targets(raw.args), kind, raw.where)


def validate_cleanup(raw: RawDeclaration) -> Declaration:
    """Check a ``cleanup_of`` declaration's arguments, as :func:`validate` does: its edges are
    AFTER edges (the cleanup runs whatever the targets' outcomes)."""
    unknown = sorted(str(name) for name in raw.kwargs)
    if unknown:
        raise DeclarationError(
            problems.cleanup_unknown_keywords([safe.shorten(n) for n in unknown])
        )
    if not raw.args:
        raise DeclarationError(problems.CLEANUP_NO_TARGET)
    return Declaration(targets=_targets(raw.args), kind=Kind.AFTER, where=raw.where)


def _targets(args: tuple[Any, ...]) -> tuple[object, ...]:
    """The targets of a declaration, checked one by one."""
    targets: list[object] = []
    for target in args:
        if issubclass(type(target), str):  # safe.is_str, asked of every target of the session
            text = str.__str__(target)  # safe.exact_str: a subclass's methods are never called
            if not text.strip():
                raise DeclarationError(problems.EMPTY_TARGET)
            targets.append(text)
        elif fixture_name(target) is not None:
            raise DeclarationError(problems.fixture_target(safe.describe(target)))
        elif is_test_object(target):
            targets.append(target)
        else:
            plain = type(target) in (int, float, bool, type(None))
            raise DeclarationError(problems.not_a_test(
                safe.describe(target), type(target).__name__ if plain else ""
            ))
    return tuple(targets)


def is_test_object(target: object) -> bool:
    """Whether a target is a class, a function or a method (read without touching it)."""
    return safe.is_class(target) or safe.is_function(target) or safe.is_method(target)


def describe_target(target: object) -> str:
    """How a target reads in a message: the same in every process, shortened when long."""
    return safe.describe(target)


def _is_bare_decoration(args: tuple[object, ...], kwargs: Mapping[str, object]) -> bool:
    """Whether ``args`` is the definition being decorated rather than a target.

    A definition being decorated was made in the calling frame's namespace (its module, and
    the qualified name a definition there gets), and its name is not bound yet: Python binds
    it after all decorators ran. A target is bound already, or lives elsewhere (another
    class, another module, an alias).
    """
    if kwargs or len(args) != 1 or not is_test_object(args[0]):
        return False
    try:
        bare = _defined_here(args[0], sys._getframe(2))
    except Exception:  # a strange object or frame: take it as a target (never lose a test)
        bare = False
    if not bare:
        # a mark with one function or class for its target: it may hide a test (a stray)
        REGISTRY.note_object_target()
    return bare


def _defined_here(obj: object, frame: Any) -> bool:
    name = safe.text_attr(obj, "__name__")
    qualname = safe.text_attr(obj, "__qualname__")
    if not name or safe.text_attr(obj, "__module__") != frame.f_globals.get("__name__"):
        return False
    namespace = frame.f_locals
    if namespace.get(name) is obj:
        return False  # a target defined earlier in this module or class
    prefix = namespace.get("__qualname__") if frame.f_code.co_name != "<module>" else None
    if safe.is_str(prefix) and namespace is not frame.f_globals:
        return qualname == f"{prefix}.{name}"  # a class body
    if frame.f_code.co_name == "<module>":
        return qualname == name
    return qualname.endswith(f"<locals>.{name}")


#: the markers whose first argument may be a test function or class taken as a target
TARGET_MARKERS = (MARKER, CLEANUP_MARKER)

def install_marker() -> None:
    """Make ``pytest.mark.depends_on`` take a single function or class as a target.

    pytest's ``MarkDecorator`` treats ``mark(f)`` with a single function or class (or any
    callable with a name) as decorating ``f``: it marks ``f`` and returns it. For this marker
    that would mark the *target* and put it in place of the decorated test -- the test
    vanishes, or the target is called with the test as argument. So the first call takes its
    arguments as targets, unless the argument is certainly the definition being decorated (a
    bare ``@pytest.mark.depends_on``, reported as naming no target). A bare marker above
    another wrapping decorator is caught at collection
    (:func:`~pytest_depgraph.collect.strays.stray_marker`).

    Done when the plugin is configured, not when the package is imported: a conftest that
    imports ``pytest_depgraph`` in a run with the plugin off must leave ``pytest.mark`` as
    pytest has it (``--strict-markers`` then rejects the unregistered marker).
    """
    REGISTRY.installed += 1
    for name in TARGET_MARKERS:
        install_mark(name, _is_bare_decoration)


def uninstall_marker() -> None:
    """Undo :func:`install_marker` once the last session that installed it is done."""
    REGISTRY.installed = max(0, REGISTRY.installed - 1)
    if not REGISTRY.installed:
        for name in TARGET_MARKERS:
            uninstall_mark(name)
