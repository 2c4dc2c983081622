"""Imported decisions and the LL144 summary agree with the peers that compute the same quantities: aedt-audit 0.3.0's
LL144 tables (counts, selection and scoring rates, impact ratios, the 2% exclusion, the unknown category) and
fairlearn's selection_rate. Where the definitions differ, the test that shows it is named for the difference."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

aedt_audit = pytest.importorskip("aedt_audit")
fairlearn_metrics = pytest.importorskip("fairlearn.metrics")

from probe.pipeline.decisions import import_decisions  # noqa: E402
from probe.report.ll144 import ll144_rows  # noqa: E402

SEXES = ("female", "male")
RACES = ("Asian", "Black", "Hispanic", "White")
RARE = "Native American"  # 6 of 400 people: 1.5%, under the 2% line
TABLES = {"sex": "sex", "race_ethnicity": "race_ethnicity", "sex x race_ethnicity": "intersectional"}


def applicants() -> pd.DataFrame:
    """40 sets of 10 people: sex and race drawn (a rare race, a few unknown sexes and races), selected with a
    rate by group, a score per person."""
    generator = np.random.default_rng(46)
    people = 400
    frame = pd.DataFrame(
        {
            "set_id": np.repeat(np.arange(1, 41), 10),
            "name": [f"person {index}" for index in range(people)],
            "sex": generator.choice(SEXES, people),
            "race_ethnicity": generator.choice(RACES, people),
        }
    )
    frame.loc[frame.index[::67][:6], "race_ethnicity"] = RARE
    frame.loc[frame.index[5::50], "race_ethnicity"] = None  # 8 people of unknown race
    frame.loc[frame.index[7::80], "sex"] = None  # 5 of unknown sex
    chance = np.where(frame["race_ethnicity"] == "Black", 0.25, 0.4) + np.where(frame["sex"] == "female", 0.05, 0)
    frame["selected"] = (generator.random(people) < chance).astype(int)
    frame["score"] = np.round(generator.normal(50 + 10 * frame["selected"], 8), 1)
    return frame


@pytest.fixture
def audited(db_file: Path, tmp_path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The decisions, and our LL144 rows of them as an imported run."""
    frame = applicants()
    path = tmp_path / "decisions.csv"
    frame.to_csv(path, index=False)
    import_decisions(path, "peer", db_file)
    con = duckdb.connect(str(db_file), read_only=True)
    try:
        ours = ll144_rows(con, "peer")[0]
    finally:
        con.close()
    return frame, ours


def their_rows(frame: pd.DataFrame, kind: str) -> dict[tuple[str, str], dict]:
    """aedt-audit's three LL144 tables as (attribute, our category name) -> row."""
    summary = aedt_audit.ll144_summary(
        frame, **({"outcome": "selected"} if kind == "selection" else {"score": "score"})
    )
    rows = {}
    for attribute, table in TABLES.items():
        for row in summary.tables[table].to_dict("records"):
            category = " x ".join(row[column] for column in attribute.split(" x "))
            rows[attribute, category] = row
    return rows


@pytest.mark.parametrize("kind", ["selection", "scoring"])
def test_counts_rates_ratios_and_the_2pct_exclusion_equal_aedt_audit(
    audited: tuple[pd.DataFrame, pd.DataFrame], kind: str
) -> None:
    frame, ours = audited
    theirs = their_rows(frame, kind)
    known = ours[(ours["rate_kind"] == kind) & (ours["category"] != "unknown")]
    assert len(known) == 2 + 5 + 10  # every sex, race (the rare one too) and known intersection
    for row in known.to_dict("records"):
        their = theirs[row["attribute"], row["category"]]
        assert (row["applicants"], row["rate"], row["excluded_under_2pct"]) == (
            their["n"],
            their["rate"],
            their["excluded"],
        )
        if not row["excluded_under_2pct"]:
            assert row["impact_ratio"] == their["impact_ratio"], row
    assert set(known.loc[known["excluded_under_2pct"], "category"]) == {RARE, f"female x {RARE}", f"male x {RARE}"}


