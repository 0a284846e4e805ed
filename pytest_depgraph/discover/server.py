"""Where a slot's lists run: each in a fresh pytest there, its record and exit code answered.

One :class:`Runner` per slot of a discovery, in the process on the slot's side: this process
for a discovery on this machine, or, on an execnet gateway (``-n N``, ``--tx``), the gateway's
process, where this module's source runs as ``__channelexec__`` (:func:`serve`: standard
library only, nothing of the package imported). The runner has a folder of its own there
(the lists, their records, logs, ``--basetemp`` folders and pytest's cache) and, where the
system forks, a zygote (:mod:`.zygote`, started at once) that forks the session of each list;
elsewhere each list starts ``python -m pytest`` there. A list's answer is the child's exit
code, its record's text (:mod:`.child`) and the end of its output: nothing of it is read from
a path on the discovery's side, which a remote gateway does not share.
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


class Runner:
    """Runs lists of tests in fresh pytest sessions, one at a time, in folder ``cwd``."""

    def __init__(self, cwd: str | None, fork: bool | None, cache: bool) -> None:
        self.cwd = cwd or os.getcwd()
        self.fork = (hasattr(os, "fork") and sys.platform != "win32") if fork is None else fork
        self.cache = cache
        self.workdir = tempfile.mkdtemp(prefix="depgraph-discover-")
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.lists = 0
        self._zygote: subprocess.Popen[str] | None = None
        if self.fork:
            self._zygote = self._start_zygote()

    def _start_zygote(self) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "pytest_depgraph.discover.zygote"], cwd=self.cwd,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=self.env, text=True, encoding="utf-8",
        )

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        """``request``: ``args`` (pytest's options and the list's files, as this side sees
        them) and ``tests`` (the node ids, in order). The answer: ``code``, ``record`` (the
        record's text) and ``log`` (the last lines of the session's output)."""
        self.lists += 1
        base = os.path.join(self.workdir, f"list{self.lists}")
        order, record, log = base + ".json", base + ".record", base + ".log"
        with open(order, "w", encoding="utf-8") as written:
            json.dump({"tests": list(request["tests"]), "record": record}, written)
        args = [*request["args"], f"--basetemp={base}.tmp", "--depgraph-discover-child", order]
        if self.cache:
            args += ["-o", f"cache_dir={os.path.join(self.workdir, 'cache')}"]
        code = self._session(args, log)
        return {"code": code, "record": _text(record), "log": _tail(log)}

    def _session(self, args: list[str], log: str) -> int:
        """One session with ``args`` (pytest's), its output in ``log``: its exit code."""
        zygote = self._zygote
        if zygote is not None and zygote.stdin is not None and zygote.stdout is not None:
            try:
                zygote.stdin.write(json.dumps({"args": args, "log": log}) + "\n")
                zygote.stdin.flush()
                answer = zygote.stdout.readline()
            except OSError:
                answer = ""
            if answer:
                return int(json.loads(answer)["code"])
            self._end_zygote()  # it died: processes of their own from now on
        with open(log, "wb") as output:
            return subprocess.call(
                [sys.executable, "-m", "pytest", *args], cwd=self.cwd, stdout=output,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env,
            )

    def _end_zygote(self) -> None:
        zygote, self._zygote = self._zygote, None
        if zygote is None:
            return
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
        """End the zygote and remove the folder, with every list's files."""
        try:
            self._end_zygote()
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
    """A gateway's side: the runner's settings first (``cwd``, ``fork``, ``cache``), answered
    with this side's interpreter; then each request answered, until the discovery closes the
    channel. The runner's folder goes with it."""
    settings = channel.receive()
    runner = Runner(settings["cwd"], settings["fork"], settings["cache"])
    try:
        channel.send({"python": sys.executable, "fork": runner.fork})
        for request in channel:
            channel.send(runner.run(request))
    finally:
        runner.close()


if __name__ == "__channelexec__":
    serve(channel)  # type: ignore[name-defined]  # noqa: F821 - execnet gives it
