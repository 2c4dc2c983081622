"""`probe analyze RUN_ID`: compute a run's metrics into the database, optionally print the headline."""

from pathlib import Path
from typing import Annotated

import typer

from probe import pipeline
from probe.cli.app import DbOption, app
from probe.common.escape import literal_console, terminal_text
from probe.pipeline.decisions import DecisionsOutcome, decisions_outcome
from probe.pipeline.front import DEFAULT_DB
from probe.pipeline.outcome import RunOutcome


def print_headline(outcome: RunOutcome) -> None:
    """Print an analysed run's headline metrics and preferred occupations (`probe run` ends with this)."""
    from probe.cli.tables import contrast_table, headline_table, preference_table  # statistics stack: load on use

    console = literal_console()
    console.print(headline_table(outcome))
    if outcome.contrasts is not None and not outcome.contrasts.empty:  # a run over name sets: findings by group
        console.print(contrast_table(outcome))
    else:
        console.print(preference_table(outcome))  # a table, or one line where no occupation is preferred


def print_decisions(outcome: DecisionsOutcome) -> None:
    """The run id, its size and its overall impact ratios, one line each."""
    typer.echo(f"{outcome.run_id}: {outcome.people} people in {outcome.sets} sets")
    for row in outcome.impact.itertuples():
        interval = "" if row.ci_low != row.ci_low else f" [{row.ci_low:.2f}, {row.ci_high:.2f}]"
        typer.echo(
            terminal_text(
                f"  {row.attribute} {row.rate_kind} {row.category}: n {row.n}, rate {row.rate:.3f}, "
                f"impact ratio {row.impact_ratio:.2f}{interval}, unknown {row.unknown}"
            )
        )


@app.command("analyze")
def analyze_command(
    run_id: Annotated[str, typer.Argument(help="The run to analyse.")],
    db: DbOption = DEFAULT_DB,
    show: Annotated[
        bool, typer.Option("--show", help="Print the headline metrics and the preferred occupations.")
    ] = False,
    workforce: Annotated[
        Path | None,
        typer.Option(
            "--workforce",
            dir_okay=False,
            help="Your own labour statistics to compare the run with: a CSV "
            "with the columns of taxonomy/workforce.csv (at least soc_code, pct_women; a source column or "
            "the file's name names it). Default: the shipped BLS source.",
        ),
    ] = None,
) -> None:
    """Compute a run's metrics, occupation preferences, correlations and regression (replacing old ones)."""
    outcome = pipeline.analyze(db, run_id, workforce)
    imported = decisions_outcome(db, run_id) if show else None
    if imported is not None:  # no name pairs, no occupations: its people's impact ratios
        print_decisions(imported)
    elif show:
        print_headline(outcome)
    else:
        typer.echo(f"analysed run {run_id}; `probe analyze {run_id} --show` prints the headline")
