"""The plugin turned off: our fixtures say so in one line, importing the package changes
nothing, and ``pytest_depgraph.depends_on`` works on tests either way."""

from __future__ import annotations

import pytest

from .helpers import names

VALUES = """
import pytest
import pytest_depgraph

def test_make(depgraph):
    depgraph.publish("x", 1)

x = pytest_depgraph.output_fixture("test_make", "x")

def test_read(x):
    assert x == 1
"""

#: the decorator from the package, on tests: an edge with the plugin, a no-op without
DECORATED = """
from pytest_depgraph import depends_on

@depends_on("test_second")
def test_first():
    pass

def test_second():
    pass
"""


def test_fixtures_say_the_plugin_is_off(pytester: pytest.Pytester) -> None:
    # a conftest that imports the depgraph fixture keeps it when the plugin is off
    pytester.makeconftest("from pytest_depgraph.plugin import depgraph  # noqa: F401\n")
    pytester.makepyfile(test_values=VALUES)
    result = pytester.runpytest("-p", "no:depgraph", "-rE")
    result.assert_outcomes(errors=2)
    for fixture in ("depgraph", "x"):
        result.stdout.fnmatch_lines([
            f"*depgraph: fixture '{fixture}' needs the pytest-depgraph plugin, which is off in "
            "this run (-p no:depgraph, or PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 without -p "
            "depgraph): load it with -p depgraph."
        ])
    result.stdout.no_fnmatch_line("*KeyError*")


def test_importing_the_package_with_the_plugin_off(pytester: pytest.Pytester) -> None:
    """A subprocess: the marker decorator is installed process-wide while a session with the
    plugin runs (this one)."""
    pytester.makeconftest("import pytest_depgraph\n")
    pytester.makepyfile(
        test_decorated=DECORATED,
        test_marked="""
        import pytest

        def test_a():
            pass

        @pytest.mark.depends_on("test_a")
        def test_b():
            pass
        """,
    )
    off = ("-p", "no:depgraph", "-p", "no:randomly", "-v")
    # --strict-markers rejects the unregistered marker, as if the package were not imported
    result = pytester.runpytest_subprocess(*off, "--strict-markers")
    result.stdout.fnmatch_lines(["*'depends_on' not found in `markers` configuration option*"])
    # the decorator form runs either way: pytest's order without the plugin...
    result = pytester.runpytest_subprocess(*off, "--strict-markers", "test_decorated.py")
    result.assert_outcomes(passed=2)
    assert names(result) == ["test_first", "test_second"]
    # ...dependency order with it
    result = pytester.runpytest("-p", "no:randomly", "-v", "--strict-markers",
                                "test_decorated.py")
    assert names(result) == ["test_second", "test_first"]


@pytest.mark.parametrize("above", [True, False], ids=["above", "below"])
def test_mark_on_fixture_is_an_error_above_or_below(
    pytester: pytest.Pytester, above: bool
) -> None:
    """pytest 8 ignores a mark above @pytest.fixture with a deprecation warning only (pytest 9
    refuses it): either way the run stops and says what to use."""
    mark = '@pytest.mark.depends_on("test_a")'
    decorators = f"{mark}\n@pytest.fixture" if above else f"@pytest.fixture\n{mark}"
    pytester.makepyfile(
        test_f=f"""
import pytest

{decorators}
def token():
    pass

def test_a(): pass
def test_b(token): pass
"""
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    output = result.stdout.str()
    assert "Marks cannot be applied to fixtures" in output or (
        "depgraph: test_f.py:3: @pytest.mark.depends_on on fixture 'token' has no effect"
        in output
    )
    result.stdout.fnmatch_lines(["*from pytest_depgraph import depends_on*"])
