"""A file written after the run: one summary line says where it went, or why it could not be.

As ``--junitxml`` does, and also under ``-q``: a file asked for on a quiet run is still worth
its line (``-qq`` prints none). A file that was asked for and could not be written turns a
passing run into a usage error, whatever the verbosity: the run must not look like a silent
success.
"""

from __future__ import annotations

import pytest


class WrittenFile:
    """Base of the plugins that write a file at the end of the session (DOT, run report)."""

    def __init__(self) -> None:
        #: the line for the terminal summary, and whether it reports an error
        self.outcome: tuple[str, bool] | None = None

    def written(self, line: str) -> None:
        """The file was written: ``line`` says where."""
        self.outcome = (line, False)

    def failed(self, session: pytest.Session, message: str) -> None:
        """The file could not be written: say why; a passing run exits with a usage error."""
        self.outcome = (f"depgraph: {message}", True)
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.outcome is None:
            return
        line, failed = self.outcome
        if failed:
            terminalreporter.write_line(line, red=True, bold=True)
        elif terminalreporter.config.get_verbosity() >= -1:
            terminalreporter.write_sep("-", line)
