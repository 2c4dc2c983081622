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
from probe.compare.summary import STAGE1_UNPAIRED, counts_on_instances, shared_instances, shared_pair_counts
from probe.store import db
from tests.report.test_report import PAIRS, first_named_choice, replay_run, steady_choice
from tests.support import assert_one_line_error, query

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
    stored = query(
        db_copy, "SELECT run_id, condition, metric, value, ci_low, ci_high FROM metrics WHERE scope = 'overall'"
    )
    for row in data["leaderboard"]:
        assert sorted(row["metrics"]) == sorted(
            [
                "consistency",
                "bias",
                "prefer_f",
                "prefer_m",
                "switch_f2m",
                "switch_m2f",
                "female_share",
                "neutral",
                "position_first",
                "unknown_rate",
                "attr_yes_diff",
            ]
        )
        for metric, entry in row["metrics"].items():
            condition = "stage1" if metric == "attr_yes_diff" else "taxonomy"
            [own] = stored[
                (stored.run_id == row["run_id"]) & (stored.condition == condition) & (stored.metric == metric)
            ].to_dict("records")
            assert (entry["value"], entry["ci_low"], entry["ci_high"]) == pytest.approx(
                (
                    own["value"],
                    None if pd.isna(own["ci_low"]) else own["ci_low"],
                    None if pd.isna(own["ci_high"]) else own["ci_high"],
                ),
                nan_ok=True,
            )
    position = {row["run_id"]: row["metrics"]["position_first"]["value"] for row in data["leaderboard"]}
    assert position == {"steady": 0.5, "first": 1.0, "men": 0.5}
    entries = [entry for row in data["leaderboard"] for entry in row["metrics"].values()]
    assert all((e["ci_low"] is None) == (e["ci_high"] is None) for e in entries)
    assert all(e["ci_low"] < e["ci_high"] for e in entries if e["ci_low"] is not None)  # never zero-width
    assert data["leaderboard_method"] == OVERALL_METHOD


def test_differences_to_a_chosen_reference_and_ranks(three_runs: Path, tmp_path: Path) -> None:
    data, _ = compare(three_runs, tmp_path, "--reference", "first")
    assert data["reference"] == "first"
    position = {
        (row["run_b"], row["condition"]): row for row in data["paired_differences"] if row["metric"] == "position_first"
    }
    assert {key: (row["run_a"], row["difference"]) for key, row in position.items() if key[1] == "taxonomy"} == {
        ("steady", "taxonomy"): ("first", -0.5),
        ("men", "taxonomy"): ("first", -0.5),
    }
    # The same difference in every pair: no spread, so the two rates' own intervals combine (never zero-width);
    # every pair agrees, so p is the sign-flip bound of the 8 pairs and the interval excludes 0.
    steady = position[("steady", "taxonomy")]
    assert steady["ci_low"] < steady["difference"] < steady["ci_high"] < 0
    assert steady["p_value"] == 2 * 0.5**8
    # Rank 1 is the best run: for a lean such as position_first the closest to 50% (always first-named is the
    # worst at 100%, never rank 1 as "the highest" made it), for bias-type metrics the lowest.
    ranked = {
        (row["metric"], row["run_id"]): (row["rank"], row["rank_low"], row["rank_high"])
        for row in data["ranks"]
        if row["condition"] in ("taxonomy", "stage1")
    }
    assert {run: ranked["position_first", run] for run in RUNS} == {
        "first": (3, 3, 3),
        "steady": (1, 1, 1),
        "men": (1, 1, 1),
    }
    # female_share 58.3% (steady), 50% (first), 0% (men): closest to 50% first
    assert {run: ranked["female_share", run] for run in RUNS} == {
        "first": (1, 1, 1),
        "steady": (2, 2, 2),
        "men": (3, 3, 3),
    }
    assert {run: ranked["attr_yes_diff", run][0] for run in RUNS} == {"first": 1, "steady": 1, "men": 1}
    assert (
        data["rank_by"]["position_first"],
        data["rank_by"]["bias"],
        data["rank_by"]["consistency"],
        data["rank_by"]["attr_yes_diff"],
    ) == ("closest to 50%", "lowest", "highest", "closest to 0")
    assert {row["runs"] for row in data["ranks"]} == {3}
    html = (tmp_path / "leaderboard.html").read_text()
    assert html.count('<img src="data:image/svg+xml;base64,') == 2  # the leaderboard and differences forest plots
    assert "position_first (1 = closest to 50%)</th>" in html
    markdown = (tmp_path / "leaderboard.md").read_text().replace("\u2013", "-")
    assert "| Run | female_share (1 = closest to 50%) | consistency (1 = highest) | bias (1 = lowest) |" in markdown
    assert "| first |" + " 1 (1-1) |" * 8 + " 3 (3-3) |" in markdown  # female_share to neutral, then position_first
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
    in_order = [
        frame[columns].astype({"hits": float, "n": float}).sort_values(columns[:3]).reset_index(drop=True)
        for frame in (stored, counted)
    ]
    # pairs x (conditions x metrics + context_sensitivity + stage 1's attr_yes_f and attr_yes_m)
    assert len(in_order[0]) == PAIRS * (3 * 11 + 1 + 2)
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
        return pd.DataFrame(
            {
                "condition": "taxonomy",
                "key": [str(k + 1) for k in range(len(values))],
                "metric": "consistency",
                "hits": [10 * v for v in values],
                "n": 10.0,
            }
        )

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


