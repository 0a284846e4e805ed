"""Outcomes and skips: dependents of unsatisfied tests skip before setup, naming the root cause."""

from __future__ import annotations

import pytest

from .helpers import Run, names, recorded, skip_reasons


def test_root_cause_is_the_first_failure_up_the_graph(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(
        """
        import pytest

        def test_a():
            assert 0

        @pytest.mark.depends_on("test_a")
        def test_b(): pass

        @pytest.mark.depends_on("test_b")
        def test_c(): pass
        """
    )
    result = run()
    result.assert_outcomes(failed=1, skipped=2)
    file = "test_root_cause_is_the_first_failure_up_the_graph.py"
    reason = f"depgraph: upstream {file}::test_a failed"
    assert skip_reasons(result) == {"test_b": reason, "test_c": reason}


def test_skipped_dependent_sets_up_no_fixture(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.fixture
        def expensive():
            raise AssertionError("must not be set up")

        def test_a():
            assert 0

        @pytest.mark.depends_on("test_a")
        def test_b(expensive): pass
        """
    )
    result = run()
    result.assert_outcomes(failed=1, skipped=1)
    assert "must not be set up" not in result.stdout.str()


@pytest.mark.parametrize(
    ("body", "word", "outcomes"),
    [
        ("pytest.skip('no db')", "was skipped", {"skipped": 2}),
        ("pytest.xfail('known')", "xfailed", {"xfailed": 1, "skipped": 1}),
    ],
)
def test_skip_and_xfail_do_not_satisfy(
    pytester: pytest.Pytester, run: Run, body: str, word: str, outcomes: dict[str, int]
) -> None:
    pytester.makepyfile(
        f"""
        import pytest

        def test_a():
            {body}

        @pytest.mark.depends_on("test_a")
        def test_b(): pass
        """
    )
    result = run()
    result.assert_outcomes(**outcomes)
    file = "test_skip_and_xfail_do_not_satisfy.py"
    assert skip_reasons(result) == {"test_b": f"depgraph: upstream {file}::test_a {word}"}


def test_non_strict_xpass_satisfies_and_setup_error_does_not(
    pytester: pytest.Pytester, run: Run
) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.fixture
        def broken():
            raise RuntimeError("boom")

        @pytest.mark.xfail(strict=False)
        def test_xpass(): pass

        def test_error(broken): pass

        @pytest.mark.depends_on("test_xpass")
        def test_after_xpass(): pass

        @pytest.mark.depends_on("test_error")
        def test_after_error(): pass
        """
    )
    result = run()
    result.assert_outcomes(xpassed=1, errors=1, passed=1, skipped=1)
    file = "test_non_strict_xpass_satisfies_and_setup_error_does_not.py"
    reason = f"depgraph: upstream {file}::test_error errored"
    assert skip_reasons(result) == {"test_after_error": reason}


def test_teardown_failure_makes_dependency_unsatisfied(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.fixture
        def leaky():
            yield
            raise RuntimeError("teardown broke")

        def test_a(leaky): pass

        @pytest.mark.depends_on("test_a")
        def test_b(): pass
        """
    )
    result = run()
    result.assert_outcomes(passed=1, errors=1, skipped=1)


def test_after_edge_dependent_runs_after_skipped_dependency(
    pytester: pytest.Pytester, run: Run
) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.depends_on("test_b", on_failure="run")
        def test_c(): pass

        def test_a():
            assert 0

        @pytest.mark.depends_on("test_a")
        def test_b(): pass
        """
    )
    result = run()
    result.assert_outcomes(failed=1, skipped=1, passed=1)
    assert names(result) == ["test_a", "test_b", "test_c"]


def test_skip_reason_points_at_the_test_in_short_summary(
    pytester: pytest.Pytester, run: Run
) -> None:
    path = pytester.makepyfile(
        """
        import pytest

        def test_a():
            assert 0

        @pytest.mark.depends_on("test_a")
        def test_b(): pass
        """
    )
    result = run()
    result.stdout.fnmatch_lines(
        [f"SKIPPED [[]1[]] {path.name}:*: depgraph: upstream *::test_a failed"]
    )
    assert "plugin.py" not in result.stdout.str()
    assert "serial.py" not in result.stdout.str()


def test_summary_groups_skips_under_their_root_cause(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(
        """
        import pytest

        def test_a():
            assert 0

        @pytest.mark.depends_on("test_a")
        def test_b(): pass

        @pytest.mark.depends_on("test_b")
        def test_c(): pass

        def test_free(): pass
        """
    )
    result = run()
    result.stdout.fnmatch_lines(
        [
            "*= depgraph =*",
            "4 tests, 2 edges (2 explicit, 0 from fixtures); 0 removed by transitive reduction",
            "critical path: *",
            "2 tests skipped because of an upstream test:",
            "  *::test_a failed:",
            "    *::test_b",
            "    *::test_c",
        ]
    )


def test_exitfirst_stops_the_walk(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(
        """
        import pytest

        def test_a():
            assert 0

        @pytest.mark.depends_on("test_a")
        def test_b(): pass

        def test_c(): pass
        """
    )
    result = run("-x")
    result.assert_outcomes(failed=1)


def test_exitfirst_summary_lists_only_reported_skips(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(
        """
        import pytest

        def test_a():
            assert 0

        @pytest.mark.depends_on("test_a")
        def test_b(): pass
        """
    )
    result = run("-x")
    result.assert_outcomes(failed=1)
    assert "skipped because of an upstream test" not in result.stdout.str()


def test_an_interrupted_test_ends_the_run_cleanly(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        def test_a(): pass

        @pytest.mark.depends_on("test_a")
        def test_b():
            raise KeyboardInterrupt

        @pytest.mark.depends_on("test_b")
        def test_c(): pass
        """
    )
    result = pytester.runpytest("-v", "-p", "no:randomly", no_reraise_ctrlc=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert names(result) == ["test_a"]
    result.stdout.fnmatch_lines(["*KeyboardInterrupt*"])
    result.stdout.no_fnmatch_line("*INTERNALERROR*")


#: a plugin that moves tests after the graph was built: test_c first, test_x before test_a
MOVING_CONFTEST = """
def pytest_collection_finish(session):
    items = session.items
    by_name = {item.name: item for item in items}
    items[:] = [by_name[n] for n in ("test_c", "test_x", "test_a", "test_b", "test_y")]
"""


def test_tests_moved_after_the_graph_was_built(pytester: pytest.Pytester, run: Run) -> None:
    """A dependent moved before its dependency skips and says why; the other moved tests run,
    each looked up by its node id (the walk expects the plan's order)."""
    pytester.makeconftest(MOVING_CONFTEST)
    pytester.makepyfile(
        """
        import pytest

        def test_a(): pass

        @pytest.mark.depends_on("test_a")
        def test_b(): pass

        @pytest.mark.depends_on("test_b")
        def test_c(): pass

        def test_x(): pass

        @pytest.mark.depends_on("test_x")
        def test_y(): pass
        """
    )
    result = run()
    result.assert_outcomes(passed=4, skipped=1)
    assert names(result) == ["test_c", "test_x", "test_a", "test_b", "test_y"]
    file = "test_tests_moved_after_the_graph_was_built.py"
    assert skip_reasons(result) == {
        "test_c": f"depgraph: {file}::test_b has not run (another plugin changed the order or "
        "the selection of the tests after pytest-depgraph built the graph)"
    }


@pytest.mark.skipif(
    int(pytest.version_tuple[0]) < 9, reason="the subtests fixture is pytest 9's own (from 9.0)"
)
@pytest.mark.parametrize("workers", [(), ("-n", "1")], ids=["serial", "xdist"])
def test_a_skipped_subtest_leaves_its_test_satisfied_a_failing_one_does_not(
    pytester: pytest.Pytester, run: Run, workers: tuple[str, ...]
) -> None:
    """A dependency's outcome is its own (setup, call, teardown), not its subtests': a test
    with a skipped subtest passed, a test with a failing subtest failed (before, the skipped
    subtest skipped the dependents of a test pytest reported PASSED)."""
    pytester.makepyfile(
        test_sub="""
        import pytest

        def test_skipped_subtest(subtests):
            with subtests.test("not here"):
                pytest.skip("not on this platform")
            with subtests.test("here"):
                pass

        @pytest.mark.depends_on("test_skipped_subtest")
        def test_after_skipped_subtest():
            pass

        def test_failing_subtest(subtests):
            with subtests.test("broken"):
                assert 0

        @pytest.mark.depends_on("test_failing_subtest")
        def test_after_failing_subtest():
            pass
        """
    )
    result = run(*workers)
    calls = {
        report.nodeid.rsplit("::", 1)[-1]: report.outcome
        for report in recorded(result).getreports("pytest_runtest_logreport")
        if report.when == "call" and type(report) is pytest.TestReport
    }
    assert calls == {
        "test_skipped_subtest": "passed",
        "test_after_skipped_subtest": "passed",
        "test_failing_subtest": "failed",
    }
    assert skip_reasons(result) == {
        "test_after_failing_subtest": "depgraph: upstream test_sub.py::test_failing_subtest failed"
    }
    assert result.ret == pytest.ExitCode.TESTS_FAILED
