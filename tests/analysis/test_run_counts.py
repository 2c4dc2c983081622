"""analyze()'s reads (probe/analysis/run_counts.py): the impact counts come through Arrow (issue 49) as the frame
`.df()` gave, column types included, so every statistic computed from them is the same."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from bench.synthetic import create_synthetic_run
from probe.analysis.metrics import metric_queries
from probe.analysis.run_counts import read_counts
from probe.store import db


def test_the_impact_counts_read_through_arrow_are_the_frame_of_df(tmp_path: Path) -> None:
    con = db.connect(tmp_path / "counts.duckdb")
    try:
        create_synthetic_run(con, "small", pairs=3, occupations=4)
        queries = metric_queries()
        con.execute(queries["instances"], {"run_id": "small"})
        with ThreadPoolExecutor(max_workers=1) as pool:
            counts = read_counts(con, "small", queries, "bls-cps-2022", pool)
        expected = con.execute(queries["impact_counts"], {"run_id": "small"}).df()
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
        queries = metric_queries()
        con.execute(queries["instances"], {"run_id": "small"})
        with ThreadPoolExecutor(max_workers=1) as pool:
            counts = read_counts(con, "small", queries, "bls-cps-2022", pool)
        expected = con.execute(queries["impact_counts"], {"run_id": "small"}).df()
    finally:
        con.close()
    assert expected.empty and expected["condition"].dtype == object
    pd.testing.assert_frame_equal(counts.impact_counts, expected, check_exact=True)
