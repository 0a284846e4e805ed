"""Values between tests, the session side: the store, publishing, reading checked on the plan.

A test publishes named values; a test that depends on it (through REQUIRES edges) reads them.
A value is pickled once, when it is published, and kept in memory under the producer's full
node id and the value's name, in the process that ran the producer. On xdist workers the
depgraph scheduler drives, :mod:`pytest_depgraph.run.xdist.value_relay` carries it over the xdist
channel: to the controller, then to each worker that runs a test that may read it. Nothing is
written to disk, so values never leak into another run.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Sequence
from typing import Callable, Protocol

import pytest

from pytest_depgraph.collect.dependency_markers import describe_target
from pytest_depgraph.collect.targets import TargetIndex
from pytest_depgraph.core.graph.paths import reachable
from pytest_depgraph.core.graph.storage import Kind
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.run.outcomes import NOT_RUN, OutcomeRecorder
from pytest_depgraph.run.role import role

#: publish(nodeid, name, pickled value): hands a value on (to the xdist controller)
Forward = Callable[[str, str, bytes], None]

_PLAIN_DATA = "ids, strings, numbers, and lists or dicts of those"


class OutputError(Exception):
    """Reading or publishing a value went wrong; the message is for a person."""


class ValueStore:
    """Pickled values of one run, by producer node id and value name (thread-safe)."""

    def __init__(self) -> None:
        self._values: dict[str, dict[str, bytes]] = {}
        # xdist's receiver thread adds values while the main thread reads them
        self._lock = threading.Lock()

    def put(self, nodeid: str, name: str, data: bytes) -> None:
        with self._lock:
            self._values.setdefault(nodeid, {})[name] = data

    def get(self, nodeid: str, name: str) -> bytes | None:
        with self._lock:
            return self._values.get(nodeid, {}).get(name)

    def names(self, nodeid: str) -> list[str]:
        with self._lock:
            return sorted(self._values.get(nodeid, ()))

    def published(self, nodeid: str) -> list[tuple[str, bytes]]:
        """Every value ``nodeid`` published, as (name, pickled value)."""
        with self._lock:
            return list(self._values.get(nodeid, {}).items())

    def has_values(self, nodeid: str) -> bool:
        with self._lock:
            return bool(self._values.get(nodeid))

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._values)


class Session(Protocol):
    """What the values read of the session's state
    (:class:`~pytest_depgraph.run.state.SessionState`, which holds the :class:`Outputs`)."""

    @property
    def plan(self) -> Plan | None: ...

    @property
    def recorder(self) -> OutcomeRecorder: ...

    @property
    def running(self) -> pytest.Item | None: ...


class Outputs:
    """The session side: the store, and the plan to check dependencies."""

    def __init__(self, config: pytest.Config, session: Session) -> None:
        self.config = config
        self.session = session
        self.store = ValueStore()
        #: set on xdist workers whose values must reach the controller
        self.forward: Forward | None = None
        self._index: TargetIndex | None = None
        self._items: list[pytest.Item] = []

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._items = list(session.items)
        self._index = None

    def publish(self, name: object, value: object) -> None:
        item = self._running("publish")
        nodeid = item.nodeid
        _check_name(f"depgraph: {nodeid}: depgraph.publish({_shown(name)}, ...)", name)
        assert isinstance(name, str)
        import pickle  # only a test that publishes a value needs it

        try:
            data = pickle.dumps(value)
        except Exception as error:  # pickling raises many types
            raise OutputError(
                f"depgraph: {nodeid} cannot publish {name!r}: the value "
                f"({type(value).__name__}) cannot be pickled: {_error_text(error)}.\n"
                "  Values travel between xdist workers, so they must be picklable: publish "
                f"{_PLAIN_DATA} instead."
            ) from None
        self.store.put(nodeid, name, data)
        if self.forward is not None:
            self.forward(nodeid, name, data)

    def output(self, target: object, name: object, reader: str = "depgraph.output") -> object:
        item = self._running("read an output")
        call = f"{reader}({_describe(target)}, {_shown(name)})"
        _check_name(f"depgraph: {item.nodeid}: {call}", name)
        assert isinstance(name, str)
        if not _is_target(target):
            raise OutputError(
                f"depgraph: {item.nodeid}: {call}: the target must name a test: its name or "
                "node id as a string ('test_create_user', 'tests/test_x.py::test_create_user'), "
                f"or the test function or class itself; got {_shown(target)}."
            )
        plan = self.session.plan
        if plan is None:
            raise OutputError("depgraph: outputs can only be read while tests run")
        matches = self._resolve(target, item.nodeid)
        if not matches:
            raise OutputError(
                f"depgraph: {item.nodeid}: {call}: the target matches no test in this run."
            )
        node = plan.nodeids.index(item.nodeid) if item.nodeid in plan.nodeids else -1
        upstream = requires_ancestors(plan, node)
        missing = [plan.nodeids[m] for m in matches if m not in upstream]
        if missing:
            raise OutputError(
                f"depgraph: {item.nodeid} reads {name!r} from {missing[0]}, which it does not "
                "depend on, so it may not have run yet.\n"
                f"  Add @pytest.mark.depends_on({_target_text(target)}) to the test, or read "
                "the value through pytest_depgraph.output_fixture(...)."
            )
        found = []
        for match in matches:
            data = self.store.get(plan.nodeids[match], name)
            if data is not None:
                found.append((plan.nodeids[match], data))
        if len(found) == 1:
            return _unpickle(item.nodeid, found[0][0], name, found[0][1])
        if len(found) > 1:
            raise OutputError(
                f"depgraph: {item.nodeid}: {name!r} was published by {len(found)} tests "
                f"({', '.join(n for n, _ in found)}); name one of them in the target."
            )
        elsewhere = self._ran_elsewhere([plan.nodeids[m] for m in matches])
        if elsewhere:
            raise OutputError(
                f"depgraph: {item.nodeid}: cannot read {name!r}: {elsewhere} did not run on this "
                "xdist worker, and values travel between workers only when pytest-depgraph "
                "schedules the tests.\n"
                "  Use --dist load (the default of -n), worksteal, loadfile, loadscope or "
                "loadgroup."
            )
        published = sorted({n for m in matches for n in self.store.names(plan.nodeids[m])})
        source = plan.nodeids[matches[0]] if len(matches) == 1 else describe_target(target)
        listing = ", ".join(repr(n) for n in published) if published else "nothing"
        raise OutputError(
            f"depgraph: {item.nodeid}: {source} published no value {name!r}; it published "
            f"{listing}."
        )

    def _running(self, what: str) -> pytest.Item:
        running = self.session.running
        if running is None:
            raise OutputError(f"depgraph: cannot {what} outside a running test")
        return running

    def _ran_elsewhere(self, producers: list[str]) -> str | None:
        """A producer that did not run here, on an xdist worker that gets no values sent."""
        if self.forward is not None or not role(self.config).is_worker:
            return None
        recorder = self.session.recorder
        for nodeid in producers:
            if recorder.outcome(nodeid) == NOT_RUN:
                return nodeid
        return None

    def _resolve(self, target: object, nodeid: str) -> Sequence[int]:
        plan = self.session.plan
        assert plan is not None  # output() checked it
        if self._index is None:
            by_id = {item.nodeid: item for item in self._items}
            items = [by_id.get(n) for n in plan.nodeids]
            self._index = TargetIndex(
                plan.nodeids,
                [getattr(i, "function", None) for i in items],
                [getattr(i, "cls", None) for i in items],
            )
        return self._index.resolve(target, nodeid)


def requires_ancestors(plan: Plan, node: int) -> set[int]:
    """Nodes reachable from ``node`` through REQUIRES edges (the reduction keeps these)."""
    if node < 0:
        return set()
    return set(reachable(plan.graph, (node,), "dependencies", (Kind.REQUIRES,)))


def _check_name(where: str, name: object) -> None:
    """Raise OutputError unless ``name`` is a usable value name (non-empty UTF-8 text)."""
    if not isinstance(name, str) or not name:
        got = "an empty string" if isinstance(name, str) else _shown(name)
        raise OutputError(
            f"{where}: the value name must be a non-empty string; got {got}.\n"
            "  Name values with text, e.g. depgraph.publish('user_id', user.id)."
        )
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise OutputError(
            f"{where}: the value name {name!r} is not valid text (it holds a lone surrogate, "
            "which cannot be encoded as UTF-8, so it cannot travel to other xdist workers).\n"
            "  Use a name made of ordinary characters."
        ) from None


def _is_target(target: object) -> bool:
    if isinstance(target, str):
        return bool(target.strip())
    try:
        function = getattr(target, "__func__", target)
    except Exception:  # a foreign object's __getattr__ may raise anything
        return False
    return inspect.isclass(target) or callable(function)


def _unpickle(reader: str, producer: str, name: str, data: bytes) -> object:
    import pickle

    try:
        return pickle.loads(data)
    except Exception as error:  # unpickling runs arbitrary code: anything can be raised
        raise OutputError(
            f"depgraph: {reader}: the value {name!r} published by {producer} cannot be "
            f"unpickled: {type(error).__name__}: {_error_text(error)}.\n"
            "  Unpickling needs the value's classes importable, and their __setstate__/"
            "__reduce__ working, in the reading process; publish "
            f"{_PLAIN_DATA} instead."
        ) from None


def _shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` for a message: shortened, and never raising."""
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _error_text(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:
        return type(error).__name__


def _describe(target: object) -> str:
    return describe_target(target) if _is_target(target) else _shown(target)


def _target_text(target: object) -> str:
    return repr(target) if isinstance(target, str) else str(getattr(target, "__name__", target))
