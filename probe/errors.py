"""User-facing errors: one line, exit code 2, no traceback."""

import sys


class UserError(Exception):
    """A mistake in the user's input (file, row, option). The CLI prints it on one line and exits 2."""

    exit_code = 2

    def show(self) -> None:
        print(f"error: {self}", file=sys.stderr)
