"""Selecting a subset pulls in the transitive dependencies of the selected tests."""

from __future__ import annotations

import pytest

from .helpers import Run, names, skip_reasons

LAST_FAILED = {
    "test_a": """
    import os, pytest

    def test_login(): pass

    @pytest.mark.depends_on("test_login")
    def test_cart():
        assert not os.environ.get("BREAK_CART")

    @pytest.mark.depends_on("test_cart")
    def test_checkout(): pass
    """,
    "test_b": "def test_independent(): pass\n",
}

#: each mechanism selects test_checkout alone
SELECTIONS = [
    ("-k", "checkout"),
    ("-m", "slow"),
    ("--deselect", "test_shop.py::test_login", "--deselect", "test_shop.py::test_cart",
     "--deselect", "test_shop.py::test_unrelated", "--deselect", "test_shop.py::test_after_only"),
    ("test_shop.py::test_checkout",),
]
SELECTION_IDS = ["-k", "-m", "--deselect", "node id"]

SHOP = """
import pytest

def test_login():
    pass

@pytest.mark.depends_on("test_login")
def test_cart():
    pass

@pytest.mark.depends_on("test_cart")
@pytest.mark.slow
def test_checkout():
    pass

def test_unrelated():
    pass

@pytest.mark.depends_on("test_login", on_failure="run")
def test_after_only():
    pass
"""


@pytest.mark.parametrize("args", SELECTIONS, ids=SELECTION_IDS)
def test_selection_pulls_in_dependencies(
    pytester: pytest.Pytester, run: Run, args: tuple[str, ...]
) -> None:
    pytester.makepyfile(test_shop=SHOP)
    pytester.makeini("[pytest]\nmarkers = slow\n")
    result = run(*args)
    result.assert_outcomes(passed=3)
    assert names(result) == ["test_login", "test_cart", "test_checkout"]
    result.stdout.fnmatch_lines(["2 dependencies pulled in by selection:",
                                 "  test_shop.py::test_login", "  test_shop.py::test_cart"])
    if args[0].startswith("test_shop.py::"):
        # a node id: the rest of its file was collected only to find dependencies, so it
        # counts as neither collected nor deselected (pytest would not have collected it)
        result.stdout.fnmatch_lines(["*collected 3 items"])
        assert "deselected" not in result.stdout.str()
    else:
        assert "2 deselected" in result.stdout.lines[-1]


def test_after_edges_do_not_pull_in(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_shop=SHOP)
    result = run("-k", "after_only")
    result.assert_outcomes(passed=1)
    assert names(result) == ["test_after_only"]


def test_after_edges_order_a_test_that_another_selected_test_pulls_in(
    pytester: pytest.Pytester, run: Run
) -> None:
    """test_b only orders itself after test_a (it does not pull it in); test_c's dependency
    does pull it in: then test_b runs after it (it ran first: its edge was dropped)."""
    pytester.makepyfile(
        test_p="""
        import pytest

        @pytest.mark.depends_on("test_a", on_failure="run")
        def test_b(): pass

        @pytest.mark.depends_on("test_a")
        def test_c(): pass

        def test_a(): pass
        """
    )
    result = run("-k", "test_b or test_c")
    result.assert_outcomes(passed=3)
    assert names(result) == ["test_a", "test_b", "test_c"]


def test_dependency_in_another_file_named_on_the_command_line(
    pytester: pytest.Pytester, run: Run
) -> None:
    pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.depends_on("test_b.py::test_prepare")
        def test_use(): pass

        def test_other(): pass
        """,
        test_b="def test_prepare(): pass\ndef test_more(): pass\n",
    )
    result = run("test_a.py::test_use", "test_b.py::test_more")
    result.assert_outcomes(passed=3)
    assert names(result) == ["test_prepare", "test_use", "test_more"]


def test_unknown_node_id_is_still_an_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_shop=SHOP)
    result = pytester.runpytest("test_shop.py::test_nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*not found: test_shop.py::test_nope*"])


NO_DEPS_REASON = (
    "(--depgraph-no-deps; select {} too, drop --depgraph-no-deps to pull them in, or use "
    "--depgraph-ignore-deps to run without them)"
)


def test_no_deps_skips_dependents_of_unselected_tests(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_shop=SHOP)
    result = run("-k", "checkout or cart", "--depgraph-no-deps")
    result.assert_outcomes(passed=0, skipped=2)
    reason = ("depgraph: upstream test_shop.py::test_login was not selected "
              + NO_DEPS_REASON.format("it"))
    assert skip_reasons(result) == {"test_cart": reason, "test_checkout": reason}
    result.stdout.fnmatch_lines(["1 dependency not selected (--depgraph-no-deps)"])


FOUR_DEPS = """
import pytest

