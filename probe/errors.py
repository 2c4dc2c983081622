"""User-facing errors: one line, exit code 2, no traceback."""

import click


class UserError(click.ClickException):
    """A mistake in the user's input (file, row, option). The CLI prints it on one line and exits 2.

    Subclassing ClickException lets click's standalone mode print it without a traceback, both from the
    console script and from typer's test runner.
    """

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"error: {self.format_message()}", err=True, file=file)
