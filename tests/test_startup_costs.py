"""What a process of the plugin does not pay: the work and imports nothing of it uses."""

from __future__ import annotations

import pytest

from .helpers import RAN_CONFTEST

#: each worker writes, at its session's end, how many tests its own outcome recorder holds,
#: and which of the modules it has no use for it imported
RECORDED_CONFTEST = RAN_CONFTEST + """
import sys
from pytest_depgraph.run.state import find_session_state

UNUSED = ("pytest_depgraph.output.output_session", "pytest_depgraph.run.xdist.dependency_runtime")

def pytest_sessionfinish(session):
    state = find_session_state(session.config)
    # not the environment's name: this suite's own run may be on a worker of its own
    worker = getattr(session.config, "workerinput", {}).get("workerid")
    if worker is not None and state is not None:
        folder = os.path.dirname(__file__)
        with open(os.path.join(folder, f"recorded-{worker}.log"), "w") as f:
            f.write(str(len(state.recorder.durations())))
        with open(os.path.join(folder, f"imported-{worker}.log"), "w") as f:
            f.write(" ".join(name for name in UNUSED if name in sys.modules))
"""

#: a failure, an error in teardown and a crash, each with a dependent; tests that pass
BROKEN = """
import os, time, pytest

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown")

def test_fails():
    assert False

def test_teardown_errs(broken_teardown):
    pass

def test_crash():
    time.sleep(0.2)  # as test_xdist's crash: the others' first reports come first
    os._exit(1)

@pytest.mark.depends_on(test_fails)
def test_after_failure():
    pass

@pytest.mark.depends_on(test_teardown_errs)
def test_after_teardown_error():
    pass

@pytest.mark.depends_on(test_crash)
def test_after_crash():
    pass

@pytest.mark.parametrize("n", range(4))
def test_ok(n):
    pass

@pytest.mark.depends_on(test_ok)
def test_after_ok():
    pass
"""


def test_walked_workers_record_and_import_nothing_unused_every_result_reaches_summary(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeconftest(RECORDED_CONFTEST)
    pytester.makepyfile(test_broken=BROKEN)
    result = pytester.runpytest("-p", "xdist", "-p", "depgraph", "-n", "2", "-rs")
    # every outcome reached the controller: the exit code, pytest's counts, our summary
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=6, failed=2, errors=1, skipped=3)
    for cause in ("test_fails failed", "test_teardown_errs errored", "test_crash failed"):
        result.stdout.fnmatch_lines([f"SKIPPED * depgraph: upstream test_broken.py::{cause}"])
    section = "\n".join(result.outlines[result.outlines.index(
        next(line for line in result.outlines if "= depgraph =" in line)):])
    assert "3 tests skipped because of an upstream test:" in section
    # and no worker that finished its session kept an outcome of its own
    counts = [p.read_text() for p in pytester.path.glob("recorded-gw*.log")]
    assert counts and set(counts) == {"0"}
    # nor imported the output layer (it writes none) or pytest-dependency's runtime check
    # (not installed here)
    imported = [p.read_text() for p in pytester.path.glob("imported-gw*.log")]
    assert imported and set(imported) == {""}


#: at the very end of the process, after every plugin's ``pytest_unconfigure``, how many origins
#: of edges (one per declaration) are still alive
ORIGINS_CONFTEST = """
import gc, os

def pytest_configure(config):
    def count():
        from pytest_depgraph.core.graph.storage import Origin
        alive = sum(1 for o in gc.get_objects() if type(o) is Origin)
        with open(os.path.join(os.path.dirname(__file__), "origins.log"), "w") as f:
            f.write(str(alive))
    config.add_cleanup(count)
"""


@pytest.mark.parametrize("args", [(), ("--collect-only",)], ids=["run", "collect-only"])
def test_the_plan_is_let_go_when_the_session_ends(
    pytester: pytest.Pytester, args: tuple[str, ...]
) -> None:
    # pytest's own cleanup then collects garbage, walking every object still alive
    pytester.makeconftest(ORIGINS_CONFTEST)
    pytester.makepyfile(test_chain="""
        import pytest

        def test_a():
            pass

        @pytest.mark.depends_on("test_a")
        def test_b():
            pass

        @pytest.mark.depends_on("test_a", "test_b")
        def test_c():
            pass
    """)
    # a process of its own: this suite's session holds origins of its own
    result = pytester.runpytest_subprocess("-p", "depgraph", "-n", "0", *args)
    assert result.ret == pytest.ExitCode.OK
    if not args:
        result.assert_outcomes(passed=3)
    assert (pytester.path / "origins.log").read_text() == "0"
