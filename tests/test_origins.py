"""The origin kinds and their wording: what a cycle report, the DOT file and --dist errors say."""

from __future__ import annotations

import json

from pytest_depgraph.collect.origins import OriginKind, describe
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
