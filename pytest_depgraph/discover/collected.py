"""A slot's process that collects the discovery's tests once, then forks a session for each list.

Started once per slot where the system forks (``python -m pytest_depgraph.discover.collected``,
in the session's folder and environment). Its first line on standard input is
``{"args": [...], "log": path}``: pytest's options and every file of the discovery, the
options a child of :mod:`.children` gets. It starts that pytest session, which configures,
imports the conftests and the test modules, collects and builds the plan as any session does,
and answers ``{"ready": true}`` once collected -- or ``{"ready": false, "code": exit code}``
when the session could not collect (a collection error, a conftest that fails): the slot then
starts a session for each list (:mod:`.zygote`). Instead of running the tests, it then waits
for lists, one JSON line each, ``{"order": path, "basetemp": path, "log": path}`` (the
order's file is :class:`.child.OrderKeeper`'s), and forks: the child runs that list's tests,
in that order, through pytest's own run loop and run protocol (:class:`ListServer`), ends
the session (teardown, session finish, unconfigure) and exits; the zygote answers
``{"code": exit code}``, or ``{"missing": [node ids]}`` without forking when the list names a
test this session did not collect.

The child is a new process in which the test modules were imported, as in every pytest run
(all of them are collected before the first test runs), and no test has run: nothing a test
does, to a module global, a session fixture, the environment or the session's temporary
folder, is there before its list's first test. It does not pay again for the interpreter,
the plugins, the conftests, the collection and the plan, which are most of a short list's
cost.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import random
import shutil
import sys
from collections.abc import Generator
from typing import IO

import pytest

from pytest_depgraph.discover.child import OrderKeeper
from pytest_depgraph.discover.zygote import freeze_before_forks
from pytest_depgraph.hosts.pytest import fresh_basetemp


class ListServer:
    """The collecting session's plugin: in place of its run loop, a fork for each list."""

    def __init__(self, requests: IO[str], answers: IO[str], log: int) -> None:
        self.requests = requests
        self.answers = answers
        #: the standard output and error of the session and of each child (``O_APPEND``)
        self.log = log
        #: whether the session collected and answered that it is ready
        self.ready = False
        #: whether this process is a list's child
        self.child = False
        #: the tests as collected, before any plugin selected or ordered them
        self.collected: list[pytest.Item] = []

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection_modifyitems(
        self, items: list[pytest.Item]
    ) -> Generator[None, None, None]:
        if not self.child:
            self.collected = list(items)
        yield

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        if self.child:
            return None  # pytest's own loop runs the list
        if session.testsfailed and not session.config.option.continue_on_collection_errors:
            return None  # pytest's own loop stops on the collection errors
        _import_what_a_session_end_imports(session.config)
        self._answer({"ready": True})
        self.ready = True
        by_id = {item.nodeid: item for item in self.collected}
        freeze_before_forks()
        for line in self.requests:
            request = json.loads(line)
            with open(request["order"], encoding="utf-8") as given:
                tests = json.load(given)["tests"]
            missing = [nodeid for nodeid in tests if nodeid not in by_id]
            if missing:
                self._answer({"missing": missing})
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            os.ftruncate(self.log, 0)
            pid = os.fork()
            if pid == 0:
                self._child(session, request)
                return None  # pytest's own loop runs the list, then the session ends
            _, status = os.waitpid(pid, 0)
            _copy_log(self.log, request["log"])
            self._answer({"code": _exit_code(status)})
        gc.unfreeze()  # this session's own end collects them again
        return True

    def _child(self, session: pytest.Session, request: dict[str, str]) -> None:
        """In the list's child: its own temporary folder and random state, its tests chosen
        and ordered from every test collected, as a session started for it on every file of
        the discovery chooses them (every plugin's ``pytest_collection_modifyitems``, the
        list's keeper last, the plan built on them)."""
        self.child = True
        self.requests.close()
        self.answers.close()
        random.seed()  # a process started for the list would not share the zygote's state
        config = session.config
        fresh_basetemp(config, request["basetemp"])
        config.pluginmanager.register(OrderKeeper(request["order"]), "depgraph-discover-child")
        items = session.items = list(self.collected)
        config.hook.pytest_collection_modifyitems(session=session, config=config, items=items)
        config.hook.pytest_collection_finish(session=session)
        session.testscollected = len(session.items)

    def _answer(self, answer: dict[str, object]) -> None:
        self.answers.write(json.dumps(answer) + "\n")
        self.answers.flush()


#: plugin name -> the module its hooks import at every session's end, which every list's child
#: would otherwise import again: hypothesis's terminal summary imports hypothesis. Measured:
#: json-storage-manager's discovery (179 executions, 88 lists, serially), a venv with
#: hypothesis installed, 119.8 -> 22.5 s of wall (110 -> 14 s of CPU); without its plugin,
#: 10.0 s
_IMPORTED_AT_THE_END = {"hypothesispytest": "hypothesis.internal.observability"}


def _import_what_a_session_end_imports(config: pytest.Config) -> None:
    """Import once, before the forks, what installed plugins import at each session's end."""
    for plugin, module in _IMPORTED_AT_THE_END.items():
        if config.pluginmanager.has_plugin(plugin):
            with contextlib.suppress(Exception):
                importlib.import_module(module)


def _exit_code(status: int) -> int:
    if hasattr(os, "waitstatus_to_exitcode"):
        return int(os.waitstatus_to_exitcode(status))
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)


def _copy_log(log: int, path: str) -> None:
    """The child's output (what the shared log holds since its fork) into ``path``."""
    with os.fdopen(os.dup(log), "rb") as source, open(path, "wb") as target:
        source.seek(0)
        shutil.copyfileobj(source, target)


def serve() -> None:
    """The zygote: its requests and answers on copies of its standard input and output, which
    then point at the null device and the log, so that neither pytest's capture nor a child
    touches them."""
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    first = requests.readline()
    if not first:
        return
    start = json.loads(first)
    log = os.open(start["log"], os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    os.dup2(log, 1)
    os.dup2(log, 2)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115
    server = ListServer(requests, answers, log)
    code = 3
    try:
        code = int(pytest.main(list(start["args"]), plugins=[server]))
    except BaseException:  # a child must end here, whatever happened
        import traceback

        traceback.print_exc()
    finally:
        if server.child:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    if not server.ready:
        answers.write(json.dumps({"ready": False, "code": code}) + "\n")
        answers.flush()


if __name__ == "__main__":
    serve()
