"""What this process has seen of the plugin's decorators and marker, in one registry with a
:meth:`~Registry.reset`.

A declaration made with ``@depends_on``, ``output_fixture``, ``@cleanup_of`` or
``@resource_lock`` exists only on the objects it was attached to in this process (or copied
from them, as ``functools.wraps`` does): while its flag is false, no function, class or
fixture carries one, and the build does not look for them. The marker's decorator is installed
process-wide while a configured session uses it (pytester nests sessions): ``installed``
counts them.
"""

from __future__ import annotations

from collections.abc import Callable


class Registry:
    """The process-wide flags of the declarations, and the sessions that installed the
    marker."""

    __slots__ = ("cleanup_of", "depends_on_objects", "installed", "object_targets",
                 "on_object_target", "resource_lock")

    def __init__(self) -> None:
        #: what ``@depends_on`` and ``output_fixture`` were applied to in this process, in
        #: turn: a session whose fixtures are all of them reads no test's function or class
        self.depends_on_objects: list[object] = []
        #: whether ``@cleanup_of`` was applied in this process
        self.cleanup_of = False
        #: whether ``@resource_lock`` decorated anything in this process
        self.resource_lock = False
        #: configured sessions that use the installed marker decorator
        self.installed = 0
        #: whether a ``depends_on`` or ``cleanup_of`` mark took a single function or class for
        #: its target in this process: only such a mark can hide a test (a stray, which
        #: collection puts back)
        self.object_targets = False
        #: called when :attr:`object_targets` becomes true (the sessions that then look for
        #: strays)
        self.on_object_target: list[Callable[[], None]] = []

    def reset(self) -> None:
        """Forget the decorators applied so far: a session that runs in this process next
        (a test's in-process pytester run) takes the paths of a fresh process until its own
        files apply one again. ``installed`` is kept: each session that installed the marker
        undoes it as it ends."""
        self.cleanup_of = self.resource_lock = self.object_targets = False
        self.depends_on_objects = []

    def note_object_target(self) -> None:
        """A mark took a single function or class for its target: the first time, tell the
        sessions waiting for one."""
        if not self.object_targets:
            self.object_targets = True
            for call in list(self.on_object_target):
                call()

    @property
    def depends_on(self) -> bool:
        """Whether ``@depends_on`` or ``output_fixture`` was applied in this process."""
        return bool(self.depends_on_objects)


#: the one registry of this process
REGISTRY = Registry()
