"""CI shards (``--depgraph-shard K/N``): whole dependency groups per shard, balanced by duration.

Every K of N on one suite with chains, a diamond, fans, a parametrized meta-node, a cross-file
edge and pinned groups: the shards are disjoint, their union is the selection, no edge of the
unsharded plan crosses two shards, and everything passes. Then the durations file (read and
stored), the split being the same in another process with another collection order, ``-n 2``
inside a shard, bad input, and the balancing function on its own (hypothesis).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_depgraph.core import shard
from pytest_depgraph.core.plan import Plan

from .fake_workers import PlanGrab
from .helpers import recorded

SUITE = {
    "test_chain": """
        import pytest

        def test_a(): pass

        @pytest.mark.depends_on("test_a")
        def test_b(): pass

        @pytest.mark.depends_on("test_b")
        def test_c(): pass

        @pytest.mark.depends_on("test_c")
        def test_d(): pass

        def test_alone(): pass
    """,
    "test_diamond": """
        import pytest

        def test_top(): pass

        @pytest.mark.depends_on("test_top")
        def test_left(): pass

        @pytest.mark.depends_on("test_top", on_failure="run")
        def test_right(): pass

        @pytest.mark.depends_on("test_left", "test_right")
        def test_bottom(): pass
    """,
    "test_fan": """
        import pytest

        def test_root(): pass

        @pytest.mark.parametrize("n", range(5))
        @pytest.mark.depends_on("test_root")
        def test_leaf(n): pass

        def test_x1(): pass

        def test_x2(): pass

        @pytest.mark.depends_on("test_x1", "test_x2")
        def test_sink(): pass
    """,
    "test_param": """
        import pytest

        @pytest.mark.parametrize("p", [1, 2, 3])
        def test_p(p): pass

        @pytest.mark.depends_on("test_p")
        def test_all_of_p(): pass

        @pytest.mark.parametrize("r", range(4))
        def test_free(r): pass
    """,
    "test_cross": """
        import pytest

        @pytest.mark.depends_on("test_chain.py::test_d")
        def test_after_chain(): pass

        def test_one(): pass

        def test_two(): pass
    """,
    # pytest-dependency's depends() with a computed name: the module is one pinned group
    "test_pinned": """
        import pytest
        from pytest_dependency import depends

        def name():
            return "test_" + "first"

        @pytest.mark.dependency()
        def test_first(): pass

        @pytest.mark.dependency()
        def test_second(request):
            depends(request, [name()])

        def test_third(): pass
    """,
    # tests linked by an edge that share a module fixture: a pinned group
    "test_fixture_pin": """
        import pytest

        @pytest.fixture(scope="module")
        def db():
            return []

        def test_fill(db):
            db.append(1)

        @pytest.mark.depends_on("test_fill")
        def test_read(db):
            assert db == [1]
    """,
}


def _passed(result: pytest.RunResult) -> list[str]:
    passed, skipped, failed = recorded(result).listoutcomes()
    assert not skipped and not failed, (skipped, failed)
    return [report.nodeid for report in passed]


def _deselected(result: pytest.RunResult) -> list[str]:
    calls = recorded(result).getcalls("pytest_deselected")
    return [item.nodeid for call in calls for item in call.items]


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, Plan]:
    grab = PlanGrab()
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", *args,
                                plugins=[grab])
    assert grab.plan is not None
    return result, grab.plan


def _durations(plan: Plan, seed: int) -> dict[str, float]:
    """Skewed seconds for most of the plan's tests (some left unknown on purpose)."""
    rng = random.Random(seed)
    return {
        nodeid: round(rng.paretovariate(1.2), 3)
        for nodeid in plan.nodeids[: plan.item_count]
        if rng.random() < 0.8
    }


