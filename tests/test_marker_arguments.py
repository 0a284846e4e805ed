"""Property: any ``depends_on`` arguments give an edge or a clean collection error naming the
marker's file:line -- never a traceback from the plugin, never a changed collection.

The arguments are generated objects of every kind (strings of any text and size, numbers,
containers, classes, functions, methods, lambdas, modules, fixtures, objects whose
``__getattr__``, ``__eq__``, ``__hash__``, ``__repr__`` or ``__bool__`` raise, a werkzeug
``LocalProxy``...). Each example runs pytest in-process (``--collect-only``) on one module that
applies them: as the marker on a test, on a class, or as ``pytest_depgraph.depends_on`` on a
fixture. ``DEPGRAPH_HYPOTHESIS_EXAMPLES`` raises the number of examples (12 by default, in CI too;
300 for a deeper search by hand).
"""

from __future__ import annotations

import functools
import os
import re
import sys
import types
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from .helpers import assert_clean, recorded

EXAMPLES = int(os.environ.get("DEPGRAPH_HYPOTHESIS_EXAMPLES", "12"))

#: where the generated arguments wait for the module under test (in-process runs share them)
ARGS_MODULE = "_depgraph_generated_arguments"


class Ref:
    """An object of the generated module itself (a test, its class, a fixture), by name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Ref({self.name!r})"


MODULE = """
import pytest
from pytest_depgraph import depends_on
from {args} import ARGS, KWARGS, PLACE

def _resolve(value):
    if type(value).__name__ == "Ref":
        return eval(value.name, globals())
    return value

def test_a(): pass

class TestC:
    def test_c(self): pass

@pytest.fixture
def plain(): return 1

# before the markers: a Ref to it is read when the marker is applied (defined after them,
# the module itself would fail to import with a NameError -- not the plugin's doing)
def test_z(): pass

def _apply():
    args = [_resolve(a) for a in ARGS]
    kwargs = {{k: _resolve(v) for k, v in KWARGS.items()}}
    return args, kwargs

if PLACE == "function":
    args, kwargs = _apply()
    @pytest.mark.depends_on(*args, **kwargs)
    def test_target(): pass
elif PLACE == "class":
    args, kwargs = _apply()
    @pytest.mark.depends_on(*args, **kwargs)
    class TestTarget:
        def test_target(self): pass
else:
    args, kwargs = _apply()
    @pytest.fixture
    @depends_on(*args, **kwargs)
    def declared(): pass

    def test_target(declared): pass
