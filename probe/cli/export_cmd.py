"""`probe export RUN_ID --format parquet|csv|hf-dataset|lm-eval|inspect -o DIR` (DESIGN section 8).

parquet and csv are the run's tables (probe/report/export.py); the other formats are the probe as a Hugging Face
dataset, an lm-evaluation-harness task folder and an Inspect AI task (probe/integrations/). Without RUN_ID, those
three export the design without a model: stage 1, baseline and control, from the run settings given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from probe.cli.app import DbOption, app
from probe.cli.options import ConditionsOption, ConfigOption, OccupationsOption, PairsOption, PresetOption, TopKOption
from probe.common.escape import terminal_text
from probe.pipeline.exports import EXPORT_FORMATS, export
from probe.pipeline.front import DEFAULT_DB


@app.command("export")
def export_command(
    out_dir: Annotated[Path, typer.Option("-o", "--output", help="Output folder.")],
    run_id: Annotated[
        str | None,
        typer.Argument(
            help="The run to export (hf-dataset, lm-eval, inspect: optional, without it the design without a model)."
        ),
    ] = None,
    file_format: Annotated[
        str, typer.Option("--format", help="; ".join(f"{name}: {what}" for name, what in EXPORT_FORMATS.items()))
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
    design = {"preset": preset, "pairs": pairs, "occupations": occupations, "top_k": top_k, "conditions": conditions}
    for path in export(db, run_id, file_format, out_dir, design, config, prompt_format):
        typer.echo(terminal_text(path))