def test_every_shard_of_n_together_is_the_run(pytester: pytest.Pytester) -> None:
    """For 2, 3 and 5 shards: each test of the run is in one shard, the shards together are
    the run, no edge crosses shards and a pinned group stays in one (one run of the whole
    suite for the three counts, where each count ran its own: 13 -> 11 sessions)."""
    pytester.makepyfile(**SUITE)
    whole, plan = _run(pytester)
    selection = _passed(whole)
    assert len(selection) == 34
    assert plan.pinned, "the suite has pinned groups"
    edges = [(plan.nodeids[e.dependent], plan.nodeids[e.dependency]) for e in plan.graph.edges()]
    for count in (2, 3, 5):
        _shards_are_the_run(pytester, plan, selection, edges, count)


def _shards_are_the_run(
    pytester: pytest.Pytester, plan: Plan, selection: list[str], edges: list[tuple[str, str]],
    count: int,
) -> None:
    Path(pytester.path, "durations.json").write_text(json.dumps(_durations(plan, count)))
    owner: dict[str, int] = {}
    for index in range(1, count + 1):
        result, part = _run(pytester, f"--depgraph-shard={index}/{count}",
                            "--depgraph-durations=durations.json")
        ran = _passed(result)
        assert part.shard is not None and part.shard.tests == len(ran), f"{index}/{count}"
        # the tests of the other shards are reported deselected
        assert sorted(_deselected(result)) == sorted(set(selection) - set(ran)), f"{index}/{count}"
        for nodeid in ran:
            assert nodeid not in owner, f"{nodeid}: shards {owner[nodeid]} and {index} of {count}"
            owner[nodeid] = index
        result.stdout.fnmatch_lines([f"shard {index}/{count}: * tests in * group*, expected *"])
    assert sorted(owner) == sorted(selection), f"{count} shards"
    crossing = [(a, b) for a, b in edges if owner[a] != owner[b]]
    assert not crossing, f"{count} shards"
    for group in plan.pinned:
        assert len({owner[plan.nodeids[n]] for n in group}) == 1, f"{count} shards"


def test_selection_and_pull_in_come_before_the_split(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**SUITE)
    whole, _ = _run(pytester, "-k", "after_chain or sink or free")
    selection = sorted(_passed(whole))
    # test_after_chain pulls in the whole chain of test_chain.py
    assert "test_chain.py::test_a" in selection
    shards = [sorted(_passed(_run(pytester, "-k", "after_chain or sink or free",
                                  f"--depgraph-shard={k}/2")[0])) for k in (1, 2)]
    assert sorted(shards[0] + shards[1]) == selection
    assert not set(shards[0]) & set(shards[1])
    chain = {"test_chain.py::test_a", "test_cross.py::test_after_chain"}
    assert chain <= set(shards[0]) or chain <= set(shards[1])


def test_durations_file_balances_and_the_summary_says_so(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_four="""
        def test_a(): pass
        def test_b(): pass
        def test_c(): pass
        def test_d(): pass
    """)
    # test_d is unknown: it weighs the mean of the known ones, 4 s
    Path(pytester.path, "d.json").write_text(json.dumps({
        "test_four.py::test_a": 9.0, "test_four.py::test_b": 1.0,
        "test_four.py::test_c": 2.0, "test_other.py::test_gone": 100.0,
    }))
    result, _ = _run(pytester, "--depgraph-shard=1/2", "--depgraph-durations=d.json")
    assert _passed(result) == ["test_four.py::test_a"]
    result.stdout.fnmatch_lines([
        "shard 1/2: 1 test in 1 group, expected 9.0 s of total 16.0 s (ideal 8.0 s)",
        "durations from d.json: 3 of 4 tests known",
    ])
    # one test alone is heavier than half of the total: a warning names it, at its line
    result.stdout.fnmatch_lines([
        "test_four.py:1",
        "*PytestWarning: depgraph: shard 1/2 holds a group of 1 test that depend on each other,"
        " expected to take 9.0 s, more than the ideal share of 8.0 s*"
        "Its first test: test_four.py::test_a",
    ])
    result, _ = _run(pytester, "--depgraph-shard=2/2", "--depgraph-durations=d.json")
    assert _passed(result) == ["test_four.py::test_b", "test_four.py::test_c",
                               "test_four.py::test_d"]
    result.stdout.fnmatch_lines(["shard 2/2: 3 tests in 3 groups, expected 7.0 s of total 16.0 s*"])
    assert "PytestWarning" not in result.stdout.str()


