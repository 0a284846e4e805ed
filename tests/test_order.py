"""Serial ordering: a stable topological order; a dependent moves down, nothing moves up."""

from __future__ import annotations

import pytest

from .helpers import Run, names, passed_order, skip_reasons


def test_a_dependent_declared_first_waits_for_its_dependency(
    pytester: pytest.Pytester, run: Run
) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.depends_on("test_create")
        def test_use():
            pass

        def test_other():
            pass

        def test_create():
            pass
        """
    )
    result = run()
    result.assert_outcomes(passed=3)
    # test_use moves down to just after test_create; test_other keeps its place
    assert names(result) == ["test_other", "test_create", "test_use"]


def test_no_dependencies_keeps_pytest_order_exactly(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(
        test_b="def test_z(): pass\ndef test_a(): pass\n",
        test_a="import pytest\n@pytest.mark.parametrize('x', [3, 1, 2])\ndef test_p(x): pass\n",
    )
    plain = pytester.runpytest("-v", "-p", "no:depgraph")
    ours = run()
    assert passed_order(ours) == passed_order(plain)
    assert len(passed_order(ours)) == 5
    assert "depgraph" not in ours.stdout.str().split("passed")[-1]


def test_chain_across_files_and_function_targets(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(
        test_a="""
        import pytest
        import test_b

        @pytest.mark.depends_on(test_b.test_step2)
        def test_step3():
            pass
        """,
        test_b="""
        import pytest

        @pytest.mark.depends_on("test_c.py::test_step1")
        def test_step2():
            pass
        """,
        test_c="def test_step1(): pass\n",
    )
    result = run()
    result.assert_outcomes(passed=3)
    assert names(result) == ["test_step1", "test_step2", "test_step3"]


def test_class_marker_and_class_target(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(
        """
        import pytest

        class TestSetup:
            def test_one(self): pass
            def test_two(self): pass

        @pytest.mark.depends_on(TestSetup)
        class TestUse:
            def test_three(self): pass

        @pytest.mark.depends_on("TestUse")
        def test_last(): pass
        """
    )
    result = run()
    result.assert_outcomes(passed=4)
    assert names(result) == ["test_one", "test_two", "test_three", "test_last"]


def test_module_pytestmark_applies_to_every_test_but_not_to_itself(
    pytester: pytest.Pytester, run: Run
) -> None:
    pytester.makepyfile(
        test_m="""
        import pytest
        pytestmark = pytest.mark.depends_on("test_setup.py::test_db")

        def test_a(): pass
        def test_b(): pass
        """,
        test_setup="def test_db(): assert 0\n",
    )
    result = run("test_m.py", "test_setup.py")
    result.assert_outcomes(failed=1, skipped=2)
    reason = "depgraph: upstream test_setup.py::test_db failed"
    assert skip_reasons(result) == {"test_a": reason, "test_b": reason}


def test_on_failure_run_orders_but_does_not_skip(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.depends_on("test_work", on_failure="run")
        def test_cleanup():
            pass

        def test_work():
            assert 0
        """
    )
    result = run()
    result.assert_outcomes(passed=1, failed=1)
    assert names(result) == ["test_work", "test_cleanup"]


