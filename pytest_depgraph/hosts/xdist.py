"""pytest-xdist's internals behind one door each: a worker's loop and events, the session, gateways.

Checked against pytest-xdist 3.7 and 3.8 (the plugin requires ``>=3.7,<4``; ``TestQueue`` with
its ``lock()`` appeared in 3.7). What xdist documents -- its hooks, ``config.workerinput``, and
the ``WorkerController`` members its own schedulers use (``send_runtest_some``, ``sendcommand``,
``shutdown``, ``shutting_down``, ``gateway.id``) -- is used where it is needed, not here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

#: the oldest pytest-xdist whose internals the doors below fit
MIN_VERSION = (3, 7)
#: what a worker says when its xdist lacks what a door relies on
TOO_OLD = (
    "pytest-depgraph needs pytest-xdist >= 3.7, < 4 to run tests in dependency order on "
    "workers; this worker's xdist lacks {missing}. Upgrade pytest-xdist "
    "(pip install 'pytest-xdist>=3.7,<4') or run without -n / --depgraph-parallelism."
)
#: the name xdist registers its controller session under (``plugin.py``'s pytest_configure)
_DSESSION = "dsession"


def version() -> tuple[int, ...]:
    """The installed pytest-xdist version as integers (``(0,)`` when unknown)."""
    try:
        import xdist  # type: ignore[import-untyped]
    except ImportError:
        return (0,)
    numbers = re.findall(r"\d+", str(getattr(xdist, "__version__", "0")))[:3]
    return tuple(int(n) for n in numbers) or (0,)


# -- the controller ------------------------------------------------------------------------


def dsession(config: pytest.Config) -> Any:
    """xdist's controller session (``dsession.DSession``), which xdist's ``pytest_configure``
    registers as the plugin ``dsession``; None on a worker, in a serial run, and before that."""
    return config.pluginmanager.get_plugin(_DSESSION)


def is_controller(config: pytest.Config) -> bool:
    """Whether this process is xdist's controller: its session is registered (see
    :func:`dsession`)."""
    return config.pluginmanager.has_plugin(_DSESSION)


def start_workers(config: pytest.Config, count: int) -> None:
    """Have xdist start ``count`` local workers, as its own ``pytest_cmdline_main`` does for
    ``-n N``: N popen gateways in ``config.option.tx`` (and ``--dist load`` for ``no``). Call it
    before xdist's ``pytest_configure`` (trylast), which makes the session that starts them."""
    config.option.numprocesses = count
    config.option.tx = ["popen"] * count
    if config.getoption("dist") == "no":
        config.option.dist = "load"


def keep_workers_off(config: pytest.Config) -> int:
    """Have xdist start no worker in this session, and say how many ``-n`` / ``--tx`` asked
    for (0: none): ``config.option.tx`` as xdist's own ``pytest_cmdline_main`` (tryfirst) left
    it, emptied with ``--dist no`` before xdist's ``pytest_configure`` decides from them
    whether to make its session (``_is_distribution_mode``)."""
    count = worker_count(config) if config.getoption("tx", None) else 0
    config.option.numprocesses = 0
    config.option.tx = []
    config.option.dist = "no"
    return count


def worker_count(config: pytest.Config) -> int:
    """How many workers xdist starts: the gateways of ``-n`` / ``--tx``, counted as its own
    schedulers count them (``workermanage.parse_tx_spec_config``)."""
    from xdist.workermanage import parse_tx_spec_config  # type: ignore[import-untyped]

    return len(parse_tx_spec_config(config))


def tx_specs(config: pytest.Config) -> list[str]:
    """The gateways' specs of ``-n`` / ``--tx``, one a gateway, as xdist reads them
    (``workermanage.parse_tx_spec_config``: ``3*popen`` is three ``popen``); [] with neither.
    Read before :func:`keep_workers_off` empties them."""
    if not config.getoption("tx", None):
        return []
    from xdist.workermanage import parse_tx_spec_config

    return [str(spec) for spec in parse_tx_spec_config(config)]


class GatewayFailed(Exception):
    """A gateway that execnet could not make: what it said."""


