"""`probe compare` of any number of runs: a leaderboard with each run's intervals, paired differences to a
chosen reference, ranks with their uncertainty; the name pair is the unit of every interval.

Three scripted "models" (replay runs, rules in test_report.py): `steady` picks by occupation, `first` picks
whoever is named first, `men` always picks the man. Each picks the first-named person in exactly half of a
pair's instances except `first` (always), so position_first is 0.5, 1.0, 0.5 in every pair.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from probe.analysis.statistics import OVERALL_METHOD
from probe.cli import app
from probe.compare.leaderboard import paired_analysis, ranks
from probe.compare.summary import counts_on_instances, shared_instances, shared_pair_counts
from probe.store import db
from tests.support import assert_one_line_error, query
from tests.test_report import PAIRS, first_named_choice, replay_run, steady_choice

RUNS = ["steady", "first", "men"]


def picks_the_man(pair_id: int, name_order: str, occupation: str) -> str:
    return "male"


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("compare-models")
    db_file = tmp / "probe.duckdb"
    for run_id, choose in zip(RUNS, (steady_choice, first_named_choice, picks_the_man), strict=True):
        replay_run(db_file, tmp, run_id, choose)
    return db_file


def compare(db_file: Path, tmp_path: Path, *extra: str) -> tuple[dict, Path]:
    db_copy = Path(shutil.copy(db_file, tmp_path / "probe.duckdb"))
    out = tmp_path / "leaderboard.html"
    result = CliRunner().invoke(app, ["compare", *RUNS, "--db", str(db_copy), "-o", str(out), *extra])
    assert result.exit_code == 0, result.output
    return json.loads(out.with_suffix(".json").read_text()), db_copy


def test_leaderboard_holds_each_runs_own_estimates_and_intervals(three_runs: Path, tmp_path: Path) -> None:
    data, db_copy = compare(three_runs, tmp_path)
    assert [row["run_id"] for row in data["leaderboard"]] == RUNS
    stored = query(db_copy, "SELECT run_id, condition, metric, value, ci_low, ci_high FROM metrics "
                            "WHERE scope = 'overall'")  # fmt: skip
    for row in data["leaderboard"]:
        assert sorted(row["metrics"]) == sorted(["consistency", "bias", "prefer_f", "prefer_m", "switch_f2m",
                                                 "switch_m2f", "female_share", "neutral", "position_first",
                                                 "unknown_rate", "attr_yes_diff"])  # fmt: skip
        for metric, entry in row["metrics"].items():
            condition = "stage1" if metric == "attr_yes_diff" else "taxonomy"
            [own] = stored[(stored.run_id == row["run_id"]) & (stored.condition == condition)
                           & (stored.metric == metric)].to_dict("records")  # fmt: skip
            assert (entry["value"], entry["ci_low"], entry["ci_high"]) == pytest.approx(
                (own["value"], None if pd.isna(own["ci_low"]) else own["ci_low"],
                 None if pd.isna(own["ci_high"]) else own["ci_high"]), nan_ok=True)  # fmt: skip
    position = {row["run_id"]: row["metrics"]["position_first"]["value"] for row in data["leaderboard"]}
    assert position == {"steady": 0.5, "first": 1.0, "men": 0.5}
    entries = [entry for row in data["leaderboard"] for entry in row["metrics"].values()]
    assert all((e["ci_low"] is None) == (e["ci_high"] is None) for e in entries)
    assert all(e["ci_low"] < e["ci_high"] for e in entries if e["ci_low"] is not None)  # never zero-width
    assert data["leaderboard_method"] == OVERALL_METHOD


def test_differences_to_a_chosen_reference_and_ranks(three_runs: Path, tmp_path: Path) -> None:
    data, _ = compare(three_runs, tmp_path, "--reference", "first")
    assert data["reference"] == "first"
    position = {(row["run_b"], row["condition"]): row for row in data["paired_differences"]
                if row["metric"] == "position_first"}  # fmt: skip
    assert {key: (row["run_a"], row["difference"]) for key, row in position.items() if key[1] == "taxonomy"} == {
        ("steady", "taxonomy"): ("first", -0.5), ("men", "taxonomy"): ("first", -0.5)
    }  # fmt: skip
    # The same difference in every pair: no spread, so the two rates' own intervals combine (never zero-width);
    # every pair agrees, so p is the sign-flip bound of the 8 pairs and the interval excludes 0.
    steady = position[("steady", "taxonomy")]
    assert steady["ci_low"] < steady["difference"] < steady["ci_high"] < 0
    assert steady["p_value"] == 2 * 0.5**8
    by_run = {row["run_id"]: row for row in data["ranks"]
              if (row["condition"], row["metric"]) == ("taxonomy", "position_first")}  # fmt: skip
    assert {run: (row["rank"], row["rank_low"], row["rank_high"]) for run, row in by_run.items()} == {
        "first": (1, 1, 1), "steady": (2, 2, 2), "men": (2, 2, 2)
    }  # fmt: skip
    assert {row["runs"] for row in data["ranks"]} == {3}
    html = (tmp_path / "leaderboard.html").read_text()
    assert html.count('<img src="data:image/svg+xml;base64,') == 2  # the leaderboard and differences forest plots
    markdown = (tmp_path / "leaderboard.md").read_text()
    assert "| first | 1 (1-1) |" in markdown.replace("\u2013", "-")
    # attr_yes_diff, a difference, in signed points with its interval (each run grants both genders alike)
    assert re.search(r"\| \+0\.0 pts \[-\d+\.\d, \+\d+\.\d\] \| 3 \| 2 \|", markdown.replace("\u2212", "-"))
    assert markdown.startswith("# Gender-bias comparison of 3 runs")


def test_stored_pair_counts_equal_the_counts_on_shared_instances(three_runs: Path, tmp_path: Path) -> None:
    _, db_copy = compare(three_runs, tmp_path)  # analysed now
    con = db.connect(db_copy)
    try:
        shared = shared_instances(con, RUNS)
        stored, counted = (shared_pair_counts(con, "steady", shared), counts_on_instances(con, "steady", shared))
    finally:
        con.close()
    columns = ["condition", "key", "metric", "hits", "n"]
    in_order = [frame[columns].astype({"hits": float, "n": float}).sort_values(columns[:3]).reset_index(drop=True)
                for frame in (stored, counted)]  # fmt: skip
    assert len(in_order[0]) == PAIRS * (3 * 10 + 1)  # pairs x (conditions x metrics + context_sensitivity)
    pd.testing.assert_frame_equal(*in_order)


def test_an_unknown_reference_is_a_one_line_error(three_runs: Path, tmp_path: Path) -> None:
    db_copy = Path(shutil.copy(three_runs, tmp_path / "probe.duckdb"))
    result = CliRunner().invoke(app, ["compare", *RUNS, "--db", str(db_copy), "--reference", "other"])
    assert_one_line_error(result.exit_code, result.output, "--reference 'other': not one of the compared runs")


def test_ranks_count_the_runs_above() -> None:
    values = np.array([[0.2, 0.5], [0.7, 0.5], [0.1, np.nan]])
    assert np.array_equal(ranks(values), [[2, 1], [1, 1], [3, np.nan]], equal_nan=True)  # ties share rank 1


def test_rank_and_difference_intervals_follow_the_spread_between_pairs() -> None:
    """A is far above B and C in every pair; B and C alternate (0.5, 0.3) and (0.3, 0.5): equal overall."""
    def counts(values: list[float]) -> pd.DataFrame:
        return pd.DataFrame({"condition": "taxonomy", "key": [str(k + 1) for k in range(len(values))],
                             "metric": "consistency", "hits": [10 * v for v in values], "n": 10.0})  # fmt: skip

    runs = {"A": counts([0.9] * 8), "B": counts([0.5, 0.3] * 4), "C": counts([0.3, 0.5] * 4)}
    differences, rank_rows = paired_analysis(runs, "B")
    by_run = {row["run_id"]: (row["rank"], row["rank_low"], row["rank_high"]) for row in rank_rows}
    assert by_run == {"A": (1, 1, 1), "B": (2, 2, 3), "C": (2, 2, 3)}
    a_minus_b = next(row for row in differences if row["run_b"] == "A")
    assert a_minus_b["difference"] == pytest.approx(0.5)
    assert 0 < a_minus_b["ci_low"] < 0.5 < a_minus_b["ci_high"] < 0.7
    c_minus_b = next(row for row in differences if row["run_b"] == "C")
    assert c_minus_b["difference"] == pytest.approx(0.0)
    assert c_minus_b["ci_low"] < 0 < c_minus_b["ci_high"]