def test_the_ini_file_names_the_durations_file(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ndepgraph_durations = ci/durations.json\n")
    pytester.mkdir("ci")
    Path(pytester.path, "ci", "durations.json").write_text(
        json.dumps({"test_two.py::test_a": 5.0, "test_two.py::test_b": 1.0})
    )
    pytester.makepyfile(test_two="def test_a(): pass\ndef test_b(): pass\n")
    result, _ = _run(pytester, "--depgraph-shard=2/2")
    assert _passed(result) == ["test_two.py::test_b"]
    result.stdout.fnmatch_lines([f"durations from {pytester.path / 'ci' / 'durations.json'}: *"])


def test_store_durations_merges_what_ran(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_s="""
        import pytest

        def test_ok(): pass

        def test_broken(): assert False

        @pytest.mark.depends_on("test_broken")
        def test_never(): pass
    """)
    store = Path(pytester.path, "store.json")
    store.write_text(json.dumps({"test_s.py::test_ok": 99.0, "test_gone.py::test_x": 3.0}))
    result, _ = _run(pytester, "--depgraph-store-durations=store.json")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    stored = json.loads(store.read_text())
    # this run's seconds win, other entries stay; a test skipped by an upstream failure did
    # not run and keeps no duration
    assert set(stored) == {"test_s.py::test_ok", "test_s.py::test_broken",
                           "test_gone.py::test_x"}
    assert stored["test_s.py::test_ok"] < 99.0
    assert stored["test_gone.py::test_x"] == 3.0
    result.stdout.fnmatch_lines(["*depgraph: durations of 2 tests stored in store.json*"])
    # pytest-split's older list format is read too
    store.write_text(json.dumps([["test_s.py::test_ok", 4.0]]))
    result, _ = _run(pytester, "--depgraph-shard=1/1", "--depgraph-durations=store.json",
                     "-k", "test_ok")
    result.stdout.fnmatch_lines(["durations from store.json: 1 of 1 test known"])


def test_same_split_in_another_process_and_collection_order(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**SUITE)
    pytester.makeconftest("""
        import os

        def pytest_collection_modifyitems(items):
            if os.environ.get("REVERSE"):
                items.reverse()
    """)
    _, plan = _run(pytester, "--collect-only")
    Path(pytester.path, "durations.json").write_text(json.dumps(_durations(plan, 7)))
    args = ("--depgraph-shard=2/3", "--depgraph-durations=durations.json")
    here_order = _passed(_run(pytester, *args)[0])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REVERSE", "1")
        mp.setenv("PYTHONHASHSEED", "12345")
        result = pytester.runpytest_subprocess(
            "-p", "no:randomly", "-p", "no:cacheprovider", "-q", "-rA", *args
        )
    assert result.ret == 0
    there_order = [line.split()[1] for line in result.outlines if line.startswith("PASSED ")]
    assert here_order and sorted(here_order) == sorted(there_order)
    assert here_order != there_order  # the collection order did differ


def test_parallel_inside_a_shard(pytester: pytest.Pytester) -> None:
    """-n 2 in a shard: the same tests as serially, the plan agreed by both workers, the
    summary and the oversized-group warning once, durations stored by the controller."""
    pytester.makepyfile(**SUITE)
    _, plan = _run(pytester, "--collect-only")
    durations = _durations(plan, 3)
    durations["test_chain.py::test_d"] = 1000.0  # the chain's group outweighs half the suite
    Path(pytester.path, "durations.json").write_text(json.dumps(durations))
    args = ("--depgraph-shard=1/2", "--depgraph-durations=durations.json")
    serial = sorted(_passed(_run(pytester, *args)[0]))
    assert "test_chain.py::test_d" in serial
    result = pytester.runpytest(
        "-n", "2", "-p", "xdist", "-p", "no:randomly", "-v", *args,
        "--depgraph-store-durations=stored.json"
    )
    assert result.ret == 0
    ran = sorted(line.split()[-1] for line in result.outlines
                 if line.startswith("[gw") and " PASSED " in line)
    assert ran == serial
    result.stdout.fnmatch_lines(["scheduling tests via DepGraphScheduling",
                                 "shard 1/2: 5 tests in 1 group, expected *"])
    assert result.stdout.str().count("holds a group of 5 tests") == 1
    assert sorted(json.loads(Path(pytester.path, "stored.json").read_text())) == serial


def test_an_empty_shard_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_one="def test_only(): pass\n")
    result, _ = _run(pytester, "--depgraph-shard=2/3")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["shard 2/3: 0 tests in 0 groups, expected 0.0 s of total*"])


