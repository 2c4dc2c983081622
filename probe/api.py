"""The Python API (DESIGN.md section 9): `probe.run(...)` and `probe.open_run(...)` return a `Run`.

Keyword names are the RUN.toml settings (probe.store.config.RunConfig), and a run goes through the same
pipeline as `probe run` (probe.pipeline), so a notebook and the command line store the same things.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from probe import pipeline
from probe.common.errors import UserError
from probe.store.db import DEFAULT_DB, connect

# answers(): the item (what was asked, prompt included) and the stored answer, one row per item.
_ANSWERS_SQL = """
SELECT i.item_id, i.stage, i.qtype, i.condition, i.pair_id, i.name_order, i.first_name, i.second_name,
       i.occupation, i.subject, i.category, i.attribute, i.prompt, i.options_json,
       a.label, a.raw, a.scores_json, a.decided_by, a.error, a.cached
FROM items i LEFT JOIN answers a USING (run_id, item_id)
WHERE i.run_id = ?
ORDER BY i.seq
"""


@dataclass(frozen=True)
class Run:
    """A stored run: its id and database. Every method reads the database afresh."""

    run_id: str
    db: str = str(DEFAULT_DB)

    def metrics(self) -> pd.DataFrame:
        """The run's metrics: condition, scope, key, metric, value, ci_low, ci_high, n (analysed if needed)."""
        return self._query(
            "SELECT condition, scope, key, metric, value, ci_low, ci_high, n FROM metrics WHERE run_id = ? "
            "ORDER BY condition, scope, key, metric",
            analysed=True,
        )

    def answers(self) -> pd.DataFrame:
        """Every item of the run with its answer: stage, qtype, condition, names, prompt, options, label, scores."""
        return self._query(_ANSWERS_SQL)

    def report(self, path: str | Path) -> Path:
        """Write the audit report to `path` (.html, or .md for Markdown; the other formats beside it)."""
        files, _ = pipeline.report(self.db, self.run_id, path)
        return files.markdown if Path(path).suffix.lower() == ".md" else files.html

    def _query(self, sql: str, *, analysed: bool = False) -> pd.DataFrame:
        _check_exists(self.run_id, self.db)
        if analysed:
            pipeline.analyze_if_needed(self.db, self.run_id)
        con = connect(self.db, read_only=True)
        try:
            return con.execute(sql, [self.run_id]).df()
        finally:
            con.close()


def run(**settings: object) -> Run:
    """Run (or, with an existing run_id, resume) a probe and analyse it, as `probe run` does.

    `settings` are RUN.toml keys: preset, pairs, names, occupations, top_k, conditions, backend, model,
    answers, run_id, db, ... (config=PATH reads a RUN.toml first). Progress bars are off unless quiet=False.
    """
    config_file = settings.pop("config", None)
    settings.setdefault("quiet", True)
    config = pipeline.settings(settings, Path(str(config_file)) if config_file else None)
    return Run(pipeline.run(config), config.db)


def open_run(run_id: str, db: str | Path = DEFAULT_DB) -> Run:
    """The stored run `run_id` of database `db`."""
    _check_exists(run_id, db)
    return Run(run_id, str(db))


def _check_exists(run_id: object, db: str | Path) -> None:
    """A run id that is not a string, or names no run of `db`, is the caller's mistake: say so, not DuckDB."""
    if not isinstance(run_id, str):
        raise UserError(f"run_id: expected a run id (a string), got {run_id!r}")
    con = connect(db, read_only=True)
    try:
        found = con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]
    finally:
        con.close()
    if not found:
        raise UserError(f"{run_id}: no such run in {db}")
