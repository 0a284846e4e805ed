"""Command-line options and ini settings of the plugin, and their resolved values."""

from __future__ import annotations

import argparse

import pytest


def add_options(parser: pytest.Parser) -> None:
    """Register ``--depgraph-*`` options and their ini twins."""
    group = parser.getgroup("depgraph", "dependency graph (pytest-depgraph)")
    group.addoption(
        "--depgraph-parallelism",
        type=_parallelism,
        default=None,
        metavar="N",
        help="at most N tests in flight at once (a number, or 'auto': one per CPU, as -n "
        "auto). With -n W the default is W; N > 1 without -n starts N xdist workers (needs "
        "pytest-xdist loaded). (ini: depgraph_parallelism)",
    )
    group.addoption(
        "--depgraph-dot",
        default=None,
        metavar="PATH",
        help="write the reduced dependency graph as Graphviz DOT to PATH (.dot or .gv; '-' for "
        "stdout); a picture PATH (.svg, .png, .pdf, .jpg, ...) is rendered with Graphviz "
        "'dot'. (ini: depgraph_dot)",
    )
    group.addoption(
        "--depgraph-report",
        default=None,
        metavar="PATH",
        help="write a self-contained HTML page of the run to PATH (.html): a timeline per "
        "worker, what each test waited for, the critical path, the graph. "
        "(ini: depgraph_report)",
    )
    group.addoption(
        "--depgraph-no-deps",
        action="store_true",
        default=None,
        help="do not pull the dependencies of selected tests into the run; a test whose "
        "dependency is not selected is skipped, naming it. (ini: depgraph_no_deps)",
    )
    group.addoption(
        "--depgraph-ignore-deps",
        action="store_true",
        default=None,
        help="run the selected tests without the tests they depend on: no pull-in, and a "
        "dependency that is not selected neither orders nor skips them (to run one test "
        "alone). (ini: depgraph_ignore_deps)",
    )
    group.addoption(
        "--depgraph-strict",
        action="store_true",
        default=None,
        help="a name in a pytest-dependency or pytest-order marker that matches no test is a "
        "collection error (default: a warning, and that plugin's own treatment). "
        "(ini: depgraph_strict)",
    )
    group.addoption(
        "--depgraph-timings",
        action="store_true",
        default=False,
        help="print how long each graph phase took (resolve, validate, order, reduce), wall and "
        "CPU time",
    )
    group.addoption(
        "--depgraph-shard",
        default=None,
        metavar="K/N",
        help="run only the K-th of N shards of the selected tests (1 <= K <= N); a shard holds "
        "whole groups of dependent tests, balanced by expected duration",
    )
    group.addoption(
        "--depgraph-durations",
        default=None,
        metavar="PATH",
        help="known durations, a JSON object of node id -> seconds (pytest-split's "
        ".test_durations): on xdist the longest path runs first by them, and they balance "
        "--depgraph-shard; default: the last run's, from pytest's cache. "
        "(ini: depgraph_durations)",
    )
    group.addoption(
        "--depgraph-store-durations",
        default=None,
        metavar="PATH",
        help="merge this run's test durations into the JSON file PATH at the end of the session "
        "(the format --depgraph-durations reads). (ini: depgraph_store_durations)",
    )
    _add_discover_options(group)
    parser.addini(
        "depgraph_parallelism",
        "default for --depgraph-parallelism: a whole number, or auto (one per CPU)",
        default="",
    )
    parser.addini("depgraph_dot", "default for --depgraph-dot", default="")
    parser.addini("depgraph_report", "default for --depgraph-report", default="")
    parser.addini("depgraph_no_deps", "default for --depgraph-no-deps", type="bool", default=False)
    parser.addini("depgraph_durations", "default for --depgraph-durations", default="")
    parser.addini(
        "depgraph_store_durations", "default for --depgraph-store-durations", default=""
    )
    parser.addini(
        "depgraph_ignore_deps", "default for --depgraph-ignore-deps", type="bool", default=False
    )
    parser.addini("depgraph_strict", "default for --depgraph-strict", type="bool", default=False)
    parser.addini(
        "depgraph_resources",
        "the shared resources of resource_lock, one a line: 'name', or 'name: N' for N writers "
        "at once (default 1); when set, any other name is an error",
        type="linelist",
        default=[],
    )


def _add_discover_options(group: pytest.OptionGroup) -> None:
    group.addoption(
        "--depgraph-discover",
        action="store_true",
        default=False,
        help="instead of running the tests, find the dependencies between them that nobody "
        "declared: run them in orders consistent with the declared graph, each order in a "
        "fresh process (-n N: N processes at once), and report each test that needs or "
        "conflicts with another, with the declaration to add",
    )
    group.addoption(
        "--depgraph-discover-verify",
        type=_at_least_one,
        default=3,
        metavar="K",
        help="with --depgraph-discover: run each pair found both ways K times; only an outcome "
        "that repeats every time is reported (default 3)",
    )
    group.addoption(
        "--depgraph-discover-json",
        default=None,
        metavar="PATH",
        help="with --depgraph-discover: also write the findings to PATH as JSON",
    )
    # a discovery's child process: the tests to run and where to record them (internal)
    group.addoption("--depgraph-discover-child", default=None, help=argparse.SUPPRESS)


