"""Values between tests: publish, read, output fixtures whose use is the edge, and bad input."""

from __future__ import annotations

import pytest

from pytest_depgraph.core.graph.storage import Graph, Kind, Origin
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.run.value_store import ValueStore
from pytest_depgraph.run.xdist.value_relay import VALUES_COMMAND, Relay

from .helpers import Run, names, skip_reasons

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


def test_reader_defined_before_producer_gets_the_value(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_vpc=VPC)
    result = run()
    result.assert_outcomes(passed=3)
    assert names(result)[0] == "test_create_vpc"
    result.stdout.fnmatch_lines(["*2 edges (1 explicit, 1 from fixtures)*"])


def test_producer_failure_skips_output_fixture_readers(pytester: pytest.Pytester, run: Run) -> None:
    failing = VPC.replace('depgraph.publish("tags"', 'assert 0\n    depgraph.publish("tags"')
    pytester.makepyfile(test_vpc=failing)
    result = run()
    result.assert_outcomes(failed=1, skipped=2)
    reason = "depgraph: upstream test_vpc.py::test_create_vpc failed"
    assert skip_reasons(result) == {"test_create_subnet": reason, "test_read_directly": reason}


def test_reading_from_a_test_that_is_not_a_dependency(pytester: pytest.Pytester, run: Run) -> None:
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


def test_missing_name_lists_what_was_published(pytester: pytest.Pytester, run: Run) -> None:
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


def test_unpicklable_value_fails_the_publishing_test(pytester: pytest.Pytester, run: Run) -> None:
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


def test_output_fixture_edge_is_a_cycle_participant(pytester: pytest.Pytester, run: Run) -> None:
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


def test_values_do_not_leak_into_the_next_run(pytester: pytest.Pytester, run: Run) -> None:
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


def test_module_scoped_output_fixture(pytester: pytest.Pytester, run: Run) -> None:
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


def test_values_are_kept_by_the_full_node_id(pytester: pytest.Pytester, run: Run) -> None:
    # node ids that share their first 100 bytes used to share one folder: the last writer won
    lifecycle = """
        import pytest

        class TestCustomerAccountLifecycle:
            def test_create_customer_account(self, depgraph):
                depgraph.publish("id", "account")

            def test_create_customer_account_address(self, depgraph):
                depgraph.publish("id", "address")

            @pytest.mark.depends_on("test_create_customer_account")
            def test_read_account(self, depgraph):
                assert depgraph.output("test_create_customer_account", "id") == "account"

            @pytest.mark.depends_on("test_create_customer_account_address")
            def test_read_address(self, depgraph):
                assert depgraph.output("test_create_customer_account_address", "id") == "address"
        """
    pytester.makepyfile(
        **{
            "tests/integration/customer_accounts/test_customer_account_lifecycle": lifecycle,
        }
    )
    result = run()
    result.assert_outcomes(passed=4)