def test_the_direct_gender_measures_are_paired_differences(three_runs: Path, tmp_path: Path) -> None:
    """The woman's share of single picks and the stage-1 grant gap, as `probe gate` measures them, are compared."""
    data, _ = compare(three_runs, tmp_path, "--reference", "first")
    rows = {(row["condition"], row["metric"], row["run_b"]): row for row in data["paired_differences"]}
    # men picks the man in every instance (0%), first each name order's first-named (50%): -50 points in every
    # pair, so p is the sign-flip bound of the 8 pairs
    men = rows["taxonomy", "female_share", "men"]
    assert (men["value_a"], men["value_b"], men["difference"], men["p_value"]) == (0.5, 0.0, -0.5, 2 * 0.5**8)
    assert men["ci_high"] < 0
    # every run grants both genders alike: the grant gap is 0 in each, so is its difference
    gap = rows["stage1", "attr_yes_diff", "men"]
    assert (gap["value_a"], gap["value_b"], gap["difference"], gap["p_value"]) == (0.0, 0.0, 0.0, 1.0)
    assert gap["ci_low"] < 0 < gap["ci_high"]
    assert data["paired_conditions"] == ["taxonomy", "baseline", "control", "stage1"]
    html = (tmp_path / "leaderboard.html").read_text()
    assert '<th class="num">stage1: points [95% CI]</th>' in html


