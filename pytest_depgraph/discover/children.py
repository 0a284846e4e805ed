"""The child processes of a discovery: each list of tests run in a fresh pytest, N at once.

A child is ``python -m pytest`` with the user's command line minus what selects tests, what
distributes them and what writes the session's files (``--junitxml``, ``--depgraph-dot``, ...),
plus the files of its tests and ``--depgraph-discover-child``: same rootdir, ini file, plugins
and options, so a test sees the process it would see in a run. pytest-randomly is turned off
(the list's order is the experiment), xdist too (``-n 0``), ``-x``/``--maxfail`` undone, and
pytest's cache and each child's ``--basetemp`` go to a folder of the discovery's own: a
child never touches the user's ``.pytest_cache`` nor their temporary folders, and two
children at once never share one.
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
    "maxschedchunk", "xmlpath", "collectonly", "usepdb", "trace", "cacheclear", "basetemp",
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
    """Runs lists of node ids, each in fresh pytest processes, at most ``workers`` at once.

    Where the system forks (``os.fork``: Linux, macOS), each slot of the pool has a zygote
    (:mod:`.zygote`) that forks the session of each list from a process that imported pytest
    and the plugins once; elsewhere each list starts ``python -m pytest``.
    """

    def __init__(self, command: list[str], rootpath: Path, cwd: Path, workdir: Path,
                 workers: int, fork: bool | None = None) -> None:
        self.command = command
        self.rootpath = rootpath
        self.cwd = cwd
        self.workdir = workdir
        self.workers = max(1, workers)
        #: processes started so far (the sessions; not the zygotes)
        self.processes = 0
        self._lock = threading.Lock()
        self._fork = hasattr(os, "fork") and sys.platform != "win32" if fork is None else fork
        self._slot = threading.local()
        self._zygotes: list[subprocess.Popen[str]] = []
        self._pool: ThreadPoolExecutor | None = None
        self._env = {**os.environ, "PYTHONUNBUFFERED": "1"}

    def close(self) -> None:
        """End the slots and their zygotes (a zygote ends when its requests end)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        for zygote in self._zygotes:
            if zygote.stdin is not None:
                zygote.stdin.close()
            try:
                zygote.wait(timeout=10)
            except subprocess.TimeoutExpired:
                zygote.kill()
                zygote.wait()
        self._zygotes.clear()

    def _zygote(self) -> subprocess.Popen[str] | None:
        """This slot's zygote, started at its first list (None: the system cannot fork)."""
        if not self._fork:
            return None
        zygote: subprocess.Popen[str] | None = getattr(self._slot, "zygote", None)
        if zygote is None or zygote.poll() is not None:
            zygote = subprocess.Popen(
                [self.command[0], "-m", "pytest_depgraph.discover.zygote"], cwd=self.cwd,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env=self._env, text=True, encoding="utf-8",
            )
            self._slot.zygote = zygote
            with self._lock:
                self._zygotes.append(zygote)
        return zygote

    def _start(self, args: list[str], log: Path) -> int:
        """One session with ``args`` (pytest's, after ``python -m pytest``), its output in
        ``log``: its exit code."""
        zygote = self._zygote()
        if zygote is not None and zygote.stdin is not None and zygote.stdout is not None:
            try:
                zygote.stdin.write(json.dumps({"args": args, "log": str(log)}) + "\n")
                zygote.stdin.flush()
                answer = zygote.stdout.readline()
            except OSError:
                answer = ""
            if answer:
                return int(json.loads(answer)["code"])
            self._fork = False  # the zygote died: processes of their own from now on
        with open(log, "wb") as output:
            return subprocess.call(
                [*self.command[:3], *args], cwd=self.cwd, stdout=output,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self._env,
            )

    def run(self, lists: Sequence[Sequence[str]]) -> list[dict[str, bool]]:
        """Each list's outcomes: node id -> passed; a test that did not run is absent."""
        if self._pool is None:
            # one thread per slot for the whole discovery: each keeps its zygote
            self._pool = ThreadPoolExecutor(max_workers=self.workers,
                                            thread_name_prefix="depgraph-discover")
        return list(self._pool.map(self._run_list, lists))

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
        code = self._start([*self.command[3:], *files, f"--basetemp={base}.tmp",
                            "--depgraph-discover-child", str(order)], log)
        found, crashed = read_record(str(record))
        if not found and code not in (0, 1, 5):
            tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-15:]
            raise ChildFailed(
                f"a discovery process ended with exit code {code} before running any test:\n"
                f"  {' '.join(self.command)} ...\n" + "\n".join("  " + line for line in tail)
            )
        return found, crashed
