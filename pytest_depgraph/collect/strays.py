"""Tests hidden behind a ``depends_on`` or ``cleanup_of`` mark that took them for a target
(strays): put back in their place at collection, looked for only once such a mark exists.

pytest asks ``pytest_pycollect_makeitem`` of every name of every test module and class; a
plugin that answers costs each of those calls, in every session. Only a mark that took a
single function or class for its target can hide a test (the registry notes the first:
:meth:`~pytest_depgraph.collect.process_registry.Registry.note_object_target`), so the
answering plugin, :class:`StrayRepair`, is registered then, before the names of the module
that made it are asked: measured, bare10k's ``--collect-only`` (10,000 tests, no mark)
7.763 -> 7.719 G instructions (callgrind; 7.488 without the plugin): asked always -> this.
"""

from __future__ import annotations

import pytest

from pytest_depgraph.collect import safe
from pytest_depgraph.collect.dependency_markers import TARGET_MARKERS
from pytest_depgraph.collect.process_registry import REGISTRY
from pytest_depgraph.hosts.pytest import store_bare_mark

_NAME = "depgraph-strays"


def watch(config: pytest.Config) -> None:
    """Register :class:`StrayRepair` on ``config`` now if a mark took a function or class
    for its target already in this process, else when one first does (until the session
    ends)."""
    manager = config.pluginmanager

    def register() -> None:
        if not manager.has_plugin(_NAME):
            manager.register(StrayRepair(), _NAME)

    if REGISTRY.object_targets:
        register()
        return
    REGISTRY.on_object_target.append(register)
    config.add_cleanup(lambda: REGISTRY.on_object_target.remove(register))


class StrayRepair:
    """The collection of the strays."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makeitem(
        self, collector: pytest.Collector, name: str, obj: object
    ) -> object:
        # only a mark decorator can hide a test (``isinstance`` would ask a proxy for its
        # ``__class__``, which may raise)
        if not issubclass(type(obj), pytest.MarkDecorator):
            return None
        return repair_stray(collector, name, obj)


def stray_marker(name: str, obj: object) -> object | None:
    """The test hidden behind a marker that took it for a target, else None.

    A bare ``@pytest.mark.depends_on`` above a decorator that wraps the test without
    ``functools.wraps`` cannot be told from a target when it runs; the module then binds the
    test's name to the marker. pytest would have bound the wrapped test there (marked with a
    no-target ``depends_on``), and so is it collected here, and reported as naming no target.
    The same holds for ``test_x = pytest.mark.depends_on(f)``, which pytest collects as ``f``.
    """
    # any object a module or class binds: ``isinstance`` would ask a proxy for its
    # ``__class__``, which may raise
    if not issubclass(type(obj), pytest.MarkDecorator):
        return None
    assert isinstance(obj, pytest.MarkDecorator)
    if obj.mark.name not in TARGET_MARKERS or obj.mark.kwargs or len(obj.mark.args) != 1:
        return None
    inner: object = obj.mark.args[0]
    if not (safe.is_function(inner) or safe.is_class(inner)):
        return None
    store_bare_mark(obj.mark.name, inner)
    return inner


def repair_stray(collector: pytest.Collector, name: str, obj: object) -> object:
    """What ``pytest_pycollect_makeitem`` makes of the module or class attribute ``name`` when
    a marker took its test for a target (:func:`stray_marker`): the test put back in its place
    and collected, as pytest's own marker would have left it (its marker names no target,
    which is reported), instead of lost; None for anything else (pytest collects it)."""
    inner = stray_marker(name, obj)
    if inner is None:
        return None
    try:
        # pytest reads the test from the module or class again
        setattr(getattr(collector, "obj", None), name, inner)
    except Exception:
        return None
    return collector.ihook.pytest_pycollect_makeitem(collector=collector, name=name, obj=inner)
