"""The origin kinds and their wording: what a cycle report, the DOT file and --dist errors say."""

from __future__ import annotations

import json

from pytest_depgraph.collect.origins import BUILT, WORDS, OriginKind, describe
from pytest_depgraph.collect.readers import READERS
from pytest_depgraph.collect.selection import DECLARING_CALLS
from pytest_depgraph.core.graph.storage import Origin


def test_origin_describe() -> None:
    assert describe(Origin("marker", "tests/t.py:14")) == "depends_on at tests/t.py:14"
    assert describe(Origin("fixture", name="gateway")) == "fixture 'gateway'"
    assert describe(Origin("output", name="vpc_id")) == "output fixture 'vpc_id'"
    assert describe(Origin("dependency", "f.py:3")) == "dependency marker at f.py:3"
    assert describe(Origin("order", "f.py:4")) == "order marker at f.py:4"
    assert describe(Origin("marker")) == "depends_on"
    assert describe(Origin("pin", "both use the module fixture 'db'")) == (
        "on one worker, in order: both use the module fixture 'db'"
    )


def test_a_kind_read_back_from_a_plan_is_the_same_kind() -> None:
    # a plan's JSON holds the kinds as plain strings: they compare, hash and word the same
    for kind in OriginKind:
        (text,) = json.loads(json.dumps([kind]))
        assert text == kind and hash(text) == hash(kind) and f"{kind}" == text
        assert {kind: 1}[text] == 1
        assert describe(Origin(text, "t.py:1", "x")) == describe(Origin(kind, "t.py:1", "x"))


def test_every_origin_kind_has_its_words_and_its_label() -> None:
    """A new origin kind without its row in WORDS would be described by its raw value and
    left out of the summary's count of edges: this fails first."""
    assert set(WORDS) == set(OriginKind)
    for kind, words in WORDS.items():
        assert words.what and words.label, kind
    labels = [words.label for words in WORDS.values()]
    # kinds counted together are listed together
    assert all(labels.index(label) == i or labels[i - 1] == label
               for i, label in enumerate(labels))


def test_every_reader_says_what_it_declares_and_where_selection_looks() -> None:
    """Each way to declare names its origin kinds and the calls selection scans the test files
    for; every origin kind comes from a reader or from the build (pins, units)."""
    declared: set[str] = set()
    for reader in READERS:
        assert reader.kinds <= set(WORDS), reader
        # a reader whose declarations name tests is one selection must scan the files for
        assert bool(reader.calls) == bool(reader.kinds), reader
        declared |= reader.kinds
    assert declared | BUILT == set(OriginKind)
    assert not declared & BUILT
    assert frozenset(c for reader in READERS for c in reader.calls) == DECLARING_CALLS
    assert {"depends_on", "cleanup_of", "output_fixture", "dependency", "order"} == DECLARING_CALLS
