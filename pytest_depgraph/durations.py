"""How long each test took: timings of this run, cached for the next run's priorities.

The xdist scheduler weighs the critical path with the previous run's durations. They live in
``config.cache`` under :data:`CACHE_KEY` as ``{nodeid: seconds}`` (setup + call + teardown);
without the cache provider (``-p no:cacheprovider``) nothing is loaded or saved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from pytest_depgraph.outcomes import SYNTHETIC

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
    """Sums the phase durations of every real test report this process sees; saves at the end."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if getattr(report, SYNTHETIC, False) or report.when not in ("setup", "call", "teardown"):
            return
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        save_durations(session.config, self.seconds)


def install(config: pytest.Config) -> DurationLog | None:
    """Register the duration log on the process that sees every report (not on xdist workers).

    Idempotent; returns the registered log (None on a worker).
    """
    if hasattr(config, "workerinput"):
        return None
    existing = config.pluginmanager.get_plugin(_PLUGIN_NAME)
    if isinstance(existing, DurationLog):
        return existing
    log = DurationLog()
    config.pluginmanager.register(log, _PLUGIN_NAME)
    return log


def log_of(config: pytest.Config) -> DurationLog | None:
    """The registered duration log, if any."""
    log = config.pluginmanager.get_plugin(_PLUGIN_NAME)
    return log if isinstance(log, DurationLog) else None