class Gateways:
    """execnet gateways made from ``specs`` as xdist makes its workers' (a discovery's slots):
    ``workermanage.NodeManager`` gives them their ids (gw0, gw1, ...), execnet's
    ``main_thread_only`` model and, off this machine's folder, the working directory
    ``pyexecnetcache``; its ``rsync_roots`` sends each such gateway the folders of
    ``--rsyncdir`` and of the ``rsyncdirs`` ini option (``roots``), as before a run. No worker
    session starts on them: the caller executes its own code there (:func:`execute`).
    ``NodeManager`` raises ``pytest.UsageError`` for an ``--rsyncdir`` that does not exist."""

    def __init__(self, config: pytest.Config, specs: Sequence[str]) -> None:
        from xdist.workermanage import NodeManager

        self._manager = NodeManager(config, list(specs))
        #: the folders each remote gateway receives, by absolute path
        self.roots: list[Path] = [Path(root) for root in self._manager.roots]

    def open(self, index: int) -> Any:
        """The gateway of the ``index``-th spec, connected and sent the roots;
        :class:`GatewayFailed` when execnet cannot make it (``OSError``, ``HostNotFound``, a
        spec it does not read, ...)."""
        spec = self._manager.specs[index]
        try:
            gateway = self._manager.group.makegateway(spec)
        except Exception as error:
            # NodeManager prefixes each spec with the execution model: not the user's words
            said = str(error).replace(f"execmodel={spec.execmodel}//", "")
            raise GatewayFailed(f"{type(error).__name__}: {said}") from None
        self._manager.rsync_roots(gateway)
        return gateway

    def close(self) -> None:
        """End every gateway, waiting for each a few seconds (``teardown_nodes``)."""
        self._manager.teardown_nodes()


def is_remote(gateway: Any) -> bool:
    """Whether a gateway works in a folder of its own rather than this session's (xdist's
    test in ``WorkerController.setup``: not ``popen``, or a ``chdir``): there the paths of
    the command line are made relative to the roots (:func:`relative_to_roots`)."""
    spec = gateway.spec
    return not spec.popen or bool(spec.chdir)


def relative_to_roots(roots: Sequence[Path], args: Sequence[str]) -> list[str]:
    """``args`` with each existing path (and node id) made relative to the gateway's copy
    of its root, as xdist sends a remote worker its command line (``make_reltoroot``);
    ``ValueError`` for an existing path under no root."""
    from xdist.workermanage import make_reltoroot

    return [str(arg) for arg in make_reltoroot(list(roots), list(args))]


def execute(gateway: Any, module: Any) -> Any:
    """A channel to ``module``'s source run on ``gateway`` as ``__channelexec__``
    (execnet's ``remote_exec``); the channel's ``send``/``receive``/``close`` are execnet's."""
    return gateway.remote_exec(module)


def stopping(config: pytest.Config) -> bool:
    """Whether xdist's session is stopping: ``DSession.shouldstop`` (``-x``, ``--maxfail``, a
    worker that stopped on its own, Ctrl-C) or ``DSession.shuttingdown`` (every worker was
    told to shut down). False without a session (a scheduler driven in-process)."""
    session = dsession(config)
    return session is not None and bool(
        getattr(session, "shouldstop", False) or getattr(session, "shuttingdown", False)
    )


def scheduler_log(log: Any) -> Any:
    """The log a scheduler writes to: the ``depgraphsched`` child of the ``Producer`` xdist
    hands ``pytest_xdist_make_scheduler`` (attribute access makes a child,
    ``remote.Producer.__getattr__``), or a new ``Producer`` when there is none (in-process)."""
    if log is not None:
        return log.depgraphsched
    from xdist.remote import Producer  # type: ignore[import-untyped]

    return Producer("depgraphsched")


def collection_diff(
    first: Sequence[str], other: Sequence[str], first_name: str, other_name: str
) -> str | None:
    """xdist's own message for two workers whose collections differ
    (``report.report_collection_diff``); None when they are the same."""
    from xdist.report import report_collection_diff  # type: ignore[import-untyped]

    message: str | None = report_collection_diff(first, other, first_name, other_name)
    return message