"""

EXPECTED = {
    "function": "test_gen.py::test_target",
    "class": "test_gen.py::TestTarget::test_target",
    "fixture": "test_gen.py::test_target",
}

def _marker_line(source: str, place: str) -> int:
    """The line of the marker (or of the fixture's decorator) for ``place``."""
    lines = [n for n, text in enumerate(source.splitlines(), 1) if "depends_on(*args" in text]
    return lines[["function", "class", "fixture"].index(place)]

COMMON = {"test_gen.py::test_a", "test_gen.py::TestC::test_c", "test_gen.py::test_z"}


class Hostile:
    """Every special method a careless reader might call raises."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"no {name}")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no ==")

    def __hash__(self) -> int:
        raise RuntimeError("no hash")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    def __str__(self) -> str:
        raise RuntimeError("no str")

    def __bool__(self) -> bool:
        raise RuntimeError("no bool")

    def __len__(self) -> int:
        raise RuntimeError("no len")

    def __iter__(self) -> Any:
        raise RuntimeError("no iter")


class HostileCallable(Hostile):
    __name__ = "test_a"  # looks like a test function to pytest's MarkDecorator

    def __call__(self, *args: object) -> None:
        raise RuntimeError("no call")


class HostileStr(str):
    def strip(self, *args: object) -> str:
        raise RuntimeError("no strip")

    def __hash__(self) -> int:
        raise RuntimeError("no hash")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no ==")


class NoClass(Hostile):
    """Even ``isinstance`` fails on it: it has no ``__class__`` to give."""

    @property  # type: ignore[misc]  # over the attribute __class__, on purpose
    def __class__(self) -> type:
        raise RuntimeError("no class")


class WithAddress:
    """The default repr: an address, different in every process."""


def _proxy() -> object:
    try:
        from flask import session
    except ImportError:
        return Hostile()
    return session


def _function() -> None:
    pass


SPECIAL: list[object] = [
    Hostile(), HostileCallable(), HostileStr("test_a"), NoClass(), WithAddress(), WithAddress,
    _proxy(), lambda: None, _function, functools.partial(_function), len, int, object, sys,
    types, staticmethod(_function), pytest.mark.skip, pytest.param("x"), Ellipsis,
    float("nan"), 10**5000, b"test_a", bytearray(b"x"), range(3), NotImplemented, Exception(),
    Ref("test_a"), Ref("test_z"), Ref("TestC"), Ref("TestC.test_c"), Ref("TestC().test_c"),
    Ref("plain"), Ref("pytest"), Ref("_resolve"),
]

NAMES = st.sampled_from([
    "", " ", "\t\n", "test_a", "TestC", "TestC::test_c", "test_gen.py", "test_gen.py::test_a",
    "test_gen.py:test_a", "test_gen.py::TestC", "./test_gen.py", "test_gen.py/", "/", "::",
    "[", "]", "test_a[", "test_target", "TestTarget", "plain", "declared", "x" * 100_000,
    "ü::ß/\u202e", "\x00", "..", "../..", "C:\\test_gen.py", "test_gen.py::test_a[1]",
])

class Special:
    """Stands for ``SPECIAL[index]`` while hypothesis holds it: hypothesis prints what it
    generates, and these objects cannot even be printed."""

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"SPECIAL[{self.index}]"


def _real(value: Any) -> Any:
    """The generated value with every :class:`Special` replaced by its object."""
    if isinstance(value, Special):
        return SPECIAL[value.index]
    if type(value) is list:
        return [_real(v) for v in value]
    if type(value) is tuple:
        return tuple(_real(v) for v in value)
    if type(value) is dict:
        return {k: _real(v) for k, v in value.items()}
    return value


SCALARS = st.one_of(
    NAMES, st.text(), st.integers(), st.floats(), st.booleans(), st.none(),
    st.integers(0, len(SPECIAL) - 1).map(Special),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.tuples(inner), st.dictionaries(NAMES, inner, max_size=2),
        st.frozensets(st.one_of(NAMES, st.integers()), max_size=3),
    ),
    max_leaves=5,
)
KEYWORDS = st.dictionaries(
    st.sampled_from(["on_failure", "when", "scope", "x y", "ü"]),
    st.one_of(st.sampled_from(["skip", "run"]), VALUES),
    max_size=2,
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    # shrinking re-runs pytest hundreds of times: the failing example is printed as it is
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    args=st.lists(VALUES, max_size=3),
    kwargs=KEYWORDS,
    place=st.sampled_from(["function", "class", "fixture"]),
)
def test_any_arguments_give_an_edge_or_a_clean_error(
    pytester: pytest.Pytester, args: list[object], kwargs: dict[str, object], place: str
) -> None:
    module = types.ModuleType(ARGS_MODULE)
    vars(module).update(ARGS=_real(args), KWARGS=_real(kwargs), PLACE=place)
    sys.modules[ARGS_MODULE] = module
    try:
        path = pytester.makepyfile(test_gen=MODULE.format(args=ARGS_MODULE))
        result = pytester.runpytest("--collect-only", "-p", "no:randomly", "-p", "no:cacheprovider")
    finally:
        del sys.modules[ARGS_MODULE]
    assert_clean(result)
    collected = {
        call.item.nodeid
        for call in recorded(result).getcalls("pytest_itemcollected")
    }
    assert collected == COMMON | {EXPECTED[place]}
    out = result.stdout.str()
    if result.ret == pytest.ExitCode.OK:
        edges = re.search(r"(\d+) edges?", out)
        assert edges is not None and int(edges.group(1)) >= 1, out
    else:
        assert result.ret == pytest.ExitCode.INTERRUPTED, out
        line = _marker_line(path.read_text(), place)
        assert f"depgraph: test_gen.py:{line}: " in out, out
    assert "0x" not in out
