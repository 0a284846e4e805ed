"""Backfilling: a short test may start ahead of a more urgent test that waits for slots or for
an empty run, when it is expected to end before that test could start anyway.

A test that waits for several slots of the bound, or for every worker to be free (an exclusive
test), holds back the less urgent tests so that it is not starved by a stream of small ones;
meanwhile the slots that free up one by one stay idle. As in a batch scheduler's "EASY"
backfilling, the running tests' expected ends say when enough slots will be free (the
*shadow* time): a test expected to end by then delays nobody and may use an idle slot now.
Only known durations count: without them, nothing is backfilled.

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
