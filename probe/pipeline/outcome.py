"""What a finished run leaves the user, read once after its analysis: `probe run` (and `probe analyze --show`,
`probe import`) print it; the API hands it back."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pandas as pd


@dataclass(frozen=True)
class RunOutcome:
    """A run in brief: its size, the items the backend could not answer, and the analysis's headline rows."""

    run_id: str
    db: str
    items: int
    failed_items: int  # items answered with an error after the backend's retries: stored as unknown
    overall: pd.DataFrame  # scope overall: condition, metric, value, ci_low, ci_high, n, p_value
    preferred: pd.DataFrame  # occupations preferred at BH q < 0.05: condition, preferred, occupation, share_female
    occupation_pairs: list[int]  # the name pairs behind each occupation_preference row (what it could test)
    # a run over name sets: its findings per contrast (contrast_metrics rows; empty for a run over name pairs)
    contrasts: pd.DataFrame | None = None


def read_outcome(con: duckdb.DuckDBPyConnection, run_id: str, db: str) -> RunOutcome:
    """An analysed run's outcome."""
    from probe.analysis.contrasts import DIRECT  # the statistics stack, loaded on use: probe --help needs no scipy

    failed, items = con.execute(
        "SELECT count(*) FILTER (WHERE error IS NOT NULL), count(*) FROM answers WHERE run_id = ?", [run_id]
    ).fetchone()
    overall = con.execute(
        "SELECT condition, metric, value, ci_low, ci_high, n, p_value FROM metrics WHERE run_id = ? "
        "AND scope = 'overall'",
        [run_id],
    ).df()
    preferred = con.execute(
        "SELECT condition, preferred, occupation, share_female, q_value FROM occupation_preference "
        "WHERE run_id = ? AND preferred <> 'none' ORDER BY condition, preferred, share_female",
        [run_id],
    ).df()
    pairs = [
        row[0] for row in con.execute("SELECT pairs FROM occupation_preference WHERE run_id = ?", [run_id]).fetchall()
    ]
    contrasts = con.execute(  # its direct findings (docs/groups.md): the report has the others
        "SELECT condition, attribute, category_a, category_b, metric, estimate, ci_low, ci_high, p_value, sets, "
        "comparisons, flagged FROM contrast_metrics WHERE run_id = ? AND list_contains(?, metric) "
        "ORDER BY condition, attribute, metric, category_a, category_b",
        [run_id, list(DIRECT)],
    ).df()
    return RunOutcome(run_id, db, int(items), int(failed), overall, preferred, pairs, contrasts)
