"""Reading user objects so that they never raise, and the pytest door it goes through."""

from __future__ import annotations

import pytest

from pytest_depgraph.collect import safe
from pytest_depgraph.hosts.pytest import fixture_name


@pytest.fixture
def plain() -> None: ...


@pytest.fixture(name="renamed")
def _renamed() -> None: ...


def test_pytest_still_marks_fixture_functions_as_the_door_expects() -> None:
    # the canary: hosts.pytest.fixture_name reads pytest's private marks of a fixture
    # function; a pytest that marks them differently makes every fixture a plain function
    assert (fixture_name(plain), fixture_name(_renamed)) == ("plain", "renamed"), (
        f"pytest {pytest.__version__} no longer marks a @pytest.fixture function as "
        "pytest_depgraph/hosts/pytest.py's fixture_name expects: see its docstring"
    )
    assert safe.describe(plain) == "fixture 'plain'"


class _Raising:
    def __getattr__(self, name: str) -> object:
        raise RuntimeError("working outside of request context")


def test_objects_that_are_no_fixtures_whatever_they_raise() -> None:
    def function() -> None: ...

    for obj in (function, _Raising(), 3, "plain", None, type):
        assert fixture_name(obj) is None
    assert safe.describe(_Raising()) == "a tests.test_safe._Raising object"
