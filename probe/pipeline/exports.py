"""A run out to a folder in any registered format, and another tool's answers back in as a run
(probe/integrations/formats.py holds the formats): `probe export`, `probe import`, Run.export and probe.import_run
all come here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from probe.integrations import formats
from probe.pipeline import RunOutcome, analyze, analyze_if_needed, answer, settings
from probe.store.spec import RunSpec

EXPORT_FORMATS = {name: chosen.help for name, chosen in formats.EXPORTS.items()}  # name -> what it writes


def export(
    db: Path | str,
    run_id: str | None,
    file_format: str,
    out_dir: Path | str,
    design: Mapping[str, object] | None = None,
    config_file: Path | None = None,
    prompt_format: str = "chat",
) -> list[Path]:
    """Write run `run_id` as `file_format` to `out_dir`; without a run (formats of probe items only), the design
    that the settings `design` (RUN.toml keys, `config_file` under them) resolve to. Returns the files written."""

    def resolved_design() -> RunSpec:  # resolved only where a design is exported: a run's export reads no settings
        return settings({**(design or {}), "db": str(db)}, config_file)

    if run_id is not None and formats.export_format(file_format).analysed and Path(db).exists():
        analyze_if_needed(db, run_id)
    return formats.export(file_format, Path(out_dir), db, run_id, resolved_design, prompt_format)


def import_run(tool: str, files: Sequence[Path], run_id: str, db: Path | str, model: str | None = None) -> RunOutcome:
    """A run (created, or resumed from the same files) of the answers `tool` recorded for exported items, analysed.
    `model` names it in the run record (default: the model the files name, else the files' names)."""
    from probe.integrations.imports import import_settings

    answers, named = formats.read_answers(tool, files)
    config, backend = import_settings(Path(db), run_id, tool, list(files), answers, model or named)
    answer(config, backend=backend)
    return analyze(db, run_id)