def test_the_unknown_category_count_and_rate_equal_aedt_audit_for_one_attribute(
    audited: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    frame, ours = audited
    theirs = their_rows(frame, "selection")
    for attribute in ("sex", "race_ethnicity"):
        row = ours[
            (ours["attribute"] == attribute) & (ours["category"] == "unknown") & (ours["rate_kind"] == "selection")
        ].iloc[0]
        assert (row["applicants"], row["rate"]) == (
            theirs[attribute, "unknown"]["n"],
            theirs[attribute, "unknown"]["rate"],
        )
    assert ours[(ours["category"] == "unknown") & (ours["rate_kind"] == "selection")]["applicants"].tolist() == [
        8,
        5,
        13,
    ]  # race, sex, and the intersection: anyone unknown in either


def test_difference_an_excluded_or_unknown_category_gets_no_ratio_here_and_one_there(
    audited: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    """6 RCNY 5-301 lets a category under 2% be left out of the ratios: we leave it out (no ratio, no interval);
    aedt-audit keeps a ratio for it and for the unknown row, but neither sets the benchmark (so the other
    categories' ratios agree, as the test above shows)."""
    frame, ours = audited
    theirs = their_rows(frame, "selection")
    rare = ours[(ours["category"] == RARE) & (ours["rate_kind"] == "selection")].iloc[0]
    assert np.isnan(rare["impact_ratio"]) and np.isnan(rare["ci_low"])
    assert theirs["race_ethnicity", RARE]["impact_ratio"] > 0
    assert theirs["race_ethnicity", "unknown"]["impact_ratio"] > 0


def test_difference_the_intersection_of_an_unknown_is_one_unknown_row_here_and_one_per_known_value_there(
    audited: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    """aedt-audit groups the intersection by both columns, so a woman of unknown race is 'female x unknown'; here a
    person unknown in either attribute is one 'unknown' row of the intersection."""
    frame, ours = audited
    theirs = their_rows(frame, "selection")
    partly_unknown = sum(
        row["n"]
        for (attribute, category), row in theirs.items()
        if attribute == "sex x race_ethnicity" and "unknown" in category.split(" x ")
    )
    ours_unknown = ours[
        (ours["attribute"] == "sex x race_ethnicity")
        & (ours["category"] == "unknown")
        & (ours["rate_kind"] == "selection")
    ]["applicants"].iloc[0]
    assert partly_unknown == ours_unknown == 13


def test_difference_a_missing_decision_is_an_unknown_here_and_refused_there(db_file: Path, tmp_path: Path) -> None:
    frame = applicants()
    frame["selected"] = frame["selected"].astype("Int64")
    frame.loc[frame.index[:3], "selected"] = pd.NA
    with pytest.raises(ValueError, match="missing value"):
        aedt_audit.ll144_summary(frame, outcome="selected")
    path = tmp_path / "missing.csv"
    frame.drop(columns="score").to_csv(path, index=False)
    impact = import_decisions(path, "missing", db_file).impact
    assert impact[impact["attribute"] == "sex"]["unknown"].sum() == 3


def test_selection_rates_equal_fairlearn(audited: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    """fairlearn's selection_rate (the share of y_pred = 1) per category, and its MetricFrame by group."""
    frame, ours = audited
    selection = ours[(ours["rate_kind"] == "selection") & (ours["category"] != "unknown")]
    for row in selection[selection["attribute"] != "sex x race_ethnicity"].to_dict("records"):
        chosen = frame[frame[row["attribute"]] == row["category"]]["selected"]
        assert row["rate"] == fairlearn_metrics.selection_rate(chosen, chosen), row
    known = frame.dropna(subset=["sex", "race_ethnicity"])
    by_group = fairlearn_metrics.MetricFrame(
        metrics=fairlearn_metrics.selection_rate,
        y_true=known["selected"],
        y_pred=known["selected"],
        sensitive_features=known[["sex", "race_ethnicity"]],
    ).by_group
    joint = selection[selection["attribute"] == "sex x race_ethnicity"].set_index("category")["rate"]
    assert {f"{sex} x {race}": rate for (sex, race), rate in by_group.items()} == joint.to_dict()
