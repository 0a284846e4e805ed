"""Remote xdist gateways that share no filesystem with the controller: a run's workers (values,
skips, order) and a discovery's slots.

Each worker is an execnet socket server in its own mount namespace (``unshare -m``) with a
fresh tmpfs on /tmp: it sees neither the controller's /tmp (where pytester's suite and any
temporary directory of the controller live) nor the other worker's. The suite reaches the
workers through ``--rsyncdir``, as it would reach another machine. Needs root (CI runs as
root); skipped, saying why, where unshare or mount is not permitted.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import pytest_depgraph

from .helpers import skip_reasons

#: where each server sees the virtualenv, and the plugin's sources when they live under /tmp
VENV_MOUNT = Path("/opt/v")
SOURCE_MOUNT = Path("/opt/depgraph-src")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _server_script(port: int) -> str:
    """Shell commands run in the new mount namespace: hide /tmp, then serve on ``port``."""
    venv = Path(sys.prefix)
    # the editable install points at the sources by absolute path: keep them visible
    sources = Path(pytest_depgraph.__file__).resolve().parent.parent
    steps = [f"mount --bind {shlex.quote(str(venv))} {VENV_MOUNT}"]
    hidden = Path("/tmp") in sources.parents
    if hidden:
        steps.append(f"mount --bind {shlex.quote(str(sources))} {SOURCE_MOUNT}")
    steps.append("mount -t tmpfs none /tmp")
    if hidden:
        steps.append(f"mkdir -p {shlex.quote(str(sources))}")
        steps.append(f"mount --bind {SOURCE_MOUNT} {shlex.quote(str(sources))}")
    steps.append("cd /tmp")
    steps.append(
        f"exec {VENV_MOUNT}/bin/python -u -m execnet.script.socketserver 127.0.0.1:{port}"
    )
    return " && ".join(steps)


def _wait_until_listening(server: subprocess.Popen[bytes], timeout: float = 30) -> str:
    """The server's output up to 'Entering Accept loop' ('' when it is listening)."""
    assert server.stdout is not None
    seen = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([server.stdout], [], [], 0.2)
        if ready:
            chunk = os.read(server.stdout.fileno(), 4096)
            if not chunk:
                break
            seen += chunk
            if b"Entering Accept loop" in seen:
                return ""
        elif server.poll() is not None:
            break
    return seen.decode(errors="replace") or f"no output (exit code {server.poll()})"


