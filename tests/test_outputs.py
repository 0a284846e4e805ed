"""Values between tests (SPEC §2.4): publish, read, and output fixtures whose use is the edge."""

from __future__ import annotations

import pytest

from .conftest import names, skip_reasons

VPC = """
import pytest
import pytest_depgraph

vpc_id = pytest_depgraph.output_fixture("test_create_vpc", "vpc_id")

def test_create_subnet(vpc_id):
    assert vpc_id == "vpc-123"

@pytest.mark.depends_on("test_create_vpc")
def test_read_directly(depgraph):
    assert depgraph.output("test_create_vpc", "vpc_id") == "vpc-123"
    assert depgraph.output("test_create_vpc", "tags") == {"env": "test"}

def test_create_vpc(depgraph):
    depgraph.publish("vpc_id", "vpc-123")
    depgraph.publish("tags", {"env": "test"})
"""


def test_reader_defined_before_producer_gets_the_value(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(test_vpc=VPC)
    result = run()
    result.assert_outcomes(passed=3)
    assert names(result)[0] == "test_create_vpc"
    result.stdout.fnmatch_lines(["*2 edges (1 explicit, 1 from fixtures)*"])


@pytest.mark.parametrize("workers", ["2", "4"])
def test_values_cross_xdist_workers(pytester: pytest.Pytester, workers: str) -> None:
    pytester.makepyfile(test_vpc=VPC)
    result = pytester.runpytest_subprocess("-n", workers, "-p", "xdist")
    result.assert_outcomes(passed=3)


def test_producer_failure_skips_output_fixture_readers(pytester: pytest.Pytester, run) -> None:
    failing = VPC.replace('depgraph.publish("tags"', 'assert 0\n    depgraph.publish("tags"')
    pytester.makepyfile(test_vpc=failing)
    result = run()
    result.assert_outcomes(failed=1, skipped=2)
    reason = "depgraph: upstream test_vpc.py::test_create_vpc failed"
    assert skip_reasons(result) == {"test_create_subnet": reason, "test_read_directly": reason}


def test_reading_from_a_test_that_is_not_a_dependency(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(
        test_x="""
        def test_producer(depgraph):
            depgraph.publish("token", "t")

        def test_reader(depgraph):
            depgraph.output("test_producer", "token")
        """
    )
    result = run()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_x.py::test_reader reads 'token' from test_x.py::test_producer, which it does "
            "not depend on*",
            "*Add @pytest.mark.depends_on('test_producer') to the test*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_missing_name_lists_what_was_published(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(
        test_x="""
        import pytest_depgraph

        user = pytest_depgraph.output_fixture("test_producer", "user")

        def test_producer(depgraph):
            depgraph.publish("user_id", 7)
            depgraph.publish("token", "t")

        def test_reader(user):
            pass
        """
    )
    result = run()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*test_x.py::test_producer published no value 'user'; it published 'token', 'user_id'.*"]
    )


def test_unpicklable_value_fails_the_publishing_test(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(
        test_x="""
        import pytest

        def test_producer(depgraph):
            depgraph.publish("fn", lambda: 1)

        @pytest.mark.depends_on("test_producer")
        def test_reader(depgraph):
            pass
        """
    )
    result = run()
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["*test_x.py::test_producer cannot publish 'fn': the value (function) cannot be pickled*"]
    )


def test_output_fixture_edge_is_a_cycle_participant(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(
        test_x="""
        import pytest, pytest_depgraph

        token = pytest_depgraph.output_fixture("test_b", "token")

        @pytest.mark.depends_on("test_a")
        def test_b(): pass

        def test_a(token): pass
        """
    )
    result = run()
    result.stdout.fnmatch_lines(["*-> test_x.py::test_b   output fixture 'token'*"])


def test_values_do_not_leak_into_the_next_run(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(
        test_x="""
        import os, pytest

        def test_producer(depgraph):
            if not os.environ.get("SECOND"):
                depgraph.publish("v", 1)

        @pytest.mark.depends_on("test_producer")
        def test_reader(depgraph):
            depgraph.output("test_producer", "v")
        """
    )
    run().assert_outcomes(passed=2)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SECOND", "1")
        run().assert_outcomes(passed=1, failed=1)


def test_module_scoped_output_fixture(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(
        test_x="""
        import pytest_depgraph

        conf = pytest_depgraph.output_fixture("test_producer", "conf", scope="module")

        def test_one(conf): assert conf == {"a": 1}
        def test_two(conf): assert conf == {"a": 1}

        def test_producer(depgraph):
            depgraph.publish("conf", {"a": 1})
        """
    )
    run().assert_outcomes(passed=3)