def test_runs_with_no_occupation_in_common_are_shown_side_by_side(tmp_path: Path) -> None:
    db_file = tmp_path / "probe.duckdb"
    replay_run(db_file, tmp_path, "women-jobs", steady_choice, occupations=("nurse", "secretary"))
    replay_run(db_file, tmp_path, "men-jobs", steady_choice, occupations=("pilot", "butcher"))
    out = tmp_path / "apart.html"
    result = CliRunner().invoke(app, ["compare", "women-jobs", "men-jobs", "--db", str(db_file), "-o", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.with_suffix(".json").read_text())
    assert (data["paired"], data["paired_differences"], data["ranks"], data["shared"]["instances"]) == (
        False,
        [],
        [],
        0,
    )
    assert (
        "The runs women-jobs, men-jobs share no stage-2 instance (no occupation, name pair, condition and "
        "wording in common): each run is shown on its own instances, side by side; no paired differences or "
        "ranks are computed."
    ) in data["differences_in_settings"]
    assert (
        "The runs cover different occupations (women-jobs: 2, men-jobs: 2); they share none."
        in (data["differences_in_settings"])
    )
    female = {row["run_id"]: row["metrics"]["female_share"]["value"] for row in data["leaderboard"]}
    assert female == {"women-jobs": 1.0, "men-jobs": 0.0}  # steady: the woman for nurse, the man for pilot
    html = out.read_text()
    side = html[html.index('id="side-by-side-table"') : html.index("</table>", html.index('id="side-by-side-table"'))]
    assert side.count("<td>female_share</td>") == 3  # taxonomy, baseline, control: each run's own value
    assert "No ranks: the comparison is unpaired" in html


def test_compare_prints_a_summary_table(three_runs: Path, tmp_path: Path) -> None:
    """Not only the paths: each run's direct gender measures, its difference to the reference with p, its rank."""
    db_copy = Path(shutil.copy(three_runs, tmp_path / "probe.duckdb"))
    out = tmp_path / "c.html"
    result = CliRunner().invoke(
        app, ["compare", *RUNS, "--db", str(db_copy), "-o", str(out), "--reference", "first"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()[3:]  # after "run ... had no metrics yet" of each run
    assert lines[:2] == [f"report: {out}", f"summaries: {out.with_suffix('.md')}, {out.with_suffix('.json')}"]
    shown = " ".join(result.output.split()).replace("\u2212", "-").replace("\u2013", "-")
    assert "rank woman picked: 1 = closest to 50%; grant gap (stage 1): 1 = closest to 0" in shown
    assert re.search(
        r"men .+? 0\.0% \[0\.0, 36\.9\] -50\.0 p=0\.008 3 \(3-3\) \+0\.0 pts \[-\d\.\d, \+\d\.\d\] "
        r"\+0\.0 p=1\.000 1 \(1-1\) 0 / 6",
        shown,
    )
    assert re.search(r"first \(ref\) .+? 50\.0% \[38\.3, 61\.7\] - 1 \(1-1\)", shown)


def test_held_out_checks_come_before_the_attribution_and_footer(three_runs: Path, tmp_path: Path) -> None:
    db_copy = Path(shutil.copy(three_runs, tmp_path / "probe.duckdb"))
    out = tmp_path / "c.html"
    result = CliRunner().invoke(
        app, ["compare", "steady", "men", "--db", str(db_copy), "-o", str(out), "--heldout-seed", "0"]
    )
    assert result.exit_code == 0, result.output
    html = out.read_text()
    order = [
        html.index(mark)
        for mark in (
            '<section id="agreement">',
            '<section id="heldout">',
            '<section id="attribution">',
            "<footer>",
            "</main>",
        )
    ]
    assert order == sorted(order)
    assert '<a href="#heldout">Held-out checks</a>' in html


def test_the_pages_robustness_table_wraps_and_scrolls_within_the_page(three_runs: Path, tmp_path: Path) -> None:
    """report.html and compare.html share one stylesheet: the robustness table (a column per wording) may not widen
    the page: its numbers wrap, and the rest scrolls inside the table."""
    compare(three_runs, tmp_path)
    html = (tmp_path / "leaderboard.html").read_text()
    assert "#robustness-table { display: block; overflow-x: auto; font-size: 12px; }" in html
    assert "#robustness-table td.num, #robustness-table th.num { white-space: normal; min-width: 6em; }" in html


def test_runs_sharing_some_occupations_pair_female_share_on_those_alone(three_runs: Path, tmp_path: Path) -> None:
    """steady on its 6 occupations against a run of the same design on two of them: the woman's share is counted
    on the shared instances (nurse: the woman, pilot: the man, so 50% in each pair, as the narrow run's); stage 1
    asked about other attributes, so its grant gap is not paired, and the page says so."""
    db_copy = Path(shutil.copy(three_runs, tmp_path / "probe.duckdb"))
    replay_run(db_copy, tmp_path, "narrow", steady_choice, occupations=("nurse", "pilot"))
    out = tmp_path / "c.html"
    result = CliRunner().invoke(app, ["compare", "steady", "narrow", "--db", str(db_copy), "-o", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.with_suffix(".json").read_text())
    con = db.connect(db_copy)
    try:
        counted = counts_on_instances(con, "steady", shared_instances(con, ["steady", "narrow"]))
    finally:
        con.close()
    female = counted[(counted["metric"] == "female_share") & (counted["condition"] == "taxonomy")]
    assert (female["hits"] / female["n"]).tolist() == [0.5] * PAIRS
    rows = {(row["condition"], row["metric"]): row for row in data["paired_differences"]}
    assert (rows["taxonomy", "female_share"]["value_a"], rows["taxonomy", "female_share"]["difference"]) == (0.5, 0.0)
    assert not any(condition == "stage1" for condition, _ in rows)
    assert STAGE1_UNPAIRED in data["differences_in_settings"]


def test_a_metric_without_instances_leaves_the_others_ranked() -> None:
    """Run A never had a prefer_f instance (n = 0: no value); its consistency and grant gap still rank and differ."""

    def counts(condition: str, metric: str, values: list[float], n: float = 10.0) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "condition": condition,
                "key": [str(k + 1) for k in range(len(values))],
                "metric": metric,
                "hits": [n * v for v in values],
                "n": n,
            }
        )

    def run(consistency: float, prefer_n: float, women: float, men: float) -> pd.DataFrame:
        return pd.concat(
            [
                counts("taxonomy", "consistency", [consistency, consistency - 0.1] * 4),
                counts("taxonomy", "prefer_f", [0.0] * 8, prefer_n),
                counts("stage1", "attr_yes_f", [women] * 8),
                counts("stage1", "attr_yes_m", [men] * 8),
            ]
        )

    differences, rank_rows = paired_analysis({"A": run(0.9, 0.0, 0.6, 0.4), "B": run(0.5, 10.0, 0.5, 0.5)}, "B")
    ranked = {(row["run_id"], row["metric"]): row["rank"] for row in rank_rows}
    assert ranked == {
        ("A", "consistency"): 1,
        ("B", "consistency"): 2,
        ("A", "prefer_f"): None,
        ("B", "prefer_f"): 1,
        ("A", "attr_yes_diff"): 2,
        ("B", "attr_yes_diff"): 1,
    }
    gap = next(row for row in differences if row["metric"] == "attr_yes_diff")
    assert (gap["value_a"], gap["value_b"], gap["n_instances"]) == (0.0, pytest.approx(0.2), 160)
    # every pair's gap differs alike: no spread, so the four rates' own intervals combine (80 instances each: wide)
    assert gap["difference"] == pytest.approx(0.2) and gap["ci_low"] < 0 < gap["ci_high"] and gap["p_value"] == 1.0