def _stop(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        os.kill(server.pid, signal.SIGKILL)
    server.wait(timeout=30)
    if server.stdout is not None:
        server.stdout.close()


def _running_servers(ports: list[int]) -> list[str]:
    """Command lines of processes that still serve one of ``ports``."""
    wanted = [f"socketserver\x00127.0.0.1:{port}" for port in ports]
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if any(w in cmdline for w in wanted):
            found.append(f"{entry.name}: {cmdline.replace(chr(0), ' ')}")
    return found


@contextlib.contextmanager
def isolated_workers(count: int) -> Iterator[list[int]]:
    """Start ``count`` socket servers, each without the controller's /tmp; yield their ports."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the workers are isolated with unshare -m and mount")
    if shutil.which("unshare") is None:
        pytest.skip("needs util-linux's unshare to isolate the workers")
    if sys.prefix == sys.base_prefix:
        pytest.skip("needs to run from a virtualenv (it is bind-mounted into the workers)")
    VENV_MOUNT.mkdir(parents=True, exist_ok=True)
    SOURCE_MOUNT.mkdir(parents=True, exist_ok=True)
    servers: list[subprocess.Popen[bytes]] = []
    ports: list[int] = []
    try:
        for _ in range(count):
            port = _free_port()
            server = subprocess.Popen(
                ["unshare", "-m", "sh", "-c", _server_script(port)],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
            servers.append(server)
            ports.append(port)
            problem = _wait_until_listening(server)
            if problem:
                denied = ("Operation not permitted", "Permission denied", "permission denied")
                if any(word in problem for word in denied):
                    pytest.skip(f"unshare/mount is not permitted here: {problem.strip()}")
                pytest.fail(f"the socket server on port {port} did not start:\n{problem}")
        yield ports
    finally:
        for server in servers:
            _stop(server)


#: runs on the isolated workers; gw* names come from the controller's -v lines
SUITE = '''
import hashlib, os, tempfile, time
import pytest

BIG = bytes(range(256)) * (10 * 1024 * 1024 // 256)  # 10 MB

def test_left(depgraph, request):
    depgraph.publish("where", request.config.workerinput["workerid"])
    depgraph.publish("big", BIG)
    depgraph.publish("big_sha", hashlib.sha256(BIG).hexdigest())
    depgraph.publish("done", time.time())

def test_right(depgraph, request):
    depgraph.publish("where", request.config.workerinput["workerid"])
    depgraph.publish("tmp", os.listdir(tempfile.gettempdir()))
    depgraph.publish("done", time.time())

@pytest.mark.depends_on(test_left, test_right)
def test_reader(depgraph):
    started = time.time()
    left = depgraph.output(test_left, "where")
    right = depgraph.output(test_right, "where")
    assert left != right  # the two producers ran on different workers
    big = depgraph.output(test_left, "big")
    assert len(big) == len(BIG)
    assert hashlib.sha256(big).hexdigest() == depgraph.output(test_left, "big_sha")
    assert started >= max(depgraph.output(t, "done") for t in (test_left, test_right))
    # the worker sees nothing of the controller's temporary files
    assert not any(n.startswith("depgraph-outputs-") for n in depgraph.output(test_right, "tmp"))

@pytest.mark.depends_on(test_reader)
def test_second_reader(depgraph):
    assert depgraph.output(test_left, "big") == BIG  # transitively required: also sent

def test_broken():
    assert 0, "broken on purpose"

@pytest.mark.depends_on(test_broken)
def test_needs_broken():
    pass

@pytest.mark.depends_on(test_needs_broken, test_right)
def test_needs_broken_transitively():
    pass
'''


def test_remote_workers_without_a_shared_filesystem(pytester: pytest.Pytester) -> None:
    suite = pytester.mkpydir("remote")
    (suite / "test_values.py").write_text(SUITE)
    with isolated_workers(2) as ports:
        result = pytester.runpytest(
            "-p",
            "xdist",
            "-v",
            "-rs",
            "-d",
            "-W",
            "ignore::DeprecationWarning",  # --rsyncdir is deprecated (removed in xdist 4)
            *(arg for port in ports for arg in ("--tx", f"socket=127.0.0.1:{port}")),
            "--rsyncdir",
            str(suite),
            str(suite / "test_values.py"),
        )
    assert _running_servers(ports) == []
    result.assert_outcomes(passed=4, failed=1, skipped=2)
    workers = {
        line.split()[-1].rsplit("::", 1)[-1]: line.split()[0]
        for line in result.outlines
        if line.startswith("[gw") and "PASSED" in line
    }
    assert workers["test_left"] != workers["test_right"], workers
    root_cause = "depgraph: upstream remote/test_values.py::test_broken failed"
    assert skip_reasons(result) == {
        "test_needs_broken": root_cause,
        "test_needs_broken_transitively": root_cause,
    }


#: a discovery's suite on the isolated gateways: a need, a conflict, and a test that passes
#: only where the controller's folders are out of sight (its lists ran there, not here)
DISCOVERY_SUITE = '''
import os

CONTROLLER_FOLDER = {folder!r}
STATE = []

def test_fill():
    STATE.append(1)

def test_read():
    assert STATE == [1]

def test_default_mode():
    assert os.environ.get("REMOTE_MODE", "prod") == "prod"

def test_debug_mode():
    os.environ["REMOTE_MODE"] = "debug"

def test_runs_off_the_controller():
    assert not os.path.exists(CONTROLLER_FOLDER)
'''


def test_discovery_on_remote_gateways_without_a_shared_filesystem(
    pytester: pytest.Pytester,
) -> None:
    """``--depgraph-discover`` with two ``socket=`` gateways: the suite reaches them through
    ``--rsyncdir``, each list runs in a fresh pytest there and its record comes back over the
    channel (no path of the controller exists there)."""
    suite = pytester.mkpydir("remote")
    (suite / "test_hidden.py").write_text(DISCOVERY_SUITE.format(folder=str(pytester.path)))
    with isolated_workers(2) as ports:
        result = pytester.runpytest(
            "-p", "xdist", "-W", "ignore::DeprecationWarning",  # --rsyncdir: removed in xdist 4
            "--depgraph-discover", "--depgraph-discover-verify", "1",
            "--depgraph-discover-json", "found.json",
            *(arg for port in ports for arg in ("--tx", f"socket=127.0.0.1:{port}")),
            "--rsyncdir", str(suite), str(suite / "test_hidden.py"),
        )
    assert _running_servers(ports) == []
    assert result.ret == 1, result.stdout.str()
    found = json.loads((pytester.path / "found.json").read_text())
    assert [(e["kind"], e["test"], e["other"], e["location"]) for e in found] == [
        ("needs", "remote/test_hidden.py::test_read", "remote/test_hidden.py::test_fill",
         "remote/test_hidden.py:10"),
        ("conflicts", "remote/test_hidden.py::test_default_mode",
         "remote/test_hidden.py::test_debug_mode", "remote/test_hidden.py:13"),
    ]
    text = result.stdout.str()
    assert "failing in pytest's own order" not in text  # test_runs_off_the_controller passed
    result.stdout.fnmatch_lines([
        f"*on 2 gateways at once (socket=127.0.0.1:{ports[0]}, socket=127.0.0.1:{ports[1]})",
        "cost: * (2 at once), *",
    ])