def test_parametrized_meta_node_and_single_instance(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.depends_on("test_db")
        def test_all():
            pass

        @pytest.mark.depends_on("test_db[sqlite]")
        def test_one():
            pass

        @pytest.mark.parametrize("engine", ["sqlite", "pg"])
        def test_db(engine):
            assert engine != "pg"
        """
    )
    result = run()
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    file = "test_parametrized_meta_node_and_single_instance.py"
    assert skip_reasons(result) == {"test_all": f"depgraph: upstream {file}::test_db[pg] failed"}
    # each dependent runs as soon as what it needs ran, never earlier than its place
    assert names(result) == ["test_db[sqlite]", "test_one", "test_db[pg]", "test_all"]


def test_module_fixture_not_set_up_twice_by_reordering(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(
        test_x="""
        import pytest
        SETUPS = []

        @pytest.fixture(scope="module")
        def resource():
            SETUPS.append(1)
            yield
            assert len(SETUPS) == 1

        @pytest.mark.depends_on("test_c")
        def test_a(resource): pass
        def test_b(resource): pass
        def test_c(resource): pass
        def test_d(resource): assert len(SETUPS) == 1
        """
    )
    result = run()
    result.assert_outcomes(passed=4)
    assert names(result) == ["test_b", "test_c", "test_a", "test_d"]


def test_modules_kept_together_when_another_plugin_splits_one(
    pytester: pytest.Pytester, run: Run
) -> None:
    pytester.makeconftest(
        """
        import pytest

        @pytest.hookimpl(tryfirst=True)
        def pytest_collection_modifyitems(items):
            items.append(items.pop(1))  # as --ff may: test_m1.py::test_d goes last
        """
    )
    pytester.makepyfile(
        test_m1="""
        import pytest

        @pytest.mark.depends_on("test_m2.py::test_b")
        def test_a(): pass
        def test_d(): pass
        """,
        test_m2="def test_b(): pass\ndef test_c(): pass\n",
    )
    result = run()
    result.assert_outcomes(passed=4)
    # the first and the last test share a module: test_a still waits for test_m2.py to finish
    assert names(result) == ["test_b", "test_c", "test_a", "test_d"]


def test_decorator_form_on_tests_and_classes(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(
        """
        from pytest_depgraph import depends_on

        @depends_on("test_base")
        def test_fn():
            pass

        @depends_on("test_fn")
        class TestK:
            def test_m(self):
                pass

        def test_base():
            pass
        """
    )
    result = run()
    result.assert_outcomes(passed=3)
    assert names(result) == ["test_base", "test_fn", "test_m"]


def test_order_other_plugins_leave_is_kept_where_no_edge_contradicts(
    pytester: pytest.Pytester, run: Run
) -> None:
    pytester.makepyfile(
        """
        import pytest

        def test_a(): pass
        def test_b(): pass

        @pytest.mark.depends_on("test_a")
        def test_c(): assert 0
        """
    )
    pytester.runpytest("-p", "cacheprovider")
    result = run("--ff", "-p", "cacheprovider")
    # --ff moves the failure first; the edge then pulls test_a in front of it, and test_b
    # keeps its place after them
    assert names(result) == ["test_a", "test_c", "test_b"]


def test_modifyitems_called_again_by_another_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        pytest_plugins = ["pytester"]

        def test_hook_called_twice(pytester):
            items = pytester.getitems("def test_a(): pass\\ndef test_b(): pass\\n")
            config = items[0].config
            config.hook.pytest_collection_modifyitems(
                session=items[0].session, config=config, items=items
            )
        """
    )
    pytester.runpytest("-p", "no:xdist").assert_outcomes(passed=1)


