"""Real plugins that re-run or re-report tests: their results reach the summary and exit code."""

from __future__ import annotations

import pytest

from pytest_depgraph.run.outcomes import OutcomeRecorder

from .helpers import skip_reasons

#: ``always`` fails every attempt, ``once`` fails its first attempt only; each has a dependent
RERUN_SUITE = """
import pathlib
import pytest

MARK = {mark}

def attempt(name):
    counter = pathlib.Path(__file__).with_name("attempts-" + name)
    count = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(count))
    return count

@MARK
def test_always():
    assert 0, "fails every attempt"

@pytest.mark.depends_on("test_always")
def test_after_always():
    pass

@MARK
def test_once():
    assert attempt("once") > 1, "fails the first attempt"

@pytest.mark.depends_on("test_once")
def test_after_once():
    pass
"""


@pytest.mark.parametrize(
    ("mark", "args", "reruns"),
    [
        ("lambda test: test", ("--reruns", "2"), 3),
        ("pytest.mark.flaky(reruns=1)", (), 2),
    ],
    ids=["reruns-flag", "flaky-marker"],
)
def test_serial_reruns_the_last_attempt_decides(
    pytester: pytest.Pytester, mark: str, args: tuple[str, ...], reruns: int
) -> None:
    pytester.makepyfile(test_flaky=RERUN_SUITE.format(mark=mark))
    result = pytester.runpytest("-p", "rerunfailures", "-rs", *args)
    assert result.parseoutcomes() == {"passed": 2, "failed": 1, "skipped": 1, "rerun": reruns}
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert skip_reasons(result) == {
        "test_after_always": "depgraph: upstream test_flaky.py::test_always failed"
    }
    result.stdout.no_fnmatch_line("*has not run*")


TEARDOWN_RERUN_SUITE = """
import pathlib
import pytest

def attempt(name):
    counter = pathlib.Path(__file__).with_name("attempts-" + name)
    count = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(count))
    return count

@pytest.fixture
def teardown_fails_once(request):
    yield
    if attempt(request.node.name) == 1:
        raise RuntimeError("teardown fails the first attempt")

@pytest.fixture
def teardown_fails():
    yield
    raise RuntimeError("teardown fails every attempt")

def test_once(teardown_fails_once):
    pass

@pytest.mark.depends_on("test_once")
def test_after_once():
    pass

def test_always(teardown_fails):
    pass

@pytest.mark.depends_on("test_always")
def test_after_always():
    pass
"""


def test_serial_reruns_of_a_teardown_error_the_last_attempt_decides(
    pytester: pytest.Pytester,
) -> None:
    """A teardown error is the last report of an attempt: the walk waits for the last one."""
    pytester.makepyfile(test_teardown=TEARDOWN_RERUN_SUITE)
    result = pytester.runpytest("-p", "rerunfailures", "--reruns", "1", "-rs", "-p", "no:randomly")
    assert result.parseoutcomes() == {"passed": 5, "skipped": 1, "errors": 1, "rerun": 2}
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert skip_reasons(result) == {
        "test_after_always": "depgraph: upstream test_teardown.py::test_always errored"
    }
    result.stdout.no_fnmatch_line("*has not run*")


def test_recorder_lets_the_last_attempt_decide() -> None:
    """A rerun plugin that logs a failed attempt as failed: the next attempt starts afresh."""

    def report(when: str, outcome: str) -> pytest.TestReport:
        # pytest types a report's outcome as its three own: rerun plugins report "rerun" too
        return pytest.TestReport(
            "t.py::t", ("t.py", 0, "t"), {}, outcome, None, when, [], 0.5  # type: ignore[arg-type]
        )

    recorder = OutcomeRecorder()
    for when, outcome in [("setup", "passed"), ("call", "failed"), ("teardown", "passed")]:
        recorder.record(report(when, outcome))
    assert recorder.outcome("t.py::t") == "failed"
    for when in ("setup", "call", "teardown"):
        recorder.record(report(when, "passed"))
    assert recorder.satisfied("t.py::t")
    recorder.record(report("setup", "passed"))
    recorder.record(report("call", "rerun"))
    recorder.record(report("teardown", "failed"))
    assert recorder.outcome("t.py::t") == "error"
    assert recorder.duration("t.py::t") == 4.5  # every attempt's time counts


