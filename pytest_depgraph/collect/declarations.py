"""What each test declares: the readers a session needs, each place read once and shared.

:class:`Declarations` asks every reader of :data:`~pytest_depgraph.collect.readers.READERS`
whether it may declare in this session, and keeps those that may. For a test it asks each of
them where the test's declarations are written (once per test, test definition or class or
module, as the reader shares them) and what each place declares (once per place, for the first
test it applies to), and joins what they found, in the readers' order.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import pytest

from pytest_depgraph.collect.context import Context, Source
from pytest_depgraph.collect.peers import marks_of
from pytest_depgraph.collect.readers import READERS
from pytest_depgraph.collect.readers.base import (
    NOTHING,
    Claim,
    Found,
    Ordered,
    Place,
    Reader,
    Sharing,
)
from pytest_depgraph.hosts.pytest import fixture_info


class _Reading:
    """One reader of the session, with what it found so far."""

    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        #: sharing key -> the places of the tests that share it
        self.places: dict[Hashable, Sequence[Place]] = {}
        #: place key -> what it declares
        self.found: dict[Hashable, Found] = {}

    def places_of(self, item: pytest.Item, position: int) -> Sequence[Place]:
        """The places of ``item``'s declarations, asked once per test, test definition or
        parent, as the reader shares them."""
        sharing = self.reader.sharing
        if sharing is Sharing.TEST:
            return self.reader.places(item, position)
        if sharing is Sharing.PARENT:
            key: Hashable = id(item.parent)
        else:
            # pytest makes one fixture info per test definition, shared by its instances
            info = fixture_info(item)
            if info is None:
                return self.reader.places(item, position)  # not a pytest function: its own
            key = (id(info), id(item.parent))
        places = self.places.get(key)
        if places is None:
            places = self.places[key] = self.reader.places(item, position)
        return places


class Declarations:
    """The readers that may declare in one session, and what each test declares through them."""

    def __init__(self, context: Context) -> None:
        self.context = context
        marks = marks_of(context.collected)
        readers = [reader_class(context) for reader_class in READERS]
        readings = [_Reading(reader) for reader in readers if reader.declares(marks)]
        self._readings = [r for r in readings if not r.reader.reaches_dependents()]
        #: the readers whose declarations reach past their targets (:meth:`reaching`)
        self._reaching = [r for r in readings if r.reader.reaches_dependents()]
        #: position -> what the declarations of the test there claim (tests read so far)
        self.claims: dict[int, list[Claim]] = {}

    def nothing(self) -> bool:
        """Whether no test can declare anything in this session: then the plan has no edge
        and nothing to look up."""
        return not self._readings and not self._reaching

    def sources(self, position: int) -> Sequence[Source]:
        """What the test at ``position`` declares, to resolve; its problems note it among
        the tests they are for, and its claims go to :attr:`claims`."""
        return self._read(self._readings, position)

    def reaching(self) -> dict[int, Sequence[Source]]:
        """What every collected test declares through the readers whose declarations reach
        past their targets (``cleanup_of``), by position: a test is pulled into the run by
        what it names, so every test is read, not only those of the run. O(collected)."""
        if not self._reaching:
            return {}
        found: dict[int, Sequence[Source]] = {}
        for position in range(len(self.context.collected)):
            sources = self._read(self._reaching, position)
            if sources:
                found[position] = sources
        return found

    def _read(self, readings: Sequence[_Reading], position: int) -> Sequence[Source]:
        """What the test at ``position`` declares through ``readings``."""
        item = self.context.collected[position]
        found: list[Found] = []
        for reading in readings:
            for place in reading.places_of(item, position):
                part = reading.found.get(place.key)
                if part is None:
                    part = reading.found[place.key] = reading.reader.read(place, position)
                if part is not NOTHING:
                    found.append(part)
        if not found:
            return ()
        for part in found:
            for problem in part.problems:
                problem.items.add(position)
            if part.claims:
                self.claims.setdefault(position, []).extend(part.claims)
        if len(found) == 1:
            return found[0].sources
        return [source for part in found for source in part.sources]

    def order_edges(self, ordered: Ordered) -> dict[str, int]:
        """The edges the readers add once the serial order is known (to ``ordered.graph``),
        by origin kind."""
        counts: dict[str, int] = {}
        for reading in [*self._readings, *self._reaching]:
            counts.update(reading.reader.order_edges(ordered))
        return counts

    def release(self) -> None:
        """Let go of what reading the declarations kept (the places and what they declare):
        the graph's phases that follow are the build's peak of memory."""
        for reading in [*self._readings, *self._reaching]:
            reading.places, reading.found = {}, {}