def test_db(): pass
def test_cache(): pass
def test_queue(): pass
def test_mail(): pass

@pytest.mark.depends_on("test_db", "test_cache", "test_queue", "test_mail")
def test_signup(): pass
"""


def test_no_deps_names_every_unselected_dependency(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_app=FOUR_DEPS)
    result = run("test_app.py::test_signup", "--depgraph-no-deps")
    result.assert_outcomes(skipped=1)
    assert skip_reasons(result) == {
        "test_signup": "depgraph: upstream test_app.py::test_db, test_app.py::test_cache, "
        "test_app.py::test_queue, test_app.py::test_mail were not selected "
        + NO_DEPS_REASON.format("them")
    }


def test_ignore_deps_runs_one_test_alone(pytester: pytest.Pytester, run: Run) -> None:
    """--depgraph-ignore-deps: nothing pulled in, nothing skipped; edges between selected
    tests still hold."""
    pytester.makepyfile(test_app=FOUR_DEPS, test_shop=SHOP)
    result = run("test_app.py::test_signup", "--depgraph-ignore-deps")
    result.assert_outcomes(passed=1)
    assert names(result) == ["test_signup"]
    result = run("-k", "checkout or cart", "--depgraph-ignore-deps", "test_shop.py")
    assert names(result) == ["test_cart", "test_checkout"]
    result.assert_outcomes(passed=2)
    pytester.makeini("[pytest]\ndepgraph_ignore_deps = true\n")
    run("test_app.py::test_signup").assert_outcomes(passed=1)
    result = run("test_app.py::test_signup", "--depgraph-no-deps")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--depgraph-no-deps and --depgraph-ignore-deps exclude*"])


def test_no_deps_from_ini(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(test_shop=SHOP)
    pytester.makeini("[pytest]\ndepgraph_no_deps = true\n")
    run("-k", "cart").assert_outcomes(skipped=1)


def test_last_failed_reruns_failures_with_their_dependencies(
    pytester: pytest.Pytester, run: Run
) -> None:
    pytester.makepyfile(**LAST_FAILED)
    pytester.runpytest("-p", "cacheprovider")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BREAK_CART", "1")
        first = run()
    first.assert_outcomes(passed=2, failed=1, skipped=1)
    again = run("--lf")
    again.assert_outcomes(passed=3)
    assert names(again) == ["test_login", "test_cart", "test_checkout"]
    again.stdout.fnmatch_lines(["1 dependency pulled in by selection:", "  test_a.py::test_login"])


@pytest.mark.parametrize("args", SELECTIONS, ids=SELECTION_IDS)
def test_selection_pulls_in_dependencies_on_xdist(
    pytester: pytest.Pytester, args: tuple[str, ...]
) -> None:
    """Each selection on a worker, the dependencies pulled in and run first; ``-k``'s on two
    workers, where the order holds across them (what is selected and pulled in is decided
    on each worker alike, whatever the selection)."""
    pytester.makepyfile(test_shop=SHOP)
    pytester.makeini("[pytest]\nmarkers = slow\n")
    workers = "2" if args[0] == "-k" else "1"
    result = pytester.runpytest("-n", workers, "-p", "xdist", "-v", *args)
    result.assert_outcomes(passed=3)
    lines = [line for line in result.outlines if "PASSED" in line]
    order = [line.split("::")[-1].split()[0] for line in lines if "::" in line]
    assert order.index("test_login") < order.index("test_cart") < order.index("test_checkout")
    result.stdout.fnmatch_lines(["2 dependencies pulled in by selection:"])


def test_no_deps_on_xdist_skips_with_the_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_shop=SHOP)
    # one worker: one selected test, skipped for its unselected dependency
    result = pytester.runpytest(
        "-n", "1", "-p", "xdist", "-rs", "-k", "cart", "--depgraph-no-deps"
    )
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["*depgraph: upstream test_shop.py::test_login was not selected*"]
    )


def test_dependency_in_a_file_not_named_on_the_command_line(
    pytester: pytest.Pytester, run: Run
) -> None:
    pytester.makepyfile(
        **{
            "tests/test_use": """
            import pytest

            @pytest.mark.depends_on("tests/setup/test_db.py::test_migrate")
            def test_query(): pass
            """,
            "tests/setup/test_db": """
            import pytest

            @pytest.mark.depends_on("test_seed.py::test_seed")
            def test_migrate(): pass

            def test_unrelated(): pass
            """,
            "tests/setup/test_seed": "def test_seed(): pass\ndef test_other(): pass\n",
        }
    )
    for args in (("tests/test_use.py",), ("tests/test_use.py::test_query",)):
        result = run(*args)
        result.assert_outcomes(passed=3)
        assert names(result) == ["test_seed", "test_migrate", "test_query"]
        result.stdout.fnmatch_lines(["2 dependencies pulled in by selection:"])


def test_file_arguments_without_dependencies_collect_as_usual(
    pytester: pytest.Pytester, run: Run
) -> None:
    pytester.makepyfile(test_a="def test_a(): pass\n", test_b="def test_b(): pass\n")
    result = run("test_a.py")
    result.assert_outcomes(passed=1)
    assert "deselected" not in result.stdout.str()


def test_last_failed_on_xdist(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**LAST_FAILED)
    # one worker: each worker reads the failures the controller kept and selects alike
    args = ("-n", "1", "-p", "xdist", "-p", "cacheprovider", "-v")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BREAK_CART", "1")
        pytester.runpytest(*args).assert_outcomes(passed=2, failed=1, skipped=1)
    again = pytester.runpytest(*args, "--lf")
    again.assert_outcomes(passed=3)
    assert "test_independent" not in again.stdout.str()
    again.stdout.fnmatch_lines(["1 dependency pulled in by selection:"])


SPLIT = {
    "tests/b/test_base": "def test_setup_db(): pass\ndef test_other_b(): pass\n",
    "tests/a/test_app": """
    import pytest

    @pytest.mark.depends_on("tests/b/test_base.py::test_setup_db")
    def test_uses_db(): pass

    def test_plain_a(): pass
    """,
    "tests/a/test_more": "def test_more(): pass\n",
}


def test_directory_argument_pulls_in_a_dependency_elsewhere(
    pytester: pytest.Pytester, run: Run
) -> None:
    """`pytest tests/a/` pulls in what its tests need from tests/b/, as a file argument does;
    the rest of tests/b/ is neither run nor counted."""
    pytester.makepyfile(**SPLIT)
    for args in (("tests/a",), ("tests/a/test_app.py",), ("tests/a/test_app.py::test_uses_db",)):
        result = run(*args)
        expected = ["test_setup_db", "test_uses_db"]
        if "::" not in args[0]:
            expected.append("test_plain_a")
        if args == ("tests/a",):
            expected.append("test_more")
        assert sorted(names(result)) == sorted(expected), args
        assert names(result).index("test_setup_db") < names(result).index("test_uses_db")
        result.stdout.fnmatch_lines([f"*collected {len(expected)} items",
                                     "1 dependency pulled in by selection:"])
        assert "deselected" not in result.stdout.str()


def test_ignored_file_of_a_target_is_named(pytester: pytest.Pytester, run: Run) -> None:
    """--ignore leaves the target's file out: the error says so and how to include it, with
    no unrelated suggestions."""
    pytester.makepyfile(**SPLIT)
    result = run("tests/a", "--ignore=tests/b")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "*target 'tests/b/test_base.py::test_setup_db' matches no collected test*",
        "  tests/b/test_base.py is not collected: pytest is told to ignore it (--ignore, "
        "--ignore-glob, collect_ignore); stop ignoring it to run this test.",
    ])
    result.stdout.no_fnmatch_line("*Did you mean*")


def test_directory_argument_on_xdist(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**SPLIT)
    # one worker: what a directory argument pulls in is its collection's (the order of
    # pulled-in tests across workers: test_selection_pulls_in_dependencies_on_xdist)
    result = pytester.runpytest("-n", "1", "-p", "xdist", "tests/a")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["1 dependency pulled in by selection"])


def test_node_id_imports_only_the_files_its_test_needs(pytester: pytest.Pytester, run: Run) -> None:
    """Another test of the named file depends on test_b.py: naming test_x does not import
    it; naming test_z (which needs test_y, which needs test_b.py) does."""
    pytester.makepyfile(
        test_a="""
        import pytest

        def test_x():
            pass

        @pytest.mark.depends_on("test_b.py::test_b")
        def test_y():
            pass

        @pytest.mark.depends_on("test_y")
        def test_z():
            pass
        """,
        test_b="""
        import pathlib
        pathlib.Path("imported_b").touch()

        def test_b():
            pass

        def test_b2():
            pass
        """,
    )
    result = run("test_a.py::test_x")
    result.stdout.fnmatch_lines(["*collected 1 item"])
    assert not (pytester.path / "imported_b").exists()
    result = run("test_a.py::test_z")
    assert names(result) == ["test_b", "test_y", "test_z"]
    result.stdout.fnmatch_lines(["*collected 3 items", "2 dependencies pulled in by selection:"])
    assert (pytester.path / "imported_b").exists()
