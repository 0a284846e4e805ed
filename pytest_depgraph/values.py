"""Values between tests, the public side: the ``depgraph`` fixture's :class:`DepGraph` and
:func:`output_fixture`.

Both only turn the session's :class:`~pytest_depgraph.run.value_store.Outputs` (where values are
stored, sent and checked against the plan) into what a test sees: a mistake fails the test
with one line that says what to do.
"""

from __future__ import annotations

import sys
from typing import Callable, Literal, TypeVar

import pytest

from pytest_depgraph.collect.dependency_markers import RawDeclaration, declare, describe_target
from pytest_depgraph.run.state import find_session_state
from pytest_depgraph.run.value_store import OutputError, Outputs

__all__ = ["DepGraph", "output_fixture"]

#: the scopes pytest accepts for a fixture
Scope = Literal["session", "package", "module", "class", "function"]

_T = TypeVar("_T")

#: what to say when a fixture of the plugin runs while the plugin is not loaded
PLUGIN_OFF = (
    "depgraph: fixture '{}' needs the pytest-depgraph plugin, which is off in this run "
    "(-p no:depgraph, or PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 without -p depgraph): load it with "
    "-p depgraph."
)


class DepGraph:
    """The ``depgraph`` fixture: publish values, read the values of dependencies."""

    def __init__(self, outputs: Outputs) -> None:
        self._outputs = outputs

    def publish(self, name: str, value: object) -> None:
        """Store an output of the running test (must be picklable)."""
        _as_failure(lambda: self._outputs.publish(name, value))

    def output(self, target: object, name: str) -> object:
        """An output of a test that the running test depends on (REQUIRES edge)."""
        return _as_failure(lambda: self._outputs.output(target, name))


def output_fixture(target: object, name: str, *, scope: Scope = "function") -> object:
    """A fixture that returns output ``name`` of ``target``; using it *is* the dependency.

    Assign it to a module (or conftest) attribute: the attribute name is the fixture name.
    """
    frame = sys._getframe(1)
    where = f"{frame.f_code.co_filename}:{frame.f_lineno}"

    def output(request: pytest.FixtureRequest) -> object:
        outputs = outputs_of(request)
        return _as_failure(
            lambda: outputs.output(target, name, reader=f"fixture '{request.fixturename}'")
        )

    output._depgraph_output = True  # type: ignore[attr-defined]
    # `pytest --fixtures` lists it under the module that made it, saying what it returns
    output.__doc__ = (f"Output {name!r} published by {describe_target(target)}; using this "
                      "fixture makes the test depend on it (pytest_depgraph.output_fixture).")
    output.__module__ = str(frame.f_globals.get("__name__", output.__module__))
    declare(output, RawDeclaration((target,), {"on_failure": "skip"}, where))
    return pytest.fixture(scope=scope)(output)


def outputs_of(request: pytest.FixtureRequest) -> Outputs:
    """The session's outputs; a one-line failure when the plugin is not loaded."""
    state = find_session_state(request.config)
    if state is None:
        pytest.fail(PLUGIN_OFF.format(request.fixturename), pytrace=False)
    return state.outputs


def _as_failure(call: Callable[[], _T]) -> _T:
    try:
        return call()
    except OutputError as error:
        message = str(error)
    # outside the except block: the failure must not carry the OutputError as its context,
    # or pytest prints the message twice ("During handling of the above exception ...")
    pytest.fail(message, pytrace=False)
