"""Which process this is: a serial session, the xdist controller, or an xdist worker.

Every "am I a worker or the controller" question of the plugin is answered here, from what
pytest-xdist leaves on the config: a worker has ``config.workerinput`` (where the controller's
depgraph hooks put :data:`WORKERINPUT_KEY`), a controller has xdist's ``dsession`` plugin.
Asked each time, never cached: xdist registers ``dsession`` in its own ``pytest_configure``, so
before that a controller still reads as :attr:`Role.SERIAL`.
"""

from __future__ import annotations

import enum

import pytest

from pytest_depgraph.hosts.xdist import is_controller

#: ``workerinput`` key the controller sets:
#: {"protocol": int, "walk": bool, "places": bool, "locations": [k, n] or False}
WORKERINPUT_KEY = "depgraph"


class Role(enum.Enum):
    """The part this process plays in the session."""

    #: one process runs the tests and sees every report (no xdist session)
    SERIAL = "serial"
    #: the xdist controller: runs no test, sees every worker's reports
    CONTROLLER = "controller"
    #: an xdist worker whose controller set nothing for the plugin
    WORKER = "worker"
    #: an xdist worker whose controller expects its plan but schedules with another ``--dist``
    LINKED_WORKER = "linked worker"
    #: an xdist worker whose tests the depgraph scheduler hands out one at a time
    WALKED_WORKER = "walked worker"

    @property
    def is_worker(self) -> bool:
        """An xdist worker: it sees only its own reports and never writes the session's files."""
        return self in (Role.WORKER, Role.LINKED_WORKER, Role.WALKED_WORKER)

    @property
    def sends_plan(self) -> bool:
        """An xdist worker whose controller expects the plan event."""
        return self in (Role.LINKED_WORKER, Role.WALKED_WORKER)


def role(config: pytest.Config) -> Role:
    """The part this process plays, as far as pytest-xdist has set it up so far."""
    if not hasattr(config, "workerinput"):
        return Role.CONTROLLER if is_controller(config) else Role.SERIAL
    flags = _controller_flags(config)
    if flags is None:
        return Role.WORKER
    return Role.WALKED_WORKER if flags.get("walk") else Role.LINKED_WORKER


def controller_shows_places(config: pytest.Config) -> bool:
    """On a worker: whether its controller shows where edges were declared (yes when it did
    not say), so that the plan the worker sends must carry them."""
    flags = _controller_flags(config)
    return flags is None or bool(flags.get("places", True))


def sends_locations(config: pytest.Config) -> tuple[int, int] | None:
    """On a worker: the share of the tests' locations its controller asked it for, ``(k,
    n)``: those of the tests whose index is ``k`` modulo ``n`` (the first ``n`` workers of a
    walk share them: the others would compute the same ones again); None: none."""
    flags = _controller_flags(config)
    part = None if flags is None else flags.get("locations")
    if (isinstance(part, (list, tuple)) and len(part) == 2
            and all(type(x) is int for x in part) and 0 <= part[0] < part[1]):
        return part[0], part[1]
    return None


def _controller_flags(config: pytest.Config) -> dict[str, object] | None:
    """What the controller's depgraph hooks put in this worker's ``workerinput`` (None: not
    a worker of such a controller)."""
    workerinput = getattr(config, "workerinput", None)
    flags = workerinput.get(WORKERINPUT_KEY) if isinstance(workerinput, dict) else None
    return flags if isinstance(flags, dict) else None
