"""pytest's private API, each touch behind a named function that says what it relies on."""

from __future__ import annotations

import types


def _attribute(obj: object, name: str) -> object:
    """``getattr(obj, name, None)`` that also swallows what a property or proxy raises (the
    object may be the user's)."""
    try:
        return getattr(obj, name, None)
    except Exception:  # a proxy or property may raise anything
        return None


def _name(value: object, otherwise: object) -> str:
    """``value`` if it is a string, else ``otherwise`` if that is one, else "" (as plain
    ``str``: a subclass's own methods are never called)."""
    for text in (value, otherwise):
        if issubclass(type(text), str):
            return str.__str__(text)
    return ""


def fixture_name(obj: object) -> str | None:
    """The name of the fixture ``obj`` is (what ``@pytest.fixture`` made of a function), else
    None; never raises, whatever ``obj`` is.

    Relies on how pytest marks a fixture function, which changed in pytest 8.4: since then
    ``@pytest.fixture`` returns a ``FixtureFunctionDefinition`` (``_pytest.fixtures``) with the
    fixture's ``name`` (None: the function's) and the function as ``_fixture_function``;
    before, it returned the function itself with a ``FixtureFunctionMarker`` as its
    ``_pytestfixturefunction`` attribute, whose ``name`` says the same.
    """
    if type(obj).__name__ == "FixtureFunctionDefinition":  # pytest >= 8.4
        function = _attribute(obj, "_fixture_function")
        return _name(_attribute(obj, "name"), _attribute(function, "__name__"))
    if type(obj) is not types.FunctionType:
        return None
    marker = _attribute(obj, "_pytestfixturefunction")  # pytest < 8.4
    if marker is None:
        return None
    return _name(_attribute(marker, "name"), _attribute(obj, "__name__"))