def hand_over(
    config: pytest.Config,
    log: Any,
    scheduler_class: str,
    nodes: Iterable[tuple[Any, Sequence[str] | None]],
    instead_of: object,
) -> Any:
    """Run the rest of the session with xdist's own scheduler ``scheduler_class`` (a class of
    ``xdist.scheduler``): made with ``config`` and ``log``, told each worker and its collection
    (None: not collected yet), started, and put in the place of ``instead_of`` in xdist's
    session (``DSession.sched``, which every later event reads), so that nothing of ours stays
    on the path of its events. Returns the new scheduler."""
    import xdist.scheduler  # type: ignore[import-untyped]

    scheduler = getattr(xdist.scheduler, scheduler_class)(config, log)
    for node, collection in nodes:
        scheduler.add_node(node)
        if collection is not None:
            scheduler.add_node_collection(node, list(collection))
    session = dsession(config)
    if session is not None and getattr(session, "sched", None) is instead_of:
        session.sched = scheduler
    scheduler.schedule()
    return scheduler


def take_events(node: Any, take: Callable[[str, dict[str, Any]], bool]) -> None:
    """Show each event of ``node``'s worker to ``take`` first (in execnet's receiver thread);
    an event it takes (returns True for) never reaches xdist.

    xdist drops a worker that sends an event it does not know
    (``WorkerController.process_from_remote`` raises "unknown event" and shuts the node down),
    so the plugin's own events are taken here. Call it from ``pytest_configure_node``: xdist
    calls that hook in ``WorkerController.setup`` before it hands the instance's
    ``process_from_remote`` to the channel as its callback."""
    original = node.process_from_remote

    def process_from_remote(eventcall: Any) -> None:
        if isinstance(eventcall, tuple) and len(eventcall) == 2 and take(*eventcall):
            return
        original(eventcall)

    node.process_from_remote = process_from_remote


def forward_completion(node: Any, index: int) -> None:
    """Queue a ``runtest_protocol_complete`` event of test ``index`` for xdist's session, as
    if ``node``'s worker had sent it (``WorkerController.notify_inproc``, what
    ``process_from_remote`` does with the worker's own): the session takes it in its main
    thread and calls the scheduler's ``mark_test_complete(node, index, duration)``."""
    node.notify_inproc("runtest_protocol_complete", node=node, item_index=index, duration=0.0)


# -- the worker ----------------------------------------------------------------------------


def find_interactor(config: pytest.Config) -> Any:
    """xdist's ``WorkerInteractor`` of this worker (``remote.py``). It is exec'd as
    ``__channelexec__`` source and registered without a name, so it is found by class name,
    not ``isinstance``."""
    for plugin in config.pluginmanager.get_plugins():
        if type(plugin).__name__ == "WorkerInteractor":
            return plugin
    raise RuntimeError(TOO_OLD.format(missing="a registered WorkerInteractor"))


def send_event(config: pytest.Config, name: str, **kwargs: object) -> None:
    """Send the controller an event from this worker (``WorkerInteractor.sendevent``, what
    xdist's worker sends its reports with; the controller must take it, :func:`take_events`)."""
    find_interactor(config).sendevent(name, **kwargs)


def worker_loop(config: pytest.Config) -> WorkerLoop:
    """The door to this worker's loop. RuntimeError naming what is missing when xdist's worker
    is not the one the door relies on (``TestQueue.lock()`` and ``Marker.SHUTDOWN`` appeared
    in xdist 3.7)."""
    interactor = find_interactor(config)
    # the class's own method (the instance's may be replaced already); the worker module is
    # exec'd as __channelexec__, so its Marker is found there, not in xdist.remote
    run_one_test = getattr(type(interactor), "run_one_test", None)
    namespace = getattr(run_one_test, "__globals__", {})
    shutdown = getattr(namespace.get("Marker"), "SHUTDOWN", None)
    torun = getattr(interactor, "torun", None)
    for missing, present in (
        ("WorkerInteractor.run_one_test", run_one_test is not None),
        ("WorkerInteractor.torun.lock()", callable(getattr(torun, "lock", None))),
        ("WorkerInteractor.sendevent", callable(getattr(interactor, "sendevent", None))),
        ("WorkerInteractor.handle_command", callable(getattr(interactor, "handle_command", None))),
        ("Marker.SHUTDOWN", shutdown is not None),
    ):
        if not present:
            raise RuntimeError(TOO_OLD.format(missing=missing))
    return WorkerLoop(interactor, shutdown)


