"""A discovery's slots on execnet gateways made from xdist's specs (``-n N``, ``--tx``).

``-n N`` is N ``popen`` gateways, ``--tx`` specs are read as xdist reads them (``3*popen``,
``socket=host:port``, ``ssh=host``, ``//python=``, ``//chdir=``), and a gateway off this
session's folder receives the ``--rsyncdir`` folders first, as before a run: xdist's own
machinery makes and feeds them (:class:`pytest_depgraph.hosts.xdist.Gateways`). On each,
:mod:`.server` runs the slot's lists, each in a fresh pytest there, and sends back what the
child recorded. There the command line's paths are made relative to the gateway's copies of
the roots, as xdist sends a remote worker its command line, and the rootdir with them: the
children there must name the tests as this session does.
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_depgraph.discover import server
from pytest_depgraph.discover.children import (
    ChildFailed,
    Children,
    Slot,
    keeps_cache,
    local_options,
)
from pytest_depgraph.hosts import xdist


class GatewaySlot:
    """A slot on one gateway: its lists go over the channel to :func:`.server.serve`."""

    def __init__(self, gateway: Any, spec: str, channel: Any, python: str,
                 options: list[str], roots: Sequence[Path] | None) -> None:
        self.name = f"{gateway.id} ({spec})"
        self.python = python
        self.options = options
        self._channel = channel
        #: the roots the paths are made relative to; None where the gateway shares our folder
        self._roots = roots

    def paths(self, files: Sequence[Path]) -> list[str]:
        if self._roots is None:
            return [str(file) for file in files]
        return xdist.relative_to_roots(self._roots, [str(file) for file in files])

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            self._channel.send(request)
            answer: dict[str, Any] = self._channel.receive()
        except Exception as error:  # the gateway ended, or its side raised
            raise ChildFailed(f"the gateway {self.name} ended: {error}") from None
        return answer

    def close(self) -> None:
        # the server ends its loop, its zygote and its folder; the gateway ends after
        with contextlib.suppress(Exception):
            self._channel.close()
            self._channel.waitclose(10)


def open_children(config: pytest.Config, specs: Sequence[str], options: Sequence[str],
                  files: Sequence[str]) -> Children:
    """The children of a discovery on one gateway per spec, each connected, sent the roots
    and serving; ``files``, the test files (relative to the rootdir) every gateway must have.
    A spec that cannot connect, or a remote gateway that would not name the tests as this
    session does, is a usage error naming the spec."""
    gateways = xdist.Gateways(config, specs)
    slots: list[Slot] = []
    try:
        for index, spec in enumerate(specs):
            try:
                gateway = gateways.open(index)
            except xdist.GatewayFailed as error:
                raise pytest.UsageError(
                    f"--tx {spec}: cannot start the gateway ({error}); check the spec, that "
                    "the host is reachable and, for socket=, that execnet's socket server "
                    "runs there"
                ) from None
            remote = xdist.is_remote(gateway)
            roots = gateways.roots if remote else None
            slot_options = (_remote_options(config, spec, gateways.roots, options, files)
                            if remote else local_options(config, options))
            paths = [str(config.rootpath / file) for file in files]
            if remote:
                paths = xdist.relative_to_roots(gateways.roots, paths)
            try:
                channel = xdist.execute(gateway, server)
                channel.send({"cwd": None if remote else str(config.invocation_params.dir),
                              "fork": None, "cache": keeps_cache(config),
                              "args": [*slot_options, *paths]})
                started = channel.receive()
            except Exception as error:  # the gateway's side raised, or the gateway ended
                said = (str(error).strip().splitlines() or [type(error).__name__])[-1]
                raise pytest.UsageError(
                    f"--tx {spec}: the gateway started but cannot run a discovery's lists: "
                    f"{said}"
                ) from None
            slots.append(GatewaySlot(gateway, spec, channel, str(started["python"]),
                                     slot_options, roots))
    except BaseException:
        for slot in slots:
            slot.close()
        gateways.close()
        raise
    return Children(slots, config.rootpath, then=gateways.close)


def _remote_options(config: pytest.Config, spec: str, roots: Sequence[Path],
                    options: Sequence[str], files: Sequence[str]) -> list[str]:
    """The children's options on a gateway in a folder of its own: paths relative to the
    roots, and a rootdir there under which each test file has the path it has here."""
    rootpath = config.rootpath
    fix = f"add --rsyncdir {rootpath} (the rootdir), or run the discovery there"
    inside = [root for root in roots if root == rootpath or root in rootpath.parents]
    if inside:
        rootdir = xdist.relative_to_roots(inside[:1], [str(rootpath)])[0]
    elif any(root.parent == rootpath for root in roots):
        rootdir = "."  # the roots are folders of the rootdir: their copies sit side by side
    else:
        raise pytest.UsageError(
            f"--tx {spec}: the gateway receives {_names(roots)}, which hold neither the "
            f"rootdir {rootpath} nor its test folders side by side: {fix}"
        )
    for file in files:
        try:
            there = xdist.relative_to_roots(roots, [str(rootpath / file)])[0]
        except ValueError:
            there = ""
        if posixpath.normpath(there) != posixpath.normpath(posixpath.join(rootdir, file)):
            raise pytest.UsageError(
                f"--tx {spec}: the test file {file} is not in a folder the gateway receives "
                f"({_names(roots)}): {fix}"
            )
    try:
        kept = xdist.relative_to_roots(roots, options)
    except ValueError as error:
        raise pytest.UsageError(f"--tx {spec}: {error}; {fix}") from None
    kept.append(f"--rootdir={rootdir}")
    inipath = config.inipath
    if inipath is not None and any(root in inipath.parents for root in roots):
        kept += ["-c", xdist.relative_to_roots(roots, [str(inipath)])[0]]
    return kept


def _names(roots: Sequence[Path]) -> str:
    if not roots:
        return "no folder (no --rsyncdir)"
    return ", ".join(str(root) for root in roots)
