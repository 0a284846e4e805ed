"""Other --dist modes: a warning names what they cannot honour; same-worker skips still work."""

from __future__ import annotations

import pytest

from .test_xdist import TIMING_CONFTEST, times


def test_loadfile_warns_and_skips_dependents_of_a_failure_in_the_same_file(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_one="""
        import pytest

        def test_create():
            assert 0

        @pytest.mark.depends_on("test_create")
        def test_use():
            pass
        """,
        test_two="""
        import pytest

        @pytest.mark.depends_on("test_one.py::test_create", on_failure="run")
        def test_elsewhere():
            pass
        """,
    )
    result = pytester.runpytest_subprocess("-n", "2", "-p", "xdist", "--dist", "loadfile", "-rs")
    result.assert_outcomes(failed=1, skipped=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "*--dist loadfile cannot honour 1 of 2 dependencies*",
            "*depgraph: upstream test_one.py::test_create failed*",
        ],
        consecutive=False,
    )


def test_tx_workers_order_and_skip(pytester: pytest.Pytester) -> None:
    """Workers made with --tx get the graph over the xdist channel, like remote ones."""
    pytester.makepyfile(
        test_tx="""
        import pytest

        @pytest.mark.depends_on("test_base")
        def test_first_in_file():
            pass

        def test_base():
            pass

        def test_broken():
            assert 0

        @pytest.mark.depends_on("test_broken")
        def test_after_broken():
            pass
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "xdist", "--dist", "load", "--tx", "2*popen", "-rs", "-v"
    )
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*depgraph: upstream test_tx.py::test_broken failed*"])
    passed = [line for line in result.outlines if "PASSED" in line]
    assert "test_base" in passed[0]


def test_dot_and_summary_on_the_controller(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_d="""
        import pytest

        def test_a():
            assert 0

        @pytest.mark.depends_on("test_a")
        def test_b():
            pass

        def test_c():
            pass
        """
    )
    out = pytester.path / "g.dot"
    result = pytester.runpytest_subprocess("-n", "2", "-p", "xdist", f"--depgraph-dot={out}")
    result.assert_outcomes(failed=1, skipped=1, passed=1)
    text = out.read_text()
    assert '"test_d.py::test_a" [label = "test_a", fillcolor = "salmon"' in text
    assert '"test_d.py::test_b" [label = "test_b", fillcolor = "lightgrey"' in text
    assert '"test_d.py::test_c" [label = "test_c", fillcolor = "palegreen"' in text
    result.stdout.fnmatch_lines(
        [
            "*= depgraph =*",
            "1 test skipped because of an upstream test:",
            "  test_d.py::test_a failed:",
            "    test_d.py::test_b",
            "parallel walk: * s wall, lower bound * s = max(critical path * s, total * s / 2)*",
        ]
    )


def test_class_chains_keep_their_class_fixture_on_a_worker(pytester: pytest.Pytester) -> None:
    """Three classes with equal chains: a worker finishes one class before taking another."""
    pytester.makepyfile(
        test_cls="""
        import os, pytest

        @pytest.fixture(scope="class")
        def env(request, tmp_path_factory):
            marker = tmp_path_factory.getbasetemp().parent / f"setup-{request.cls.__name__}"
            assert not marker.exists(), "class fixture set up twice"
            marker.touch()
            return {}

        class TestA:
            def test_1(self, env):
                env["x"] = 1

            @pytest.mark.depends_on("test_1")
            def test_2(self, env):
                assert env["x"] == 1

            @pytest.mark.depends_on("test_2")
            def test_3(self, env):
                assert env["x"] == 1

        class TestB(TestA):
            pass

        class TestC(TestA):
            pass
        """
    )
    for _ in range(3):
        result = pytester.runpytest_subprocess("-n", "2", "-p", "xdist")
        result.assert_outcomes(passed=9)
        for marker in pytester.path.parent.glob("setup-*"):
            marker.unlink()


def test_order_first_and_last_hold_on_workers(pytester: pytest.Pytester) -> None:
    """pytest-order's "first" finished before the unordered tests start, "last" starts after
    they all finished, on -n 2 too: after edges between the ordinal groups, shown in DOT."""
    pytester.makeconftest(TIMING_CONFTEST)
    pytester.makepyfile(
        test_o="""
        import time
        import pytest

        @pytest.mark.order("last")
        def test_end():
            time.sleep(0.1)

        def test_u1():
            time.sleep(0.3)

        def test_u2():
            time.sleep(0.3)

        def test_u3():
            time.sleep(0.3)

        @pytest.mark.order("first")
        def test_start():
            time.sleep(0.3)
        """
    )
    out = pytester.path / "g.dot"
    result = pytester.runpytest_subprocess(
        "-n", "2", "-p", "xdist", "-p", "no:pytest_order", f"--depgraph-dot={out}"
    )
    result.assert_outcomes(passed=5)
    ran = times(pytester)
    unordered = [ran[name] for name in ("test_u1", "test_u2", "test_u3")]
    assert ran["test_start"][1] <= min(start for start, _, _ in unordered), ran
    assert ran["test_end"][0] >= max(end for _, end, _ in unordered), ran
    text = out.read_text()
    assert '"test_o.py::test_u1" -> "test_o.py::test_start" [tooltip = "order marker at ' \
        'test_o.py:' in text
    assert '"test_o.py::test_end" -> "test_o.py::test_u3" [tooltip = "order marker at ' \
        'test_o.py:' in text
