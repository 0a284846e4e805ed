"""Warnings shown by the xdist controller, which runs no test to warn from."""

from __future__ import annotations

import warnings

import pytest


def record_warning(
    config: pytest.Config, message: str, where: tuple[str, int] | None = None
) -> None:
    """Show a warning in the controller's warnings summary, located at ``where`` (file,
    line) -- by default here."""
    filename, line = where or (__file__, 0)
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