def test_shard_edge_counts_are_the_shards(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**{"test_chain": SUITE["test_chain"]})
    result, _ = _run(pytester, "--depgraph-shard=1/2")
    result.stdout.fnmatch_lines([
        "shard 1/2: 4 tests in 1 group, *",
        "*",
        "4 tests, 3 edges (3 explicit, 0 from fixtures); 0 removed by transitive reduction",
    ])


def test_a_dependency_error_fails_every_shard(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bad="""
        import pytest

        @pytest.mark.depends_on("test_nowhere")
        def test_a(): pass

        def test_b(): pass
    """)
    for index in (1, 2):
        result, _ = _run(pytester, f"--depgraph-shard={index}/2")
        assert result.ret == pytest.ExitCode.INTERRUPTED
        result.stdout.fnmatch_lines(["*test_nowhere*"])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("3/2", "*--depgraph-shard '3/2': the shard number must be between 1 and 2*"),
        ("0/2", "*the shard number must be between 1 and 2*"),
        ("1/0", "*the number of shards must be at least 1*"),
        ("2", "*'2' is not K/N: write the shard number and the number of shards, e.g. 2/4*"),
        ("a/b", "*'a/b' is not K/N*"),
    ],
)
def test_a_bad_shard_is_a_usage_error(pytester: pytest.Pytester, value: str, message: str) -> None:
    pytester.makepyfile(test_one="def test_only(): pass\n")
    result = pytester.runpytest(f"--depgraph-shard={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "*d.json: not JSON*"),
        ('["x"]', "*d.json: expected a JSON object mapping node ids to seconds, found list*"),
        ('{"t.py::test_a": "slow"}', "*d.json: the entry 't.py::test_a': 'slow' is not a node id"
                                      " and a number of seconds (0 or more)*"),
        ('{"t.py::test_a": -1}', "*'t.py::test_a': -1 is not*"),
    ],
)
def test_a_bad_durations_file_is_a_usage_error(
    pytester: pytest.Pytester, content: str, message: str
) -> None:
    pytester.makepyfile(test_one="def test_only(): pass\n")
    Path(pytester.path, "d.json").write_text(content)
    result = pytester.runpytest("--depgraph-shard=1/2", "--depgraph-durations=d.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --depgraph-durations {message}"])
    # the store path is checked before any test runs, too
    result = pytester.runpytest("--depgraph-store-durations=d.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --depgraph-store-durations {message}"])


def test_bad_store_paths_are_usage_errors(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_one="def test_only(): pass\n")
    pytester.mkdir("folder")
    for path, message in (
        ("folder", "*folder is a directory; give a file name*"),
        ("missing/d.json", "*missing/d.json: the folder missing does not exist*"),
    ):
        result = pytester.runpytest(f"--depgraph-store-durations={path}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"ERROR: --depgraph-store-durations {message}"])


def test_a_missing_durations_file_warns_and_weighs_tests_alike(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_one="def test_a(): pass\ndef test_b(): pass\n")
    result, _ = _run(pytester, "--depgraph-shard=1/2", "--depgraph-durations=new.json")
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "*depgraph: --depgraph-durations new.json does not exist: every test weighs 1 s*",
        "shard 1/2: 1 test in 1 group, expected 1.0 s of total 2.0 s (ideal 1.0 s)",
    ])


