"""The child processes of a discovery: each list of tests run in a fresh pytest, N at once.

A child is ``python -m pytest`` with the user's command line minus what selects tests, what
distributes them and what writes the session's files (``--junitxml``, ``--depgraph-dot``, ...),
plus the files of its tests and ``--depgraph-discover-child``: same rootdir, ini file, plugins
and options, so a test sees the process it would see in a run. pytest-randomly is turned off
(the list's order is the experiment), xdist too (``-n 0``), ``-x``/``--maxfail`` undone, and
pytest's cache goes to a folder of the discovery's own: a child never touches the user's
``.pytest_cache``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pytest_depgraph.discover.child import read_record
from pytest_depgraph.hosts.pytest import split_command_line

#: options of the user's command line a child leaves out, by argparse ``dest``: the selection
#: (the child gets its own list), distribution, stopping early, the session's files, ours
LEFT_OUT = frozenset({
    "keyword", "markexpr", "lf", "failedfirst", "newfirst", "stepwise", "stepwise_skip",
    "last_failed_no_failures", "maxfail", "deselect", "numprocesses", "dist", "distload", "tx",
    "maxprocesses", "maxworkerrestart", "rsyncdir", "rsyncignore", "px", "looponfail",
    "maxschedchunk", "xmlpath", "collectonly", "usepdb", "trace", "cacheclear",
    "depgraph_discover", "depgraph_discover_verify", "depgraph_discover_json",
    "depgraph_discover_child", "depgraph_parallelism", "depgraph_shard", "depgraph_dot",
    "depgraph_report", "depgraph_store_durations", "depgraph_no_deps", "depgraph_ignore_deps",
})


class ChildFailed(Exception):
    """A child ended without running any of its tests: its command line is at fault."""


def child_command(config: pytest.Config, workdir: Path) -> list[str]:
    """The command that starts a child, without its files and its list."""
    kept: list[str] = []
    for dest, words in split_command_line(config, config.invocation_params.args):
        if dest and dest != "?" and dest not in LEFT_OUT and not dest.startswith("randomly"):
            kept += words
        elif dest == "?":
            kept += words  # another plugin's option this process did not load: keep it
    command = [sys.executable, "-m", "pytest", *kept, "-q", "--maxfail=0",
               f"--rootdir={config.rootpath}", "--depgraph-ignore-deps",
               "-o", "depgraph_no_deps=false"]
    if config.inipath is not None:
        command += ["-c", str(config.inipath)]
    plugins = config.pluginmanager
    if plugins.has_plugin("xdist"):
        command += ["-n", "0"]
    if plugins.has_plugin("randomly"):
        command += ["-p", "no:randomly"]
    if plugins.has_plugin("cacheprovider"):
        command += ["-o", f"cache_dir={workdir / 'cache'}"]
    return command


class Children:
    """Runs lists of node ids, each in fresh pytest processes, at most ``workers`` at once."""

    def __init__(self, command: list[str], rootpath: Path, cwd: Path, workdir: Path,
                 workers: int) -> None:
        self.command = command
        self.rootpath = rootpath
        self.cwd = cwd
        self.workdir = workdir
        self.workers = max(1, workers)
        #: processes started so far
        self.processes = 0
        self._lock = threading.Lock()

    def run(self, lists: Sequence[Sequence[str]]) -> list[dict[str, bool]]:
        """Each list's outcomes: node id -> passed; a test that did not run is absent."""
        if len(lists) == 1 or self.workers == 1:
            return [self._run_list(tests) for tests in lists]
        with ThreadPoolExecutor(max_workers=min(self.workers, len(lists))) as pool:
            return list(pool.map(self._run_list, lists))

    def _run_list(self, tests: Sequence[str]) -> dict[str, bool]:
        """Run ``tests`` in a fresh process; when a test ends it, the rest in another."""
        outcomes: dict[str, bool] = {}
        remaining = list(tests)
        while remaining:
            found, crashed = self._one_process(remaining)
            outcomes.update(found)
            if crashed is None or crashed not in remaining:
                break
            remaining = remaining[remaining.index(crashed) + 1:]
        return outcomes

    def _one_process(self, tests: Sequence[str]) -> tuple[dict[str, bool], str | None]:
        with self._lock:
            self.processes += 1
            number = self.processes
        base = self.workdir / f"list{number}"
        order = base.with_suffix(".json")
        record = base.with_suffix(".record")
        log = base.with_suffix(".log")
        order.write_text(json.dumps({"tests": list(tests), "record": str(record)}),
                         encoding="utf-8")
        files = list(dict.fromkeys(
            str(self.rootpath / nodeid.split("::", 1)[0]) for nodeid in tests
        ))
        with open(log, "wb") as output:
            code = subprocess.call(
                [*self.command, *files, "--depgraph-discover-child", str(order)],
                cwd=self.cwd, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        found, crashed = read_record(str(record))
        if not found and code not in (0, 1, 5):
            tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-15:]
            raise ChildFailed(
                f"a discovery process ended with exit code {code} before running any test:\n"
                f"  {' '.join(self.command)} ...\n" + "\n".join("  " + line for line in tail)
            )
        return found, crashed
