"""How long each test took: timings of this run, cached for the next run's priorities.

The xdist scheduler weighs the critical path with known durations: the previous run's, kept in
``config.cache`` under :data:`CACHE_KEY` as ``{nodeid: seconds}`` (setup + call + teardown;
without the cache provider, ``-p no:cacheprovider``, nothing is loaded or saved), and those of
a JSON file, ``--depgraph-durations`` (pytest-split's ``.test_durations`` format), which win: a
fresh CI machine has no cache, but the file it checked out. The same file balances shards, and
``--depgraph-store-durations`` merges this run's seconds into it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import pytest

from pytest_depgraph.hosts.pytest import warn_at
from pytest_depgraph.options import durations_option
from pytest_depgraph.plurals import tests
from pytest_depgraph.run.outcomes import OutcomeRecorder
from pytest_depgraph.run.role import role
from pytest_depgraph.run.state import session_state

CACHE_KEY = "depgraph/durations"
_PLUGIN_NAME = "depgraph-durations"


class Known(NamedTuple):
    """The durations a walk weighs its tests with, and where they came from."""

    #: seconds by position in the tests weighed; the tests without one are absent
    seconds: dict[int, float]
    #: where they came from, for a person ("" when none is known)
    source: str


def for_walk(config: pytest.Config, nodeids: Sequence[str]) -> Known:
    """The durations of the given tests, by position in ``nodeids``: the file's
    (``--depgraph-durations``) where it has one, else pytest's cache's (the previous run)."""
    state = session_state(config)
    given = state.given_durations or {}
    cached = cached_durations(config)
    seconds: dict[int, float] = {}
    from_file = from_cache = 0
    for position, nodeid in enumerate(nodeids):
        if nodeid in given:
            seconds[position] = given[nodeid]
            from_file += 1
        elif nodeid in cached:
            seconds[position] = cached[nodeid]
            from_cache += 1
    sources = []
    if from_file:
        sources.append(f"{state.settings.durations} ({tests(from_file)})")
    if from_cache:
        sources.append(f"pytest's cache ({tests(from_cache)})")
    return Known(seconds, " and ".join(sources))


def read_given(config: pytest.Config, path: str, shards: bool) -> dict[str, float]:
    """The durations in the file ``--depgraph-durations`` names (``path``), read once at
    configure time: a usage error naming it when it cannot be read; none, with a warning, when
    it does not exist yet. ``shards``: the run is split into shards (said in the warning)."""
    given, file, line = durations_option(config)
    try:
        found = read_file(path)
    except FileError as error:
        what = str(error).removeprefix(f"{path}: ")
        raise pytest.UsageError(
            f"{given}: {what}. Give a file written by --depgraph-store-durations or "
            "pytest-split's --store-durations."
        ) from None
    if found is None:
        meaning = (
            "every test weighs 1 s in the shard split" if shards
            else "the walk weighs the tests by pytest's cache alone"
        )
        message = (f"depgraph: {given} does not exist: {meaning}. Write it with "
                   f"--depgraph-store-durations {path}.")
        warn_at(config, pytest.PytestWarning(message), file or "<command line>", line or 1)
        return {}
    return found


def cached_durations(config: pytest.Config) -> dict[str, float]:
    """Every previous-run duration in the cache, by node id (none without the cache)."""
    cache = getattr(config, "cache", None)
    stored = cache.get(CACHE_KEY, {}) if cache is not None else {}
    if not isinstance(stored, dict):
        return {}
    return {
        nodeid: float(seconds)
        for nodeid, seconds in stored.items()
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds >= 0
    }


class FileError(Exception):
    """A durations file that cannot be read or written; the message says which and why."""


def read_file(path: str) -> dict[str, float] | None:
    """The durations in a JSON file: an object of node id -> seconds, or pytest-split's
    older list of ``[node id, seconds]`` pairs. None when the file does not exist."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise FileError(f"{path}: cannot be read ({error})") from None
    try:
        data = json.loads(text)
    except ValueError as error:
        raise FileError(f"{path}: not JSON ({error})") from None
    if isinstance(data, list) and all(
        isinstance(pair, list) and len(pair) == 2 for pair in data
    ):
        data = dict(data)
    if not isinstance(data, dict):
        raise FileError(
            f"{path}: expected a JSON object mapping node ids to seconds, "
            f"found {type(data).__name__}"
        )
    durations: dict[str, float] = {}
    for nodeid, seconds in data.items():
        if (
            not isinstance(nodeid, str)
            or isinstance(seconds, bool)
            or not isinstance(seconds, (int, float))
            or not 0 <= seconds < math.inf
        ):
            endless = seconds == math.inf
            raise FileError(
                f"{path}: the entry {nodeid!r}: {seconds!r} is not a node id and a number of "
                f"seconds (0 or more){', and no test lasts for ever' if endless else ''}"
            )
        durations[nodeid] = float(seconds)
    return durations


def check_writable(path: str) -> None:
    """Before the run: FileError unless ``path`` can receive the durations at its end."""
    target = Path(path)
    if target.is_dir():
        example = target / ".test_durations"
        raise FileError(f"{path} is a directory; give a file name, e.g. {example}")
    if not target.parent.is_dir():
        raise FileError(f"{path}: the folder {target.parent} does not exist")
    if not os.access(target if target.exists() else target.parent, os.W_OK):
        raise FileError(f"{path}: not writable")
    read_file(path)  # an existing file must be ours to merge into


def write_file(path: str, durations: Mapping[str, float]) -> None:
    """Merge ``durations`` into the JSON file (newer values win); written whole, then renamed
    into place, so a run that is killed leaves the old file intact."""
    merged = read_file(path) or {}
    # a tenth of a millisecond says enough, and keeps a committed file's diffs short
    merged.update((nodeid, round(seconds, 4)) for nodeid, seconds in durations.items())
    temporary = Path(f"{path}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, path)


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
        #: the line that says where the durations file was written (after the run)
        self.stored = ""

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = session.config
        durations = self.recorder.durations()
        save_durations(config, durations)
        path = _store_path(config)
        if path is None:
            return
        # a test skipped because of an upstream failure took no time that says anything
        skipped = session_state(config).skips
        ran = {nodeid: s for nodeid, s in durations.items() if nodeid not in skipped}
        if not ran:
            return
        try:
            write_file(path, ran)
            self.stored = f"depgraph: durations of {tests(len(ran))} stored in {path}"
        except (OSError, FileError) as error:
            terminal = config.pluginmanager.get_plugin("terminalreporter")
            if terminal is not None:
                terminal.write_line(f"depgraph: --depgraph-store-durations {error}", red=True)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR


    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.stored:
            terminalreporter.write_sep("-", self.stored)


def _store_path(config: pytest.Config) -> str | None:
    return session_state(config).settings.store_durations


def install(config: pytest.Config) -> DurationLog | None:
    """Register the duration log on the process that sees every report (not on xdist workers).

    Idempotent; returns the registered log (None on a worker).
    """
    if role(config).is_worker:
        return None
    existing = config.pluginmanager.get_plugin(_PLUGIN_NAME)
    if isinstance(existing, DurationLog):
        return existing
    log = DurationLog(session_state(config).recorder)
    config.pluginmanager.register(log, _PLUGIN_NAME)
    return log
