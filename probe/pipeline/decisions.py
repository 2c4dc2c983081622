"""Decisions made elsewhere in, as runs: `probe import decisions FILE`, `probe import bloomberg DIR` and
probe.import_decisions come here; the run is then analysed, reported, gated, compared and exported as a probed one."""

from __future__ import annotations

from pathlib import Path

from probe.answering.bloomberg import models, read_bloomberg
from probe.answering.decisions import Decisions, read_decisions, store_decisions
from probe.common.errors import UserError
from probe.pipeline import RunOutcome, analyze
from probe.store.config import RUN_ID
from probe.store.db import connect


def import_decisions(path: Path | str, run_id: str, db: Path | str, model: str | None = None) -> RunOutcome:
    """A decisions CSV or Parquet file as run `run_id`, analysed. `model` names what decided (default: the
    file's name). A bad file or a taken run id stores nothing."""
    path = Path(path)
    return _store(read_decisions(path), run_id, db, model or path.name)


def import_bloomberg(directory: Path | str, db: Path | str, prefix: str = "bloomberg") -> list[RunOutcome]:
    """Each model's rankings in the Bloomberg study's folder as run `<prefix>-<model>`, analysed."""
    directory = Path(directory)
    return [_store(read_bloomberg(directory, model), f"{prefix}-{model}", db, model) for model in models(directory)]


def _store(decisions: Decisions, run_id: str, db: Path | str, model: str) -> RunOutcome:
    if not RUN_ID.fullmatch(run_id):
        raise UserError(f"--run-id {run_id!r}: a run id is letters, digits, '.', '_' or '-' (at most 64), starting "
                        "with a letter or digit")  # fmt: skip
    con = connect(db)
    try:
        store_decisions(con, run_id, decisions, model)
    finally:
        con.close()
    return analyze(db, run_id)
