"""pytest's internals behind one door each: teardown and capture of a held test, skips at the
test's place, ``--lf``'s books, the terminal's counts and its current line, the options as
given, fixtures, marks, subtests' reports, and a forked session's temporary folder.

Checked against pytest 8 and 9. What pytest documents (its hooks, ``pytest.CallInfo``,
``pytest.TestReport``, the terminal reporter's ``stats`` and ``write_line``) is used where it is
needed, not here.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, NoReturn, cast

import pytest

try:  # pytest 9's ``subtests`` fixture
    from _pytest.subtests import SubtestReport as _SubtestReport
except ImportError:  # pytest 8 has none
    _SubtestReport = None  # type: ignore[assignment,misc]

#: what pytest keeps of a test's fixtures until the end of its run protocol
RequestState = tuple[pytest.Item, object, object]


# -- a held test on an xdist worker --------------------------------------------------------


def teardown_towards(
    item: pytest.Item, nextitem: pytest.Item | pytest.Collector | None
) -> None:
    """Tear down what the session's setup stack holds that ``nextitem`` does not share (all
    of it for None): ``session._setupstate.teardown_exact(nextitem)`` (``runner.py``), what
    pytest's own teardown phase of ``item`` runs. A collector keeps its own chain, as a test
    of it would (``teardown_exact`` reads only ``listchain()``)."""
    # a collector has the one method teardown_exact calls of an item: listchain()
    item.session._setupstate.teardown_exact(cast(Any, nextitem))


def set_up(session: pytest.Session) -> list[pytest.Item | pytest.Collector]:
    """The nodes set up now, the session first: the keys of ``SetupState.stack``
    (``runner.py``), which ``setup`` pushes a test's chain onto and ``teardown_exact`` pops
    (empty when the stack does not read so)."""
    stack = getattr(getattr(session, "_setupstate", None), "stack", None)
    return list(stack) if isinstance(stack, dict) else []


def nothing_to_tear_down(session: pytest.Session) -> bool:
    """Whether tearing down what the session's setup stack holds would run nothing: no node
    on it has a finalizer but its own ``teardown``, which pytest's nodes leave empty, nor a
    setup error kept (``SetupState.stack``, ``runner.py``: node -> (finalizers, error);
    ``setup`` pushes ``[node.teardown]``, a fixture of the node's scope adds its own). False
    when the stack does not read so (a future pytest, a collector with a teardown)."""
    stack = getattr(getattr(session, "_setupstate", None), "stack", None)
    if not isinstance(stack, dict):
        return False
    for node, entry in stack.items():
        if not (isinstance(entry, tuple) and len(entry) == 2):
            return False
        finalizers, error = entry
        if error is not None or not isinstance(finalizers, list) or len(finalizers) != 1:
            return False
        if getattr(type(node), "teardown", None) is not _NODE_TEARDOWN:
            return False
    return True


#: ``Node.teardown``, which no node of pytest's own overrides: it does nothing
_NODE_TEARDOWN = pytest.Collector.teardown


def capture(
    config: pytest.Config, when: str, item: pytest.Item
) -> contextlib.AbstractContextManager[Any]:
    """Capture output as pytest captures the phase ``when`` of ``item`` (the capture
    manager's ``item_capture``, ``capture.py``); nothing when capturing is off
    (``-p no:capture``)."""
    manager = config.pluginmanager.getplugin("capturemanager")
    if manager is None:
        return contextlib.nullcontext()
    captured: contextlib.AbstractContextManager[Any] = manager.item_capture(when, item)
    return captured


def request_state(item: pytest.Item) -> RequestState:
    """What ``item`` holds of its fixtures now (``funcargs`` and ``_request``), for
    :func:`give_back_request`: pytest drops both at the end of a test's run protocol
    (``runner.py``'s ``runtestprotocol``)."""
    return item, getattr(item, "funcargs", None), getattr(item, "_request", None)


def give_back_request(item: pytest.Item, state: RequestState | None) -> None:
    """Give ``item`` back what :func:`request_state` kept of it, when pytest has dropped it
    since (plugins read them when they make a report: pytest-benchmark does)."""
    if state is None or state[0] is not item or not hasattr(item, "_request"):
        return
    _, funcargs, request = state
    if getattr(item, "funcargs", None) is None and funcargs is not None:
        item.funcargs = funcargs  # type: ignore[attr-defined]
        item._request = request


def drop_request(item: pytest.Item) -> None:
    """Drop what ``item`` holds of its fixtures, as pytest does at the end of its run
    protocol (``_request = False``, ``funcargs = None``)."""
    if hasattr(item, "_request"):
        item._request = False
        item.funcargs = None  # type: ignore[attr-defined]


# -- skips ---------------------------------------------------------------------------------


def skip_at_test(reason: str) -> NoReturn:
    """Skip the running test with its own file and line in the report, as skip markers do
    (``skipping.py`` raises pytest's skip exception with ``_use_item_location=True``, which
    ``reports.py`` reads); a plain ``pytest.skip`` would name the line that raised it."""
    raise pytest.skip.Exception(reason, _use_item_location=True)


# -- --lf and the terminal's counts --------------------------------------------------------


def collect_all_for_last_failed(config: pytest.Config) -> None:
    """Collect every file under ``--lf``: its plugin narrows collection to the files and tests
    that failed (``cacheprovider.py`` registers ``lfplugin-collwrapper`` and, once it found a
    failed test's file, ``lfplugin-collskip``); without them it deselects instead."""
    for name in ("lfplugin-collwrapper", "lfplugin-collskip"):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)


def keep_last_failed(config: pytest.Config, nodeid: str) -> None:
    """Have ``--lf`` run ``nodeid`` again next time: its plugin's books of the failed tests
    (``LFPlugin.lastfailed``, written to the cache at the end of the session)."""
    lfplugin = config.pluginmanager.get_plugin("lfplugin")
    lastfailed = getattr(lfplugin, "lastfailed", None)
    if lastfailed is not None:
        lastfailed[nodeid] = True


def uncount_collected(config: pytest.Config, count: int) -> None:
    """Take ``count`` tests off the terminal's "collected N items" (the reporter's
    ``_numcollected``, which it adds each collection report's items to)."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if count and isinstance(getattr(terminal, "_numcollected", None), int):
        terminal._numcollected -= count  # type: ignore[union-attr]


def undo_deselection(config: pytest.Config, nodeids: Collection[str]) -> None:
    """Take the tests ``nodeids`` off the terminal's "N deselected" (its ``stats``)."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(terminal, "stats", None)
    if stats and stats.get("deselected"):
        stats["deselected"] = [i for i in stats["deselected"] if i.nodeid not in nodeids]
        if not stats["deselected"]:
            del stats["deselected"]


# -- fixtures ------------------------------------------------------------------------------


def fixture_info(item: pytest.Item) -> object | None:
    """What pytest knows of the fixtures of ``item`` (``item._fixtureinfo``, a
    ``FuncFixtureInfo`` of ``fixtures.py``): one per test definition, shared by its
    parametrized instances; None for an item that is not a pytest function."""
    return getattr(item, "_fixtureinfo", None)


def fixture_closure(info: Any) -> Sequence[str]:
    """Every fixture name a test uses, with the fixtures they use (``names_closure``)."""
    closure: Sequence[str] = info.names_closure
    return closure


def fixtures_by_name(info: Any) -> Mapping[str, Sequence[Any]]:
    """The definitions a test may use for each fixture name, the closest override last
    (``name2fixturedefs``)."""
    found: Mapping[str, Sequence[Any]] = info.name2fixturedefs
    return found


def fixture_function(definition: object) -> object:
    """The function a fixture definition (``FixtureDef``) calls (its ``func``; None when it
    has none)."""
    return attribute(definition, "func")


def fixture_arguments(definition: object) -> Sequence[str]:
    """The fixture names a fixture definition requests (``FixtureDef.argnames``)."""
    names = attribute(definition, "argnames")
    return names if isinstance(names, tuple) else ()


def session_fixtures(session: object) -> list[tuple[str, object]] | None:
    """Every fixture definition of the session with its name, from the fixture manager's
    tables (``session._fixturemanager``): ``_arg2fixturedefs`` (name -> definitions) before
    pytest 9; since then ``_arg2node2fixturedefs`` (name -> node -> definitions) and the
    deprecated ``_arg2nodeid2fixturedefs``. None when neither can be read."""
    manager = attribute(session, "_fixturemanager")
    flat = attribute(manager, "_arg2fixturedefs")
    if isinstance(flat, dict):
        return [(name, d) for name, defs in flat.items() for d in defs]
    by_node = attribute(manager, "_arg2node2fixturedefs")
    if not isinstance(by_node, dict):
        return None
    by_nodeid = attribute(manager, "_arg2nodeid2fixturedefs")
    tables = [by_node, by_nodeid if isinstance(by_nodeid, dict) else {}]
    return [(name, d) for table in tables for name, nodes in table.items()
            for defs in nodes.values() for d in defs]


def session_fixture_names(session: object) -> Collection[str]:
    """Every fixture name of the session (empty when the fixture manager's tables cannot be
    read: :func:`session_fixtures`)."""
    manager = attribute(session, "_fixturemanager")
    for table in ("_arg2node2fixturedefs", "_arg2fixturedefs"):  # pytest >= 9, < 9
        known = attribute(manager, table)
        if isinstance(known, dict):
            return known.keys()
    return ()


def param_index(item: pytest.Item, name: str) -> int | None:
    """Which parameter of the parametrized fixture ``name`` the test ``item`` uses
    (``item.callspec.indices``); None when it uses none."""
    indices = attribute(attribute(item, "callspec"), "indices")
    found = indices.get(name) if isinstance(indices, dict) else None
    return found if isinstance(found, int) else None


# -- marks ---------------------------------------------------------------------------------


def _bare_mark(name: str) -> pytest.Mark:
    """The mark of ``@pytest.mark.<name>`` without arguments (``Mark``'s constructor takes
    ``_ispytest``: only pytest makes marks)."""
    return pytest.Mark(name, (), {}, _ispytest=True)


def store_bare_mark(name: str, obj: object) -> None:
    """What ``@pytest.mark.<name>`` without arguments does to ``obj``: stores a mark of no
    arguments on it (``MarkDecorator.__call__`` with one function or class, ``store_mark``)."""
    pytest.MarkDecorator(_bare_mark(name), _ispytest=True)(obj)


class _TargetsFirst(pytest.MarkDecorator):
    """``pytest.mark.<name>`` whose first call takes a single function or class as the mark's
    argument, unless ``decorated(args, kwargs)`` (of :func:`install_mark`) says it is the
    definition being decorated: pytest's own decorator marks it and returns it.

    The usual declaration, ``@pytest.mark.<name>("target", ...)`` on a plain test function,
    is made and stored at once, as pytest would make and store it. Measured, onefile10k (its
    10,000 tests carry one each), ``--collect-only``: 10.17 -> 9.79 G instructions (-3.6%;
    callgrind, no spread to speak of), its files collected in 853 -> 822 ms of CPU (fastest
    of 10 alternated runs): through pytest's ``with_args`` and ``store_mark`` -> at once.
    """

    def __call__(self, *args: object, **kwargs: object) -> Any:
        mark = self.mark
        if mark.args or mark.kwargs:  # this mark's targets are given: it decorates
            if len(args) == 1 and not kwargs and _is_unmarked_function(args[0]):
                # what pytest's ``store_mark`` leaves on a function that has no attribute
                # (so no mark, and not a fixture)
                args[0].pytestmark = [mark]  # type: ignore[attr-defined]
                return args[0]
            return super().__call__(*args, **kwargs)
        if args and type(args[0]) is str:
            # a string is never the definition being decorated; ``with_args`` would combine
            # this argument-less mark with these arguments into this same mark
            return _TargetsFirst(pytest.Mark(mark.name, args, kwargs, _ispytest=True),
                                 _ispytest=True)
        if _DECORATED[mark.name](args, kwargs):
            return super().__call__(*args, **kwargs)
        return self.with_args(*args, **kwargs)


def _is_unmarked_function(obj: object) -> bool:
    """Whether ``obj`` is a plain named function with no attribute: pytest's decorator would
    store a mark on it, as its only mark."""
    return (
        type(obj) is types.FunctionType
        and not obj.__dict__
        and obj.__name__ != "<lambda>"
    )


#: mark name -> what tells the definition being decorated from an argument (install_mark)
_DECORATED: dict[str, Callable[[tuple[object, ...], Mapping[str, object]], bool]] = {}


def install_mark(
    name: str, decorated: Callable[[tuple[object, ...], Mapping[str, object]], bool]
) -> None:
    """Make ``pytest.mark.<name>`` take a single function or class as its argument, unless
    ``decorated(args, kwargs)`` says it is the definition being decorated.

    Relies on ``MarkGenerator`` (``pytest.mark``) making a decorator in ``__getattr__``, which
    Python calls only for a name the instance does not hold (an attribute set on it wins),
    on ``MarkDecorator``'s private constructor (``_ispytest``), and on ``with_args`` making a
    plain decorator of the combined mark (its later call then decorates as pytest's own does).
    ``decorated`` is called directly by the decorator's ``__call__`` (two frames below the
    code being decorated)."""
    _DECORATED[name] = decorated
    if not isinstance(pytest.mark.__dict__.get(name), _TargetsFirst):
        setattr(pytest.mark, name, _TargetsFirst(_bare_mark(name), _ispytest=True))


def uninstall_mark(name: str) -> None:
    """Undo :func:`install_mark`: ``pytest.mark.<name>`` as pytest makes it again."""
    if isinstance(pytest.mark.__dict__.get(name), _TargetsFirst):
        delattr(pytest.mark, name)


# -- reports -------------------------------------------------------------------------------


def rejects_marked_fixture(report: object) -> bool:
    """Whether ``report`` is pytest's failed collection of a module that puts a mark on a
    fixture: since pytest 9 importing it raises "Marks cannot be applied to fixtures"
    (``fixtures.py``); pytest 8 only warns."""
    return (
        isinstance(report, pytest.CollectReport)
        and report.failed
        and "Marks cannot be applied to fixtures" in str(report.longrepr)
    )


def is_subtest_report(report: pytest.TestReport) -> bool:
    """Whether ``report`` is the report of one subtest, not of its test.

    Relies on pytest 9's ``subtests`` fixture: each ``subtests.test()`` block reports a
    ``_pytest.subtests.SubtestReport`` (a ``TestReport`` with the test's node id and ``when ==
    "call"``) through ``pytest_runtest_logreport`` while the test runs, and pytest's
    ``pytest_report_from_serializable`` makes it that class again on the xdist controller.
    Always False on pytest 8, which has no subtests of its own.
    """
    return _SubtestReport is not None and isinstance(report, _SubtestReport)


def attribute(obj: object, name: str, default: Any = None) -> Any:
    """``getattr(obj, name, default)`` that also swallows what a property or proxy raises:
    the object may be the user's. The one such helper of the package (collection's
    :mod:`~pytest_depgraph.collect.safe` names it ``attr``)."""
    try:
        return getattr(obj, name, default)
    except Exception:  # a proxy or property may raise anything
        return default


def _name(value: object, otherwise: object) -> str:
    """``value`` if it is a string, else ``otherwise`` if that is one, else "" (as plain
    ``str``: a subclass's own methods are never called)."""
    for text in (value, otherwise):
        if issubclass(type(text), str):
            return str.__str__(text)
    return ""


def fixture_name(obj: object) -> str | None:
    """The name of the fixture ``obj`` is (what ``@pytest.fixture`` made of a function), else
    None; never raises, whatever ``obj`` is.

    Relies on how pytest marks a fixture function, which changed in pytest 8.4: since then
    ``@pytest.fixture`` returns a ``FixtureFunctionDefinition`` (``_pytest.fixtures``) with the
    fixture's ``name`` (None: the function's) and the function as ``_fixture_function``;
    before, it returned the function itself with a ``FixtureFunctionMarker`` as its
    ``_pytestfixturefunction`` attribute, whose ``name`` says the same.
    """
    if type(obj).__name__ == "FixtureFunctionDefinition":  # pytest >= 8.4
        function = attribute(obj, "_fixture_function")
        return _name(attribute(obj, "name"), attribute(function, "__name__"))
    if type(obj) is not types.FunctionType:
        return None
    marker = attribute(obj, "_pytestfixturefunction")  # pytest < 8.4
    if marker is None:
        return None
    return _name(attribute(marker, "name"), attribute(obj, "__name__"))


def start_a_line(config: pytest.Config) -> None:
    """End the terminal's half-written line (the progress dots) and flush it, so that text
    written to stdout next starts a line of its own; nothing without a terminal.

    Relies on the ``terminalreporter`` plugin's ``_tw`` (its ``TerminalWriter``, whose
    ``width_of_current_line`` says how much of the line is written) and ``currentfspath``
    (None: the next test file's name starts a new line), which ``TerminalReporter.ensure_newline``
    uses, without the blank line it would write."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    writer: Any = getattr(terminal, "_tw", None)
    if writer is not None and writer.width_of_current_line:
        writer.line()
    if terminal is not None:
        terminal.currentfspath = None
    if writer is not None:
        writer.flush()


def given_on_command_line(config: pytest.Config, dest: str) -> object:
    """The value the user gave option ``dest`` (command line, ``PYTEST_ADDOPTS`` or the ini
    file's ``addopts``), before any plugin changed it; None when the option is unknown.

    Relies on ``config.known_args_namespace``: pytest parses the known arguments into it early
    (``Config._preparse``) and later writes only ``config.option``, which plugins change in
    ``pytest_cmdline_main`` (xdist turns ``--dist no`` into ``load`` when ``-n`` is given)."""
    return getattr(getattr(config, "known_args_namespace", None), dest, None)


# -- a command line, option by option --------------------------------------------------------


def split_command_line(config: pytest.Config, args: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``args``, a command line as pytest read it, cut into its parts: each option as (its
    ``dest``, the words it took), each positional argument (a path, a node id) as ``("", [word])``
    and a word no option knows as ``("?", [word])``. Reads the argparse parser pytest built
    from every plugin's options (``Parser.optparser`` since pytest 9, ``Parser._getparser()``
    before) and each action's ``nargs`` (0: a flag; otherwise one value, the next word or
    after ``=``, or glued to a short option: ``-kexpr``); short flags may be grouped
    (``-vx``); pytest does not take abbreviations of long options (``allow_abbrev=False``)."""
    parser = config._parser
    optparser = getattr(parser, "optparser", None)
    if optparser is None:
        optparser = parser._getparser()  # type: ignore[attr-defined]
    actions = optparser._option_string_actions
    parts: list[tuple[str, list[str]]] = []
    words = list(args)
    at = 0
    while at < len(words):
        word = words[at]
        at += 1
        if word == "--":
            parts.extend(("", [rest]) for rest in words[at:])
            break
        if not word.startswith("-") or word == "-":
            parts.append(("", [word]))
            continue
        if word.startswith("--"):
            name, equals, _ = word.partition("=")
            action = actions.get(name)
            if action is None:
                parts.append(("?", [word]))
                continue
            if action.nargs == 0 or equals or at >= len(words):
                parts.append((action.dest, [word]))
            else:
                parts.append((action.dest, [word, words[at]]))
                at += 1
            continue
        action = actions.get(word[:2])
        if action is None:
            parts.append(("?", [word]))
        elif action.nargs != 0:
            if len(word) > 2 or at >= len(words):
                parts.append((action.dest, [word]))
            else:
                parts.append((action.dest, [word, words[at]]))
                at += 1
        elif len(word) == 2:
            parts.append((action.dest, [word]))
        else:  # grouped flags: -vx is -v -x (a valued option among them takes the rest)
            rest = word[1:]
            while rest:
                flag = actions.get("-" + rest[0])
                if flag is None:
                    parts.append(("?", ["-" + rest]))
                    break
                if flag.nargs != 0:
                    parts.append((flag.dest, ["-" + rest]))
                    break
                parts.append((flag.dest, ["-" + rest[0]]))
                rest = rest[1:]
    return parts


# -- a process that starts pytest sessions -------------------------------------------------------


def import_pytest_plugins() -> None:
    """Import pytest's own plugins (``_pytest.config.default_plugins``, the modules
    ``pytest.main`` imports for every session) and the installed ones (entry points of the
    ``pytest11`` group, unless ``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` is set), without
    registering any: a session started later in this process, or in a process forked from it,
    finds them imported. A plugin that fails to import is left for that session to report."""
    import importlib
    import os
    from importlib import metadata

    from _pytest.config import default_plugins

    for name in default_plugins:
        with contextlib.suppress(Exception):
            importlib.import_module(f"_pytest.{name}")
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return
    # every distribution's entry points, as pytest reads them (entry_points(group=...) is
    # Python 3.10's; 3.9 has no selection)
    for distribution in metadata.distributions():
        for entry in distribution.entry_points:
            if entry.group == "pytest11":
                with contextlib.suppress(Exception):
                    entry.load()


def fresh_basetemp(config: pytest.Config, path: str) -> None:
    """From now on, the session's temporary folders under ``path``, as ``--basetemp=path``
    makes them: made afresh at first use, whatever the session used before (a session forked
    after its collection, for one list of tests). ``tmpdir.py`` makes the session's
    ``TempPathFactory`` from the options at configure time and keeps it as
    ``config._tmp_path_factory``, which the ``tmp_path_factory`` fixture returns."""
    config.option.basetemp = path
    config._tmp_path_factory = pytest.TempPathFactory.from_config(  # type: ignore[attr-defined]
        config, _ispytest=True)


def warn_at(config: pytest.Config, warning: Warning, file: str, line: int) -> None:
    """A configure-time warning shown at ``file:line`` (an ini line, the command line), or a
    usage error when the warnings filters make it an error.

    Relies on ``Config.issue_config_time_warning`` taking the warning's place from the frame
    ``stacklevel`` above it (pytest 8 and 9), which would be ours: the call is made from a
    one-line function compiled as if written at that line of that file.
    """
    code = compile("\n" * (line - 1) + "def at(c, w): c.issue_config_time_warning(w, 2)\n",
                   file, "exec")
    scope: dict[str, Callable[[pytest.Config, Warning], None]] = {}
    exec(code, scope)  # our own one line, compiled to carry the place
    try:
        scope["at"](config, warning)
    except Warning as error:  # -W error: a usage error, not a traceback
        raise pytest.UsageError(str(error)) from None


# -- assertion rewriting -------------------------------------------------------------------------


def not_rewritten(package: str) -> bool:
    """Take ``package``'s modules off pytest's assertion rewriting, from the next import on;
    whether it was found there to take off.

    pytest rewrites the asserts of every module of an installed plugin's distribution
    (``_mark_plugins_for_rewrite``: the import hook's ``_must_rewrite`` names the package),
    keeping what it rewrote in ``__pycache__`` files of its own. Where byte code is not
    written (``PYTHONDONTWRITEBYTECODE``, a read-only install) every pytest process parses and
    compiles each module again, instead of reading what the install compiled. Measured, the
    built wheel, ``PYTHONDONTWRITEBYTECODE=1``, a one-test suite: 0.57-0.69 s of CPU a pytest
    start, 0.35-0.41 s with this, 0.25-0.29 s without the plugin (3 runs each, alternated,
    loaded machine). The package's asserts are its own checks, not tests: nothing is lost
    without the rewriting."""
    found = False
    for finder in sys.meta_path:
        must = getattr(finder, "_must_rewrite", None)
        cache = getattr(finder, "_marked_for_rewrite_cache", None)
        if type(finder).__name__ != "AssertionRewritingHook" or not isinstance(must, set) or \
                not isinstance(cache, dict):
            continue
        found = found or package in must
        must.discard(package)
        for name in [name for name in cache if name == package or name.startswith(package + ".")]:
            del cache[name]
    return found
