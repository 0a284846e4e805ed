"""Where a slot's lists run: each in a fresh pytest there, its record and exit code answered.

One :class:`Runner` per slot of a discovery, in the process on the slot's side: this process
for a discovery on this machine, or, on an execnet gateway (``-n N``, ``--tx``), the gateway's
process, where this module's source runs as ``__channelexec__`` (:func:`serve`: standard
library only, nothing of the package imported). The runner has a folder of its own there
(the lists, their records, logs, ``--basetemp`` folders and pytest's cache). Where the system
forks, it starts at once a zygote that collects every test of the discovery in one session
(:mod:`.collected`) and forks each list's session from there, after collection; when that
session cannot collect, or a list names a test it did not collect, a zygote that forks before
the session starts (:mod:`.zygote`) runs each list's whole session instead; where the system
does not fork, each list starts ``python -m pytest`` there. A list's answer is the child's
exit code, its record's text (:mod:`.child`), the end of its output and how it was started:
nothing of it is read from a path on the discovery's side, which a remote gateway does not
share.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any

#: the lines of a child's output an answer carries (shown when a child ran no test)
LOG_TAIL = 15

#: how a list's session was started (an answer's ``started``): forked after the slot's
#: collection, forked before its session started, or as a process of its own
COLLECTED, FORKED, STARTED = "collected", "forked", "started"


class Runner:
    """Runs lists of tests in fresh pytest sessions, one at a time, in folder ``cwd``;
    ``args``, pytest's options and every test file of the discovery, as this side names them
    (None: no session collects them once)."""

    def __init__(self, cwd: str | None, fork: bool | None, cache: bool,
                 args: list[str] | None = None) -> None:
        self.cwd = cwd or os.getcwd()
        self.fork = (hasattr(os, "fork") and sys.platform != "win32") if fork is None else fork
        self.cache = cache
        self.workdir = tempfile.mkdtemp(prefix="depgraph-discover-")
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.lists = 0
        #: why the lists are not forked after one collection here ("" while they are)
        self.fallback = ("" if self.fork and args is not None else
                         "the system does not fork" if not self.fork else "no collecting session")
        self._collected: subprocess.Popen[str] | None = None
        self._ready = False
        #: the zygote forking whole sessions, started at the first list that needs one
        self._zygote: subprocess.Popen[str] | None = None
        self._zygote_ended = False
        if self.fork and args is not None:
            self._collected = self._start("pytest_depgraph.discover.collected")
            self._send(self._collected, {
                "args": [*args, *self._own_options("collect")],
                "log": os.path.join(self.workdir, "collect.log"),
            })

    def _start(self, module: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", module], cwd=self.cwd,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=self.env, text=True, encoding="utf-8",
        )

    def _own_options(self, name: str) -> list[str]:
        """A session's temporary folder and pytest's cache, in the runner's folder."""
        options = [f"--basetemp={os.path.join(self.workdir, name)}.tmp"]
        if self.cache:
            options += ["-o", f"cache_dir={os.path.join(self.workdir, 'cache')}"]
        return options

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        """``request``: ``args`` (pytest's options and the list's files, as this side sees
        them) and ``tests`` (the node ids, in order). The answer: ``code``, ``record`` (the
        record's text), ``log`` (the last lines of the session's output), ``started``
        (:data:`COLLECTED`, :data:`FORKED` or :data:`STARTED`) and ``fallback`` (why not
        :data:`COLLECTED`)."""
        self.lists += 1
        base = os.path.join(self.workdir, f"list{self.lists}")
        order, record, log = base + ".json", base + ".record", base + ".log"
        with open(order, "w", encoding="utf-8") as written:
            json.dump({"tests": list(request["tests"]), "record": record}, written)
        code = self._forked_after_collection(order, f"{base}.tmp", log)
        started = COLLECTED
        if code is None:
            with contextlib.suppress(OSError):
                os.remove(record)  # what a collecting zygote that ended meanwhile left
            args = [*request["args"], *self._own_options(f"list{self.lists}"),
                    "--depgraph-discover-child", order]
            code, started = self._session(args, log)
        return {"code": code, "record": _text(record), "log": _tail(log), "started": started,
                "fallback": "" if started == COLLECTED else self.fallback}

    def _forked_after_collection(self, order: str, basetemp: str, log: str) -> int | None:
        """The list's exit code, forked from the collecting zygote; None when it cannot run
        there (the zygote did not collect, or ended, or did not collect one of its tests)."""
        zygote = self._collected
        if zygote is None:
            return None
        if not self._ready:
            ready = self._receive(zygote)
            if ready is None or not ready.get("ready"):
                code = "ended" if ready is None else f"exit code {ready.get('code')}"
                self._end_collected(f"its collecting session ended ({code}) before any list")
                return None
            self._ready = True
        self._send(zygote, {"order": order, "basetemp": basetemp, "log": log})
        answer = self._receive(zygote)
        if answer is None:
            self._end_collected("its collecting session ended")
            return None
        if "missing" in answer:
            self.fallback = (f"a list's test, {answer['missing'][0]}, was not collected by "
                             "the collecting session")
            return None  # this list alone: a session of its own
        return int(answer["code"])

    def _session(self, args: list[str], log: str) -> tuple[int, str]:
        """One session with ``args`` (pytest's), its output in ``log``: its exit code, and how
        it started."""
        if self.fork and self._zygote is None and not self._zygote_ended:
            self._zygote = self._start("pytest_depgraph.discover.zygote")
        zygote = self._zygote
        if zygote is not None:
            self._send(zygote, {"args": args, "log": log})
            answer = self._receive(zygote)
            if answer is not None:
                return int(answer["code"]), FORKED
            self._end(zygote)  # it died: processes of their own from now on
            self._zygote, self._zygote_ended = None, True
        with open(log, "wb") as output:
            return subprocess.call(
                [sys.executable, "-m", "pytest", *args], cwd=self.cwd, stdout=output,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env,
            ), STARTED

    @staticmethod
    def _send(zygote: subprocess.Popen[str], message: dict[str, Any]) -> None:
        with contextlib.suppress(OSError, ValueError):
            if zygote.stdin is not None:
                zygote.stdin.write(json.dumps(message) + "\n")
                zygote.stdin.flush()

    @staticmethod
    def _receive(zygote: subprocess.Popen[str]) -> dict[str, Any] | None:
        try:
            line = zygote.stdout.readline() if zygote.stdout is not None else ""
        except (OSError, ValueError):
            line = ""
        answer: dict[str, Any] | None = json.loads(line) if line else None
        return answer

    def _end_collected(self, why: str) -> None:
        zygote, self._collected = self._collected, None
        self.fallback = why
        if zygote is not None:
            self._end(zygote)

    @staticmethod
    def _end(zygote: subprocess.Popen[str]) -> None:
        if zygote.stdin is not None:
            with contextlib.suppress(OSError):
                zygote.stdin.close()  # a zygote ends when its requests end
        try:
            zygote.wait(timeout=10)
        except subprocess.TimeoutExpired:
            zygote.kill()
            zygote.wait()
        if zygote.stdout is not None:
            zygote.stdout.close()

    def close(self) -> None:
        """End the zygotes and remove the folder, with every list's files."""
        try:
            for zygote in (self._collected, self._zygote):
                if zygote is not None:
                    self._end(zygote)
            self._collected = self._zygote = None
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)


def _text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as read:
            return read.read()
    except OSError:
        return ""


def _tail(path: str) -> str:
    return "\n".join(_text(path).strip().splitlines()[-LOG_TAIL:])


def serve(channel: Any) -> None:
    """A gateway's side: the runner's settings first (``cwd``, ``fork``, ``cache``,
    ``args``), answered with this side's interpreter; then each request answered, until the
    discovery closes the channel. The runner's folder goes with it."""
    settings = channel.receive()
    runner = Runner(settings["cwd"], settings["fork"], settings["cache"], settings.get("args"))
    try:
        channel.send({"python": sys.executable, "fork": runner.fork})
        for request in channel:
            channel.send(runner.run(request))
    finally:
        runner.close()


if __name__ == "__channelexec__":
    serve(channel)  # type: ignore[name-defined]  # noqa: F821 - execnet gives it