class WorkerLoop:
    """xdist's worker loop (``remote.WorkerInteractor``) through the members the plugin's
    worker uses.

    xdist's ``pytest_runtestloop`` takes the first test index from its queue (``torun``) into
    ``nextitem_index``, then calls ``run_one_test()`` until that is ``Marker.SHUTDOWN``; its own
    ``run_one_test`` takes the *next* index from the queue (blocking) before it runs the test.
    The controller's commands arrive in execnet's receiver thread (``handle_command``), which
    queues the indices of ``runtests`` and a SHUTDOWN for ``shutdown`` or a closed channel.
    """

    def __init__(self, interactor: Any, shutdown: object) -> None:
        self._interactor = interactor
        #: what the queue holds when the worker is to stop (``Marker.SHUTDOWN``)
        self.shutdown = shutdown

    @property
    def config(self) -> pytest.Config:
        """The worker's configuration."""
        config: pytest.Config = self._interactor.config
        return config

    @property
    def session(self) -> pytest.Session:
        """The worker's session (set by the interactor's ``pytest_sessionstart``)."""
        session: pytest.Session = self._interactor.session
        return session

    def next_index(self) -> Any:
        """The queue entry xdist's loop looks at: the index of the test ``run_one_test`` is
        called for, and after it returns the one it is called for next (its loop ends on
        SHUTDOWN): ``nextitem_index``."""
        return self._interactor.nextitem_index

    def set_next_index(self, entry: object) -> None:
        """What xdist's loop looks at after ``run_one_test`` returns (see :meth:`next_index`)."""
        self._interactor.nextitem_index = entry

    def announce(self, index: int) -> None:
        """Name test ``index`` as the one whose reports come next: xdist's report hook sends
        ``item_index`` with each report and asserts it names the report's test."""
        self._interactor.item_index = index

    def take_queued(self) -> Any:
        """The first queued entry, taken off the queue without waiting; None when the queue is
        empty (``torun.lock()`` holds the queue's lock and yields its deque)."""
        with self._interactor.torun.lock() as queue:
            return queue.popleft() if queue else None

    def put_back(self, entry: object) -> None:
        """Put an entry taken by :meth:`take_queued` back at the head of the queue."""
        with self._interactor.torun.lock() as queue:
            queue.appendleft(entry)

    def wait(self) -> Any:
        """The first queued entry, waiting until there is one (``torun.get()``)."""
        return self._interactor.torun.get()

    def put(self, entry: object) -> None:
        """Queue an entry behind the others (``torun.put``; from any thread)."""
        self._interactor.torun.put(entry)

    def send(self, name: str, **kwargs: object) -> None:
        """Send the controller an event (``sendevent``)."""
        self._interactor.sendevent(name, **kwargs)

    def on_command(self, name: str, handle: Callable[[dict[str, Any]], None]) -> None:
        """Give the controller's command ``name`` to ``handle`` (its keyword arguments), in
        execnet's receiver thread. xdist's ``handle_command`` ignores a command it does not
        know, so the plugin's own are taken before it; the others go on to it."""
        interactor = self._interactor
        original = interactor.handle_command

        def handle_command(command: Any) -> None:
            if isinstance(command, tuple) and len(command) == 2 and command[0] == name:
                handle(command[1])
                return
            original(command)

        interactor.handle_command = handle_command

    def run_tests_with(self, run_one_test: Callable[[], None]) -> None:
        """Have xdist's loop call ``run_one_test`` instead of its own for every test: set on
        the instance before the loop starts (``pytest_collection_finish``), where the loop's
        ``self.run_one_test()`` finds it."""
        self._interactor.run_one_test = run_one_test
