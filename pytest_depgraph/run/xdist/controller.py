"""The xdist controller's plan: the workers' plan texts in, parsed once, agreed on, bound.

Each worker builds the plan of its collection and sends it as one JSON string
(:func:`pytest_depgraph.run.xdist.worker.send_plan`); execnet's receiver thread hands it to
:meth:`Controller.received`, which only stores it. In the main thread, the first worker's
collection has its plan parsed (:meth:`Controller.collected`): under a ``--dist`` mode the
depgraph scheduler does not run, that is the session's plan. When the scheduler walks the run,
:meth:`Controller.agree` checks that every worker collected the same tests and sent the same
plan (equal texts: plans compare as the workers send them), then binds what only the
controller knows: the tests' locations (those a walk may need at its start come beside the
first workers' plans, a share each; the others when a test's failure makes them needed,
:mod:`pytest_depgraph.run.xdist.locations`), the known durations (``--depgraph-durations``,
else pytest's cache), and the ``--dist`` units and resource blocks
(:meth:`Controller.bind_units`).

This object is the only writer of the controller's ``session_state(config).plan``; the
scheduler, the warnings, the shard summary and the run report read it, and nothing else parses
a plan text.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_depgraph.core.graph.storage import Graph
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.hosts import xdist
from pytest_depgraph.run import durations
from pytest_depgraph.run.state import session_state
from pytest_depgraph.run.xdist import units
from pytest_depgraph.run.xdist.locations import Location, from_source


class _Sent:
    """What one worker sent beside its tests: its plan, and the items' locations if asked."""

    __slots__ = ("locations", "plan")

    def __init__(self, plan: str | None, locations: object = None) -> None:
        self.plan = plan
        self.locations = locations


