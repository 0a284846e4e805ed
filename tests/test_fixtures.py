"""Fixture references: a fixture carries dependencies to every test whose closure contains it."""

from __future__ import annotations

import pytest

from .helpers import Run, names, skip_reasons


@pytest.mark.parametrize("placement", ["below", "above"])
def test_fixture_dependency_above_or_below_fixture_decorator(
    pytester: pytest.Pytester, run: Run, placement: str
) -> None:
    decorators = (
        '@pytest.fixture\n@depends_on("test_login")'
        if placement == "below"
        else '@depends_on("test_login")\n@pytest.fixture'
    )
    pytester.makepyfile(
        f"""
        import pytest
        from pytest_depgraph import depends_on

        {decorators.splitlines()[0]}
        {decorators.splitlines()[1]}
        def token():
            return "t"

        def test_use(token):
            assert token == "t"

        def test_login():
            assert 0
        """
    )
    result = run()
    result.assert_outcomes(failed=1, skipped=1)
    assert skip_reasons(result) == {
        "test_use": "depgraph: upstream test_fixture_dependency_above_or_below_fixture_decorator.py"
        "::test_login failed"
    }


def test_transitive_and_autouse_fixtures_and_conftest(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makeconftest(
        """
        import pytest
        from pytest_depgraph import depends_on

        @pytest.fixture
        @depends_on("test_auth.py::test_login")
        def session_token():
            return "t"

        @pytest.fixture
        def client(session_token):
            return session_token
        """
    )
    pytester.makepyfile(
        test_api="""
        import pytest
        from pytest_depgraph import depends_on

        @pytest.fixture(autouse=True)
        @depends_on("test_auth.py::test_schema", on_failure="run")
        def schema():
            pass

        def test_get(client):
            pass
        """,
        test_auth="""
        def test_login(): pass
        def test_schema(): pass
        """,
    )
    result = run("test_api.py", "test_auth.py")
    result.assert_outcomes(passed=3)
    assert names(result) == ["test_login", "test_schema", "test_get"]
    result.stdout.fnmatch_lines(["*2 edges (0 explicit, 2 from fixtures)*"])


def test_fixture_targets_resolve_relative_to_each_using_test(
    pytester: pytest.Pytester, run: Run
) -> None:
    pytester.makeconftest(
        """
        import pytest
        from pytest_depgraph import depends_on

        @pytest.fixture
        @depends_on("test_setup")
        def prepared():
            pass
        """
    )
    pytester.makepyfile(
        test_one="def test_setup(): pass\ndef test_x(prepared): pass\n",
        test_two="def test_setup(): assert 0\ndef test_y(prepared): pass\n",
    )
    result = run("test_one.py", "test_two.py")
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    assert skip_reasons(result) == {"test_y": "depgraph: upstream test_two.py::test_setup failed"}


def test_overridden_fixture_without_dependency_has_none(
    pytester: pytest.Pytester, run: Run
) -> None:
    pytester.makeconftest(
        """
        import pytest
        from pytest_depgraph import depends_on

        @pytest.fixture
        @depends_on("test_a.py::test_broken")
        def db():
            pass
        """
    )
    pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.fixture
        def db():
            pass

        def test_broken():
            assert 0

        def test_uses_local_db(db):
            pass
        """
    )
    result = run()
    result.assert_outcomes(passed=1, failed=1)
