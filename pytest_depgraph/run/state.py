"""The session's state: one :class:`SessionState` under one stash key, made in ``pytest_configure``.

Every hook, plugin object and output reads what the session knows through
:func:`session_state`: the settings, the node-id selection, the plan, the outcomes, the skips,
the values between tests, and on the xdist controller the keeper of the workers' plans, the
scheduler and its walk statistics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from pytest_depgraph.collect.peer_plugins import Marks
from pytest_depgraph.collect.peer_plugins import Settings as PeerSettings
from pytest_depgraph.options import Settings
from pytest_depgraph.run.outcomes import OutcomeRecorder
from pytest_depgraph.run.value_store import Outputs
from pytest_depgraph.run.xdist.value_relay import Relay

if TYPE_CHECKING:  # types only: the timeline is the controller's, at the end of a walk
    from pytest_depgraph.collect.selection import NodeIdSelection
    from pytest_depgraph.core.plan import Plan, ShardInfo
    from pytest_depgraph.core.timeline import WalkStats


class Planning(Protocol):
    """What the session's hooks and outputs read from the xdist controller's plan keeper
    (:class:`~pytest_depgraph.run.xdist.controller.Controller`), named here without importing it:
    it reads and writes this state."""

    #: collection errors of the plan that stopped the run
    errors: int

    def received(self, node: Any, plan: str | None, locations: object = None) -> None:
        """A worker sent its plan (execnet's receiver thread)."""

    def collected(self, node: Any, collection: Sequence[str]) -> None:
        """A worker collected."""

    def first_plan(self) -> Plan | None:
        """The first worker's plan, else its tests without edges."""


class Walking(Protocol):
    """What the session's hooks read from the xdist scheduler
    (:class:`~pytest_depgraph.run.xdist.scheduler.DepGraphScheduling`), named here without importing
    it: it imports the dispatch policy, which only a controller that walks needs."""

    @property
    def walking(self) -> bool:
        """Whether the walk runs the tests (not aborted, not handed over to xdist)."""

    def note_held(self, node: Any, index: int) -> None:
        """A worker ran a test with its teardown deferred (execnet's receiver thread)."""

    def note_torn(self, node: Any, index: int, scopes: list[str]) -> bool:
        """A worker tore down locked scopes (execnet's receiver thread); True when taken."""

    def walk_stats(self) -> WalkStats | None:
        """Statistics of the walk, once it ran."""


class SessionState:
    """What one pytest session (one process: serial, xdist controller or worker) knows."""

    __slots__ = ("controller", "durations", "given_durations", "kept_shard", "marks",
                 "outputs", "peers", "plan", "recorder", "relay", "running", "scheduler",
                 "selection", "settings", "skips", "walk")

    def __init__(self, config: pytest.Config, settings: Settings, peers: PeerSettings) -> None:
        #: the plugin's options and ini keys
        self.settings = settings
        #: pytest-dependency's and pytest-order's options and ``--depgraph-strict``, for their
        #: markers
        self.peers = peers
        #: folded outcomes of every test seen by this process (on the xdist controller: all
        #: tests)
        self.recorder = OutcomeRecorder()
        #: the test whose run protocol runs now in this process
        #: (:mod:`pytest_depgraph.run.recording`)
        self.running: pytest.Item | None = None
        #: tests skipped by an unsatisfied dependency: node id -> root cause node id
        self.skips: dict[str, str] = {}
        #: node ids given as arguments, widened to their files (None: none given, or a
        #: controller)
        self.selection: NodeIdSelection | None = None
        #: the names of the marks of every collected test and of their parents, taken once
        #: a session before the other plugins select (:func:`~pytest_depgraph.run.
        #: plan_producer.collected`): pytest-order's index sort and the build both ask, each
        #: would scan every test (measured, callgrind: onefile10k's --collect-only, the whole
        #: process 8,748 -> 8,737 M instructions); None before
        self.marks: Marks | None = None
        #: the plan built after collection (serial session and every xdist worker); on the
        #: controller the workers' agreed plan, or the first worker's (written by the
        #: controller only, :mod:`pytest_depgraph.run.xdist.controller`)
        self.plan: Plan | None = None
        #: the durations a shard split weighs, node id -> seconds (loaded when first needed)
        self.durations: dict[str, float] | None = None
        #: the durations in the file ``--depgraph-durations`` names, read once at configure
        #: time (None: no file given, or an xdist worker); empty when the file does not exist
        self.given_durations: dict[str, float] | None = None
        #: the node ids this process kept of a sharded collection, and the shard they are
        self.kept_shard: tuple[frozenset[str], ShardInfo] | None = None
        #: the xdist controller's keeper of the workers' plans (controller only)
        self.controller: Planning | None = None
        #: the xdist scheduler of this session, once xdist asked for it (controller only)
        self.scheduler: Walking | None = None
        #: statistics of the parallel walk (xdist controller only)
        self.walk: WalkStats | None = None
        #: values between tests published or received in this process
        self.outputs = Outputs(config, self)
        #: the controller's books of which worker holds which value (xdist controller only)
        self.relay = Relay(self.outputs.store)


_KEY = pytest.StashKey[SessionState]()


def start_session_state(
    config: pytest.Config, settings: Settings, peers: PeerSettings
) -> SessionState:
    """Make the session's state and keep it on ``config`` (``pytest_configure``)."""
    state = config.stash[_KEY] = SessionState(config, settings, peers)
    return state


def session_state(config: pytest.Config) -> SessionState:
    """The session's state (made by the plugin's ``pytest_configure``)."""
    return config.stash[_KEY]


def find_session_state(config: pytest.Config) -> SessionState | None:
    """The session's state, or None when the plugin is not configured in this session."""
    return config.stash.get(_KEY, None)
