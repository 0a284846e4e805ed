"""pytest's internals behind one door each: teardown and capture of a held test, skips at the
test's place, ``--lf``'s books, the terminal's counts, and what makes a function a fixture.

Checked against pytest 8 and 9. What pytest documents (its hooks, ``pytest.CallInfo``,
``pytest.TestReport``, the terminal reporter's ``stats`` and ``write_line``) is used where it is
needed, not here.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Collection
from typing import Any, NoReturn

import pytest

#: what pytest keeps of a test's fixtures until the end of its run protocol
RequestState = tuple[pytest.Item, object, object]


# -- a held test on an xdist worker --------------------------------------------------------


def teardown_towards(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Tear down what the session's setup stack holds that ``nextitem`` does not share (all
    of it for None): ``session._setupstate.teardown_exact(nextitem)`` (``runner.py``), what
    pytest's own teardown phase of ``item`` runs."""
    item.session._setupstate.teardown_exact(nextitem)


def capture(
    config: pytest.Config, when: str, item: pytest.Item
) -> contextlib.AbstractContextManager[Any]:
    """Capture output as pytest captures the phase ``when`` of ``item`` (the capture
    manager's ``item_capture``, ``capture.py``); nothing when capturing is off
    (``-p no:capture``)."""
    manager = config.pluginmanager.getplugin("capturemanager")
    if manager is None:
        return contextlib.nullcontext()
    captured: contextlib.AbstractContextManager[Any] = manager.item_capture(when, item)
    return captured


def request_state(item: pytest.Item) -> RequestState:
    """What ``item`` holds of its fixtures now (``funcargs`` and ``_request``), for
    :func:`give_back_request`: pytest drops both at the end of a test's run protocol
    (``runner.py``'s ``runtestprotocol``)."""
    return item, getattr(item, "funcargs", None), getattr(item, "_request", None)


def give_back_request(item: pytest.Item, state: RequestState | None) -> None:
    """Give ``item`` back what :func:`request_state` kept of it, when pytest has dropped it
    since (plugins read them when they make a report: pytest-benchmark does)."""
    if state is None or state[0] is not item or not hasattr(item, "_request"):
        return
    _, funcargs, request = state
    if getattr(item, "funcargs", None) is None and funcargs is not None:
        item.funcargs = funcargs  # type: ignore[attr-defined]
        item._request = request


def drop_request(item: pytest.Item) -> None:
    """Drop what ``item`` holds of its fixtures, as pytest does at the end of its run
    protocol (``_request = False``, ``funcargs = None``)."""
    if hasattr(item, "_request"):
        item._request = False
        item.funcargs = None  # type: ignore[attr-defined]


# -- skips ---------------------------------------------------------------------------------


def skip_at_test(reason: str) -> NoReturn:
    """Skip the running test with its own file and line in the report, as skip markers do
    (``skipping.py`` raises pytest's skip exception with ``_use_item_location=True``, which
    ``reports.py`` reads); a plain ``pytest.skip`` would name the line that raised it."""
    raise pytest.skip.Exception(reason, _use_item_location=True)


# -- --lf and the terminal's counts --------------------------------------------------------


def collect_all_for_last_failed(config: pytest.Config) -> None:
    """Collect every file under ``--lf``: its plugin narrows collection to the files and tests
    that failed (``cacheprovider.py`` registers ``lfplugin-collwrapper`` and, once it found a
    failed test's file, ``lfplugin-collskip``); without them it deselects instead."""
    for name in ("lfplugin-collwrapper", "lfplugin-collskip"):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)


def keep_last_failed(config: pytest.Config, nodeid: str) -> None:
    """Have ``--lf`` run ``nodeid`` again next time: its plugin's books of the failed tests
    (``LFPlugin.lastfailed``, written to the cache at the end of the session)."""
    lfplugin = config.pluginmanager.get_plugin("lfplugin")
    lastfailed = getattr(lfplugin, "lastfailed", None)
    if lastfailed is not None:
        lastfailed[nodeid] = True


def uncount_collected(config: pytest.Config, count: int) -> None:
    """Take ``count`` tests off the terminal's "collected N items" (the reporter's
    ``_numcollected``, which it adds each collection report's items to)."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if count and isinstance(getattr(terminal, "_numcollected", None), int):
        terminal._numcollected -= count  # type: ignore[union-attr]


def undo_deselection(config: pytest.Config, nodeids: Collection[str]) -> None:
    """Take the tests ``nodeids`` off the terminal's "N deselected" (its ``stats``)."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(terminal, "stats", None)
    if stats and stats.get("deselected"):
        stats["deselected"] = [i for i in stats["deselected"] if i.nodeid not in nodeids]
        if not stats["deselected"]:
            del stats["deselected"]



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


def given_on_command_line(config: pytest.Config, dest: str) -> object:
    """The value the user gave option ``dest`` (command line, ``PYTEST_ADDOPTS`` or the ini
    file's ``addopts``), before any plugin changed it; None when the option is unknown.

    Relies on ``config.known_args_namespace``: pytest parses the known arguments into it early
    (``Config._preparse``) and later writes only ``config.option``, which plugins change in
    ``pytest_cmdline_main`` (xdist turns ``--dist no`` into ``load`` when ``-n`` is given)."""
    return getattr(getattr(config, "known_args_namespace", None), dest, None)