def test_a_dependent_waits_and_a_dependency_keeps_its_place_in_its_file(
    pytester: pytest.Pytester, run: Run
) -> None:
    """pytest-order's rule: the test with ``after=`` moves down; the test it names is not
    pulled up out of its file, away from the tests before it (which rely on file order)."""
    pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.order(after="test_b.py::test_b2")
        def test_a():
            pass

        def test_a_plain():
            pass
        """,
        test_b="""
        STATE = []

        def test_b1():
            STATE.append(1)

        def test_b2():
            assert STATE == [1], "test_b1 must run first: this file relies on its order"
        """,
    )
    result = run("-p", "no:pytest_order")
    result.assert_outcomes(passed=4)
    assert names(result) == ["test_a_plain", "test_b1", "test_b2", "test_a"]


def test_depends_on_moves_the_dependent_down_not_the_dependency_up(
    pytester: pytest.Pytester, run: Run
) -> None:
    pytester.makepyfile(
        test_a="""
        import pytest

        def test_first():
            pass

        @pytest.mark.depends_on("test_b.py::test_late")
        def test_needs_late():
            pass

        def test_last_of_a():
            pass
        """,
        test_b="""
        def test_early():
            pass

        def test_late():
            pass
        """,
    )
    result = run()
    result.assert_outcomes(passed=5)
    assert names(result) == [
        "test_first", "test_last_of_a", "test_early", "test_late", "test_needs_late"
    ]


def test_ordinal_groups_are_tied_with_few_edges_and_keep_the_serial_order(
    pytester: pytest.Pytester, run: Run
) -> None:
    """pytest-order's positions become after edges between consecutive groups: every pair
    while that stays linear, else the smaller group is chained and only its end is tied."""
    pytester.makepyfile(
        test_few="""
        import pytest

        @pytest.mark.order("last")
        def test_end(): pass

        def test_u1(): pass
        def test_u2(): pass

        @pytest.mark.order(1)
        def test_one(): pass

        @pytest.mark.order("first")
        def test_start(): pass
        """,
        test_many="import pytest\n"
        + "".join(f"@pytest.mark.order(5)\ndef test_o{i}(): pass\n" for i in range(30))
        + "".join(f"def test_p{i}(): pass\n" for i in range(60)),
        test_fewer="import pytest\n"
        + "".join(f"@pytest.mark.order(5)\ndef test_o{i}(): pass\n" for i in range(30))
        + "".join(f"def test_p{i}(): pass\n" for i in range(20)),
    )
    result = run("-p", "no:pytest_order", "test_few.py")
    assert names(result) == ["test_start", "test_one", "test_u1", "test_u2", "test_end"]
    # start <- one <- u1, u2 <- end: 1 + 2 + 2 edges
    result.stdout.fnmatch_lines(["5 tests, 5 edges (*5 keeping pytest-order's positions apart)*"])
    result = run("-p", "no:pytest_order", "test_many.py")
    assert names(result) == [f"test_o{i}" for i in range(30)] + [f"test_p{i}" for i in range(60)]
    # 30 x 60 pairs would be 1800 edges: the 30 are chained (29) and the 60 wait for the
    # last of them (60)
    result.stdout.fnmatch_lines(["90 tests, 89 edges (*89 keeping pytest-order's positions*"])
    # the unordered group is the smaller one: it is chained (19), its first test waits for
    # each of the 30 (the chain's edges name the marker that tied the groups)
    result = run("-p", "no:pytest_order", "test_fewer.py")
    assert names(result) == [f"test_o{i}" for i in range(30)] + [f"test_p{i}" for i in range(20)]
    result.stdout.fnmatch_lines(["50 tests, 49 edges (*49 keeping pytest-order's positions*"])


def test_ordinal_groups_do_not_glue_a_suite_into_one_shard(
    pytester: pytest.Pytester, run: Run
) -> None:
    """pytest-order's positions order the tests of each shard; they do not join them."""
    pytester.makepyfile(
        test_s="""
        import pytest

        @pytest.mark.order("first")
        def test_start(): pass

        def test_u1(): pass
        def test_u2(): pass
        def test_u3(): pass

        @pytest.mark.order("last")
        def test_end(): pass
        """
    )
    ran = []
    for shard in ("1/2", "2/2"):
        # (no cache: a CI job does not see the durations of the other shard)
        result = run("-p", "no:pytest_order", "-p", "no:cacheprovider", "--depgraph-shard", shard)
        shard_names = names(result)
        assert 0 < len(shard_names) < 5, shard_names
        # within a shard, the positions hold
        positions = {"test_start": 0, "test_end": 2}
        keys = [positions.get(name, 1) for name in shard_names]
        assert keys == sorted(keys), shard_names
        ran += shard_names
    assert sorted(ran) == ["test_end", "test_start", "test_u1", "test_u2", "test_u3"]


def test_a_dependent_collected_first_does_not_split_its_targets_class(
    pytester: pytest.Pytester, run: Run
) -> None:
    """The dependent waits until the class of its target is done: the class fixture is set
    up once, as without the plugin (before, test_report ran between the two and test_query
    got a second connection)."""
    pytester.makepyfile(
        test_cls="""
        import pytest
        N = []

        @pytest.fixture(scope="class")
        def conn():
            N.append(1)
            yield len(N)

        @pytest.mark.depends_on("TestDb::test_connect")
        def test_report():
            pass

        class TestDb:
            def test_connect(self, conn):
                assert conn == 1

            def test_query(self, conn):
                assert conn == 1
        """
    )
    result = run()
    result.assert_outcomes(passed=3)
    assert names(result) == ["test_connect", "test_query", "test_report"]