def test_parametrize_ids_longer_than_100_bytes(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(
        test_x="""
        import pytest

        LONG = "x" * 120

        @pytest.mark.parametrize("n", [LONG + "1", LONG + "2"], ids=[LONG + "1", LONG + "2"])
        def test_param(depgraph, n):
            depgraph.publish("n", n)

        @pytest.mark.depends_on(test_param)
        def test_read(depgraph):
            with pytest.raises(pytest.fail.Exception, match="published by 2 tests"):
                depgraph.output(test_param, "n")
            assert depgraph.output(f"test_param[{LONG}1]", "n") == LONG + "1"
            assert depgraph.output(f"test_param[{LONG}2]", "n") == LONG + "2"
        """
    )
    run().assert_outcomes(passed=3)


BAD_INPUT = """
import pytest

class Boom:
    def __getstate__(self):
        return {"x": 1}

    def __setstate__(self, state):
        raise ValueError("cannot rebuild Boom")

def test_long_name(depgraph):
    depgraph.publish("n" * 300, 1)

@pytest.mark.depends_on("test_long_name")
def test_read_long_name(depgraph):
    assert depgraph.output("test_long_name", "n" * 300) == 1

def test_surrogate_name(depgraph):
    depgraph.publish("v\\udc80", 1)

def test_int_name(depgraph):
    depgraph.publish(5, 1)

def test_empty_name(depgraph):
    depgraph.publish("", 1)

@pytest.mark.depends_on("test_long_name")
def test_read_bytes_name(depgraph):
    depgraph.output("test_long_name", b"n")

@pytest.mark.depends_on("test_long_name")
def test_read_none_target(depgraph):
    depgraph.output(None, "v")

def test_publish_boom(depgraph):
    depgraph.publish("boom", Boom())

@pytest.mark.depends_on("test_publish_boom")
def test_read_boom(depgraph):
    depgraph.output("test_publish_boom", "boom")

def test_publish_lambda(depgraph):
    depgraph.publish("fn", lambda: 1)
"""


def test_bad_names_targets_and_values_fail_the_test_that_used_them(
    pytester: pytest.Pytester, run: Run
) -> None:
    pytester.makepyfile(test_x=BAD_INPUT)
    result = run()
    result.assert_outcomes(passed=3, failed=7)
    prefix = "depgraph: test_x.py::"
    result.stdout.fnmatch_lines_random(
        [
            f"*{prefix}test_surrogate_name: depgraph.publish('v\\udc80', ...): the value name "
            "'v\\udc80' is not valid text (it holds a lone surrogate*",
            f"*{prefix}test_int_name: depgraph.publish(5, ...): the value name must be a "
            "non-empty string; got 5.",
            f"*{prefix}test_empty_name: depgraph.publish('', ...): the value name must be a "
            "non-empty string; got an empty string.",
            "*Name values with text, e.g. depgraph.publish('user_id', user.id).",
            f"*{prefix}test_read_bytes_name: depgraph.output('test_long_name', b'n'): the value "
            "name must be a non-empty string; got b'n'.",
            f"*{prefix}test_read_none_target: depgraph.output(None, 'v'): the target must name a "
            "test: its name or node id as a string*got None.",
            f"*{prefix}test_read_boom: the value 'boom' published by test_x.py::test_publish_boom "
            "cannot be unpickled: ValueError: cannot rebuild Boom.",
            f"*{prefix}test_publish_lambda cannot publish 'fn': the value (function) cannot be "
            "pickled*",
        ]
    )
    out = result.stdout.str()
    assert "function None" not in out
    for noise in ("Traceback", "During handling", "INTERNALERROR", "outputs.py"):
        assert noise not in out
    # each message once (the short summary repeats only its first line)
    assert out.count("Values travel between xdist workers, so they must be picklable") == 1
    assert out.count("Unpickling needs the value's classes importable") == 1


PROPERTY = """
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

class NoRepr:
    def __repr__(self):
        raise RuntimeError("no repr")
    def __eq__(self, other):
        raise RuntimeError("no eq")
    __hash__ = None

class Hostile:
    def __getattr__(self, name):
        raise RuntimeError(name)

# characters drawn as code points: st.text() builds hypothesis's character map, which takes
# seconds in a fresh HOME (as pytester's)
CHARS = st.one_of(st.integers(0x20, 0x7E), st.integers(0, 0x10FFFF)).map(chr)
SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)

def strings(chars, **size):
    return st.lists(chars, **size).map("".join)

NAMES = st.one_of(
    strings(CHARS, max_size=20),
    strings(st.one_of(CHARS, SURROGATES), min_size=1, max_size=5),
    strings(CHARS, min_size=100, max_size=400),
    st.just(""),
    st.binary(),
    st.integers(),
    st.none(),
    st.floats(),
    st.lists(strings(CHARS, max_size=5), max_size=2),
    st.builds(object),
    st.builds(NoRepr),
    st.builds(Hostile),
)
TARGETS = st.one_of(st.just("test_producer"), st.just(lambda: 0), NAMES)
CHECK = settings(
    max_examples=100, database=None, deadline=None, suppress_health_check=list(HealthCheck)
)

def clean(failure, test):
    text = str(failure)
    assert text.startswith(f"depgraph: test_x.py::{test}"), text
    assert "Traceback" not in text

def test_producer(depgraph):
    accepted = []

    @CHECK
    @given(NAMES)
    def publish(name):
        try:
            depgraph.publish(name, ("value", name))
        except pytest.fail.Exception as failure:
            clean(failure, "test_producer")
        else:
            accepted.append(name)

    publish()
    assert accepted
    depgraph.publish("accepted", accepted)

@pytest.mark.depends_on("test_producer")
def test_reader(depgraph):
    for name in depgraph.output("test_producer", "accepted"):
        assert depgraph.output("test_producer", name) == ("value", name)

    @CHECK
    @given(TARGETS, NAMES)
    def read(target, name):
        try:
            depgraph.output(target, name)
        except pytest.fail.Exception as failure:
            clean(failure, "test_reader")

    read()
"""


def test_any_value_name_works_or_fails_cleanly(pytester: pytest.Pytester) -> None:
    """Property: whatever the name (or target), publish/output work or fail the test cleanly."""
    pytester.makepyfile(test_x=PROPERTY)
    # a subprocess with plain asserts: in this process, pytest's import hook would rewrite
    # every hypothesis module the generated suite imports (seconds; it checks nothing here)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--assert=plain")
    result.assert_outcomes(passed=2)


CROSS_WORKERS = """
import os, pytest

def test_producer(depgraph):
    depgraph.publish("token", "t-1")
    depgraph.publish("where", os.environ["PYTEST_XDIST_WORKER"])

@pytest.mark.depends_on(test_producer)
def test_crash_after_publishing(depgraph):
    os._exit(1)  # the worker that holds the value dies

@pytest.mark.depends_on(test_producer)
@pytest.mark.depends_on(test_crash_after_publishing, on_failure="run")
def test_reader_after_the_crash(depgraph):
    assert depgraph.output(test_producer, "token") == "t-1"
    assert depgraph.output(test_producer, "where") != os.environ["PYTEST_XDIST_WORKER"]
"""


def test_values_cross_xdist_workers_and_survive_a_dead_worker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_vpc=VPC, test_crash=CROSS_WORKERS)
    result = pytester.runpytest("-n", "2", "-p", "xdist", "-v")
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(["*PASSED test_crash.py::test_reader_after_the_crash*"])


