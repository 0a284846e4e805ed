"""Values between tests: ``depgraph.publish``, ``depgraph.output`` and ``output_fixture``.

A test publishes named values; a test that depends on it (through REQUIRES edges) reads them.
Values are pickled into a directory made for this run only (removed at the end), so they reach
a reader on another xdist worker of the same machine, and never leak into another run.
"""

from __future__ import annotations

import os
import pickle
import shutil
import sys
import tempfile
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable

import pytest

from pytest_depgraph.graph import Kind
from pytest_depgraph.markers import RawDeclaration, declare, describe_target
from pytest_depgraph.plan import Plan
from pytest_depgraph.resolve import TargetIndex
from pytest_depgraph.state import PLAN_KEY

_WORKERINPUT = "depgraph_outputs"


class OutputError(Exception):
    """Reading or publishing a value went wrong; the message is for a person."""


class OutputStore:
    """Published values of one run: ``<dir>/<node id hex>/<name hex>.pickle``."""

    def __init__(self, directory: Path, owner: bool) -> None:
        self.directory = directory
        self.owner = owner

    @classmethod
    def for_config(cls, config: pytest.Config) -> OutputStore:
        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None and _WORKERINPUT in workerinput:
            return cls(Path(workerinput[_WORKERINPUT]), owner=False)
        return cls(Path(tempfile.mkdtemp(prefix="depgraph-outputs-")), owner=True)

    def _folder(self, nodeid: str) -> Path:
        return self.directory / nodeid.encode("utf-8").hex()[:200]

    def publish(self, nodeid: str, name: str, value: object) -> None:
        try:
            data = pickle.dumps(value)
        except Exception as error:  # pickling raises many types
            raise OutputError(
                f"depgraph: {nodeid} cannot publish {name!r}: the value "
                f"({type(value).__name__}) cannot be pickled: {error}.\n"
                "  Values travel between xdist workers, so they must be picklable: publish an "
                "id, a string, a number or a dict of those instead."
            ) from None
        folder = self._folder(nodeid)
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / (name.encode("utf-8").hex() + ".pickle")
        temporary = target.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_bytes(data)
        os.replace(temporary, target)  # readers never see half a value

    def names(self, nodeid: str) -> list[str]:
        folder = self._folder(nodeid)
        if not folder.is_dir():
            return []
        return sorted(
            bytes.fromhex(p.name[: -len(".pickle")]).decode("utf-8")
            for p in folder.glob("*.pickle")
        )

    def read(self, nodeid: str, name: str) -> tuple[bool, object]:
        path = self._folder(nodeid) / (name.encode("utf-8").hex() + ".pickle")
        try:
            return True, pickle.loads(path.read_bytes())
        except FileNotFoundError:
            return False, None

    def close(self) -> None:
        if self.owner:
            shutil.rmtree(self.directory, ignore_errors=True)


