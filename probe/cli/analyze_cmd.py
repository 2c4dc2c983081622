"""`probe analyze RUN_ID`: compute a run's metrics into the database, optionally print the headline."""

from pathlib import Path
from typing import Annotated

import typer

from probe import pipeline
from probe.cli.app import DbOption, app
from probe.common.escape import literal_console
from probe.store.db import DEFAULT_DB, connect


def print_headline(db: Path | str, run_id: str) -> None:
    """Print an analysed run's headline metrics and preferred occupations (`probe run` ends with this)."""
    from probe.cli.tables import headline_table, preference_table  # statistics stack: load on use

    con = connect(db, read_only=True)
    try:
        console = literal_console()
        console.print(headline_table(con, run_id))
        console.print(preference_table(con, run_id))  # a table, or one line where no occupation is preferred
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
    pipeline.analyze(db, run_id)
    if show:
        print_headline(db, run_id)
    else:
        typer.echo(f"analysed run {run_id}; `probe analyze {run_id} --show` prints the headline")