def test_a_dependent_does_not_split_its_targets_module_or_package(
    pytester: pytest.Pytester, run: Run
) -> None:
    """The same for a module fixture, and for a package fixture across the package's
    modules: the dependent runs once its target's module, then package, is done."""
    counted = """
        import pytest
        N = []

        @pytest.fixture(scope="{scope}")
        def conn():
            N.append(1)
            yield len(N)
        """
    pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.depends_on("test_b.py::test_connect")
        def test_report():
            pass
        """,
        test_b=counted.format(scope="module") + """
        def test_connect(conn):
            assert conn == 1

        def test_query(conn):
            assert conn == 1
        """,
        **{
            "api/__init__": "",
            "api/test_api": """
            import pytest

            @pytest.mark.depends_on("db/test_1.py::test_connect")
            def test_login():
                pass
            """,
            "db/__init__": "",
            "db/conftest": counted.format(scope="package"),
            "db/test_1": "def test_connect(conn):\n    assert conn == 1\n",
            "db/test_2": "def test_query(conn):\n    assert conn == 1\n",
        },
    )
    result = run()
    result.assert_outcomes(passed=6)
    assert passed_order(result) == [
        "db/test_1.py::test_connect", "db/test_2.py::test_query", "api/test_api.py::test_login",
        "test_b.py::test_connect", "test_b.py::test_query", "test_a.py::test_report",
    ]


#: pytest-randomly 5's reorganisation of the items (modules, then classes and functions in a
#: module, then the tests of each, sorted by the CRC32 of the seed and their names), copied so
#: that the test does not depend on the plugin being installed: ``--randomly-seed=N`` gives
#: the same order.
SHUFFLE_LIKE_PYTEST_RANDOMLY = """
import itertools, zlib
import pytest

def pytest_addoption(parser):
    parser.addoption("--shuffle-seed", type=int)

def _crc(seed, name):
    return zlib.crc32(f"{seed}::{name}".encode())

def _name(obj):
    return None if obj is None else getattr(obj, "__qualname__", obj.__name__)

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    seed = config.getoption("--shuffle-seed")
    modules = []
    for module, in_module in itertools.groupby(items, lambda item: item.module):
        groups = []
        for cls, in_class in itertools.groupby(in_module, lambda item: item.cls):
            tests = sorted(in_class, key=lambda item: _crc(seed, item.nodeid))
            key = _crc(seed, f"{cls.__module__}.{cls.__qualname__}" if cls else None)
            groups.append((key, tests))
        groups.sort(key=lambda group: group[0])
        modules.append((_crc(seed, module.__name__), [t for _, g in groups for t in g]))
    modules.sort(key=lambda module: module[0])
    items[:] = [t for _, tests in modules for t in tests]
"""


def test_shuffled_suites_keep_every_class_and_module_fixture_set_up_once(
    pytester: pytest.Pytester, run: Run
) -> None:
    """pytest-randomly's seeds put dependents before and after their targets' classes and
    modules; the tests that set up scoped fixtures are never split by a dependent."""
    pytester.makeconftest(
        SHUFFLE_LIKE_PYTEST_RANDOMLY + """
SETUPS = {}

def _count(key):
    SETUPS[key] = SETUPS.get(key, 0) + 1
    return SETUPS[key]

@pytest.fixture(scope="module")
def mod(request):
    yield _count(request.module.__name__)

@pytest.fixture(scope="class")
def cls(request):
    yield _count(request.cls.__qualname__)
"""
    )
    pytester.makepyfile(
        test_db="""
        def test_migrate(mod): assert mod == 1
        def test_seed(mod): assert mod == 1

        class TestTables:
            def test_users(self, mod, cls): assert (mod, cls) == (1, 1)
            def test_orders(self, mod, cls): assert (mod, cls) == (1, 1)
            def test_items(self, mod, cls): assert (mod, cls) == (1, 1)
        """,
        test_api="""
        import pytest

        @pytest.mark.depends_on("test_db.py::TestTables::test_users")
        def test_login(): pass

        @pytest.mark.depends_on("test_db.py::test_migrate")
        def test_health(): pass

        class TestCache:
            def test_put(self, mod, cls): assert (mod, cls) == (1, 1)
            def test_get(self, mod, cls): assert (mod, cls) == (1, 1)

        @pytest.mark.depends_on("TestCache::test_put")
        def test_cached_login(): pass
        """,
        test_report="""
        import pytest

        @pytest.mark.depends_on("test_db.py::TestTables::test_orders")
        def test_totals(): pass

        @pytest.mark.depends_on("test_api.py::TestCache::test_get", "test_db.py::test_seed")
        def test_export(): pass
        """,
    )
    outcomes = {}
    for seed in (1, 2):  # before, seed 1 split TestCache, seed 2 test_db.py and TestTables
        outcomes[seed] = run("--shuffle-seed", str(seed)).parseoutcomes()
    assert outcomes == {1: {"passed": 12}, 2: {"passed": 12}}
