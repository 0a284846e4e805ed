"""The run layer's part of a pytest session: its state, the plugins that record and walk it.

Called from ``plugin.py``'s hooks, in this order: :func:`configure` (the session's state),
:func:`register` (the plugins), :func:`start`, :func:`walk_serially` (once the plan is
built), :func:`finish`.
"""

from __future__ import annotations

import importlib.util

import pytest

from pytest_depgraph.collect import peer_plugins
from pytest_depgraph.collect.peer_plugins import Marks
from pytest_depgraph.hosts.pytest import collect_all_for_last_failed
from pytest_depgraph.options import read_settings
from pytest_depgraph.run.recording import Recording
from pytest_depgraph.run.role import Role, role
from pytest_depgraph.run.state import SessionState, find_session_state, start_session_state


def configure(config: pytest.Config) -> SessionState:
    """Read the options and make the session's state; on a walked xdist worker, have
    pytest-dependency's own check see what passed on other workers."""
    settings = read_settings(config)

    def collected_marks() -> Marks | None:
        found = find_session_state(config)
        return None if found is None else found.marks

    peers = peer_plugins.register(config, strict=settings.strict, collected_marks=collected_marks)
    state = start_session_state(config, settings, peers)
    if (
        role(config) is Role.WALKED_WORKER
        and peer_plugins.loaded_plugin(config, "pytest_dependency") is not None
    ):
        # only a walked worker's with pytest-dependency loaded (measured, callgrind: its
        # import, 4.0 M instructions of a walked worker without it, spread 0.7 M; -X importtime,
        # min of 6 at load 22: 1.6 ms)
        from pytest_depgraph.run.xdist import dependency_runtime

        dependency_runtime.install(config)
    return state


def register(config: pytest.Config, state: SessionState) -> None:
    """Register the run's plugins: shards and stored durations when asked for, the recording
    of each test, the values between tests, and xdist's hooks when xdist is installed."""
    settings = state.settings
    if settings.durations and not role(config).is_worker:
        from pytest_depgraph.run import durations  # only a run given a durations file

        state.given_durations = durations.read_given(
            config, settings.durations, shards=settings.shard is not None
        )
    if settings.shard is not None or settings.store_durations:
        from pytest_depgraph.run import durations, sharding  # only shards and stored durations

        sharding.configure(config, settings)
        if settings.store_durations:
            durations.install(config)
    # a walked worker's outcomes nobody reads, and its loop names the running test itself
    # (recording.Recording says why)
    if role(config) is not Role.WALKED_WORKER:
        config.pluginmanager.register(Recording(state, config), "depgraph-recorder")
    config.pluginmanager.register(state.outputs, "depgraph-outputs")
    # pytest-xdist is a dependency, but a broken or partial install must not break serial runs
    if importlib.util.find_spec("xdist") is not None:
        from pytest_depgraph.run.xdist import hooks

        hooks.register(config)


def start(session: pytest.Session) -> None:
    """At the session's start: under ``--lf``, collect every file (``--lf`` would narrow
    collection to the files of the tests that failed, so the tests they depend on would never
    be seen); ``--lf`` deselects instead."""
    config = session.config
    if config.getoption("lf", False):
        collect_all_for_last_failed(config)


def walk_serially(config: pytest.Config, state: SessionState) -> None:
    """Once the plan is built: walk it in pytest's own run loop (the serial walk), unless
    nothing runs (``--collect-only``), the xdist controller decides what runs (a walked
    worker), or nothing needs a walk (pytest's own loop as it is)."""
    previous = config.pluginmanager.get_plugin("depgraph-serial")
    if previous is not None:  # the hook ran again (some plugins call it themselves)
        config.pluginmanager.unregister(previous)
    plan = state.plan
    this = role(config)
    if config.option.collectonly or this is Role.WALKED_WORKER or plan is None:
        return
    if not plan.needs_walk:
        return
    from pytest_depgraph.run.serial import SerialWalk  # only a run with dependencies needs it

    walk = SerialWalk(state, plan, strict=not this.is_worker)
    config.pluginmanager.register(walk, "depgraph-serial")


def finish(session: pytest.Session) -> None:
    """At the session's end: an empty shard of a non-empty selection passed."""
    config = session.config
    state = find_session_state(config)
    if state is not None and state.settings.shard is not None and not role(config).is_worker:
        from pytest_depgraph.run import sharding

        sharding.exit_status(session, state.plan)


def release(config: pytest.Config) -> None:
    """At the session's end (``pytest_unconfigure``): the plan let go, as nothing reads it
    after. pytest then collects garbage (its check for unraisable exceptions: five full
    collections on pytest 9.0, one on 9.2), which walks every object still alive: the plan's
    origins, one per declaration, among them. Measured, callgrind, pytest 9.0.3: onefile10k's
    ``--collect-only``, the end of the process 650 -> 601 M instructions (markers only 587)."""
    state = find_session_state(config)
    if state is not None:
        state.plan = None