# -- the pure functions ------------------------------------------------------------------


def test_parse() -> None:
    assert shard.parse("2/4") == (2, 4)
    assert shard.parse(" 1/1 ") == (1, 1)
    for bad in ("", "1", "1/", "/2", "x/2", "3/2", "0/1", "1/0", "-1/2"):
        with pytest.raises(ValueError):
            shard.parse(bad)


def test_weigh_unknown_tests_as_the_mean_of_the_known() -> None:
    assert shard.weigh(["a", "b", "c"], {"a": 1.0, "b": 3.0, "z": 100.0}) == [1.0, 3.0, 2.0]
    assert shard.weigh(["a", "b"], {}) == [1.0, 1.0]


@given(st.integers(0, 30), st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29))))
def test_components_are_the_weakly_connected_ones(size: int, pairs: list[tuple[int, int]]) -> None:
    edges = [(a, b) for a, b in pairs if a < size and b < size]
    parts = shard.components(size, edges)
    where = {n: i for i, part in enumerate(parts) for n in part}
    assert sorted(where) == list(range(size))
    assert all(where[a] == where[b] for a, b in edges)
    # nothing merged without a path: a part is one component of a search from its first node
    neighbours: dict[int, set[int]] = {n: set() for n in range(size)}
    for a, b in edges:
        neighbours[a].add(b)
        neighbours[b].add(a)
    for part in parts:
        seen, todo = {part[0]}, [part[0]]
        while todo:
            for m in neighbours[todo.pop()] - seen:
                seen.add(m)
                todo.append(m)
        assert seen == set(part)


@given(
    st.lists(st.floats(0, 1000, allow_nan=False), max_size=60),
    st.integers(1, 9),
    st.randoms(use_true_random=False),
)
def test_balance_is_exact_deterministic_and_within_lpt_bound(
    weights: list[float], count: int, rng: random.Random
) -> None:
    keys = [f"k{i:03}" for i in range(len(weights))]
    assigned = shard.balance(weights, keys, count)
    # exact: every component in exactly one shard
    assert len(assigned) == len(weights)
    assert all(0 <= s < count for s in assigned)
    # deterministic: the same (key, weight) pairs in another order give the same shards
    order = list(range(len(weights)))
    rng.shuffle(order)
    again = shard.balance([weights[i] for i in order], [keys[i] for i in order], count)
    assert {keys[i]: s for i, s in zip(order, again)} == dict(zip(keys, assigned))
    # LPT: the heaviest shard holds at most the ideal share plus the largest component
    loads = [math.fsum(w for w, s in zip(weights, assigned) if s == k) for k in range(count)]
    total = math.fsum(weights)
    largest = max(weights, default=0.0)
    assert max(loads) <= total / count + largest + 1e-6
    assert max(loads) >= max(largest, total / count) - 1e-6


def test_modifyitems_called_again_splits_nothing_twice(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**{"test_chain": SUITE["test_chain"], "test_fan": SUITE["test_fan"]})
    pytester.makeconftest("""
        import pytest

        @pytest.hookimpl(trylast=True)
        def pytest_collection_finish(session):
            # some plugins run the hook again on the session's items
            session.config.hook.pytest_collection_modifyitems(
                session=session, config=session.config, items=session.items
            )
    """)
    whole = sorted(_passed(_run(pytester)[0]))
    shards = [_passed(_run(pytester, f"--depgraph-shard={k}/2")[0]) for k in (1, 2)]
    assert sorted(shards[0] + shards[1]) == whole
