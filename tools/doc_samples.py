"""Re-run the suites behind the docs' error and warning samples; name each that differs.

Each sample below is a small suite (its files, with code at the line numbers the sample
names, or a suite a page shows whole, read from the page by :func:`source`), the pytest
arguments, and the start of the docs' code block that shows its output. The
script runs each suite in a fresh folder and checks that every line of the block is a line of
the run's output, with the folder written as ``/tmp/demo/NAME`` as the docs show it. Samples of
the example suite (``examples/``) and of timings, whose seconds vary from run to run, are not
here: re-run those by hand (the commands are in the docs beside them).

    python tools/doc_samples.py        # exit 1 when a sample differs from its run

Each sample starts a pytest process (a few seconds on a busy machine); CI does not run it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
Layout = dict[int, str]
IMPORT = "import pytest"


def text(layout: Layout | str) -> str:
    """A file whose line N holds ``layout[N]`` (empty lines between)."""
    if isinstance(layout, str):
        return layout
    return "\n".join(layout.get(n, "") for n in range(1, max(layout) + 1)) + "\n"


def blocks(doc: str) -> list[list[str]]:
    """The lines of each code block of ``doc``."""
    found: list[list[str]] = []
    current: list[str] | None = None
    for line in (ROOT / doc).read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if current is None:
                current = []
            else:
                found.append(current)
                current = None
        elif current is not None:
            current.append(line)
    return found


def block(doc: str, start: str) -> list[str]:
    """The lines of the first code block of ``doc`` that starts with ``start``."""
    return next(b for b in blocks(doc) if b and b[0].startswith(start))


def source(doc: str, line: str) -> str:
    """The first code block of ``doc`` with ``line`` in it, as a file: a suite the page shows
    whole is run as the page shows it."""
    for lines in blocks(doc):
        if line in lines:
            return "\n".join(lines) + "\n"
    raise LookupError(f"{doc}: no code block has the line {line!r}")


def run(name: str, files: dict[str, Layout | str], args: list[str]) -> list[str]:
    """The output lines of pytest on ``files``, the folder written as /tmp/demo/NAME."""
    with tempfile.TemporaryDirectory() as scratch:
        where = Path(scratch) / name
        where.mkdir()
        (where / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        for path, layout in files.items():
            (where / path).parent.mkdir(parents=True, exist_ok=True)
            (where / path).write_text(text(layout), encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
             *args], cwd=where, capture_output=True, text=True,
            env={**os.environ, "PYTEST_ADDOPTS": ""},
        )
        output = (done.stdout + done.stderr).replace(str(where), f"/tmp/demo/{name}")
    return output.splitlines()


def _steps() -> Layout:
    layout = {1: IMPORT}
    for i in range(30):
        layout[3 * i + 3] = f'@pytest.mark.depends_on("test_step_{(i + 1) % 30}")'
        layout[3 * i + 4] = f"def test_step_{i}(): pass"
    return layout


def _billing() -> Layout:
    layout = {1: IMPORT}
    for i in range(40):
        layout[3 * i + 3] = f'@pytest.mark.depends_on("tests/test_accounts.py::test_{i}")'
        layout[3 * i + 4] = f"def test_{i}(): pass"
    return layout


def _lock_mistakes(bad: bool) -> Layout:
    """Three bad markers of shared resources (``bad``), else a class block that waits for a
    test that waits for it."""
    return {
        1: IMPORT, 4: f'@pytest.mark.resource_lock("db", mode="{"wirte" if bad else "write"}")',
        5: "def test_migrate(): pass", 8: f"@pytest.mark.weight({0 if bad else 2})",
        9: "def test_build_index(): pass",
        12: '@pytest.mark.exclusive("db")' if bad else "@pytest.mark.exclusive",
        13: "def test_memory_budget(): pass",
        16: '@pytest.mark.resource_lock("db", scope="class")', 17: "class TestOrders:",
        18: "    def test_create(self): pass", 20: '    @pytest.mark.depends_on("test_ship")',
        21: "    def test_refund(self): pass",
        24: '@pytest.mark.depends_on("TestOrders::test_create")', 25: "def test_ship(): pass",
    }


ERRORS = "docs/errors.md"
#: (doc, start of its block, folder name, files, pytest arguments)
SAMPLES: list[tuple[str, str, str, dict[str, Layout | str], list[str]]] = [
    ("README.md", "depgraph: dependency cycle (3 tests)", "net", {"tests/test_net.py": {
        1: IMPORT, 2: "from pytest_depgraph import depends_on", 5: "@pytest.fixture",
        6: '@depends_on("test_c")', 7: "def gateway():", 8: "    return object()",
        14: '@pytest.mark.depends_on("test_b")', 15: "def test_a(): pass",
        20: "def test_b(gateway): pass", 30: '@pytest.mark.depends_on("test_a")',
        31: "def test_c(): pass"}}, ["tests"]),
    (ERRORS, "depgraph: dependency cycle (3 tests)", "cycle", {"tests/test_net.py": {
        1: IMPORT, 2: "from pytest_depgraph import depends_on", 5: "@pytest.fixture",
        6: '@depends_on("test_a")', 7: "def gateway():", 8: "    return 1",
        11: '@pytest.mark.depends_on("test_b")', 12: "def test_a(): pass",
        15: '@pytest.mark.depends_on("test_c")', 16: "def test_b(): pass",
        19: "def test_c(gateway): pass"}}, ["tests"]),
    (ERRORS, "depgraph: dependency cycle (30 tests)", "steps", {"test_steps.py": _steps()}, []),
    (ERRORS, "depgraph: tests/test_net.py:22: self reference", "selfref", {"tests/test_net.py": {
        1: IMPORT, 22: '@pytest.mark.depends_on("TestRoutes")', 23: "class TestRoutes:",
        24: "    def test_list(self): ...", 25: "    def test_add(self): ..."}}, ["tests"]),
    (ERRORS, "depgraph: tests/test_shop.py:5:", "shop", {"tests/test_shop.py": {
        1: IMPORT, 2: "def test_create_user(): pass", 3: "def test_refund(): pass",
        5: '@pytest.mark.depends_on("test_crate_user")', 6: "def test_buy(): pass"}}, ["tests"]),
    (ERRORS, "depgraph: tests/test_shop.py:8:", "colon", {"tests/test_shop.py": {
        1: IMPORT, 2: "def test_create_user(): pass",
        8: '@pytest.mark.depends_on("tests/test_shop.py:test_create_user")',
        9: "def test_pay(): pass"}}, ["tests"]),
    (ERRORS, "depgraph: tests/test_shop.py:11:", "int", {"tests/test_shop.py": {
        1: IMPORT, 11: "@pytest.mark.depends_on(42)", 12: "def test_refund(): pass"}},
     ["tests"]),
    (ERRORS, "depgraph: tests/test_billing.py:3:", "billing", {
        "tests/test_billing.py": _billing(),
        "tests/test_account.py": "".join(f"def test_{i}(): pass\n" for i in range(40))},
     ["tests"]),
    (ERRORS, "depgraph: test_m.py:26:", "huge", {"test_m.py": {
        1: IMPORT, 26: '@pytest.mark.depends_on("x" * 1_000_000)', 27: "def test_huge(): pass"}},
     []),
    (ERRORS, "depgraph: test_m.py:15:", "fixture", {"test_m.py": {
        1: IMPORT, 3: "@pytest.fixture", 4: "def db(): return 1",
        15: '@pytest.mark.depends_on("db")', 16: "def test_fixture_name(db): pass"}}, []),
    (ERRORS, "depgraph: test_items.py:18:", "helpers", {"test_items.py": {
        1: IMPORT, 13: "class Helpers:", 14: "    def create(self): ...",
        18: "@pytest.mark.depends_on(Helpers.create)", 19: "def test_edit(): pass"}}, []),
    (ERRORS, "depgraph: test_items.py:14:", "fixobj", {"test_items.py": {
        1: IMPORT, 3: "@pytest.fixture", 4: "def user(): return 1",
        14: "@pytest.mark.depends_on(user)", 15: "def test_profile(): pass"}}, []),
    (ERRORS, "depgraph: test_items.py:22:", "empty", {"test_items.py": {
        1: IMPORT, 22: "@pytest.mark.depends_on", 23: "def test_delete(): pass"}}, []),
    (ERRORS, "depgraph: test_m.py:27:", "keyword", {"test_m.py": {
        1: IMPORT, 2: "def test_a(): pass",
        27: '@pytest.mark.depends_on("test_a", when="always")', 28: "def test_kw(): pass"}}, []),
    (ERRORS, "depgraph: test_items.py:26:", "onfailure", {"test_items.py": {
        1: IMPORT, 2: "def test_a(): pass",
        26: '@pytest.mark.depends_on("test_a", on_failure=["skip"])',
        27: "def test_rename(): pass"}}, []),
    (ERRORS, "depgraph: test_db.py:7:", "cleanself", {"test_db.py": {
        1: IMPORT, 7: '@pytest.mark.cleanup_of("test_drop_database")',
        8: "def test_drop_database(): pass"}}, []),
    (ERRORS, "depgraph: test_db.py:9:", "cleankw", {"test_db.py": {
        1: IMPORT, 2: "def test_create_database(): pass",
        9: '@pytest.mark.cleanup_of("test_create_database", on_failure="run")',
        10: "def test_drop_database(): pass"}}, []),
    (ERRORS, "depgraph: dependency cycle (2 tests)", "cleancycle", {"test_db.py": {
        1: IMPORT, 3: "def test_create_database(): pass",
        6: '@pytest.mark.cleanup_of("test_create_database")',
        7: "def test_drop_database(): pass",
        10: '@pytest.mark.depends_on("test_create_database", "test_drop_database")',
        11: "def test_database_is_gone(): pass"}}, []),
    ("docs/parallel.md", "__________________________ ERROR collecting test_a.py", "units", {
        "test_a.py": {1: IMPORT, 4: '@pytest.mark.depends_on("test_b.py::test_b2")',
                      5: "def test_a1(): pass", 7: "def test_a2(): pass"},
        "test_b.py": {1: IMPORT, 4: '@pytest.mark.depends_on("test_a.py::test_a2")',
                      5: "def test_b1(): pass", 7: "def test_b2(): pass"}},
     ["-p", "xdist", "-n", "2", "--dist", "loadfile"]),
    ("docs/markers.md", "=============================== warnings summary", "i1", {
        "__init__.py": "", "test_users.py": "def test_create_user():\n    pass\n",
        "test_login.py": {1: IMPORT, 3: "from .test_users import test_create_user",
                          5: "@pytest.mark.depends_on(test_create_user)",
                          6: "def test_login(): pass"}}, []),
    ("docs/markers.md", "2 dependencies and 1 cleanup pulled in by selection:", "subset",
     {"test_db.py": source("docs/markers.md", "def test_insert_rows():")}, ["-k", "query", "-v"]),
    ("docs/markers.md", "SKIPPED [1] test_db.py:4: depgraph: nothing to clean up", "alone",
     {"test_db.py": source("docs/markers.md", "def test_insert_rows():")}, ["-k", "drop", "-rs"]),
    (ERRORS, "_____________________ ERROR collecting tests/test_shop.py", "lockerr",
     {"tests/test_shop.py": _lock_mistakes(True)}, ["tests"]),
    (ERRORS, "depgraph: these tests cannot hold their resources", "lockblocks",
     {"tests/test_shop.py": _lock_mistakes(False)}, ["tests"]),
    (ERRORS, "depgraph: tests/test_shop.py:8: resource 'port'", "lockini", {
        "pytest.ini": "[pytest]\ndepgraph_resources =\n    db\n    sandbox: 2\n",
        "tests/test_shop.py": {
            1: IMPORT, 2: "from pytest_depgraph import resource_lock",
            7: '@pytest.fixture(scope="module")', 8: '@resource_lock("port")',
            9: "def server():", 10: "    yield 1", 11: "def test_home_page(server): pass",
            12: "def test_search(server): pass"}}, ["tests"]),
    (ERRORS, "tests/test_orders.py:12", "locktypo", {"tests/test_orders.py": {
        1: IMPORT, 4: '@pytest.mark.resource_lock("orders_db")', 5: "def test_create(): pass",
        8: '@pytest.mark.resource_lock("orders_db")', 9: "def test_cancel(): pass",
        12: '@pytest.mark.resource_lock("order_db")', 13: "def test_refund(): pass"}},
     ["tests"]),
    (ERRORS, "depgraph: tests/test_shop.py:4: weight(2)", "lockloose", {"tests/test_shop.py": {
        1: IMPORT, 4: "@pytest.mark.weight(2)", 5: "@pytest.mark.weight(4)",
        6: "def test_build_index(): pass",
        9: '@pytest.mark.resource_lock("db", scope="class")', 10: "def test_migrate(): pass"}},
     ["tests"]),
    (ERRORS, "ERROR: depgraph_resources in pytest.ini:3", "lockspace", {
        "pytest.ini": "[pytest]\ndepgraph_resources =\n    my db\n",
        "tests/test_shop.py": {1: "def test_a(): pass"}}, ["tests"]),
    ("docs/options.md", "ERROR: depgraph_durations = durations.json", "durinf", {
        "pytest.ini": "[pytest]\ndepgraph_durations = durations.json\n",
        "durations.json": '{"tests/test_shop.py::test_a": 1e999}',
        "tests/test_shop.py": {1: "def test_a(): pass"}}, ["tests"]),
    ("docs/options.md", "pytest.ini:2", "durmissing", {
        "pytest.ini": "[pytest]\ndepgraph_durations = durations.json\n",
        "tests/test_shop.py": {1: "def test_a(): pass"}}, ["tests"]),
]



def main() -> int:
    differing = 0
    for doc, start, name, files, args in SAMPLES:
        output = set(run(name, files, args))
        missing = [line for line in block(doc, start) if line not in output]
        print(f"{'ok  ' if not missing else 'DIFF'} {doc}: {start}")
        for line in missing:
            print(f"       not printed: {line}")
        differing += bool(missing)
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
