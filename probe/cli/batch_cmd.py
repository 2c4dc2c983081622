"""`probe batch export` and `probe batch import`: a run answered by a batch engine (OpenAI Batch API, vLLM
run_batch) through JSONL files (probe/backends/openai_batch.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from probe import pipeline
from probe.cli.app import DbOption, app
from probe.pipeline.batch import export_requests, import_results
from probe.pipeline.front import DEFAULT_DB

batch_app = typer.Typer(help="Answer a run with a batch engine: export requests, import results.", no_args_is_help=True)
app.add_typer(batch_app, name="batch")


@batch_app.command("export")
def export_command(
    run_id: Annotated[str, typer.Argument(help="The batch run (recorded on the first export).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="requests.jsonl to write.", dir_okay=False)],
    config: Annotated[
        Path | None, typer.Option("--config", help='RUN.toml of a new run: backend = "openai", model, design.')
    ] = None,
    db: DbOption = DEFAULT_DB,
) -> None:
    """Write the requests of the stage in progress (stage 1, then stage 2) in the OpenAI Batch format."""
    stage, count = export_requests(db, run_id, output, config)
    if count:
        typer.echo(f"{output}: {count:,} stage-{stage} requests of run {run_id}")
    else:
        typer.echo(f"run {run_id} has every answer: nothing to export")


@batch_app.command("import")
def import_command(
    run_id: Annotated[str, typer.Argument(help="The batch run the results answer.")],
    results: Annotated[Path, typer.Argument(help="results.jsonl from the batch engine.", dir_okay=False)],
    db: DbOption = DEFAULT_DB,
) -> None:
    """Store the answers of a results file; report every line that was not imported, by its number."""
    report = import_results(db, run_id, results)
    for problem in report.problems:
        typer.echo(f"{results}: {problem}", err=True)
    typer.echo(
        f"imported {report.imported:,} answers ({report.already:,} already imported, "
        f"{len(report.problems):,} lines not imported)"
    )
    if report.complete:
        pipeline.analyze(db, run_id)
        typer.echo(f"run {run_id} is complete and analysed: probe report {run_id} --db {db}")
    elif report.pending:
        typer.echo(
            f"{report.pending:,} stage-{report.stage} items have no answer yet: "
            f"probe batch export {run_id} -o FILE --db {db}"
        )
