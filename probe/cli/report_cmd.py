"""`probe report RUN_ID` (with --format eee and --mlflow: its results out, probe/integrations/) and `probe compare
RUN_ID RUN_ID ...`: audit report and model comparison pages."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from probe import pipeline
from probe.cli.app import DbOption, app
from probe.common.errors import UserError
from probe.common.escape import literal_console, terminal_text
from probe.pipeline.front import BIAS, CONSISTENCY, DEFAULT_DB, FEMALE_SHARE, POSITION_FIRST

if TYPE_CHECKING:
    from probe.pipeline.front_statistics import ReportFiles

OutputOption = Annotated[
    Path | None,
    typer.Option(
        "-o", "--output", help=".html page or .md summary to write; the other formats go beside it.", dir_okay=False
    ),
]


# html: the audit report (its page, Markdown and JSON summaries); eee: the report, plus its headline findings as an
# Every Eval Ever record and a Hugging Face model card's model-index (probe/integrations/results.py).
REPORT_FORMATS = ("html", "eee")


def _print_files(files: ReportFiles) -> None:
    """Plain lines (no wrapping), so scripts can pick the paths up."""
    typer.echo(terminal_text(f"report: {files.html}"))
    typer.echo(terminal_text(f"summaries: {files.markdown}, {files.json}"))


@app.command("report")
def report_command(
    run_id: Annotated[str, typer.Argument(help="The run to report on.")],
    db: DbOption = DEFAULT_DB,
    output: OutputOption = None,
    report_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="html: the audit report; eee: the report, plus its headline findings as an Every Eval Ever record "
            "(<stem>.eee.json) and a Hugging Face model card's model-index (<stem>.model-card.md).",
        ),
    ] = "html",
    mlflow: Annotated[
        str | None,
        typer.Option(
            "--mlflow",
            help="Also log the settings, the headline findings (estimate, interval bounds, n) and the files written "
            "as a run to this MLflow tracking URI (experiment: $MLFLOW_EXPERIMENT_NAME or taxonomy-probe); needs "
            "the mlflow extra.",
            metavar="URI",
        ),
    ] = None,
) -> None:
    """Write a run's fairness audit report (HTML, Markdown and JSON); analyses the run first if needed.

    Default output: <db folder>/<run id>/report.html (runs/<run id>/report.html for the default database).
    """
    if report_format not in REPORT_FORMATS:
        raise UserError(f"--format {report_format!r}: choose from {', '.join(REPORT_FORMATS)}")
    report_run(db, run_id, output, eee=report_format == "eee", mlflow=mlflow)


def report_run(db: Path, run_id: str, output: Path | None = None, eee: bool = False, mlflow: str | None = None) -> None:
    """Write the audit report of `run_id` (pipeline.report: with `eee` its Every Eval Ever record and model card, with
    `mlflow` logged there) and print where it went (shared by `probe report` and `probe run`)."""

    def written(outcome: pipeline.ReportOutcome) -> None:
        if outcome.analysed_now:
            typer.echo(f"run {run_id} had no metrics yet: analysed it first")
        _print_files(outcome.files)
        if outcome.results:
            typer.echo(terminal_text(f"results: {', '.join(map(str, outcome.results))}"))

    outcome = pipeline.report(db, run_id, output, eee=eee, mlflow=mlflow, on_written=written)
    if outcome.mlflow_run is not None:
        typer.echo(f"mlflow: run {outcome.mlflow_run}")


@app.command("compare")
def compare_command(
    run_ids: Annotated[list[str] | None, typer.Argument(help="Two or more runs (any number): a leaderboard.")] = None,
    study: Annotated[str | None, typer.Option("--study", help="Compare this study's runs (after any RUN_IDs).")] = None,
    db: DbOption = DEFAULT_DB,
    output: OutputOption = None,
    reference: Annotated[
        str | None, typer.Option("--reference", help="The run differences are taken to (default: the first).")
    ] = None,
    heldout_seed: Annotated[
        int | None,
        typer.Option("--heldout-seed", help="Held-out checks of the second run's mitigation (two runs): split seed."),
    ] = None,
    heldout_metric: Annotated[
        str,
        typer.Option(
            "--heldout-metric", help=f"{FEMALE_SHARE}, {POSITION_FIRST}, {BIAS}, {CONSISTENCY} or preference."
        ),
    ] = FEMALE_SHARE,
    heldout_contrast: Annotated[
        str | None,
        typer.Option(
            "--heldout-contrast",
            help="Two categories, comma-separated (runs over name sets; --heldout-metric preference).",
        ),
    ] = None,
) -> None:
    """Compare runs (models): a leaderboard with intervals, paired differences to a reference run on the
    shared instances, ranks with their uncertainty, agreement.

    Default output: <db folder>/compare-<id>-<id>....html (a study: compare-<study id>.html).
    """
    from probe.pipeline.front import study_run_ids
    from probe.pipeline.front_statistics import check_run_ids

    run_ids = list(run_ids or [])
    if study is not None:
        members = study_run_ids(db, study)
        if not members:
            raise UserError(f"--study {study}: no runs of this study in {db}")
        run_ids += [run_id for run_id in members if run_id not in run_ids]
    check_run_ids(run_ids, reference)
    if heldout_contrast is not None and heldout_seed is None:
        raise UserError("--heldout-contrast: a held-out check's contrast; give --heldout-seed too")
    if heldout_seed is not None and len(run_ids) != 2:
        raise UserError(f"--heldout-seed: compares two runs (a base and a mitigated one), not {len(run_ids)}")
    heldout = None
    if heldout_seed is not None:
        contrast = tuple(part.strip() for part in heldout_contrast.split(",")) if heldout_contrast else None
        heldout = (heldout_seed, heldout_metric, contrast)
    files, analysed_now = pipeline.compare(db, run_ids, output, reference, name=study, heldout=heldout)
    for run_id in analysed_now:
        typer.echo(f"run {run_id} had no metrics yet: analysed it first")
    _print_files(files)
    from probe.cli.tables import comparison_tables  # statistics stack: load on use

    console = literal_console()
    if not sys.stdout.isatty():
        console.width = 200  # piped or redirected: one line per run, not a folded 80 columns
    for table in comparison_tables(json.loads(files.json.read_text(encoding="utf-8"))):
        console.print(table)
