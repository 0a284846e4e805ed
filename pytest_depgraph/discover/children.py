"""The child processes of a discovery: each list of tests run in a fresh pytest, one a slot.

A child is ``python -m pytest`` with the user's command line minus what selects tests, what
distributes them and what writes the session's files (``--junitxml``, ``--depgraph-dot``, ...),
plus the files of its tests and ``--depgraph-discover-child``: same rootdir, ini file, plugins
and options, so a test sees the process it would see in a run. pytest-randomly is turned off
(the list's order is the experiment), xdist too (``-n 0``), ``-x``/``--maxfail`` undone, and
pytest's cache and each child's ``--basetemp`` go to a folder of the slot's own
(:mod:`.server`): a child never touches the user's ``.pytest_cache`` nor their temporary
folders, and two children at once never share one. A slot is this machine
(:class:`LocalSlot`) or an execnet gateway (:mod:`.gateways`); each runs one list at a time,
forked where it can from one session that collected every file of the discovery once.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import pytest

from pytest_depgraph.discover.child import read_record
from pytest_depgraph.discover.server import Runner
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
    """A child ended without running any of its tests (its command line is at fault), or the
    gateway it ran on ended."""


def child_options(config: pytest.Config) -> list[str]:
    """pytest's options of every child, without the rootdir, the ini file, the cache, its
    files and its list (each slot adds them as it sees them)."""
    kept: list[str] = []
    for dest, words in split_command_line(config, config.invocation_params.args):
        if dest and dest != "?" and dest not in LEFT_OUT and not dest.startswith("randomly"):
            kept += words
        elif dest == "?":
            kept += words  # another plugin's option this process did not load: keep it
    options = [*kept, "-q", "--maxfail=0", "--depgraph-ignore-deps",
               "-o", "depgraph_no_deps=false"]
    plugins = config.pluginmanager
    if plugins.has_plugin("xdist"):
        options += ["-n", "0"]
    if plugins.has_plugin("randomly"):
        options += ["-p", "no:randomly"]
    return options


def local_options(config: pytest.Config, options: Sequence[str]) -> list[str]:
    """``options`` with the rootdir and the ini file of this session, as this machine names
    them."""
    kept = [*options, f"--rootdir={config.rootpath}"]
    if config.inipath is not None:
        kept += ["-c", str(config.inipath)]
    return kept


def keeps_cache(config: pytest.Config) -> bool:
    """Whether the children have pytest's cache, to be pointed at the slot's folder."""
    return config.pluginmanager.has_plugin("cacheprovider")


class Slot(Protocol):
    """Where one list at a time runs: its children's options and files as it sees them."""

    #: how the slot is named in an error: ``gw0 (socket=host:1234)``; "" on this machine
    name: str
    #: the interpreter the children start from there
    python: str
    #: every child's pytest options there, with the rootdir and the ini file
    options: list[str]

    def paths(self, files: Sequence[Path]) -> list[str]:
        """The test files, as the children there name them."""

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        """One list run there (:meth:`.server.Runner.run`)."""

    def close(self) -> None:
        """End what the slot started."""


class LocalSlot:
    """A slot on this machine: its children start in the session's folder, its forks come
    from a zygote of its own (:class:`.server.Runner`)."""

    name = ""
    python = sys.executable

    def __init__(self, config: pytest.Config, options: Sequence[str], files: Sequence[Path],
                 fork: bool | None = None) -> None:
        self.options = local_options(config, options)
        self._runner = Runner(str(config.invocation_params.dir), fork, keeps_cache(config),
                              [*self.options, *self.paths(files)])

    def paths(self, files: Sequence[Path]) -> list[str]:
        return [str(file) for file in files]

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        return self._runner.run(request)

    def close(self) -> None:
        self._runner.close()


class Children:
    """Runs lists of node ids, each in a fresh pytest process, one list a slot at a time."""

    def __init__(self, slots: Sequence[Slot], rootpath: Path,
                 then: Callable[[], None] | None = None) -> None:
        self.slots = list(slots)
        self.rootpath = rootpath
        #: how many lists run at once: one a slot
        self.workers = len(self.slots)
        #: processes started so far (the sessions; not the zygotes)
        self.processes = 0
        #: slot name ("" on this machine) -> why a list there started a session of its own
        self.fallbacks: dict[str, str] = {}
        self._then = then
        #: the tests the given tests' declarations name, transitively (node ids): a list
        #: whose session collects only its own files collects theirs too, so that each
        #: declaration resolves there as in the discovery's session (its targets are then
        #: deselected, and ignored)
        self.declared: Callable[[Sequence[str]], Iterable[str]] = lambda tests: ()
        self._lock = threading.Lock()
        self._free: queue.SimpleQueue[Slot] = queue.SimpleQueue()
        for slot in self.slots:
            self._free.put(slot)
        self._pool: ThreadPoolExecutor | None = None

    def close(self) -> None:
        """End the slots (their zygotes and folders), then what ``then`` ends (the gateways)."""
        try:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None
            for slot in self.slots:
                slot.close()
        finally:
            if self._then is not None:
                self._then()

    def run(self, lists: Sequence[Sequence[str]]) -> list[dict[str, bool]]:
        """Each list's outcomes: node id -> passed; a test that did not run is absent."""
        if self._pool is None:
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
        files = list(dict.fromkeys(self.rootpath / nodeid.split("::", 1)[0]
                                   for nodeid in [*tests, *self.declared(tests)]))
        slot = self._free.get()
        try:
            answer = slot.run({"args": [*slot.options, *slot.paths(files)],
                               "tests": list(tests)})
        finally:
            self._free.put(slot)
        found, crashed = read_record(answer["record"])
        code = answer["code"]
        if answer.get("fallback"):
            with self._lock:
                self.fallbacks.setdefault(slot.name, str(answer["fallback"]))
        if not found and code not in (0, 5):  # 1 is a failed test: none ran here
            where = f" on {slot.name}" if slot.name else ""
            tail = str(answer["log"]).splitlines()
            raise ChildFailed(
                f"a discovery process{where} ended with exit code {code} before running any "
                f"test:\n  {slot.python} -m pytest {' '.join(slot.options)} ...\n"
                + "\n".join("  " + line for line in tail)
            )
        return found, crashed
