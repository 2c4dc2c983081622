"""Decisions made elsewhere in, as runs: `probe import decisions FILE`, `probe import bloomberg DIR` and
probe.import_decisions come here; the run is then analysed, reported, gated, compared and exported as a probed one."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from probe.answering.bloomberg import models, read_bloomberg
from probe.answering.decisions import Decisions, read_decisions, store_decisions
from probe.common.errors import UserError
from probe.common.user_text import checked_text
from probe.common.vocabulary import DECISIONS_BACKEND
from probe.pipeline import analyze
from probe.store.config import RUN_ID
from probe.store.db import connect

OVERALL_IMPACT = (
    "SELECT attribute, rate_kind, category, n, rate, impact_ratio, ci_low, ci_high, p_value, unknown "
    "FROM adverse_impact WHERE run_id = ? AND scope = 'overall' ORDER BY attribute, rate_kind, category"
)


@dataclass(frozen=True)
class DecisionsOutcome:
    """An imported decisions run in brief: its id, database, people and sets, and its overall impact rows."""

    run_id: str
    db: str
    people: int
    sets: int
    impact: pd.DataFrame  # OVERALL_IMPACT's columns


def import_decisions(
    path: Path | str, run_id: str, db: Path | str, model: str | None = None, period: str | None = None
) -> DecisionsOutcome:
    """A decisions CSV or Parquet file as run `run_id`, analysed. `model` names what decided (default: the
    file's name), `period` when (the LL144 summary states it). A bad file or a taken run id stores nothing."""
    path = Path(path)
    model = checked_text(model or path.name, "--model")  # printed in the report as the file's names are
    period = checked_text(period, "--period") if period else None
    return _store(dataclasses.replace(read_decisions(path), period=period), run_id, db, model)


def import_bloomberg(directory: Path | str, db: Path | str, prefix: str = "bloomberg") -> list[DecisionsOutcome]:
    """Each model's rankings in the Bloomberg study's folder as run `<prefix>-<model>`, analysed."""
    directory = Path(directory)
    return [_store(read_bloomberg(directory, model), f"{prefix}-{model}", db, model) for model in models(directory)]


def _store(decisions: Decisions, run_id: str, db: Path | str, model: str) -> DecisionsOutcome:
    if not RUN_ID.fullmatch(run_id):
        raise UserError(
            f"--run-id {run_id!r}: a run id is letters, digits, '.', '_' or '-' (at most 64), starting "
            "with a letter or digit"
        )
    con = connect(db)
    try:
        store_decisions(con, run_id, decisions, model)
    finally:
        con.close()
    analyze(db, run_id)
    outcome = decisions_outcome(db, run_id)
    assert outcome is not None  # stored above as a decisions run
    return outcome


def decisions_outcome(db: Path | str, run_id: str) -> DecisionsOutcome | None:
    """An analysed imported decisions run in brief (`probe import`, `probe analyze --show`); None for a probed run."""
    con = connect(db, read_only=True)
    try:
        if con.execute("SELECT backend FROM runs WHERE run_id = ?", [run_id]).fetchone() != (DECISIONS_BACKEND,):
            return None
        size = "SELECT count(*), count(DISTINCT set_id) FROM run_people WHERE run_id = ?"
        people, sets = con.execute(size, [run_id]).fetchone()
        impact = con.execute(OVERALL_IMPACT, [run_id]).df()
    finally:
        con.close()
    return DecisionsOutcome(run_id, str(db), people, sets, impact)
