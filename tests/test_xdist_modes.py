"""Other --dist modes: a warning names what they cannot honour; same-worker skips still work."""

from __future__ import annotations

import pytest


def test_loadfile_warns_and_skips_dependents_of_a_failure_in_the_same_file(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_one="""
        import pytest

        def test_create():
            assert 0

        @pytest.mark.depends_on("test_create")
        def test_use():
            pass
        """,
        test_two="""
        import pytest

        @pytest.mark.depends_on("test_one.py::test_create", on_failure="run")
        def test_elsewhere():
            pass
        """,
    )
    result = pytester.runpytest_subprocess("-n", "2", "-p", "xdist", "--dist", "loadfile", "-rs")
    result.assert_outcomes(failed=1, skipped=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "*--dist loadfile cannot honour 1 of 2 dependencies*",
            "*depgraph: upstream test_one.py::test_create failed*",
        ],
        consecutive=False,
    )