def _at_least_one(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


class Settings:
    """Resolved option values (command line over ini)."""

    __slots__ = ("discover", "discover_child", "discover_json", "discover_verify", "dot",
                 "durations", "ignore_deps", "no_deps", "parallelism", "report", "resources",
                 "shard", "store_durations", "strict", "timings")

    def __init__(
        self, parallelism: int | None, dot: str | None, no_deps: bool, *,
        timings: bool = False, shard: tuple[int, int] | None = None,
        durations: str | None = None, store_durations: str | None = None,
        report: str | None = None, ignore_deps: bool = False, strict: bool = False,
        resources: dict[str, int] | None = None, discover: bool = False,
        discover_verify: int = 3, discover_json: str | None = None,
        discover_child: str | None = None,
    ) -> None:
        self.parallelism = parallelism
        self.dot = dot
        self.no_deps = no_deps
        self.timings = timings
        #: (K, N) of --depgraph-shard
        self.shard = shard
        self.durations = durations
        self.store_durations = store_durations
        self.report = report
        #: ``--depgraph-ignore-deps``: unselected dependencies are left out of the graph
        self.ignore_deps = ignore_deps
        self.strict = strict
        #: ``depgraph_resources``: each shared resource's capacity (None: not set)
        self.resources = resources
        #: ``--depgraph-discover``: a discovery session instead of a run
        self.discover = discover
        #: ``--depgraph-discover-verify``: how many times each pair found is run both ways
        self.discover_verify = discover_verify
        #: ``--depgraph-discover-json``: where the findings go as JSON
        self.discover_json = discover_json
        #: ``--depgraph-discover-child``: this process is a discovery's child; its list's file
        self.discover_child = discover_child


#: the words ``-n`` takes for "one worker per CPU" (xdist decides how many that is)
AUTO = ("auto", "logical")


def _parallelism(value: str) -> int | str:
    """``--depgraph-parallelism``'s value: a whole number, or auto/logical as for ``-n``."""
    if value.strip().lower() in AUTO:
        return value.strip().lower()
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is neither a whole number nor 'auto'"
        ) from None


def read_settings(config: pytest.Config) -> Settings:
    """Resolve options; a bad ini value is a usage error naming the setting."""
    parallelism = config.getoption("depgraph_parallelism")
    where = "--depgraph-parallelism"
    if parallelism is None:
        raw, _ = _text(config, "depgraph_parallelism")
        if raw:
            where = f"depgraph_parallelism = {raw} in the ini file"
            try:
                parallelism = _parallelism(raw)
            except argparse.ArgumentTypeError:
                raise pytest.UsageError(
                    f"depgraph_parallelism = {raw!r} in the ini file is neither a whole number "
                    "nor 'auto'"
                ) from None
    if isinstance(parallelism, int) and parallelism < 1:
        raise pytest.UsageError(f"{where}: must be at least 1, got {parallelism}")
    if parallelism is not None:
        _needs_xdist(config, where, parallelism)
    if isinstance(parallelism, str):
        parallelism = max(1, int(config.hook.pytest_xdist_auto_num_workers(config=config)))
    dot = _text(config, "depgraph_dot")[0] or None
    report = _text(config, "depgraph_report")[0] or None
    no_deps = _switch(config, "depgraph_no_deps")
    shard = None
    raw_shard = config.getoption("depgraph_shard")
    if raw_shard is not None:
        from pytest_depgraph.core.shard import parse  # only --depgraph-shard needs it

        try:
            shard = parse(raw_shard)
        except ValueError as error:
            raise pytest.UsageError(f"--depgraph-shard {error}") from None
    ignore_deps = _switch(config, "depgraph_ignore_deps")
    if ignore_deps and no_deps:
        raise pytest.UsageError(
            "--depgraph-no-deps and --depgraph-ignore-deps exclude each other: choose whether a "
            "test whose dependency is not selected is skipped (--depgraph-no-deps) or runs "
            "without it (--depgraph-ignore-deps)"
        )
    strict = _switch(config, "depgraph_strict")
    return Settings(
        parallelism=parallelism,
        dot=dot,
        no_deps=no_deps,
        timings=bool(config.getoption("depgraph_timings")),
        shard=shard,
        durations=_path(config, "depgraph_durations"),
        store_durations=_path(config, "depgraph_store_durations"),
        report=report,
        strict=strict,
        ignore_deps=ignore_deps,
        resources=_resources(config),
        discover=bool(config.getoption("depgraph_discover")),
        discover_verify=int(config.getoption("depgraph_discover_verify")),
        discover_json=config.getoption("depgraph_discover_json"),
        discover_child=config.getoption("depgraph_discover_child"),
    )


