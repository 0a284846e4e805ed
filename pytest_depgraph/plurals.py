"""Counts in a user's words, for every layer's messages: "1 test", "2 tests", "3 dependencies"."""

from __future__ import annotations


def noun(count: int, word: str) -> str:
    """``word`` as it follows ``count``: plural unless the count is one (``dependency`` ->
    ``dependencies``)."""
    if count == 1:
        return word
    return word[:-1] + "ies" if word.endswith("y") else word + "s"


def plural(count: int, word: str) -> str:
    """``count`` and ``word`` (:func:`noun`): ``1 test``, ``3 dependencies``."""
    return f"{count} {noun(count, word)}"


def tests(count: int) -> str:
    """``1 test``, ``2 tests``."""
    return plural(count, "test")
