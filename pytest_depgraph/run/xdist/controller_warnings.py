"""Warnings shown by the xdist controller, which runs no test to warn from."""

from __future__ import annotations

import re
import warnings

import pytest

#: a message that names its place first, as the plan's warnings do: ``depgraph: a.py:12: …``
_PLACE = re.compile(r"depgraph: (?P<file>[^\s:]+):(?P<line>\d+): ")


def record_warning(
    config: pytest.Config, message: str, where: tuple[str, int] | None = None
) -> None:
    """Show a warning in the controller's warnings summary, located at ``where`` (file,
    line), else at the place the message names first (relative to the rootdir), else nowhere
    in particular (the command line)."""
    if where is None:
        found = _PLACE.match(message)
        where = (
            (str(config.rootpath / found["file"]), int(found["line"]))
            if found else ("pytest command line", 0)
        )
    filename, line = where
    config.hook.pytest_warning_recorded.call_historic(
        kwargs={
            "warning_message": warnings.WarningMessage(
                pytest.PytestWarning(message), pytest.PytestWarning, filename, line
            ),
            "when": "runtest",
            "nodeid": "",
            "location": None,
        }
    )
