"""Bad input: clear collection errors naming the test, the file and line, and what to do."""

from __future__ import annotations

import re

import pytest

from .helpers import Run, assert_clean


def test_unknown_target_with_suggestion(pytester: pytest.Pytester, run: Run) -> None:
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
    assert_clean(result)


#: a marker's bad arguments, each with the start of its error message
BAD_ARGUMENTS = [
    ("", "depends_on() names no target*"),
    ("42", "target 42 (int) is not a test*"),
    ("'test_a', when='now'", "unknown keyword argument when=*"),
    ("'test_a', on_failure='never'", "on_failure='never' is not valid; use on_failure='skip'*"),
]


def test_bad_arguments(pytester: pytest.Pytester, run: Run) -> None:
    """Each bad marker, in a file of its own, is an error of that file's collection, told
    with its line and its test; one run collects them all (each file's error is its own:
    one run instead of four: 0.57 -> 0.15 s of CPU, getrusage of the process and its children,
    four runs each, spread 0.09)."""
    for number, (args, _) in enumerate(BAD_ARGUMENTS):
        pytester.makepyfile(
            **{f"test_bad{number}": f"""
            import pytest

            def test_a(): pass

            @pytest.mark.depends_on({args})
            def test_b(): pass
            """}
        )
    result = run()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    for number, (_, message) in enumerate(BAD_ARGUMENTS):
        # the lines not found name the file, hence the arguments
        result.stdout.fnmatch_lines(
            [f"depgraph: test_bad{number}.py:5: {message}",
             f"  (@pytest.mark.depends_on, declared for test_bad{number}.py::test_b)"]
        )
    result.assert_outcomes(errors=len(BAD_ARGUMENTS))
    assert_clean(result)


def test_error_with_module_marker_is_reported_once(pytester: pytest.Pytester, run: Run) -> None:
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


def test_cycle_report_with_origins(pytester: pytest.Pytester, run: Run) -> None:
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
    assert_clean(result)


def test_every_cycle_reported_and_self_reference(pytester: pytest.Pytester, run: Run) -> None:
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


def test_continue_on_collection_errors_runs_the_rest(pytester: pytest.Pytester, run: Run) -> None:
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


#: four tests each after the three others: one component of many loops
CLIQUE = """
import pytest

@pytest.mark.depends_on("test_b", "test_c", "test_d", on_failure="run")
def test_a(): pass

@pytest.mark.depends_on("test_a", "test_c", "test_d", on_failure="run")
def test_b(): pass

@pytest.mark.depends_on("test_a", "test_b", "test_d", on_failure="run")
def test_c(): pass

@pytest.mark.depends_on("test_a", "test_b", "test_c", on_failure="run")
def test_d(): pass

def test_free(): pass
"""


def test_a_cycle_of_many_loops_stops_each_of_its_tests(
    pytester: pytest.Pytester, run: Run
) -> None:
    """Every test of a component with more than one loop is in the cycle reported, not only
    those of the loop shown (the others were left in the graph: an INTERNALERROR)."""
    pytester.makepyfile(test_c=CLIQUE)
    result = run("--continue-on-collection-errors")
    assert_clean(result)
    result.assert_outcomes(passed=1, errors=5)
    result.stdout.fnmatch_lines(["*ERROR at setup of test_d*", "depgraph: dependency cycle*"])


