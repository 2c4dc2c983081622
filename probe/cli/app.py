"""The typer application and the options every command shares."""

import sys
import traceback
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from probe.common.errors import RunFailed, UserError
from probe.common.escape import terminal_text
from probe.common.redact import scrub
from probe.common.version import __version__
from probe.pipeline.front import write_failure


class _OneLineUserErrors(TyperGroup):
    """Prints a UserError as one line and exits 2, from the console script and typer's CliRunner alike.

    Library code raises UserError without knowing about the CLI; this is the one place that turns it into output.
    """

    def main(self, *args, **kwargs):
        try:
            return super().main(*args, **kwargs)
        except UserError as error:
            error.show()
            sys.exit(error.exit_code)
        except OSError as error:  # an output path that cannot be written (no folder, no permission, full disk)
            where = f"{error.filename}: " if error.filename else ""
            UserError(f"{where}{error.strerror or error}").show()
            sys.exit(UserError.exit_code)
        except Exception as error:  # a bug: the traceback is for a bug report, scrubbed (it may quote a server's reply)
            failed_write = write_failure(error)  # not a bug: a full disk
            if failed_write:
                RunFailed(failed_write).show()
                sys.exit(RunFailed.exit_code)
            print(terminal_text(scrub(traceback.format_exc()), keep_newlines=True), file=sys.stderr, end="")
            sys.exit(1)


app = typer.Typer(
    name="probe",
    help="Probe language models for gender bias with O*NET-grounded question answering.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_OneLineUserErrors,
)


def _print_version(show: bool) -> None:
    if show:
        typer.echo(f"probe (taxonomy-probe) {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option("--version", help="Print the version and exit.", callback=_print_version, is_eager=True),
    ] = False,
) -> None:
    """Probe language models for gender bias with O*NET-grounded question answering."""


DbOption = Annotated[Path, typer.Option("--db", help="DuckDB database file.", dir_okay=False)]
