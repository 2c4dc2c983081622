"""`probe analyze RUN_ID`: compute a run's metrics into the database, optionally print the headline."""

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from probe.cli.app import DbOption, app
from probe.db import DEFAULT_DB, connect
from probe.errors import UserError


def analyze_and_print(db: Path | str, run_id: str, *, show: bool) -> None:
    """Analyse a stored run; with `show`, print the headline metrics and the preferred occupations.

    `probe run` calls this after its last answer, so a run always ends analysed.
    """
    from probe.metrics import analyze, headline_table, preference_table  # statistics stack: load on use

    if not Path(db).exists():
        raise UserError(f"{db}: no such database")
    con = connect(db)
    try:
        analyze(con, run_id)
        if show:
            console = Console()
            console.print(headline_table(con, run_id))
            console.print(preference_table(con, run_id))
    finally:
        con.close()


@app.command("analyze")
def analyze_command(
    run_id: Annotated[str, typer.Argument(help="The run to analyse.")],
    db: DbOption = DEFAULT_DB,
    show: Annotated[
        bool, typer.Option("--show", help="Print the headline metrics and the preferred occupations.")
    ] = False,
) -> None:
    """Compute a run's metrics, occupation preferences, correlations and regression (replacing old ones)."""
    analyze_and_print(db, run_id, show=show)
    if not show:
        typer.echo(f"analysed run {run_id}; `probe analyze {run_id} --show` prints the headline")
