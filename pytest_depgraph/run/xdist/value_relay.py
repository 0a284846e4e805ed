"""Values between tests over the xdist channel: worker -> controller -> the workers of readers.

Workers may run on other machines (``--tx ssh=...``, ``--tx socket=...``) and share no
filesystem with the controller, so values travel where the tests' reports do:

* a worker sends each value as it is published, pickled once, in a custom ``depgraph_value``
  event; the controller keeps it in memory (a worker that dies later loses nothing);
* before the controller sends a worker a test, it sends the values that test may read -- those
  of the tests it requires, directly or through other tests -- in a custom ``depgraph_values``
  command, each value at most once per worker and never back to the worker that published it.

Both directions need a door: xdist drops a worker that sends an unknown event (the controller
takes ours first, ``run/xdist/hooks.py``), and a worker silently ignores an unknown command, so
:func:`install_worker` takes ours first (``WorkerLoop.on_command`` in
:mod:`pytest_depgraph.hosts.xdist`). The command and the ``runtests`` that follows it arrive in
order on one channel, so the values are stored before the test is queued.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pytest_depgraph.core.graph.storage import Kind
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.hosts.xdist import worker_loop
from pytest_depgraph.run.value_store import OutputError, Outputs, ValueStore

#: worker -> controller: one published value (nodeid, name, data)
VALUE_EVENT = "depgraph_value"
#: controller -> worker: values the next test may read, [(nodeid, name, data), ...]
VALUES_COMMAND = "depgraph_values"


# -- worker --------------------------------------------------------------------------------


def install_worker(config: pytest.Config, outputs: Outputs) -> None:
    """Send this worker's ``outputs`` to the controller; take the ones it sends (before the
    loop)."""
    loop = worker_loop(config)

    def forward(nodeid: str, name: str, data: bytes) -> None:
        try:
            loop.send(VALUE_EVENT, nodeid=nodeid, value_name=name, data=data)
        except Exception as error:  # a closed channel: the controller is gone
            raise OutputError(
                f"depgraph: {nodeid} cannot publish {name!r}: sending it to the xdist "
                f"controller failed: {error}"
            ) from None

    def take_values(kwargs: dict[str, Any]) -> None:
        # runs in execnet's receiver thread; the store is thread-safe
        for nodeid, name, data in kwargs["values"]:
            outputs.store.put(nodeid, name, data)

    outputs.forward = forward
    loop.on_command(VALUES_COMMAND, take_values)


# -- controller ----------------------------------------------------------------------------


class Relay:
    """The controller's books: which worker holds which value, who published what upstream."""

    def __init__(self, store: ValueStore) -> None:
        self.store = store
        #: per worker: (nodeid, name) -> the pickled value it holds
        self._held: dict[Any, dict[tuple[str, str], bytes]] = {}
        #: per plan node: the tests it requires (transitively) that published a value
        self._producers: dict[int, frozenset[int]] = {}
        self._lock = threading.Lock()

    def received(self, node: Any, nodeid: str, name: str, data: bytes) -> None:
        """A worker published a value (receiver thread)."""
        self.store.put(nodeid, name, data)
        with self._lock:
            self._held.setdefault(node, {})[(nodeid, name)] = data

    def before_test(self, node: Any, plan: Plan, index: int) -> None:
        """Send ``node`` the values test ``index`` may read that it does not hold yet."""
        if not self.store:
            return
        values = []
        with self._lock:
            held = self._held.setdefault(node, {})
            for producer in sorted(self._upstream_producers(plan, index)):
                nodeid = plan.nodeids[producer]
                for name, data in self.store.published(nodeid):
                    if held.get((nodeid, name)) is not data:
                        held[(nodeid, name)] = data
                        values.append((nodeid, name, data))
        if values:
            node.sendcommand(VALUES_COMMAND, values=values)

    def _upstream_producers(self, plan: Plan, index: int) -> frozenset[int]:
        """Required tests (transitively) that published values; memoised, O(edges) in all.

        A test is sent only after everything it requires finished, so what those tests
        published is final and their own answers can be reused.
        """
        pending = [index]
        while pending:
            node = pending[-1]
            if node in self._producers:
                pending.pop()
                continue
            dependencies = [
                d for d in plan.graph.dependencies_of(node)
                if plan.graph.kind(node, d) is Kind.REQUIRES
            ]
            unknown = [d for d in dependencies if d not in self._producers]
            if unknown:
                pending.extend(unknown)
                continue
            pending.pop()
            found: set[int] = set()
            for dependency in dependencies:
                found |= self._producers[dependency]
                if self.store.has_values(plan.nodeids[dependency]):
                    found.add(dependency)
            self._producers[node] = frozenset(found)
        return self._producers[index]


def take_event(relay: Relay, node: Any, name: str, kwargs: dict[str, Any]) -> bool:
    """Keep a value event from a worker in ``relay`` (receiver thread); True when the event
    ``name`` was one."""
    if name != VALUE_EVENT:
        return False
    relay.received(node, kwargs["nodeid"], kwargs["value_name"], kwargs["data"])
    return True
