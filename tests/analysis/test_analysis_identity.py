"""Every stored metric, interval and p-value of `analyze()` and every betting interval equal to the values frozen
before the analysis was made fast (issue 49): tests/data/analysis_identity/, written by running this file as a
script on the code of 2026-11-27 (commit 63cc24f). adverse_impact.parquet was written again after issue 48 changed
its numbers on purpose (lower ends unadjusted, the binomial variance floor, the four-fifths verdict, q over
categories); its p-values did not change, and up to that change the speed-up left every value bit-identical. It
was written again when the ratio's test came to read its variance at the null's rates (issue 48 item 1, branch
stats5: 194 of its 252 rows moved, median width 1.002 times; nothing else moved).
metrics.parquet was written again after issue 48 item 4 (a rare rate's interval: pair_score where the events are
not carried by fewer than 3 pairs' worth; 115 of its 312 betting rows, 0.76-1.003 times as wide, median 0.96).

    PYTHONPATH=$PWD .venv/bin/python tests/analysis/test_analysis_identity.py  # rewrite the frozen files (rarely)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.synthetic import create_synthetic_run
from probe.analysis.metrics import RESULT_TABLES, analyze
from probe.analysis.sequential import confidence_sequence, log_capital, mean_interval
from probe.store import db
from tests.support import DATA

FROZEN = DATA / "analysis_identity"
RUN_ID = "identity"
PAIRS, OCCUPATIONS = 12, 20  # 16,704 answers: 530 betting rows, every other method too


def betting_cases() -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Fixed (values, weights, alpha) samples: rare events, common ones, ties, unequal weights, 1 to 300 pairs."""
    rng = np.random.default_rng(49)
    cases = []
    for pairs in (1, 2, 3, 6, 12, 20, 50, 120, 300):
        for rate in (0.0, 0.01, 0.05, 0.3, 0.5, 0.97, 1.0):
            values = np.where(rng.random(pairs) < rate, rng.random(pairs) ** 3, 0.0)
            weights = rng.integers(1, 9, pairs) / 8
            cases.append((values, np.ones(pairs), 0.05))
            cases.append((1 - values if rate > 0.5 else values, weights, 0.05 / 3))
    cases.append((np.full(12, 0.5), np.ones(12), 0.05))
    cases.append((np.array([0.0, 1.0] * 6), np.linspace(0.1, 1, 12), 0.1))
    return cases


def scan_rows() -> tuple[np.ndarray, np.ndarray]:
    """A scan's observations: titles of unequal length (NaN after their last pair) and an alpha per title."""
    rng = np.random.default_rng(4849)
    observed = rng.beta(2, 5, (40, 30))
    for row, length in enumerate(rng.integers(0, 31, 40)):
        observed[row, length:] = np.nan
    return observed, np.linspace(0.001, 0.1, 40)


def betting_results() -> dict[str, list[float]]:
    intervals = [mean_interval(values, weights, alpha) for values, weights, alpha in betting_cases()]
    observed, alphas = scan_rows()
    low, high = confidence_sequence(observed, alphas)
    capital = log_capital(observed, np.array([0.001, 0.2, 0.5, 0.73, 0.999]))
    return {
        "mean_interval_low": [bounds[0] for bounds in intervals],
        "mean_interval_high": [bounds[1] for bounds in intervals],
        "scan_low": low.tolist(),
        "scan_high": high.tolist(),
        "scan_log_capital": capital.ravel().tolist(),
    }


def analysis_tables(folder: Path) -> dict[str, pd.DataFrame]:
    """analyze() of a fixed synthetic run: every result table, sorted on its text columns."""
    con = db.connect(folder / "identity.duckdb")
    try:
        create_synthetic_run(con, RUN_ID, pairs=PAIRS, occupations=OCCUPATIONS)
        analyze(con, RUN_ID)
        return {
            table: _sorted(con.execute(f"SELECT * FROM {table} WHERE run_id = ?", [RUN_ID]).df())
            for table in RESULT_TABLES
        }
    finally:
        con.close()


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    keys = [column for column in frame.columns if not pd.api.types.is_float_dtype(frame[column])]
    return frame.sort_values(keys, ignore_index=True) if keys else frame


def test_betting_intervals_are_todays_to_1e_9() -> None:
    frozen = json.loads((FROZEN / "betting.json").read_text())
    for name, values in betting_results().items():
        np.testing.assert_allclose(values, frozen[name], rtol=0, atol=1e-9, equal_nan=True, err_msg=name)


@pytest.mark.parametrize("table", RESULT_TABLES)
def test_every_stored_metric_interval_and_p_value_is_todays(tmp_path: Path, table: str) -> None:
    tables = _analysis(tmp_path)
    frozen = pd.read_parquet(FROZEN / f"{table}.parquet")
    pd.testing.assert_frame_equal(tables[table], frozen, check_exact=False, rtol=1e-12, atol=1e-12, check_dtype=False)


_CACHE: dict[str, dict[str, pd.DataFrame]] = {}


def _analysis(tmp_path: Path) -> dict[str, pd.DataFrame]:
    if "tables" not in _CACHE:
        _CACHE["tables"] = analysis_tables(tmp_path)
    return _CACHE["tables"]


if __name__ == "__main__":
    import tempfile

    FROZEN.mkdir(parents=True, exist_ok=True)
    (FROZEN / "betting.json").write_text(json.dumps(betting_results()))
    with tempfile.TemporaryDirectory() as folder:
        for name, frame in analysis_tables(Path(folder)).items():
            frame.to_parquet(FROZEN / f"{name}.parquet", index=False)
    print("frozen:", sorted(path.name for path in FROZEN.iterdir()), file=sys.stderr)
