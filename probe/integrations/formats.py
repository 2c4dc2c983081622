"""Every format a run leaves or comes back in, one registry line each: `probe export`, `probe import` and the
Python API (Run.export, probe.import_run) dispatch here, so a new format is its module plus one line below.

An export format writes either a run's stored tables (`design=False`: it needs a run) or the probe's items as
another tool reads them (`design=True`: a run's items and answers, or a design's items without a model, built
once in source.py). An import format reads another tool's files into answers by item id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from probe.common.errors import UserError

if TYPE_CHECKING:
    from probe.integrations.imports import ImportedAnswer
    from probe.store.spec import RunSpec


@dataclass(frozen=True)
class Format:
    """A format's writer or reader, named as `module:function` and imported only when the format is asked for
    (each tool is an optional extra)."""

    target: str
    help: str
    design: bool = False  # export: writes probe items (a design without a run too), not a run's tables
    analysed: bool = False  # export: reads what analyze() stored (the run is analysed first where it is not)

    def function(self) -> Callable[..., Any]:
        module, name = self.target.split(":")
        return getattr(import_module(module), name)


EXPORTS = {
    "parquet": Format("probe.report.export:export_run", "the run's items and answers as Parquet"),
    "csv": Format("probe.report.export:export_run", "the run's items and answers as CSV"),
    "ll144": Format(
        "probe.report.ll144:write_ll144",
        "the LL144 summary of results (6 RCNY 5-301) as CSV, Markdown and HTML",
        analysed=True,
    ),
    "hf-dataset": Format("probe.integrations.hf_dataset:write_dataset", "a Hugging Face dataset", design=True),
    "lm-eval": Format("probe.integrations.lm_eval_task:write_task", "an lm-evaluation-harness task", design=True),
    "inspect": Format("probe.integrations.inspect_task:write_task", "an Inspect AI task", design=True),
}
IMPORTS = {
    "lm-eval": Format("probe.integrations.imports:read_lm_eval_samples", "lm-evaluation-harness --log_samples"),
    "inspect": Format("probe.integrations.inspect_task:read_inspect_log", "an Inspect AI log"),
}
MODEL_FREE_FORMATS = ("chat", "completion")  # prompt formats of a design exported without a model


def export_format(name: str) -> Format:
    """The export format called `name`; any other name is the user's to fix."""
    if name not in EXPORTS:
        raise UserError(f"--format {name!r}: choose from {', '.join(EXPORTS)}")
    return EXPORTS[name]


def export(
    name: str,
    out_dir: Path,
    db: Path | str,
    run_id: str | None,
    design: Callable[[], RunSpec] | None = None,
    prompt_format: str = "chat",
) -> list[Path]:
    """Write format `name` to `out_dir`: run `run_id`, or (formats of probe items only) the design `design()`
    resolves, without a model. Returns the files written."""
    from probe.integrations import source

    chosen = export_format(name)
    if not chosen.design:
        if run_id is None:
            raise UserError(f"--format {name}: give the RUN_ID to export")
        return chosen.function()(Path(db), run_id, name, out_dir)
    if run_id is not None:
        exported = source.from_run(Path(db), run_id)
    else:
        if prompt_format not in MODEL_FREE_FORMATS:
            raise UserError(f"--prompt-format {prompt_format!r}: choose from {', '.join(MODEL_FREE_FORMATS)}")
        if design is None:
            raise UserError(f"--format {name}: give a RUN_ID, or the design's settings to export without a model")
        exported = source.from_design(design(), prompt_format)
    return chosen.function()(exported, out_dir)


def read_answers(name: str, files: Sequence[Path]) -> tuple[list[ImportedAnswer], str | None]:
    """Another tool's answers to exported items, and the model its files name (None where they name none)."""
    if name not in IMPORTS:
        raise UserError(f"{name!r}: choose a tool from {', '.join(IMPORTS)}")
    return IMPORTS[name].function()(files)
