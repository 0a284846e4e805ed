"""Dependency declarations: the ``depends_on`` marker's arguments and the fixture decorator.

A declaration is what one ``@pytest.mark.depends_on(...)`` or one ``@depends_on(...)`` on a
fixture says: some targets, an edge kind, and where it was written. Validation happens when the
graph is built, so a bad declaration becomes a collection error that names the test using it,
not an import-time traceback.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Callable, NamedTuple, TypeVar

import pytest

from pytest_depgraph.graph import Kind

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


def depends_on(*targets: object, on_failure: str = "skip") -> Callable[[F], F]:
    """Declare dependencies on a fixture: every test using the fixture gets them.

    Takes exactly the arguments of ``@pytest.mark.depends_on`` and works above or below
    ``@pytest.fixture``. Targets are resolved as if the marker were written on each test
    whose fixture closure contains the fixture.
    """
    frame = sys._getframe(1)
    raw = RawDeclaration(
        args=targets, kwargs={"on_failure": on_failure},
        where=f"{frame.f_code.co_filename}:{frame.f_lineno}",
    )

    def decorate(obj: F) -> F:
        declare(obj, raw)
        return obj

    return decorate


def declare(obj: object, raw: RawDeclaration) -> None:
    """Attach a declaration to a function or fixture (and to what it wraps)."""
    for target in _wrapped_chain(obj):
        existing: list[RawDeclaration] = list(getattr(target, ATTRIBUTE, ()))
        # a bound method cannot take attributes: its function carries them
        with contextlib.suppress(AttributeError, TypeError):
            setattr(target, ATTRIBUTE, [*existing, raw])


def _wrapped_chain(obj: object) -> list[object]:
    """The object and what it wraps (pytest >= 8.4 wraps fixture functions)."""
    chain = [obj]
    seen = {id(obj)}
    while True:
        inner = getattr(chain[-1], "_fixture_function", None) or getattr(
            chain[-1], "__wrapped__", None
        )
        if inner is None or id(inner) in seen:
            return chain
        seen.add(id(inner))
        chain.append(inner)


def declarations_of(obj: object) -> Sequence[RawDeclaration]:
    """Declarations made with :func:`depends_on` on a function, fixture, or what it wraps."""
    found = getattr(obj, ATTRIBUTE, None)
    if found:
        return list(found)
    wraps = getattr(obj, "_fixture_function", None) or getattr(obj, "__wrapped__", None)
    if wraps is None:
        return ()  # wraps nothing: the common case for a test function, and cheap
    for target in _wrapped_chain(obj):
        found = getattr(target, ATTRIBUTE, None)
        if found:
            return list(found)
    return ()


def validate(raw: RawDeclaration) -> Declaration:
    """Check a declaration's arguments; DeclarationError says what is wrong and what to do."""
    if not raw.kwargs and raw.args:
        # the common case, checked once per marker of a large suite: names only, no keywords
        for target in raw.args:
            if type(target) is not str or not target or target.isspace():
                break
        else:
            return Declaration(tuple(raw.args), Kind.REQUIRES, raw.where)
    unknown = sorted(set(raw.kwargs) - {"on_failure"})
    if unknown:
        names = ", ".join(f"{name}=" for name in unknown)
        raise DeclarationError(
            f"unknown keyword argument{'s' if len(unknown) > 1 else ''} {names}; "
            "depends_on accepts targets and on_failure='skip' or 'run' only"
        )
    on_failure = raw.kwargs.get("on_failure", "skip")
    if on_failure not in _ON_FAILURE:
        raise DeclarationError(
            f"on_failure={on_failure!r} is not valid; use on_failure='skip' (run only if the "
            "targets passed) or on_failure='run' (order only)"
        )
    if not raw.args:
        raise DeclarationError(
            "depends_on() names no target; give one or more test names, node ids, "
            "test functions or test classes"
        )
    for target in raw.args:
        if not isinstance(target, str) and not _is_test_object(target):
            raise DeclarationError(
                f"target {target!r} ({type(target).__name__}) is not a test; a target is a "
                "string (test name or node id), a test function or a test class"
            )
        if isinstance(target, str) and not target.strip():
            raise DeclarationError("an empty string is not a target; name a test or a file")
    return Declaration(targets=tuple(raw.args), kind=_ON_FAILURE[on_failure], where=raw.where)


def _is_test_object(target: object) -> bool:
    return inspect.isclass(target) or inspect.isfunction(target) or inspect.ismethod(target)


def describe_target(target: object) -> str:
    """How a target reads in a message."""
    if isinstance(target, str):
        return repr(target)
    kind = "class" if inspect.isclass(target) else "function"
    return f"{kind} {getattr(target, '__qualname__', target)!s}"


class _DependsOnDecorator(pytest.MarkDecorator):
    """``pytest.mark.depends_on``, where one function or class argument is a target.

    pytest's MarkDecorator treats ``mark(f)`` with a single function or class as decorating
    ``f``, so ``@pytest.mark.depends_on(test_create)`` would mark ``test_create`` and replace the
    decorated test with it. For this marker the first call always takes targets; only a bare
    ``@pytest.mark.depends_on`` above a definition still decorates (and is reported as naming
    no target).
    """

    def __call__(self, *args: object, **kwargs: object) -> Any:
        if self.mark.args or self.mark.kwargs or _is_bare_decoration(args, kwargs):
            return super().__call__(*args, **kwargs)
        return self.with_args(*args, **kwargs)


def _is_bare_decoration(args: tuple[object, ...], kwargs: Mapping[str, object]) -> bool:
    """Whether ``args`` is the definition being decorated rather than a target.

    A target already has its name bound where the marker is written; a definition being
    decorated does not yet (Python binds the name after all decorators ran).
    """
    if kwargs or len(args) != 1 or not _is_test_object(args[0]):
        return False
    obj = args[0]
    frame = sys._getframe(2)
    name = getattr(obj, "__name__", "")
    if frame.f_locals.get(name) is obj or frame.f_globals.get(name) is obj:
        return False
    code = getattr(obj, "__code__", None)
    return code is None or code.co_filename == frame.f_code.co_filename


def install_marker() -> None:
    """Make ``pytest.mark.depends_on`` take a single function or class as a target."""
    if not isinstance(pytest.mark.__dict__.get(MARKER), _DependsOnDecorator):
        plain = pytest.MarkDecorator(pytest.Mark(MARKER, (), {}, _ispytest=True), _ispytest=True)
        setattr(pytest.mark, MARKER, _DependsOnDecorator(plain.mark, _ispytest=True))


install_marker()
