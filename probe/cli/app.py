"""The typer application and the options every command shares."""

from pathlib import Path
from typing import Annotated

import typer


app = typer.Typer(
    name="probe",
    help="Probe language models for gender bias with O*NET-grounded question answering.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

DbOption = Annotated[Path, typer.Option("--db", help="DuckDB database file.", dir_okay=False)]