class Controller:
    """The plan of an xdist controller, from the texts its workers send."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        #: per worker, what it sent (written by execnet's receiver thread)
        self._sent: dict[Any, _Sent] = {}
        #: the first worker that collected, what it collected, and its plan (None: no plan,
        #: or one that could not be read)
        self._first: tuple[Any, list[str], Plan | None] | None = None
        #: the plan text and the collection every worker agreed on
        self._agreed: tuple[str | None, list[str]] | None = None
        #: the known seconds of the tests that have one, by node: a durations file's, else the
        #: previous run's (:func:`~pytest_depgraph.run.durations.for_walk`)
        self.durations: dict[int, float] = {}
        #: where they came from, for a person ("" when none is known)
        self.durations_from = ""
        #: the items' locations that workers sent, by node: those a walk may skip at its
        #: start, from the workers asked for a share each; those downstream of a test that
        #: did not pass, from its worker (written by execnet's receiver thread then)
        self.locations: dict[int, Location] = {}
        #: the test files read for the locations no worker sent (a worker crashed)
        self._sources: dict[Path, dict[tuple[str, ...], int]] = {}
        #: collection errors of the plan that stopped the run (the hooks end the session on
        #: them, as pytest does on any collection error)
        self.errors = 0

    # -- the receiver thread ---------------------------------------------------------------

    def received(self, node: Any, plan: str | None, locations: object = None) -> None:
        """``node``'s worker sent its plan (before its collection, on the same channel)."""
        self._sent[node] = _Sent(plan, locations)

    def located(self, nodes: Sequence[int], locations: Sequence[Sequence[Any]]) -> None:
        """A worker sent the ``locations`` of the tests ``nodes``: a test upstream of them did
        not pass (:class:`~pytest_depgraph.run.xdist.locations.OnFailure`)."""
        for node, found in zip(nodes, locations):
            self.locations[node] = _location(found)

    # -- the main thread -------------------------------------------------------------------

    def collected(self, node: Any, collection: Sequence[str]) -> None:
        """A worker collected: the first one's plan is parsed, and under a ``--dist`` mode the
        depgraph scheduler does not run it is the session's plan (the summary's, the DOT
        file's); the scheduler agrees on one once all collected."""
        if self._first is not None:
            return
        text = self._text(node)
        plan: Plan | None = None
        # a plan that cannot be read: the walk reports it, another mode draws the tests
        # without edges
        with contextlib.suppress(ValueError):
            plan = None if text is None else Plan.from_json(text)
        self._first = (node, list(collection), plan)
        if plan is not None and not units.walked(str(self.config.getoption("dist", "no"))):
            session_state(self.config).plan = plan

    def first_plan(self) -> Plan | None:
        """The first worker's plan: what it sent, else its tests without edges (None before
        any worker collected)."""
        if self._first is None:
            return None
        _, collection, plan = self._first
        return plan if plan is not None else _edgeless(collection)

    def agree(self, collected: Sequence[tuple[Any, list[str]]], log: Any) -> Plan | None:
        """The plan every worker of ``collected`` (workers and their collections, in the order
        they started) agrees on, with the locations and durations bound: the session's plan.
        None when the workers disagree or the plan cannot be read (each problem a collection
        error naming the worker), or when the plan's own errors stop the run."""
        first_node, first_collection = collected[0]
        first_text = self._text(first_node)
        problems: list[tuple[Any, str]] = []
        for node, collection in collected[1:]:
            message = xdist.collection_diff(
                first_collection, collection, first_node.gateway.id, node.gateway.id
            )
            if not message and self._text(node) != first_text:
                message = (
                    f"depgraph: workers {first_node.gateway.id} and {node.gateway.id} built "
                    "different dependency graphs (the markers must not depend on the process)"
                )
            if message:
                problems.append((node, message))
        plan: Plan | None = None
        if not problems:
            try:
                plan = self._parsed(first_node, first_text, first_collection)
            except ValueError as error:
                problems.append((first_node, str(error)))
            else:
                if plan.nodeids[: plan.item_count] != first_collection:
                    problems.append(
                        (first_node, "depgraph: the plan does not match the collected tests")
                    )
        for node, message in problems:
            log(message)
            self._collection_error(node.gateway.id, message)
        if plan is None or problems:
            return None
        self._agreed = (first_text, first_collection)
        self.locations.update(self._sent_locations([node for node, _ in collected], plan))
        known = durations.for_walk(self.config, plan.nodeids[: plan.item_count])
        self.durations, self.durations_from = known.seconds, known.source
        session_state(self.config).plan = plan
        if plan.errors and not self.config.option.continue_on_collection_errors:
            self.errors = len(plan.errors)
            return None
        return plan

    @property
    def agreed(self) -> bool:
        """Whether the workers agreed on a plan (:meth:`agree`)."""
        return self._agreed is not None

    def agrees(self, node: Any, collection: Sequence[str], log: Any) -> bool:
        """Whether a late worker (the replacement of one that died) collected and planned
        what the first ones did."""
        assert self._agreed is not None
        text, agreed = self._agreed
        message = xdist.collection_diff(agreed, collection, "the first workers", node.gateway.id)
        if not message and self._text(node) != text:
            message = f"depgraph: worker {node.gateway.id} built a different dependency graph"
        if message:
            log(message)
            return False
        return True

    def bind_units(self, dist: str) -> Plan | None:
        """Make each ``--dist`` unit and each resource block of the session's plan a pinned
        group (:func:`~pytest_depgraph.run.xdist.units.bind_units`): the bound plan, or None when
        units or blocks wait for each other (each cycle a collection error; the run stops)."""
        state = session_state(self.config)
        assert state.plan is not None
        plan, errors = units.bind_units(state.plan, dist)
        state.plan = plan
        for path, message in errors:
            self._collection_error(path, message)
        self.errors += len(errors)
        return None if errors else plan

    def location(self, node: int) -> Location:
        """Where test ``node`` of the session's plan is reported (read from the source its
        node id names when no worker sent its location)."""
        found = self.locations.get(node)
        if found is None:
            plan = session_state(self.config).plan
            assert plan is not None
            found = self.locations[node] = from_source(
                self.config.rootpath, plan.nodeids[node], self._sources
            )
        return found

    # -- internals -------------------------------------------------------------------------

    def _text(self, node: Any) -> str | None:
        sent = self._sent.get(node)
        return None if sent is None else sent.plan

    def _parsed(self, node: Any, text: str | None, collection: list[str]) -> Plan:
        """The plan ``text`` (ValueError when it cannot be read), parsed once: the first
        worker's is already; the tests without edges when the worker sent none."""
        if text is None:
            return _edgeless(collection)
        first = self._first
        if first is not None and first[2] is not None and self._text(first[0]) == text:
            return first[2]
        return Plan.from_json(text)

    def _sent_locations(self, nodes: Sequence[Any], plan: Plan) -> dict[int, Location]:
        """The items' locations, from the workers asked for a share of them each (none of a
        share its worker did not send: :meth:`location` reads them from the source)."""
        merged: dict[int, Location] = {}
        for node in nodes:
            sent = self._sent.get(node)
            found = None if sent is None else sent.locations
            if not isinstance(found, dict):
                continue
            for n, loc in found.items():
                if type(n) is int and 0 <= n < plan.item_count and n not in merged:
                    merged[n] = _location(loc)
        return merged

    def _collection_error(self, where: str, message: str) -> None:
        self.config.hook.pytest_collectreport(
            report=pytest.CollectReport(where, "failed", longrepr=message, result=[])
        )


def controller(config: pytest.Config) -> Controller:
    """The controller's plan keeper of this session (made when first asked)."""
    state = session_state(config)
    if not isinstance(state.controller, Controller):
        state.controller = Controller(config)
    return state.controller


def _edgeless(collection: list[str]) -> Plan:
    """The tests of a worker that sent no plan (the depgraph plugin did not build one there),
    without edges."""
    modules: dict[str, int] = {}
    return Plan(
        nodeids=list(collection),
        graph=Graph(len(collection)),
        group=[modules.setdefault(nodeid.split("::")[0], len(modules)) for nodeid in collection],
        item_count=len(collection),
    )


def _location(sent: Sequence[Any]) -> Location:
    """A location as a worker sent it (a list, through execnet), as ``item.location`` is."""
    return (str(sent[0]), sent[1], str(sent[2]))
