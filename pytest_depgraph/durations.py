"""How long each test took: timings of this run, cached for the next run's priorities.

The xdist scheduler weighs the critical path with the previous run's durations. They live in
``config.cache`` under :data:`CACHE_KEY` as ``{nodeid: seconds}`` (setup + call + teardown);
without the cache provider (``-p no:cacheprovider``) nothing is loaded or saved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from pytest_depgraph.outcomes import OutcomeRecorder
from pytest_depgraph.state import RECORDER_KEY

CACHE_KEY = "depgraph/durations"
_PLUGIN_NAME = "depgraph-durations"


def load_durations(config: pytest.Config, nodeids: Sequence[str]) -> dict[int, float]:
    """Previous-run seconds of the given tests, by position in ``nodeids``; unknown ones absent."""
    cache = getattr(config, "cache", None)
    if cache is None:
        return {}
    stored = cache.get(CACHE_KEY, {})
    if not isinstance(stored, dict):
        return {}
    known: dict[int, float] = {}
    for position, nodeid in enumerate(nodeids):
        seconds = stored.get(nodeid)
        if isinstance(seconds, (int, float)) and seconds >= 0:
            known[position] = float(seconds)
    return known


def save_durations(config: pytest.Config, durations: Mapping[str, float]) -> None:
    """Merge this run's seconds per node id into the cache (newer values win)."""
    cache = getattr(config, "cache", None)
    if cache is None or not durations:
        return
    stored = cache.get(CACHE_KEY, {})
    merged = dict(stored) if isinstance(stored, dict) else {}
    merged.update(durations)
    cache.set(CACHE_KEY, merged)


class DurationLog:
    """Saves the seconds of every test this process saw run, at the end of the session.

    The outcome recorder already folds every report of every test (on the xdist controller:
    of every worker), durations included; this only writes them to the cache.
    """

    def __init__(self, recorder: OutcomeRecorder) -> None:
        self.recorder = recorder

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        save_durations(session.config, self.recorder.durations())


def install(config: pytest.Config) -> DurationLog | None:
    """Register the duration log on the process that sees every report (not on xdist workers).

    Idempotent; returns the registered log (None on a worker).
    """
    if hasattr(config, "workerinput"):
        return None
    existing = config.pluginmanager.get_plugin(_PLUGIN_NAME)
    if isinstance(existing, DurationLog):
        return existing
    log = DurationLog(config.stash[RECORDER_KEY])
    config.pluginmanager.register(log, _PLUGIN_NAME)
    return log
