"""User-facing errors: one line, no traceback, no secret."""

import sys

from probe.common.redact import scrub


class UserError(Exception):
    """A mistake in the user's input (file, row, option). The CLI prints it on one line and exits 2."""

    exit_code = 2

    def show(self) -> None:
        """One line on stderr: no key (a server's reply may echo it), no raw control character (it may hold
        escape sequences, as may a file's contents or a flag)."""
        from probe.common.escape import terminal_text  # pandas and rich: not for every importer of errors

        print(f"error: {terminal_text(scrub(' '.join(str(self).splitlines())))}", file=sys.stderr)


class RunFailed(UserError):
    """The run cannot go on (server unreachable, key or model rejected, too many failed answers): exit 1.

    The run is marked failed and keeps its answers; the same command resumes it.
    """

    exit_code = 1


class RunInterrupted(RunFailed):
    """SIGTERM or SIGHUP: the batch in flight was saved, the run is marked interrupted; exit 128 + signal."""

    def __init__(self, signal_number: int, message: str) -> None:
        super().__init__(message)
        self.exit_code = 128 + signal_number
