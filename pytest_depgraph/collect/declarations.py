"""What each test declares: the readers a session needs, asked for many tests at once.

:class:`Declarations` asks every reader of :data:`~pytest_depgraph.collect.readers.READERS`
whether it may declare in this session, and keeps those that may. It asks them for what the
tests the run reaches declare, a batch of tests at a time (the selected tests, then those they
pull in), each reader for its columns of the whole batch (:meth:`Reader.read_tests`), and
joins them per test, in the readers' order.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_depgraph.collect.context import Context, Source
from pytest_depgraph.collect.peer_plugins import Marks, marks_of
from pytest_depgraph.collect.readers import READERS
from pytest_depgraph.collect.readers.base import Claim, Found, Ordered, Reader

#: what a test that declares nothing declares
_NONE: Sequence[Source] = ()


class Declarations:
    """The readers that may declare in one session, and what tests declare through them."""

    def __init__(self, context: Context, marks: Marks | None = None) -> None:
        """``marks``: :func:`marks_of` the collected tests, when the caller has it."""
        self.context = context
        if marks is None:
            marks = marks_of(context.collected)
        readers = [reader_class(context) for reader_class in READERS]
        declaring = [reader for reader in readers if reader.declares(marks)]
        self._readers = [r for r in declaring if not r.reaches_dependents()]
        #: the readers whose declarations reach past their targets (:meth:`reaching`)
        self._reaching = [r for r in declaring if r.reaches_dependents()]
        #: position -> what the declarations of the test there claim (tests read so far)
        self.claims: dict[int, list[Claim]] = {}

    def nothing(self) -> bool:
        """Whether no test can declare anything in this session: then the plan has no edge
        and nothing to look up."""
        return not self._readers and not self._reaching

    def sources(self, positions: Sequence[int]) -> list[Sequence[Source]]:
        """What the tests at ``positions`` declare, to resolve, one sequence per test (each
        test asked once); their problems note them among the tests they are for, and their
        claims go to :attr:`claims`."""
        return self._read(self._readers, positions)

    def reaching(self) -> dict[int, Sequence[Source]]:
        """What every collected test declares through the readers whose declarations reach
        past their targets (``cleanup_of``), by position: a test is pulled into the run by
        what it names, so every test is read, not only those of the run. O(collected)."""
        if not self._reaching:
            return {}
        every = range(len(self.context.collected))
        return {p: found for p, found in zip(every, self._read(self._reaching, every)) if found}

    def _read(self, readers: list[Reader], positions: Sequence[int]) -> list[Sequence[Source]]:
        """What the tests at ``positions`` declare through ``readers``, in the readers' order."""
        if not readers:
            return [_NONE] * len(positions)
        # one Found a test: the usual reader gives each test at most one, taken as it is;
        # a second part joins the first (measured, callgrind: the declarations read of
        # rand10k and onefile10k, 10,000 tests with a mark each, 224.8 -> 209.3 M
        # instructions; real10k, four readers, 339.8 -> 326.5 M: a list of parts a test ->
        # this)
        parts: dict[int, Found] = {}
        for reader in readers:
            columns = reader.read_tests(positions)
            if not parts:
                parts = dict(zip(columns.positions, columns.found))
                if len(parts) == len(columns.positions):
                    continue
                parts = {}
            for position, part in zip(columns.positions, columns.found):
                known = parts.get(position)
                parts[position] = part if known is None else _joined(known, part)
        self.context.warn_in_order(positions)
        found: list[Sequence[Source]] = []
        for position in positions:
            mine = parts.get(position)
            if mine is None:
                found.append(_NONE)
                continue
            for problem in mine.problems:
                problem.items.add(position)
            if mine.claims:
                self.claims.setdefault(position, []).extend(mine.claims)
            found.append(mine.sources)
        return found

    def order_edges(self, ordered: Ordered) -> dict[str, int]:
        """The edges the readers add once the serial order is known (to ``ordered.graph``),
        by origin kind."""
        counts: dict[str, int] = {}
        for reader in [*self._readers, *self._reaching]:
            counts.update(reader.order_edges(ordered))
        return counts

    def release(self) -> None:
        """Let go of what reading the declarations kept (the places and what they declare):
        the graph's phases that follow are the build's peak of memory."""
        for reader in [*self._readers, *self._reaching]:
            reader.release()


def _joined(first: Found, then: Found) -> Found:
    """What one test declares in two places, in that order."""
    return Found([*first.sources, *then.sources], [*first.problems, *then.problems],
                 [*first.claims, *then.claims])