class Outputs:
    """The session side: the store, the running test, and the plan to check dependencies."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.store = OutputStore.for_config(config)
        self.current: pytest.Item | None = None
        self._index: TargetIndex | None = None
        self._items: list[pytest.Item] = []

    # xdist: tell the workers where the values live (optional hook: xdist may be absent)
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[_WORKERINPUT] = str(self.store.directory)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._items = list(session.items)
        self._index = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Any:
        self.current = item
        try:
            return (yield)
        finally:
            self.current = None

    def pytest_unconfigure(self) -> None:
        self.store.close()

    def publish(self, name: str, value: object) -> None:
        item = self._running("publish")
        if not isinstance(name, str) or not name:
            raise OutputError("depgraph.publish(name, value): name must be a non-empty string")
        self.store.publish(item.nodeid, name, value)

    def output(self, target: object, name: str, reader: str = "depgraph.output") -> object:
        item = self._running("read an output")
        plan = self.config.stash.get(PLAN_KEY, None)
        if plan is None:
            raise OutputError("depgraph: outputs can only be read while tests run")
        matches = self._resolve(target, item.nodeid)
        if not matches:
            raise OutputError(
                f"depgraph: {item.nodeid}: {reader}({describe_target(target)}, {name!r}): the "
                "target matches no test in this run."
            )
        node = plan.nodeids.index(item.nodeid) if item.nodeid in plan.nodeids else -1
        upstream = _requires_ancestors(plan, node)
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
            ok, value = self.store.read(plan.nodeids[match], name)
            if ok:
                found.append((plan.nodeids[match], value))
        if len(found) == 1:
            return found[0][1]
        if len(found) > 1:
            raise OutputError(
                f"depgraph: {item.nodeid}: {name!r} was published by {len(found)} tests "
                f"({', '.join(n for n, _ in found)}); name one of them in the target."
            )
        published = sorted({n for m in matches for n in self.store.names(plan.nodeids[m])})
        source = plan.nodeids[matches[0]] if len(matches) == 1 else describe_target(target)
        listing = ", ".join(repr(n) for n in published) if published else "nothing"
        raise OutputError(
            f"depgraph: {item.nodeid}: {source} published no value {name!r}; it published "
            f"{listing}."
        )

    def _running(self, what: str) -> pytest.Item:
        if self.current is None:
            raise OutputError(f"depgraph: cannot {what} outside a running test")
        return self.current

    def _resolve(self, target: object, nodeid: str) -> Sequence[int]:
        plan = self.config.stash[PLAN_KEY]
        if self._index is None:
            by_id = {item.nodeid: item for item in self._items}
            items = [by_id.get(n) for n in plan.nodeids]
            self._index = TargetIndex(
                plan.nodeids,
                [getattr(i, "function", None) for i in items],
                [getattr(i, "cls", None) for i in items],
            )
        return self._index.resolve(target, nodeid)


def _requires_ancestors(plan: Plan, node: int) -> set[int]:
    """Nodes reachable from ``node`` through REQUIRES edges (the reduction keeps these)."""
    seen: set[int] = set()
    if node < 0:
        return seen
    queue = deque([node])
    while queue:
        for edge in plan.graph.dependencies(queue.popleft()):
            if edge.kind is Kind.REQUIRES and edge.dependency not in seen:
                seen.add(edge.dependency)
                queue.append(edge.dependency)
    return seen


def _target_text(target: object) -> str:
    return repr(target) if isinstance(target, str) else str(getattr(target, "__name__", target))


class DepGraph:
    """The ``depgraph`` fixture: publish values, read the values of dependencies."""

    def __init__(self, outputs: Outputs) -> None:
        self._outputs = outputs

    def publish(self, name: str, value: object) -> None:
        """Store an output of the running test (must be picklable)."""
        _as_failure(lambda: self._outputs.publish(name, value))

    def output(self, target: object, name: str) -> Any:
        """An output of a test that the running test depends on (REQUIRES edge)."""
        return _as_failure(lambda: self._outputs.output(target, name))


def _as_failure(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except OutputError as error:
        pytest.fail(str(error), pytrace=False)


def output_fixture(target: object, name: str, *, scope: str = "function") -> Any:
    """A fixture that returns output ``name`` of ``target``; using it *is* the dependency.

    Assign it to a module (or conftest) attribute: the attribute name is the fixture name.
    """
    frame = sys._getframe(1)
    where = f"{frame.f_code.co_filename}:{frame.f_lineno}"

    def output(request: pytest.FixtureRequest) -> Any:
        outputs = request.config.stash[OUTPUTS_KEY]
        return _as_failure(
            lambda: outputs.output(target, name, reader=f"fixture '{request.fixturename}'")
        )

    output._depgraph_output = True  # type: ignore[attr-defined]
    declare(output, RawDeclaration((target,), {"on_failure": "skip"}, where))
    return pytest.fixture(scope=scope)(output)  # type: ignore[call-overload]


OUTPUTS_KEY = pytest.StashKey[Outputs]()
