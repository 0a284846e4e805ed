"""Target resolution, pure: strings, functions and classes into node numbers."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from pytest_depgraph.collect.targets import TargetIndex, boundary_prefixes, is_path_qualified

IDS = [
    "tests/test_db.py::test_query[sqlite]",
    "tests/test_db.py::test_query[pg]",
    "tests/test_db.py::TestMigrations::test_up",
    "tests/test_db.py::TestMigrations::test_down",
    "tests/test_db.py::test_connect",
    "tests/integration/test_flow.py::test_flow",
    "tests/integration/test_flow.py::TestX::test_y",
    "tests/test_db_extra.py::test_more",
]


def _index() -> TargetIndex:
    return TargetIndex(IDS, [None] * len(IDS), [None] * len(IDS))


def _names(nodes: Sequence[int]) -> list[str]:
    return [IDS[n] for n in nodes]


def test_boundary_prefixes() -> None:
    assert boundary_prefixes("a/b/test_x.py::C::t[1/2]") == [
        "a/", "a/b/", "a/b/test_x.py", "a/b/test_x.py::C", "a/b/test_x.py::C::t",
        "a/b/test_x.py::C::t[1/2]",
    ]
    assert boundary_prefixes("test_x.py::t") == ["test_x.py", "test_x.py::t"]


def test_path_qualified_detection() -> None:
    assert is_path_qualified("tests/test_db.py")
    assert is_path_qualified("tests/integration/")
    assert is_path_qualified("TestMigrations::test_up")
    assert not is_path_qualified("test_query")
    assert not is_path_qualified("tests/integration")


def test_path_targets_match_at_boundaries_only() -> None:
    index = _index()
    me = "tests/test_db.py::test_connect"
    assert _names(index.resolve("tests/test_db.py", me)) == IDS[:5]
    assert _names(index.resolve("tests/test_db.py::TestMigrations", me)) == IDS[2:4]
    assert _names(index.resolve("tests/test_db.py::test_query", me)) == IDS[:2]
    assert _names(index.resolve("tests/test_db.py::test_query[pg]", me)) == [IDS[1]]
    assert _names(index.resolve("tests/integration/", me)) == IDS[5:7]
    # "tests/test_db" is not a boundary of "tests/test_db_extra.py"
    assert not index.resolve("tests/test_db.py::test_q", me)


def test_path_relative_to_the_test_file_directory() -> None:
    index = _index()
    me = "tests/integration/test_flow.py::test_flow"
    assert _names(index.resolve("../test_db.py::test_connect", me)) == [IDS[4]]
    assert _names(index.resolve("test_flow.py::TestX", me)) == [IDS[6]]
    assert _names(index.resolve("./test_flow.py::TestX::test_y", me)) == [IDS[6]]


def test_bare_names_own_class_first_then_module() -> None:
    ids = [
        "t.py::test_a",
        "t.py::TestK::test_a",
        "t.py::TestK::test_b",
        "t.py::test_b",
    ]
    index = TargetIndex(ids, [None] * 4, [None] * 4)
    assert index.resolve("test_a", "t.py::TestK::test_b") == [1]
    assert index.resolve("test_a", "t.py::test_b") == [0]
    assert index.resolve("TestK", "t.py::test_b") == [1, 2]
    assert index.resolve("TestK::test_a", "t.py::test_b") == [1]


def test_parametrized_bare_name_is_a_meta_node() -> None:
    index = _index()
    me = "tests/test_db.py::test_connect"
    assert _names(index.resolve("test_query", me)) == IDS[:2]
    assert _names(index.resolve("test_query[sqlite]", me)) == [IDS[0]]


def test_objects_resolve_by_identity() -> None:
    def test_f() -> None: ...

    class TestC: ...

    ids = ["t.py::test_f[1]", "t.py::test_f[2]", "t.py::TestC::test_m"]
    index = TargetIndex(ids, [test_f, test_f, None], [None, None, TestC])
    assert index.resolve(test_f, "t.py::x") == [0, 1]
    assert index.resolve(TestC, "t.py::x") == [2]


def test_suggestions_prefer_the_same_module() -> None:
    index = _index()
    assert index.suggest("test_conect", "tests/test_db.py::test_query[pg]") == ["test_connect"]
    assert "tests/test_db.py::test_connect" in index.suggest(
        "tests/test_db.py::test_conect", "tests/integration/test_flow.py::test_flow"
    )


def test_class_qualified_name_from_a_nested_class() -> None:
    ids = ["t.py::TestOuter::TestInner::test_in", "t.py::TestOuter::test_out"]
    index = TargetIndex(ids, [None] * 2, [None] * 2)
    assert index.resolve("TestInner::test_in", "t.py::TestOuter::test_out") == [0]


def test_the_tables_made_on_demand_hold_every_boundary_prefix() -> None:
    """The prefixes with ``::`` and the paths, each table made when first needed, answer as
    one table of every boundary prefix would (odd ids included)."""
    ids = [*IDS, "a/b.py::t[x::y]", "c.py[p]", "d.py::C::::t", "e.py::C::t[1]", "e.py::C::t[2]"]
    full: dict[str, list[int]] = {}
    for node, nodeid in enumerate(ids):
        for prefix in boundary_prefixes(nodeid):
            full.setdefault(prefix, []).append(node)
    index = TargetIndex(ids, [None] * len(ids), [None] * len(ids))
    for prefix, nodes in full.items():
        assert index._prefixes(prefix) == nodes, prefix
    assert index._prefixes("e.py::C::t[") is None and index._prefixes("nowhere.py") is None


def test_resolving_a_declaration_at_once_is_resolving_each_target() -> None:
    """resolve_all (the build's: one call per declaration, a name in the module of a test
    outside classes looked up directly) gives what resolve gives for each target, whatever
    its form."""

    class Text(str):
        pass

    targets: list[object] = [
        "tests/test_db.py::test_connect", " tests/test_db.py::test_connect ",
        "test_db.py::TestMigrations::test_up", "integration/test_flow.py::test_flow",
        "test_up", "test_query", "tests/integration/", "TestX::test_y",
        Text("tests/test_db.py::test_connect"), "tests/test_db.py::test_gone", "nothing",
        _index,
    ]
    for nodeid in (IDS[2], IDS[5], IDS[7]):
        expected = [(t, list(_index().resolve(t, nodeid))) for t in targets]
        found = [(t, list(m)) for t, m in _index().resolve_all(targets, nodeid)]
        assert found == expected
    assert [list(m) for _, m in _index().resolve_all(targets[:2], IDS[0])] == [[4], [4]]


_PARTS = st.sampled_from(["a.py", "b/c.py", "TestA", "TestB", "t", "u", "t[1]"])


@given(
    st.lists(st.lists(_PARTS, min_size=1, max_size=4), min_size=1, max_size=8),
    st.lists(st.sampled_from(["t", "u", "TestA::t", "TestB::u", "a.py::t", "a.py::TestA::t",
                              "c.py::t", "b/", "b/c.py", "./a.py::u", "t[1]", " u ", "x"]),
                      max_size=5),
)
def test_names_in_nested_classes_resolve_at_once_as_each_target(
    paths: list[list[str]], targets: list[str]
) -> None:
    """resolve_all's direct look-ups (a name in each scope around the test, innermost first; a
    node id as written) give what resolve gives, in nested classes and modules alike."""
    ids = ["::".join(["a.py" if n % 2 else "b/c.py", *path]) for n, path in enumerate(paths)]
    index = TargetIndex(ids, [None] * len(ids), [None] * len(ids))
    for nodeid in ids:
        expected = [(t, list(index.resolve(t, nodeid))) for t in targets]
        assert [(t, list(m)) for t, m in index.resolve_all(targets, nodeid)] == expected