def test_values_travel_between_loadfile_units(pytester: pytest.Pytester) -> None:
    """--dist loadfile is walked by the depgraph scheduler (whole files per worker): a value
    reaches the file that reads it, whichever worker ran the producer."""
    pytester.makepyfile(
        test_a="""
        def test_producer(depgraph):
            depgraph.publish("token", "t")
        """,
        test_b="""
        import pytest

        @pytest.mark.depends_on("test_a.py::test_producer")
        def test_reader(depgraph):
            depgraph.output("test_a.py::test_producer", "token")
        """,
    )
    result = pytester.runpytest("-n", "2", "-p", "xdist", "--dist", "loadfile")
    result.assert_outcomes(passed=2)


class _Node:
    """Stands in for xdist's WorkerController: records the commands sent to it."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def sendcommand(self, name: str, values: list[tuple[str, str, bytes]]) -> None:
        assert name == VALUES_COMMAND
        self.sent += [(nodeid, value_name) for nodeid, value_name, _ in values]


def test_relay_sends_each_value_once_and_only_to_workers_of_readers() -> None:
    nodeids = ["a", "b", "c", "after_a", "e"]
    graph = Graph(len(nodeids))
    graph.add_edge(1, 0, Kind.REQUIRES, Origin("marker"))  # b requires a
    graph.add_edge(2, 1, Kind.REQUIRES, Origin("marker"))  # c requires b (so a too)
    graph.add_edge(3, 0, Kind.AFTER, Origin("marker"))  # order only: reads nothing
    plan = Plan(nodeids=nodeids, graph=graph, group=[0] * 5, item_count=5)
    relay = Relay(ValueStore())
    producer, other = _Node(), _Node()
    relay.received(producer, "a", "token", b"pickled")
    relay.received(other, "e", "unrelated", b"pickled")

    relay.before_test(producer, plan, 1)
    assert producer.sent == []  # it published the value itself
    relay.before_test(other, plan, 2)
    relay.before_test(other, plan, 2)
    assert other.sent == [("a", "token")]  # transitively required, sent once
    relay.before_test(_Node(), plan, 3)
    relay.before_test(producer, plan, 4)
    assert producer.sent == []
