"""`probe import lm-eval SAMPLES.jsonl ... --run-id ID` and `probe import inspect LOG --run-id ID`: the answers
lm-evaluation-harness or Inspect AI recorded for exported items, as a run (probe/integrations/imports.py);
`probe import decisions FILE` and `probe import bloomberg DIR`: decisions made elsewhere, as runs
(probe/pipeline/decisions.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from probe.cli.analyze_cmd import print_decisions, print_headline
from probe.cli.app import DbOption, app
from probe.pipeline.decisions import import_bloomberg, import_decisions
from probe.pipeline.exports import import_run
from probe.pipeline.front import DEFAULT_DB

import_app = typer.Typer(help="Make a run of the answers another evaluation tool recorded.", no_args_is_help=True)
app.add_typer(import_app, name="import")

RunIdOption = Annotated[str, typer.Option("--run-id", help="The run to create (the same files again: resumed).")]
ModelOption = Annotated[
    str | None, typer.Option("--model", help="The model's name for the run record (default: the files' names).")
]


@import_app.command("lm-eval")
def lm_eval_command(
    samples: Annotated[list[Path], typer.Argument(help="The harness's --log_samples JSONL files of the tasks.")],
    run_id: RunIdOption,
    db: DbOption = DEFAULT_DB,
    model: ModelOption = None,
) -> None:
    """A run from lm-evaluation-harness samples of a `probe export --format lm-eval` task."""
    _import("lm-eval", samples, run_id, db, model)


@import_app.command("inspect")
def inspect_command(
    log: Annotated[
        Path, typer.Argument(help="The Inspect AI log (.eval or .json) of a `probe export --format inspect` task.")
    ],
    run_id: RunIdOption,
    db: DbOption = DEFAULT_DB,
    model: ModelOption = None,
) -> None:
    """A run from an Inspect AI log of a `probe export --format inspect` task."""
    _import("inspect", [log], run_id, db, model)


def _import(tool: str, files: list[Path], run_id: str, db: Path, model: str | None) -> None:
    """Create (or, the same files again, resume) the run through the pipeline, analyse it, print its headline."""
    outcome = import_run(tool, files, run_id, db, model)
    typer.echo(outcome.run_id)
    print_headline(outcome)


@import_app.command("decisions")
def decisions_command(
    file: Annotated[
        Path,
        typer.Argument(
            help="CSV or Parquet: set_id, name, one column per attribute, selected "
            "(0/1) or rank (1 = top); optional job, score, source."
        ),
    ],
    run_id: RunIdOption,
    db: DbOption = DEFAULT_DB,
    model: Annotated[
        str | None, typer.Option("--model", help="What made the decisions (default: the file's name).")
    ] = None,
    period: Annotated[
        str | None, typer.Option("--period", help="When the decisions were made (stated in the LL144 summary).")
    ] = None,
) -> None:
    """A run of decisions made elsewhere (a screener's picks, a vendor's scores): adverse impact, report, gates."""
    print_decisions(import_decisions(file, run_id, db, model, period))


@import_app.command("bloomberg")
def bloomberg_command(
    directory: Annotated[
        Path, typer.Argument(help="The study's repository (or its data/intermediary/resume_ranking folder).")
    ],
    db: DbOption = DEFAULT_DB,
    prefix: Annotated[
        str, typer.Option("--run-id", help="The runs' prefix: one run PREFIX-MODEL per model.")
    ] = "bloomberg",
) -> None:
    """Bloomberg's 2024 GPT resume rankings (their raw files) as one decisions run per model."""
    for outcome in import_bloomberg(directory, db, prefix):
        print_decisions(outcome)
