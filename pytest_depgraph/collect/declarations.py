"""What each test declares: the readers a session needs, each place read once and shared.

:class:`Declarations` asks every reader of :data:`~pytest_depgraph.collect.readers.READERS`
whether it may declare in this session, and keeps those that may. For a test it asks each of
them where the test's declarations are written (once per test, test definition or class or
module, as the reader shares them) and what each place declares (once per place, for the first
test it applies to), and joins what they found, in the readers' order. What the readers that
share read for a test definition (its function, class, module, fixtures) is kept for the
definition: its other tests (parametrized instances) ask only the readers of a test's own.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import pytest

from pytest_depgraph.collect.context import Context, Source
from pytest_depgraph.collect.peer_plugins import marks_of
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
        #: whether the reader's places are shared by the tests of a definition or parent
        self.shared = reader.sharing is not Sharing.TEST
        #: sharing key -> the places of the tests that share it
        self.places: dict[Hashable, Sequence[Place]] = {}
        #: place key -> what it declares
        self.found: dict[Hashable, Found] = {}

    def places_of(
        self, item: pytest.Item, position: int, definition: tuple[int, int] | None
    ) -> Sequence[Place]:
        """The places of ``item``'s declarations, asked once per test, test definition or
        parent, as the reader shares them. ``definition``: the key of the test's definition
        (None: not a pytest function, whose places are its own)."""
        sharing = self.reader.sharing
        if sharing is Sharing.TEST:
            return self.reader.places(item, position)
        key: Hashable
        if sharing is Sharing.PARENT:
            key = id(item.parent)
        elif definition is None:
            return self.reader.places(item, position)
        else:
            key = definition
        places = self.places.get(key)
        if places is None:
            places = self.places[key] = self.reader.places(item, position)
        return places


class _Group:
    """Readings asked together for each test, in the readers' order, with what the shared
    ones found for each test definition."""

    def __init__(self, readings: list[_Reading]) -> None:
        self.readings = readings
        #: the readings of a test's own (asked for every test)
        self.own = [r for r in readings if not r.shared]
        self.shares = len(self.own) < len(readings)
        #: (fixture info, parent) of a test definition -> what each shared reading found
        #: for it, in order; () when none found anything
        self.definitions: dict[tuple[int, int], Sequence[list[Found]]] = {}

    def release(self) -> None:
        """Let go of what was read: the definitions' parts, the places, what they declare."""
        self.definitions = {}
        for reading in self.readings:
            reading.places, reading.found = {}, {}


class Declarations:
    """The readers that may declare in one session, and what each test declares through them."""

    def __init__(self, context: Context) -> None:
        self.context = context
        marks = marks_of(context.collected)
        readers = [reader_class(context) for reader_class in READERS]
        readings = [_Reading(reader) for reader in readers if reader.declares(marks)]
        self._readings = _Group([r for r in readings if not r.reader.reaches_dependents()])
        #: the readers whose declarations reach past their targets (:meth:`reaching`)
        self._reaching = _Group([r for r in readings if r.reader.reaches_dependents()])
        #: position -> what the declarations of the test there claim (tests read so far)
        self.claims: dict[int, list[Claim]] = {}

    def nothing(self) -> bool:
        """Whether no test can declare anything in this session: then the plan has no edge
        and nothing to look up."""
        return not self._readings.readings and not self._reaching.readings

    def sources(self, position: int) -> Sequence[Source]:
        """What the test at ``position`` declares, to resolve; its problems note it among
        the tests they are for, and its claims go to :attr:`claims`."""
        return self._read(self._readings, position)

    def reaching(self) -> dict[int, Sequence[Source]]:
        """What every collected test declares through the readers whose declarations reach
        past their targets (``cleanup_of``), by position: a test is pulled into the run by
        what it names, so every test is read, not only those of the run. O(collected)."""
        if not self._reaching.readings:
            return {}
        found: dict[int, Sequence[Source]] = {}
        for position in range(len(self.context.collected)):
            sources = self._read(self._reaching, position)
            if sources:
                found[position] = sources
        return found

    def _read(self, group: _Group, position: int) -> Sequence[Source]:
        """What the test at ``position`` declares through ``group``, in the readers' order,
        each place read once (for the first test it applies to). The shared readings are
        asked once per test definition; a definition for which they found nothing costs its
        other tests (parametrized instances) one look-up."""
        item = self.context.collected[position]
        key = None
        if group.shares:
            # pytest makes one fixture info per test definition, shared by its instances
            info = fixture_info(item)
            if info is not None:
                key = (id(info), id(item.parent))
        known = None if key is None else group.definitions.get(key)
        # what the shared readings find for the first test of a definition, kept for it
        shared: list[list[Found]] | None = [] if known is None and key is not None else None
        definition = iter(known) if known else None
        found: list[Found] = []
        for reading in group.readings if known is None or known else group.own:
            if definition is not None and reading.shared:
                found += next(definition)
                continue
            start = len(found)
            for place in reading.places_of(item, position, key):
                part = reading.found.get(place.key)
                if part is None:
                    part = reading.found[place.key] = reading.reader.read(place, position)
                if part is not NOTHING:
                    found.append(part)
            if shared is not None and reading.shared:
                shared.append(found[start:])
        if shared is not None and key is not None:
            group.definitions[key] = shared if any(shared) else ()
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
        for reading in [*self._readings.readings, *self._reaching.readings]:
            counts.update(reading.reader.order_edges(ordered))
        return counts

    def release(self) -> None:
        """Let go of what reading the declarations kept (the places and what they declare):
        the graph's phases that follow are the build's peak of memory."""
        self._readings.release()
        self._reaching.release()
