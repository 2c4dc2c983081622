"""`probe export RUN_ID --format parquet|csv|hf-dataset|lm-eval|inspect -o DIR` (DESIGN section 8).

parquet and csv are the run's tables (probe/report/export.py); the other formats are the probe as a Hugging Face
dataset, an lm-evaluation-harness task folder and an Inspect AI task (probe/integrations/). Without RUN_ID, those
three export the design without a model: stage 1, baseline and control, from the run settings given.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from probe import pipeline
from probe.cli.app import DbOption, app
from probe.cli.run_cmd import ConditionsOption, ConfigOption, OccupationsOption, PairsOption, PresetOption, TopKOption
from probe.common.errors import UserError
from probe.common.escape import terminal_text
from probe.report.export import EXPORT_FORMATS, export_run
from probe.store.db import DEFAULT_DB

if TYPE_CHECKING:
    from probe.integrations.source import Exported

INTEGRATION_FORMATS = ("hf-dataset", "lm-eval", "inspect")
MODEL_FREE_FORMATS = ("chat", "completion")


@app.command("export")
def export_command(
    out_dir: Annotated[Path, typer.Option("-o", "--output", help="Output folder.")],
    run_id: Annotated[str | None, typer.Argument(help="The run to export (hf-dataset, lm-eval, inspect: optional, "
                                                      "without it the design without a model).")] = None,
    file_format: Annotated[
        str, typer.Option("--format", help=f"{', '.join((*EXPORT_FORMATS, *INTEGRATION_FORMATS))}.")
    ] = "parquet",
    db: DbOption = DEFAULT_DB,
    preset: PresetOption = None,
    pairs: PairsOption = None,
    occupations: OccupationsOption = None,
    top_k: TopKOption = None,
    conditions: ConditionsOption = None,
    config: ConfigOption = None,
    prompt_format: Annotated[
        str, typer.Option("--prompt-format", help="Without RUN_ID: chat (a chat model's user message) or completion.")
    ] = "chat",
) -> None:
    """Write a run's items and answers to a folder: its tables (parquet, csv), or a Hugging Face dataset, an
    lm-evaluation-harness task or an Inspect AI task."""
    if file_format in EXPORT_FORMATS:
        if run_id is None:
            raise UserError(f"--format {file_format}: give the RUN_ID to export")
        written = export_run(db, run_id, file_format, out_dir)
    elif file_format in INTEGRATION_FORMATS:
        from probe.integrations import source

        if run_id is not None:
            exported = source.from_run(db, run_id)
        else:
            if prompt_format not in MODEL_FREE_FORMATS:
                raise UserError(f"--prompt-format {prompt_format!r}: choose from {', '.join(MODEL_FREE_FORMATS)}")
            flags = {"preset": preset, "pairs": pairs, "occupations": occupations, "top_k": top_k,
                     "conditions": conditions, "db": str(db)}  # fmt: skip
            exported = source.from_design(pipeline.settings(flags, config), prompt_format)
        written = _write(file_format, exported, out_dir)
    else:
        raise UserError(f"--format {file_format!r}: choose from {', '.join((*EXPORT_FORMATS, *INTEGRATION_FORMATS))}")
    for path in written:
        typer.echo(terminal_text(path))


def _write(file_format: str, exported: Exported, out_dir: Path) -> list[Path]:
    """Each writer is imported only when its format is asked for."""
    if file_format == "hf-dataset":
        from probe.integrations.hf_dataset import write_dataset

        return write_dataset(exported, out_dir)
    if file_format == "lm-eval":
        from probe.integrations.lm_eval_task import write_task

        return write_task(exported, out_dir)
    from probe.integrations.inspect_task import write_task as write_inspect_task

    return write_inspect_task(exported, out_dir)
