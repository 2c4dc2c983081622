"""analyze()'s reads (probe/analysis/run_counts.py): the impact counts come through Arrow (issue 49) as the frame
`.df()` gave, column types included, and a run over name sets in two wordings reads its grants once, summing them
over the wordings as metrics.sql `grant_counts` does, so every statistic computed from them is the same."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import pandas as pd

from bench.synthetic import create_synthetic_run
from probe.analysis.metrics import metric_queries
from probe.analysis.run_counts import RunCounts, read_counts
from probe.store import db
from tests.analysis.test_contrast_findings import planted_run


def counts_and_query(con: duckdb.DuckDBPyConnection, run_id: str, query: str) -> tuple[RunCounts, pd.DataFrame]:
    """read_counts of the run (its instances built first, as analyze() does), and metrics.sql's `query` of it."""
    queries = metric_queries()
    con.execute(queries["instances"], {"run_id": run_id})
    with ThreadPoolExecutor(max_workers=1) as pool:
        counts = read_counts(con, run_id, queries, "bls-cps-2022", pool)
    return counts, con.execute(queries[query], {"run_id": run_id}).df()


def test_the_impact_counts_read_through_arrow_are_the_frame_of_df(tmp_path: Path) -> None:
    con = db.connect(tmp_path / "counts.duckdb")
    try:
        create_synthetic_run(con, "small", pairs=3, occupations=4)
        counts, expected = counts_and_query(con, "small", "impact_counts")
    finally:
        con.close()
    assert len(expected) == 3 * 3 * 2 * 2 * (4 + 1)  # conditions x sets x categories x rate kinds x (occupations + 1)
    assert counts.impact_counts["name"].dtype == object and not counts.name_sets
    assert counts.heterogeneity.result()["pairs"].tolist() == [3, 3, 3]  # the test between pairs, started early
    pd.testing.assert_frame_equal(counts.impact_counts, expected, check_exact=True)


def test_a_run_without_stage_2_answers_reads_the_empty_frame_of_df(tmp_path: Path) -> None:
    con = db.connect(tmp_path / "empty.duckdb")
    try:
        create_synthetic_run(con, "small", pairs=3, occupations=4)
        con.execute("DELETE FROM items WHERE run_id = 'small' AND stage = 2")
        counts, expected = counts_and_query(con, "small", "impact_counts")
    finally:
        con.close()
    assert expected.empty and expected["condition"].dtype == object
    pd.testing.assert_frame_equal(counts.impact_counts, expected, check_exact=True)


def test_a_set_run_in_two_wordings_sums_its_wording_grants_as_grant_counts_does(tmp_path: Path, db_file: Path) -> None:
    run_id = planted_run(tmp_path, db_file)
    con = db.connect(db_file)
    try:
        counts, expected = counts_and_query(con, run_id, "grant_counts")
    finally:
        con.close()
    assert counts.wordings == ["paper", "synonym"] and len(counts.contest_grants) == 2 * len(expected) > 0
    pd.testing.assert_frame_equal(counts.grants, expected, check_exact=True)