def test_an_inconsistency_of_the_build_is_a_collection_error_that_says_what_to_report(
    pytester: pytest.Pytester, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A graph left cyclic after validation (a bug of ours: here validation is made to find
    no cycle) is a collection error naming the tests and what to report, not a traceback;
    with ``--continue-on-collection-errors`` the other tests run."""
    from pytest_depgraph.collect import build

    monkeypatch.setattr(build, "find_cycles", lambda graph, kahn=None: [])
    pytester.makepyfile(test_c=CLIQUE)
    result = run()
    assert_clean(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "depgraph: internal error: the order of these tests could not be found after the",
        "dependency cycles were checked (an inconsistency of pytest-depgraph, not of your",
        "declarations); they and the tests that require them do not run:",
        "  test_c.py::test_a",
        "  test_c.py::test_b",
        "  test_c.py::test_c",
        "  test_c.py::test_d",
        "  Please report it to the pytest-depgraph maintainers with the declarations of these",
        "*Interrupted: 1 error during collection*",
    ])
    result = run("--continue-on-collection-errors")
    assert_clean(result)
    result.assert_outcomes(passed=1, errors=5)


def test_mark_on_fixture_points_to_the_decorator(pytester: pytest.Pytester, run: Run) -> None:
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


def test_other_marks_and_cleanup_of_on_fixtures_say_what_to_use_instead(
    pytester: pytest.Pytester, run: Run
) -> None:
    """A resource lock marked on a fixture points to the decorator (pytest 8 ignores the
    mark: the lock would silently not exist); ``@cleanup_of`` on a fixture (a cleanup is a
    test) is an error, never a fixture that silently cleans up nothing."""
    pytester.makepyfile(
        test_lock="""
        import pytest

        @pytest.fixture
        @pytest.mark.resource_lock("db")
        def database():
            pass

        def test_uses(database): pass
        """,
        test_clean="""
        import pytest
        from pytest_depgraph import cleanup_of

        def test_make(): pass

        @pytest.fixture
        @cleanup_of("test_make")
        def remover():
            pass

        def test_other(remover): pass
        """,
    )
    result = run()
    assert result.ret != 0
    result.stdout.fnmatch_lines_random([
        "*pytest_depgraph import resource_lock*",
        "depgraph: test_clean.py:*: @cleanup_of on fixture 'remover' has no effect: a cleanup "
        "is a test.",
        "*Put @pytest.mark.cleanup_of on the test that cleans up*",
    ])
    assert "Traceback" not in result.stdout.str()


def test_strict_markers_accepts_the_marker(pytester: pytest.Pytester, run: Run) -> None:
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


def test_bad_fixture_declaration_names_the_fixture(pytester: pytest.Pytester, run: Run) -> None:
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
    assert_clean(result)


#: on_failure values of every type, each as the error message shows it
ON_FAILURE_VALUES = {'["skip"]': "['skip']", "{}": "{}", "None": "None", "1": "1", "True": "True"}


def test_on_failure_of_any_type_is_a_clean_error(pytester: pytest.Pytester, run: Run) -> None:
    """An unhashable on_failure (a list, a dict) used to be an INTERNALERROR. Each value is in
    a file of its own, each file's errors its own: one run collects them all (one run instead
    of five: 0.67 -> 0.15 s of CPU, getrusage of the process and its children, three runs
    each, spread 0.08)."""
    for number, value in enumerate(ON_FAILURE_VALUES):
        pytester.makepyfile(
            **{f"test_of{number}": f"""
            import pytest
            from pytest_depgraph import depends_on

            def test_a(): pass

            @pytest.mark.depends_on("test_a", on_failure={value})
            def test_b(): pass

            @pytest.fixture
            @depends_on("test_a", on_failure={value})
            def token(): pass

            def test_c(token): pass
            """}
        )
    result = run()
    out = result.stdout.str()
    # each value's lines first: a value that ends the run (an INTERNALERROR) is named
    for number, (value, shown) in enumerate(ON_FAILURE_VALUES.items()):
        assert (
            f"depgraph: test_of{number}.py:6: on_failure={shown} is not valid; use "
            "on_failure='skip' (run only if the targets passed) or on_failure='run' (order "
            "only)\n"
            f"  (@pytest.mark.depends_on, declared for test_of{number}.py::test_b)\n"
        ) in out, f"the marker's on_failure={value}"
        assert (
            f"depgraph: test_of{number}.py:10: on_failure={shown} is not valid; use "
            "on_failure='skip' (run only if the targets passed) or on_failure='run' (order "
            "only)\n"
            "  (@depends_on on fixture 'token')\n"
        ) in out, f"the fixture's on_failure={value}"
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert_clean(result)


def test_messages_hint_what_was_meant(pytester: pytest.Pytester, run: Run) -> None:
    pytester.makepyfile(
        test_m="""
        import pytest
        from pytest_depgraph import output_fixture

        @pytest.fixture
        def db(): return 1

        def test_a(): pass

        @pytest.mark.depends_on("test_m.py:test_a")
        def test_one_colon(): pass

        @pytest.mark.depends_on("test_one_colonn")
        def test_one_colonn2(): pass

        @pytest.mark.depends_on("db")
        def test_fixture_name(): pass

        vpc_id = output_fixture("test_create_vpc", "vpc_id")

        def test_subnet(vpc_id): pass
        """
    )
    result = run()
    result.stdout.fnmatch_lines(
        [
            "depgraph: test_m.py:9: target 'test_m.py:test_a' matches no collected test "
            "(@pytest.mark.depends_on, declared for test_m.py::test_one_colon).",
            "  Did you mean 'test_m.py::test_a'?",
            # the declaring test itself is never offered
            "depgraph: test_m.py:12: target 'test_one_colonn' matches no collected test *",
            "  Did you mean 'test_one_colon'?",
            "depgraph: test_m.py:15: target 'db' matches no collected test *",
            "  'db' is a fixture, not a test. A test that uses a fixture gets the fixture's own "
            "dependencies: declare them on the fixture with *",
            "depgraph: test_m.py:18: target 'test_create_vpc' matches no collected test "
            "(output_fixture 'vpc_id', declared for test_m.py::test_subnet).",
        ],
        consecutive=False,
    )
    assert "or 'test_one_colonn2'" not in result.stdout.str()
    assert_clean(result)


def test_class_and_module_markers_naming_themselves_are_self_references(
    pytester: pytest.Pytester, run: Run
) -> None:
    pytester.makepyfile(
        test_own_class="""
        import pytest

        @pytest.mark.depends_on("TestOwn")
        class TestOwn:
            def test_1(self): pass
            def test_2(self): pass
        """,
        test_own_file="""
        import pytest
        pytestmark = pytest.mark.depends_on("test_own_file.py")

        def test_x(): pass
        def test_y(): pass
        """,
    )
    result = run()
    result.stdout.fnmatch_lines(
        [
            "depgraph: test_own_class.py:3: self reference: target 'TestOwn' includes the test "
            "itself (@pytest.mark.depends_on, declared for test_own_class.py::TestOwn::test_1 "
            "and 1 more test).",
            "  A marker on a class or module applies to each of its tests, so a target that "
            "contains them names each test itself*",
            "depgraph: test_own_file.py:2: self reference: target 'test_own_file.py' includes "
            "the test itself (@pytest.mark.depends_on, declared for test_own_file.py::test_x "
            "and 1 more test).",
        ],
        consecutive=False,
    )
    assert "dependency cycle" not in result.stdout.str()
    assert "2 errors during collection" in result.stdout.str()


def test_errors_sharing_a_cause_are_grouped_and_capped(pytester: pytest.Pytester, run: Run) -> None:
    """Thirty markers naming a renamed file: one error listing three of them and a count;
    -v lists them all. A huge target string is shortened."""
    markers = "\n".join(
        f"@pytest.mark.depends_on('test_old.py::test_{k}')\ndef test_{k}(): pass\n"
        for k in range(30)
    )
    pytester.makepyfile(
        test_new=f"import pytest\n\n{markers}\n"
        "@pytest.mark.depends_on('x' * 1_000_000)\ndef test_huge(): pass\n",
        test_olds="def test_0(): pass\n",
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.stdout.fnmatch_lines(
        [
            "depgraph: test_new.py:3: target 'test_old.py::test_0' matches no collected test: "
            "test_old.py is not a collected file or folder (@pytest.mark.depends_on, declared "
            "for test_new.py::test_0).",
            "  29 more declarations name that file or folder:",
            "    test_new.py:6: target 'test_old.py::test_1' (@pytest.mark.depends_on, declared "
            "for test_new.py::test_1)",
            "    test_new.py:9: target *",
            "    test_new.py:12: target *",
            "    … and 26 more (-v shows all)",
            "  Did you mean 'test_olds.py::test_0'?",
            "depgraph: test_new.py:93: target 'xxx*x'…'xxx*x' (1,000,000 characters) matches no "
            "collected test*",
        ]
    )
    assert "2 errors during collection" in result.stdout.str()
    assert len(result.stdout.str()) < 10_000
    verbose = run()  # -v
    assert "… and" not in verbose.stdout.str()
    verbose.stdout.fnmatch_lines(["    test_new.py:90: target 'test_old.py::test_29' *"])


def test_many_errors_and_long_cycles_are_capped(pytester: pytest.Pytester, run: Run) -> None:
    unknown = "\n".join(
        f"@pytest.mark.depends_on('test_gone_{k}')\ndef test_u{k}(): pass\n" for k in range(25)
    )
    loop = "\n".join(
        f"@pytest.mark.depends_on('test_c{(k + 1) % 30}')\ndef test_c{k}(): pass\n"
        for k in range(30)
    )
    pytester.makepyfile(test_many=f"import pytest\n\n{unknown}\n{loop}\n")
    # -rN: no short summary, whose lines pytest cuts to the terminal's width except on CI
    result = pytester.runpytest("-p", "no:randomly", "-rN")
    out = result.stdout.str()
    assert out.count("matches no collected test") == 19 + 3  # 19 errors, 3 in the one summing up
    result.stdout.fnmatch_lines(
        [
            "depgraph: 7 more dependency errors (-v shows all):",
            "  depgraph: test_many.py:60: target 'test_gone_19' matches no collected test *",
            "  … and 4 more",
        ]
    )
    assert "20 errors during collection" in out
    assert "dependency cycle" not in out  # the cycle is among the errors summed up
    verbose = run()  # -v
    verbose.stdout.fnmatch_lines(
        ["depgraph: dependency cycle (30 tests)", "  test_many.py::test_c0"]
    )
    assert "more (-v shows all)" not in verbose.stdout.str()
    assert "26 errors during collection" in verbose.stdout.str()


def test_long_cycle_is_shortened(pytester: pytest.Pytester, run: Run) -> None:
    loop = "\n".join(
        f"@pytest.mark.depends_on('test_c{(k + 1) % 30}')\ndef test_c{k}(): pass\n"
        for k in range(30)
    )
    pytester.makepyfile(test_loop=f"import pytest\n\n{loop}\n")
    result = pytester.runpytest("-p", "no:randomly")
    result.stdout.fnmatch_lines(
        [
            "depgraph: dependency cycle (30 tests)",
            "  test_loop.py::test_c0",
            "    -> test_loop.py::test_c1    depends_on at test_loop.py:3",
            "*",
            "    -> test_loop.py::test_c10   depends_on at test_loop.py:30",
            "    … 19 more (-v shows all)",
            "    -> test_loop.py::test_c0    depends_on at test_loop.py:90",
            "  A test cannot run before itself*",
        ]
    )


def test_markers_of_inherited_and_imported_classes_name_the_file_they_are_written_in(
    pytester: pytest.Pytester, run: Run
) -> None:
    # the class marker and the method marker are written in test_base.py: a class that
    # inherits them, or a module that imports the class, must not move them to test_sub.py;
    # and each is one declaration, for every test it applies to (not one per class)
    pytester.makepyfile(
        test_base="""
        import pytest


        @pytest.mark.depends_on("test_nothing_here")
        class TestBase:
            def test_a(self): pass

            @pytest.mark.depends_on("test_missing")
            def test_b(self): pass
        """,
        test_sub="""
        from test_base import TestBase


        class TestSub(TestBase):
            def test_c(self): pass
        """,
    )
    pytester.makeconftest("")
    result = run("test_sub.py", "test_base.py")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert not re.search(r"test_sub\.py:\d", result.stdout.str())
    assert "more declaration" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "depgraph: test_base.py:4: target 'test_nothing_here' matches no collected test "
            "(@pytest.mark.depends_on, declared for test_sub.py::TestBase::test_a and 6 more "
            "tests).",
            "depgraph: test_base.py:8: target 'test_missing' matches no collected test "
            "(@pytest.mark.depends_on, declared for test_sub.py::TestBase::test_b and 2 more "
            "tests).",
        ]
    )
    assert_clean(result)


def test_loose_declarations_of_shared_resources_are_errors_naming_what_to_write(
    pytester: pytest.Pytester, run: Run
) -> None:
    """Two ``weight`` marks on one test (the closest won silently) and ``scope="class"`` on a
    test outside a class (it was taken as the module) are collection errors at the mark's
    line; a class of them is fine."""
    pytester.makepyfile(
        test_res="""
        import pytest

        @pytest.mark.weight(2)
        @pytest.mark.weight(3)
        def test_two(): pass

        @pytest.mark.weight(2)
        class TestHeavy:
            @pytest.mark.weight(4)
            def test_heavier(self): pass

            def test_as_its_class(self): pass

        @pytest.mark.resource_lock("db", scope="class")
        def test_loose(): pass

        @pytest.mark.resource_lock("db", scope="class")
        class TestBlock:
            def test_in_class(self): pass
        """
    )
    result = run("-p", "no:xdist")
    assert_clean(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "depgraph: test_res.py:3: weight(2) is a second weight mark on test_res.py::test_two, "
        "which weight(3) at test_res.py:4 already weighs; keep one weight mark for the test "
        "(on the test, or on its class or module for all of their tests).",
        "depgraph: test_res.py:7: weight(2) is a second weight mark on "
        "test_res.py::TestHeavy::test_heavier, which weight(4) at test_res.py:9 already *",
        "depgraph: test_res.py:14: scope='class' on test_res.py::test_loose, which is not in a "
        "class: a class block holds the tests of one class. Write scope='module' for the "
        "module's tests as one block, or leave scope out for each test on its own.",
        "*Interrupted: 3 errors during collection*",
    ])


def test_loose_settings_are_usage_errors_or_warnings_at_their_place(
    pytester: pytest.Pytester, run: Run
) -> None:
    """A ``depgraph_resources`` line that is a name with a space, and a durations file entry of
    ``1e999`` (infinity), are usage errors naming what to write; a missing durations file is a
    warning shown at the ini line that names it (it was shown at our own code), and a usage
    error under ``-W error``, not a traceback."""
    pytester.makepyfile(test_a="def test_a(): pass")
    pytester.makeini("[pytest]\ndepgraph_resources =\n    my db\n")
    spaced = run()
    assert spaced.ret == pytest.ExitCode.USAGE_ERROR
    spaced.stderr.fnmatch_lines([
        "ERROR: depgraph_resources in tox.ini:3: 'my db' is not a resource name: a name has no "
        "spaces, one a line. Write 'my_db' (and the same name in its resource_lock marks), or "
        "'name: N' for a capacity",
    ])
    pytester.makeini("[pytest]\ndepgraph_durations = durations.json\n")
    pytester.path.joinpath("durations.json").write_text('{"test_a.py::test_a": 1e999}')
    infinite = run()
    assert infinite.ret == pytest.ExitCode.USAGE_ERROR
    infinite.stderr.fnmatch_lines([
        "ERROR: depgraph_durations = durations.json in tox.ini:2: the entry "
        "'test_a.py::test_a': inf is "
        "not a node id and a number of seconds (0 or more), and no test lasts for ever*",
    ])
    pytester.path.joinpath("durations.json").unlink()
    missing = run()
    missing.assert_outcomes(passed=1, warnings=1)
    missing.stdout.fnmatch_lines([
        "tox.ini:2",
        "  */tox.ini:2: PytestWarning: depgraph: depgraph_durations = durations.json in "
        "tox.ini:2 does not exist: the walk weighs the tests by pytest's cache alone. Write it "
        "with --depgraph-store-durations */durations.json.",
    ])
    assert "durations.py" not in missing.stdout.str()
    strict = run("-W", "error::pytest.PytestWarning")
    assert strict.ret == pytest.ExitCode.USAGE_ERROR
    strict.stderr.fnmatch_lines(["ERROR: depgraph: depgraph_durations = durations.json in *"])
    for result in (spaced, infinite, missing, strict):
        assert_clean(result)
