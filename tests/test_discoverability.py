"""What pytest's own listings show of the plugin: ``--fixtures``, and tests imported to be
named as targets."""

from __future__ import annotations

import pytest


def test_output_fixtures_listed_with_their_producer(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_vpc="""
        import pytest_depgraph

        def test_create_vpc(depgraph):
            depgraph.publish("vpc_id", "vpc-1")

        vpc_id = pytest_depgraph.output_fixture("test_create_vpc", "vpc_id")

        def test_subnet(vpc_id):
            pass
        """
    )
    result = pytester.runpytest("--fixtures")
    result.stdout.fnmatch_lines([
        "*fixtures defined from test_vpc*",
        "vpc_id -- *",
        "    Output 'vpc_id' published by 'test_create_vpc'; using this fixture makes the test "
        "depend on it (pytest_depgraph.output_fixture).",
    ])
    result.stdout.no_fnmatch_line("*fixtures defined from pytest_depgraph.run.value_store*")
    result.stdout.no_fnmatch_line("*= depgraph =*")  # listing fixtures walks no graph


def test_imported_test_used_as_target_warns(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        __init__="",
        test_users="def test_create_user():\n    pass\n",
        test_login="""
        import pytest

        from .test_users import test_create_user


        @pytest.mark.depends_on(test_create_user)
        def test_login():
            pass
        """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=3)  # pytest collects the imported test a second time
    result.stdout.fnmatch_lines([
        "test_login.py:3",
        "*test_login.py:3: PytestWarning: depgraph: test_create_user is a test of *test_users "
        "imported into *test_login, so pytest collects it here too "
        "(test_login.py::test_create_user) and runs it twice. Name it with a node id instead "
        "('test_users.py::test_create_user'), or import its module.",
    ])
