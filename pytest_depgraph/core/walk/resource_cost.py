"""What the shared resources cost a walk: per resource, how long it was held and waited for;
per test, what it waited for; the time of the exclusive tests.

The books (:mod:`pytest_depgraph.core.walk.resource_books`) keep these figures on their clock; the
summary, the run report and the lower bound read them. Pure: no pytest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Use:
    """What one resource cost a walk."""

    name: str
    capacity: int
    #: seconds during which at least one test or block held it
    held: float
    #: seconds its writers held it, added up (a block: from its first start to its release)
    written: float
    #: seconds tests waited for it, added up, and how many tests waited
    waited: float
    waiters: int


@dataclass(frozen=True)
class Wait:
    """A stretch of time a ready test spent set aside."""

    #: :data:`LOCK` (``name``: the resource), :data:`SLOTS` or :data:`ALONE` (an empty run,
    #: for an exclusive test)
    kind: str
    name: str
    since: float
    until: float


@dataclass(frozen=True)
class Ended:
    """A worker shut down before the run's end: a fixture of its session kept ``resources``
    (a session fixture lives until its worker ends), which ``test`` waited for and could run
    on no worker that had them."""

    worker: str
    test: int
    resources: tuple[str, ...]


@dataclass(frozen=True)
class Record:
    """What the shared resources cost a walk, on the books' clock."""

    uses: tuple[Use, ...] = ()
    #: node -> what it waited for, in order
    waits: Mapping[int, tuple[Wait, ...]] = field(default_factory=dict)
    #: seconds exclusive tests ran, added up
    alone: float = 0.0
    #: the bound (None: none), and (node, the weight it declared) of each test that counted
    #: as the bound, being heavier
    limit: int | None = None
    clamped: tuple[tuple[int, int], ...] = ()
    #: the workers shut down early for what their session kept, in order
    ended: tuple[Ended, ...] = ()