def _run_xdist(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A real run on xdist, its controller in this process (its workers are processes)."""
    return pytester.runpytest("-p", "xdist", "-p", "depgraph", "-p", "no:randomly", *args)


def _run_xdist_apart(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A real run on xdist in a process of its own, for a run whose controller warns (in this
    process, the warning would reach this session's own summary)."""
    return pytester.runpytest_subprocess(
        "-p", "xdist", "-p", "depgraph", "-p", "no:randomly", *args, timeout=120
    )


CRASH_SUITE = """
import os
import pytest

@pytest.mark.flaky(reruns=1)
def test_crash():
    os._exit(1)

@pytest.mark.depends_on("test_crash")
def test_after_crash():
    pass
"""


def test_xdist_reruns_and_a_crashed_rerun_keep_their_failures(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On workers: the flaky marker, and a test that crashes its worker (no rerun possible:
    its dependents were already skipped, so the crash stays its failure)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(
        test_flaky=RERUN_SUITE.format(mark="pytest.mark.flaky(reruns=1)"),
        test_crash=CRASH_SUITE,
    )
    result = _run_xdist_apart(pytester, "-p", "rerunfailures", "-n", "2", "-rs")
    assert result.parseoutcomes() == {"passed": 2, "failed": 2, "skipped": 2, "rerun": 2}
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines_random(
        [
            "*depgraph: upstream test_flaky.py::test_always failed",
            "*depgraph: upstream test_crash.py::test_crash failed",
        ]
    )
    # Whether pytest-rerunfailures asks the scheduler to re-run the crashed test depends on
    # its own crash bookkeeping between processes (it does in most runs, not in all): either
    # way the crash is the test's failure, counted above, and the exit code says so.


TEARDOWN_SUITE = """
import pytest

@pytest.fixture(scope="module")
def resource():
    yield {"name": "db"}
    raise RuntimeError("module teardown broke")

def test_a(resource):
    pass

@pytest.mark.depends_on("test_a")
def test_b(resource):
    pass
"""

#: a report hook that reads the test's fixtures, as pytest-benchmark's does
FUNCARGS_CONFTEST = """
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.user_properties.append(("resource", item.funcargs["resource"]["name"]))
    return report
"""


@pytest.mark.parametrize("reader", ["benchmark", "conftest"])
def test_deferred_teardown_error_reaches_the_summary(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    """The module teardown runs after the last test's protocol ended (on the worker that held
    it); a plugin reading ``item.funcargs`` in its report hook still sees the test's fixtures."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_mod=TEARDOWN_SUITE)
    if reader == "conftest":
        pytester.makeconftest(FUNCARGS_CONFTEST)
        plugin = ("-p", "no:benchmark")
    else:
        plugin = ("-p", "benchmark")
    # one worker: the chain runs there, which then knows no next test and defers the teardown
    result = _run_xdist(pytester, *plugin, "-n", "1")
    result.assert_outcomes(passed=2, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_b*", "*module teardown broke*"])
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    # the reader saw the fixtures: its report hook did not fail (KeyError) on the teardown
    result.stdout.no_fnmatch_line("*pytest_runtest_makereport raised*")


def test_a_failing_report_hook_on_the_deferred_teardown_is_an_error_not_a_crash(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_mod=TEARDOWN_SUITE)
    pytester.makeconftest(
        """
        import os
        import pytest

        @pytest.hookimpl(wrapper=True)
        def pytest_runtest_makereport(item, call):
            report = yield
            if call.when == "teardown" and call.excinfo and "PYTEST_XDIST_WORKER" in os.environ:
                raise ValueError("report hook broke")
            return report
        """
    )
    result = _run_xdist(pytester, "-n", "1")  # one worker defers it, as above
    result.assert_outcomes(passed=2, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*module teardown broke*", "*pytest_runtest_makereport raised*", "*report hook broke*"]
    )
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
