"""Backfilling: a short test may start ahead of a more urgent test that waits for slots or for
an empty run, when it is expected to end before that test could start anyway.

A test that waits for several slots of the bound, or for every worker to be free (an exclusive
test), holds back the less urgent tests so that it is not starved by a stream of small ones;
meanwhile the slots that free up one by one stay idle. As in a batch scheduler's "EASY"
backfilling, the running tests' expected ends say when enough slots will be free (the
*shadow* time): a test expected to end by then delays nobody and may use an idle slot now.
Only known durations count: without them, nothing is backfilled.

A test expected to end a little *after* the shadow time may go too (:func:`late`): the
expected ends leave out the round trip to a worker (a test's report, the next test sent), so
on a real run a test that ends exactly at the shadow time is already late, and one left out
for that leaves its slot idle for its whole length. It may be late by the round trips it
stands for (:data:`ROUND_TRIPS`), and by less than its own length divided among the slots the
waiting test takes (then the slot-seconds it fills are more than those the waiting test's
other reserved slots lose meanwhile).

Pure: no pytest, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable


def shadow(needs: int, free: int, running: Iterable[tuple[float | None, int]]) -> float | None:
    """The earliest time at which ``needs`` slots are free, given ``free`` slots free now and
    the ``running`` tests as (expected end, slots it frees at its end); None when that time
    is unknown (a test it waits for has no known duration). O(r log r)."""
    if free >= needs:
        return None  # it may start now: nothing to backfill before it
    ends = sorted(running, key=lambda run: float("inf") if run[0] is None else run[0])
    for end, slots in ends:
        if end is None:
            return None
        free += slots
        if free >= needs:
            return end
    return None


#: how late after the shadow time a backfilled test may end, at most (seconds): a few round
#: trips to a worker on a loaded machine. The resources bench's weights suite, walked on a
#: clock of events where each report and each test sent arrives 10 ms late, ends at 1.066 of
#: its bound without it, 1.014 with it (tests/test_resource_urgency.py)
ROUND_TRIPS = 0.05


def late(seconds: float, slots: int) -> float:
    """How late after the shadow time a test of ``seconds`` may end and still go ahead of a
    waiting test that takes ``slots``: it fills ``seconds`` of an idle slot, and delays the
    ``slots`` - 1 others the waiting test reserves by at most this. O(1)."""
    return min(ROUND_TRIPS, seconds / max(slots, 1))
