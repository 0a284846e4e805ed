"""Bad input: clear collection errors naming the test, the file and line, and what to do."""

from __future__ import annotations

import pytest


def _assert_clean(result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text
    assert "pytest_depgraph/" not in text
    assert "INTERNALERROR" not in text


def test_unknown_target_with_suggestion(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(
        test_shop="""
        import pytest

        def test_create_user(): pass

        @pytest.mark.depends_on("test_crate_user")
        def test_buy(): pass
        """
    )
    result = run()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting test_shop.py*",
            "depgraph: test_shop.py:5: target 'test_crate_user' matches no collected test "
            "(@pytest.mark.depends_on, declared for test_shop.py::test_buy).",
            "  Did you mean 'test_create_user'?",
            "*Interrupted: 1 error during collection*",
        ]
    )
    result.assert_outcomes(errors=1)
    _assert_clean(result)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("", "depends_on() names no target*"),
        ("42", "target 42 (int) is not a test*"),
        ("'test_a', when='now'", "unknown keyword argument when=*"),
        ("'test_a', on_failure='never'", "on_failure='never' is not valid; use on_failure='skip'*"),
    ],
)
def test_bad_arguments(pytester: pytest.Pytester, run, args: str, message: str) -> None:
    pytester.makepyfile(
        test_bad=f"""
        import pytest

        def test_a(): pass

        @pytest.mark.depends_on({args})
        def test_b(): pass
        """
    )
    result = run()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [f"depgraph: test_bad.py:5: {message}",
         "  (@pytest.mark.depends_on, declared for test_bad.py::test_b)"]
    )
    _assert_clean(result)


def test_error_with_module_marker_is_reported_once(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(
        test_mod="""
        import pytest
        pytestmark = pytest.mark.depends_on("nothing_here")

        def test_a(): pass
        def test_b(): pass
        def test_c(): pass
        """
    )
    result = run()
    result.stdout.fnmatch_lines(["*declared for test_mod.py::test_a and 2 more tests*"])
    result.assert_outcomes(errors=1)


def test_cycle_report_with_origins(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(
        test_net="""
        import pytest
        from pytest_depgraph import depends_on

        @pytest.fixture
        @depends_on("test_a")
        def gateway():
            pass

        @pytest.mark.depends_on("test_b")
        def test_a(): pass

        @pytest.mark.depends_on("test_c")
        def test_b(): pass

        def test_c(gateway): pass

        def test_free(): pass
        """
    )
    result = run()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "depgraph: dependency cycle (3 tests)",
            "  test_net.py::test_a",
            "    -> test_net.py::test_b   depends_on at test_net.py:9",
            "    -> test_net.py::test_c   depends_on at test_net.py:12",
            "    -> test_net.py::test_a   fixture 'gateway' at test_net.py:4",
            "*Interrupted: 1 error during collection*",
        ]
    )
    assert "test_free PASSED" not in result.stdout.str()
    _assert_clean(result)


def test_every_cycle_reported_and_self_reference(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(
        test_c="""
        import pytest

        @pytest.mark.depends_on("test_y")
        def test_x(): pass

        @pytest.mark.depends_on("test_x")
        def test_y(): pass

        @pytest.mark.depends_on("test_self")
        def test_self(): pass
        """
    )
    result = run()
    result.stdout.fnmatch_lines(
        [
            "depgraph: test_c.py:9: self reference: target 'test_self' includes the test itself "
            "(@pytest.mark.depends_on, declared for test_c.py::test_self).",
            "  A test cannot depend on itself: remove the target that names it.",
            "depgraph: dependency cycle (2 tests)",
        ],
        consecutive=False,
    )
    assert "2 errors during collection" in result.stdout.str()


def test_continue_on_collection_errors_runs_the_rest(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(
        test_c="""
        import pytest

        @pytest.mark.depends_on("test_y")
        def test_x(): pass

        @pytest.mark.depends_on("test_x")
        def test_y(): pass

        @pytest.mark.depends_on("test_x")
        def test_dependent(): pass

        def test_free(): pass
        """
    )
    result = run("--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=4)
    result.stdout.fnmatch_lines(
        [
            "*test_free PASSED*",
            "*ERROR at setup of test_dependent*",
            "*depends on test_c.py::test_x, which cannot run because of a dependency error*",
        ],
        consecutive=False,
    )


def test_mark_on_fixture_points_to_the_decorator(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(
        test_f="""
        import pytest

        @pytest.fixture
        @pytest.mark.depends_on("test_a")
        def token():
            pass

        def test_a(): pass
        def test_b(token): pass
        """
    )
    result = run()
    assert result.ret != 0
    output = result.stdout.str()
    assert "Marks cannot be applied to fixtures" in output or "has no effect" in output
    result.stdout.fnmatch_lines(["*pytest_depgraph import depends_on*"])


def test_strict_markers_accepts_the_marker(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(
        """
        import pytest

        def test_a(): pass

        @pytest.mark.depends_on("test_a")
        def test_b(): pass
        """
    )
    run("--strict-markers").assert_outcomes(passed=2)


def test_loaded_with_dash_p_when_autoload_is_disabled(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.depends_on("test_a")
        def test_b(): pass

        def test_a(): assert 0
        """
    )
    result = pytester.runpytest_subprocess("-p", "depgraph", "-v", "-p", "no:xdist")
    result.assert_outcomes(failed=1, skipped=1)
    off = pytester.runpytest_subprocess("-p", "no:depgraph", "-v")
    off.assert_outcomes(failed=1, passed=1)


def test_bad_fixture_declaration_names_the_fixture(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(
        test_fx="""
        import pytest
        from pytest_depgraph import depends_on

        @pytest.fixture
        @depends_on("test_a", on_failure="sometimes")
        def token():
            pass

        def test_a(): pass
        def test_b(token): pass
        def test_c(token): pass
        """
    )
    result = run()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["depgraph: test_fx.py:5: on_failure='sometimes' is not valid*",
         "  (@depends_on on fixture 'token')"]
    )
    result.assert_outcomes(errors=1)
    _assert_clean(result)
