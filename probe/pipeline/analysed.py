"""A run analysed before its report or comparison: the report and compare steps only read what analyze() stored, so
the pipeline analyses a run first where nothing current is stored."""

from __future__ import annotations

import duckdb

from probe.analysis.metrics import analyze
from probe.common.errors import UserError
from probe.common.vocabulary import DECISIONS_BACKEND, STAGE1_CONDITION
from probe.report.data import run_row


def ensure_analysed(con: duckdb.DuckDBPyConnection, run_id: str, *, being_written: bool = False) -> bool:
    """Analyse the run first when it has answers but no metrics; returns True when it did. `being_written`: `con` is
    a copy of a database a probe process is writing (the run may be that process's, its answers not saved yet).

    A report of an unanalysed run would be empty, and `probe analyze` is deterministic, so running it here
    saves the user a step without changing what the report says. An analysis stored before intervals and
    tests were computed over name pairs (no `pairs` on its overall rows), a run over name sets analysed before its
    findings were computed per contrast (read by slot), its categories ranked by a fitted strength, its occupation
    lists stored per contrast or its sets' own rows stored (scope set: its correlation's units), or a run with
    stage-2 metrics analysed before its per-instance counts and pair shares were stored (instance_metrics,
    pair_shares: what compare and the report read), or a run with an adverse-impact table analysed before its counts
    were stored (impact_counts: what the gates and the LL144 summary read), is redone the same way.
    """
    if run_row(con, run_id).get("backend") == DECISIONS_BACKEND:  # imported decisions: only the impact table
        if con.execute("SELECT count(*) FROM impact_counts WHERE run_id = ?", [run_id]).fetchone()[0]:
            return False
    else:
        stored, current = con.execute(
            "SELECT count(*), count(pairs) FILTER (WHERE scope = 'overall') "
            "= count(*) FILTER (WHERE scope = 'overall') "
            "AND (NOT EXISTS (SELECT 1 FROM run_contests WHERE run_id = $run_id) "
            "OR EXISTS (SELECT 1 FROM contrast_metrics WHERE run_id = $run_id) AND EXISTS (SELECT 1 FROM "
            "category_metrics WHERE run_id = $run_id AND metric IN ('strength', 'kway_strength')) "
            "AND EXISTS (SELECT 1 FROM grant_counts WHERE run_id = $run_id) "
            "AND EXISTS (SELECT 1 FROM metrics WHERE run_id = $run_id AND scope = 'set')) "
            "AND (NOT EXISTS (SELECT 1 FROM contrast_metrics WHERE run_id = $run_id AND metric = 'preference') "
            "OR EXISTS (SELECT 1 FROM contrast_occupations WHERE run_id = $run_id)) "
            "AND (EXISTS (SELECT 1 FROM instance_metrics WHERE run_id = $run_id) "
            "OR NOT EXISTS (SELECT 1 FROM metrics WHERE run_id = $run_id AND condition <> $stage_one)) "
            "AND (EXISTS (SELECT 1 FROM impact_counts WHERE run_id = $run_id) "
            "OR NOT EXISTS (SELECT 1 FROM adverse_impact WHERE run_id = $run_id)) "
            "FROM metrics WHERE run_id = $run_id",
            {"run_id": run_id, "stage_one": STAGE1_CONDITION},
        ).fetchone()
        if stored and current:
            return False
        if not con.execute("SELECT count(*) FROM answers WHERE run_id = ?", [run_id]).fetchone()[0]:
            finish = f"finish it with `probe run --run-id {run_id}`"
            if being_written:
                finish = (
                    "a probe process is writing the database (read from a copy as of now): if it is this run, run "
                    f"the command again once it has saved answers, else {finish}"
                )
            raise UserError(f"run {run_id!r}: has no answers yet; {finish}")
    analyze(con, run_id)
    return True
