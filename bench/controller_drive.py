"""The xdist controller's per-test path, driven in-process: a count of instructions that does
not move with the machine's load.

The random 2,000-test DAG of ``xdist_bench.py`` (5,994 edges) is collected once; each walk
then gives its plan to the depgraph scheduler on 4 fake workers (``tests/fake_workers.py``),
and every test goes through what the controller does for it on ``-n 4``: three reports
through ``pytest_runtest_logreport`` (every plugin's hook: the outcome recorder's
included), its completion (``mark_test_complete``: the dispatcher, what it sends), and
``tests_finished`` after each of its six events, as xdist's loop asks. The workers finish in
turn, so every walk makes the same choices: one process, one thread, no timing in any
decision. Its CPU is printed; for instructions, run it under callgrind with ``--walks 2`` and
``--walks 0`` (the set-up alone) and halve the difference:

    valgrind --tool=callgrind python bench/controller_drive.py --walks 2
    PYTHONPATH=OTHER_CHECKOUT valgrind --tool=callgrind python bench/controller_drive.py

(``PYTHONHASHSEED=0`` and ``PYTHONDONTWRITEBYTECODE=0``, with one run before to write the
byte code, keep the counts within 0.5 M instructions a walk.)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import fake_workers  # noqa: E402
import pytest  # noqa: E402
import xdist_bench  # noqa: E402
from _pytest.config import _prepareconfig  # noqa: E402
from _pytest.reports import TestReport  # noqa: E402

from pytest_depgraph.core.plan import Plan  # noqa: E402

WORKERS = 4


def dag_plan(count: int) -> str:
    """The plan of the random DAG of ``count`` no-op tests, as a worker sends it."""
    with tempfile.TemporaryDirectory(prefix="ctldrive") as root:
        xdist_bench.write_random_dag(Path(root), count, markers=True)
        grab = fake_workers.PlanGrab()
        here = os.getcwd()
        os.chdir(root)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                pytest.main(["--collect-only", "-q", "-p", "depgraph", "-p", "no:cacheprovider"],
                            plugins=[grab])
        finally:
            os.chdir(here)
    assert grab.plan is not None
    return grab.plan.to_json()


def controller_config() -> pytest.Config:
    """An xdist controller's configuration with 4 workers, ``--dist load``, no terminal."""
    config = _prepareconfig(["-p", "xdist", "-p", "depgraph", "-p", "no:cacheprovider"])
    config._do_configure()
    config.option.dist = "load"
    config.option.tx = ["popen"] * WORKERS
    config.pluginmanager.unregister(name="terminalreporter")
    return config


def walk(config: pytest.Config, text: str) -> int:
    """One walk of the plan ``text``; the number of tests completed."""
    plan = Plan.from_json(text)
    scheduler, nodes = fake_workers.start_on(config, plan, WORKERS)
    report: Any = config.hook.pytest_runtest_logreport
    done = turn = 0
    while not scheduler.tests_finished:
        node = nodes[turn % WORKERS]
        turn += 1
        index = fake_workers.running(scheduler, node)
        if index is None:
            continue
        nodeid = plan.nodeids[index]
        for when in ("setup", "call", "teardown"):
            report(report=TestReport(nodeid, ("t.py", 0, "t"), {}, "passed", None, when,
                                     duration=0.0001))
            _ = scheduler.tests_finished  # after its logstart, its reports, its logfinish
        _ = scheduler.tests_finished, scheduler.tests_finished
        scheduler.mark_test_complete(node, index, 0.0003)
        _ = scheduler.tests_finished
        done += 1
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--walks", type=int, default=2, help="walks to drive (default 2)")
    parser.add_argument("--tests", type=int, default=2000, help="tests in the DAG (2,000)")
    opts = parser.parse_args()
    text = dag_plan(opts.tests)
    config = controller_config()
    seconds = []
    for _ in range(opts.walks):
        start = time.thread_time()
        done = walk(config, text)
        seconds.append(time.thread_time() - start)
        assert done == opts.tests, done
    package = Path(sys.modules["pytest_depgraph"].__file__ or "").parent
    print(f"{package}: {opts.walks} walks of {opts.tests} tests, CPU "
          + " ".join(f"{s * 1e3:.1f}" for s in seconds) + " ms")


if __name__ == "__main__":
    main()