def _resources(config: pytest.Config) -> dict[str, int] | None:
    """``depgraph_resources`` as name -> capacity (None: not set); a line that is not a name
    or ``name: N`` with N >= 1 is a usage error naming the ini file's line."""
    lines = [str(line).strip() for line in config.getini("depgraph_resources")]
    lines = [line for line in lines if line]
    if not lines:
        return None
    capacity: dict[str, int] = {}
    for line in lines:
        name, colon, count = (part.strip() for part in line.partition(":"))
        if (colon and not (count.isdigit() and int(count) >= 1)) or not name:
            raise pytest.UsageError(
                f"depgraph_resources{_ini_line(config, line)}: {line!r} is not a resource: "
                "write its name, or 'name: N' with N a whole number of at least 1 (the most "
                "tests that write it at once)"
            )
        if not colon and len(name.split()) > 1:
            joined = "_".join(name.split())
            raise pytest.UsageError(
                f"depgraph_resources{_ini_line(config, line)}: {line!r} is not a resource name: "
                f"a name has no spaces, one a line. Write {joined!r} (and the same name in its "
                "resource_lock marks), or 'name: N' for a capacity"
            )
        if name in capacity:
            raise pytest.UsageError(
                f"depgraph_resources{_ini_line(config, line)}: {name!r} is listed twice"
            )
        capacity[name] = int(count) if colon else 1
    return capacity


def _ini_line(config: pytest.Config, line: str) -> str:
    """`` in FILE:N``, the ini file's line that holds ``line`` ("" when not found)."""
    inipath = config.inipath
    if inipath is None:
        return ""
    try:
        text = inipath.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return f" in {inipath.name}"
    for number, found in enumerate(text.splitlines(), 1):
        if found.strip() == line or found.strip().strip("\"'") == line:
            return f" in {inipath.name}:{number}"
    return f" in {inipath.name}"


def durations_option(config: pytest.Config) -> tuple[str, str, int]:
    """Where ``--depgraph-durations``' path came from: (words for a message, the file and the
    line a warning about it is shown at). The option: its words, and no file (line 0); the
    ini key: its words, the ini file and the key's line in it."""
    raw, given = _text(config, "depgraph_durations")
    if given:
        return f"--depgraph-durations {raw}", "", 0
    inipath = config.inipath
    if inipath is None:  # pragma: no cover - an ini value comes from an ini file
        return f"depgraph_durations = {raw}", "", 0
    line = 0
    try:
        for number, text in enumerate(inipath.read_text(encoding="utf-8").splitlines(), 1):
            if text.strip().startswith("depgraph_durations"):
                line = number
                break
    except (OSError, UnicodeDecodeError):
        pass
    where = f"{inipath.name}:{line}" if line else inipath.name
    return f"depgraph_durations = {raw} in {where}", str(inipath), line


def dot_option(config: pytest.Config, path: str) -> str:
    """Where the DOT path came from, for a message: the option, or the ini line and file."""
    return _origin(config, "depgraph_dot", path)


def report_option(config: pytest.Config, path: str) -> str:
    """Where the run report's path came from, for a message (as :func:`dot_option`)."""
    return _origin(config, "depgraph_report", path)


def _origin(config: pytest.Config, name: str, path: str) -> str:
    if _text(config, name)[1]:
        return f"--{name.replace('_', '-')} {path}"
    where = f" in {config.inipath.name}" if config.inipath is not None else ""
    return f"{name} = {path}{where}"


def _path(config: pytest.Config, name: str) -> str | None:
    """A path option: the command line's as given, the ini file's relative to its folder."""
    raw, given = _text(config, name)
    if given or not raw:
        return raw or None
    base = config.inipath.parent if config.inipath is not None else config.rootpath
    return str(base / raw)


def _text(config: pytest.Config, name: str) -> tuple[str, bool]:
    """A setting written as text: the command line's value when given there (and True), else
    the ini file's, stripped ("" when neither gives it; and False)."""
    given = config.getoption(name)
    if given:
        return str(given), True
    return str(config.getini(name)).strip(), False


def _switch(config: pytest.Config, name: str) -> bool:
    """A switch: the command line's when given there (on or off), else the ini file's."""
    given = config.getoption(name)
    return bool(config.getini(name) if given is None else given)


def _needs_xdist(config: pytest.Config, where: str, parallelism: int | str) -> None:
    """More than one test at a time runs on xdist workers: a usage error when it is not loaded
    (``-p no:xdist``, or plugin autoloading turned off without ``-p xdist``)."""
    if parallelism == 1 or config.pluginmanager.has_plugin("xdist"):
        return
    raise pytest.UsageError(
        f"{where}: running tests in parallel needs pytest-xdist, which is not loaded in this "
        "run (-p no:xdist, or PYTEST_DISABLE_PLUGIN_AUTOLOAD is set). Load it with -p xdist, "
        "or set the parallelism to 1 to run serially."
    )
