"""`probe import lm-eval SAMPLES.jsonl ... --run-id ID` and `probe import inspect LOG --run-id ID`: the answers
lm-evaluation-harness or Inspect AI recorded for exported items, as a run (probe/integrations/imports.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from probe import pipeline
from probe.cli.analyze_cmd import print_headline
from probe.cli.app import DbOption, app
from probe.store.db import DEFAULT_DB

if TYPE_CHECKING:
    from probe.integrations.imports import ImportedAnswer

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
    from probe.integrations.imports import read_lm_eval_samples

    _import(db, run_id, "lm-eval", samples, read_lm_eval_samples(samples), model)


@import_app.command("inspect")
def inspect_command(
    log: Annotated[Path, typer.Argument(help="The Inspect AI log (.eval or .json) of a `probe export --format "
                                            "inspect` task.")],
    run_id: RunIdOption,
    db: DbOption = DEFAULT_DB,
    model: ModelOption = None,
) -> None:
    """A run from an Inspect AI log of a `probe export --format inspect` task."""
    from probe.integrations.inspect_task import read_inspect_log

    answers, logged_model = read_inspect_log(log)
    _import(db, run_id, "inspect", [log], answers, model or logged_model)


def _import(db: Path, run_id: str, tool: str, files: list[Path], answers: list[ImportedAnswer],
            model: str | None) -> None:  # fmt: skip
    """Create (or, the same files again, resume) the run through the pipeline, analyse it, print its headline."""
    from probe.integrations.imports import import_settings

    config, backend = import_settings(db, run_id, tool, files, answers, model)
    pipeline.answer(config, backend=backend)
    pipeline.analyze(db, run_id)
    typer.echo(run_id)
    print_headline(db, run_id)
