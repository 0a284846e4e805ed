"""Counts in a user's words, for every layer's messages: "1 test", "2 tests", "3 dependencies"."""

from __future__ import annotations


def plural(count: int, noun: str) -> str:
    """``count`` and ``noun``, plural unless it is one (``dependency`` -> ``dependencies``)."""
    if count == 1:
        return f"1 {noun}"
    nouns = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{count} {nouns}"


def tests(count: int) -> str:
    """``1 test``, ``2 tests``."""
    return plural(count, "test")
