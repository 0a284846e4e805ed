"""pytest-order's scopes (``--order-scope``, ``--order-scope-level``, ``--order-group-scope``):
the serial order is pytest-order's own, and on -n 2 the edges say the same."""

from __future__ import annotations

import re

import pytest

from .fake_workers import collected_plan
from .helpers import passed_order

SUITE = {
    "test_m1": """
        import pytest

        @pytest.mark.order(after="test_m2.py::test_y")
        def test_x():
            pass

        @pytest.mark.order(2)
        def test_x2():
            pass

        @pytest.mark.order(1)
        def test_x1():
            pass
        """,
    "test_m2": """
        import pytest

        def test_y():
            pass

        @pytest.mark.order(1)
        def test_y1():
            pass
        """,
}


def serial_order(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = pytester.runpytest("-v", "-p", "no:randomly", "-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=5)
    return passed_order(result)


def dot_edges(pytester: pytest.Pytester, *args: str) -> set[tuple[str, str]]:
    """The edges of the plan an xdist run on two workers walked (its DOT file)."""
    dot = pytester.path / "g.dot"
    result = pytester.runpytest("-n", "2", "-p", "xdist", f"--depgraph-dot={dot}",
                                *args)
    result.assert_outcomes(passed=5)
    return set(re.findall(r'^  "(test_\S+)" -> "(test_\S+)"', dot.read_text(), re.M))


def test_order_scope_module_orders_within_each_module_only(pytester: pytest.Pytester) -> None:
    """test_x names a test of another module: pytest-order ignores that marker under
    --order-scope=module, and compares positions within each module. So do we: the serial
    order is pytest-order's, and no edge leaves a module."""
    pytester.makepyfile(**SUITE)
    theirs = serial_order(pytester, "--order-scope=module", "-p", "no:depgraph")
    assert theirs == ["test_m1.py::test_x1", "test_m1.py::test_x2", "test_m1.py::test_x",
                      "test_m2.py::test_y1", "test_m2.py::test_y"]
    assert serial_order(pytester, "--order-scope=module") == theirs
    assert serial_order(pytester, "--order-scope=class") == theirs
    assert dot_edges(pytester, "--order-scope=module") == {
        ("test_m1.py::test_x2", "test_m1.py::test_x1"),
        ("test_m1.py::test_x", "test_m1.py::test_x2"),
        ("test_m2.py::test_y", "test_m2.py::test_y1"),
    }


def test_order_group_scope_moves_whole_modules(pytester: pytest.Pytester) -> None:
    """--order-group-scope=module: positions within each module, then the modules as wholes;
    test_x's marker puts all of test_m1.py after all of test_m2.py."""
    pytester.makepyfile(**SUITE)
    theirs = serial_order(pytester, "--order-group-scope=module", "-p", "no:depgraph")
    assert theirs == ["test_m2.py::test_y1", "test_m2.py::test_y", "test_m1.py::test_x1",
                      "test_m1.py::test_x2", "test_m1.py::test_x"]
    assert serial_order(pytester, "--order-group-scope=module") == theirs
    edges = dot_edges(pytester, "--order-group-scope=module")
    m1 = ["test_m1.py::test_x1", "test_m1.py::test_x2", "test_m1.py::test_x"]
    m2 = ["test_m2.py::test_y1", "test_m2.py::test_y"]
    assert {(a, b) for a in m1 for b in m2} <= edges
    assert not {(b, a) for a in m1 for b in m2} & edges


def test_order_scope_level_orders_within_each_directory(pytester: pytest.Pytester) -> None:
    """--order-scope-level=1: positions compared within each top directory (before, a
    parallel run tied test_top.py's order(0) to every test of a/ and b/)."""
    for folder in ("a", "b"):
        pytester.mkpydir(folder)
        (pytester.path / folder / f"test_{folder}.py").write_text(
            "import pytest\n\ndef test_plain():\n    pass\n\n"
            "@pytest.mark.order(1)\ndef test_one():\n    pass\n"
        )
    pytester.makepyfile(test_top="import pytest\n\n@pytest.mark.order(0)\ndef test_t():\n"
                                 "    pass\n")
    theirs = pytester.runpytest("-v", "-p", "no:randomly", "--order-scope-level=1",
                                "-p", "no:depgraph")
    ours = pytester.runpytest("-v", "-p", "no:randomly", "--order-scope-level=1")
    assert passed_order(ours) == passed_order(theirs)
    assert passed_order(ours)[:2] == ["a/test_a.py::test_one", "a/test_a.py::test_plain"]
    # the edges a parallel run would walk: within each directory (and test_top.py) only
    plan = collected_plan(pytester, "--order-scope-level=1")
    edges = [(plan.nodeids[e.dependent], plan.nodeids[e.dependency]) for e in plan.graph.edges()]
    assert sorted(edges) == [("a/test_a.py::test_plain", "a/test_a.py::test_one"),
                             ("b/test_b.py::test_plain", "b/test_b.py::test_one")]
