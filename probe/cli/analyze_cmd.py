"""`probe analyze RUN_ID`: compute a run's metrics into the database, optionally print the headline."""

from typing import Annotated

import typer
from rich.console import Console

from probe.cli.app import DbOption, app
from probe.db import DEFAULT_DB, connect
from probe.errors import UserError
from probe.metrics import analyze, headline_table, preference_table


@app.command("analyze")
def analyze_command(
    run_id: Annotated[str, typer.Argument(help="The run to analyse.")],
    db: DbOption = DEFAULT_DB,
    show: Annotated[
        bool, typer.Option("--show", help="Print the headline metrics and the preferred occupations.")
    ] = False,
) -> None:
    """Compute a run's metrics, occupation preferences, correlations and regression (replacing old ones)."""
    if not db.exists():
        raise UserError(f"{db}: no such database")
    con = connect(db)
    try:
        analyze(con, run_id)
        console = Console()
        if show:
            console.print(headline_table(con, run_id))
            console.print(preference_table(con, run_id))
        else:
            console.print(f"analysed run {run_id}; `probe analyze {run_id} --show` prints the headline")
    finally:
        con.close()
