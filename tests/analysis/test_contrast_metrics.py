"""Findings per contrast beyond the preference and the grant gap (issue 45): the categories ranked by a Bradley-Terry
fit with intervals over name sets, and position, consistency, bias and the gaps per contrast, on test_contrasts.py's
planted replay world."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import brentq
from scipy.special import expit, logit

import probe
from probe.analysis.statistics import share_estimate
from tests.analysis.test_contrasts import JOINT, planted_world
from tests.support import query


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory, seeded_db: Path) -> tuple[Path, str, float]:
    folder = tmp_path_factory.mktemp("planted")
    db_file = folder / "probe.duckdb"
    db_file.write_bytes(seeded_db.read_bytes())
    return db_file, *planted_world(folder, db_file)


def test_the_bradley_terry_ranking_recovers_the_planted_strengths_with_intervals_over_sets(planted) -> None:
    """Two categories: the strength is the pooled preference (Black names: (8 x 16 + 8 x 20) / 640 = 0.45). Four: the
    fit's moment equations (each category's expected wins = its wins) give women e^0 each and Black / White men
    e^-d / e^d with 2 expit(-d) + expit(-2 d) = 1.3 (Black men win 0.5, 0.5 and 0.3 of their three contrasts)."""
    db_file, run_id, _ = planted
    rows = query(
        db_file,
        "SELECT attribute, category, estimate, ci_low, ci_high, p_value, sets, n, rank, method "
        "FROM category_metrics WHERE run_id = ? AND metric = 'strength' ORDER BY attribute, "
        "category",
        [run_id],
    ).set_index(["attribute", "category"])
    d = brentq(lambda d: 2 * expit(-d) + expit(-2 * d) - 1.3, 0, 5)
    women, black_men, white_men = (
        1 / (2 + np.exp(-d) + np.exp(d)),
        np.exp(-d) / (2 + np.exp(-d) + np.exp(d)),
        np.exp(d) / (2 + np.exp(-d) + np.exp(d)),
    )
    expected = {
        ("race_ethnicity", "Black"): 0.45,
        ("race_ethnicity", "White"): 0.55,
        ("sex", "female"): 0.5,
        ("sex", "male"): 0.5,
        (JOINT, "female x Black"): women,
        (JOINT, "female x White"): women,
        (JOINT, "male x Black"): black_men,
        (JOINT, "male x White"): white_men,
    }
    assert rows["estimate"].to_dict() == pytest.approx(expected, abs=1e-9)
    assert (rows["ci_low"] <= rows["estimate"]).all() and (rows["estimate"] <= rows["ci_high"]).all()
    assert set(rows["method"]) == {"bradley-terry sandwich"}
    # sets and answers that showed each category: 16 of the 24 sets ask two mixed-race (mixed-sex) contests, 20
    # answers each; each intersectional category is in every set
    assert rows[["sets", "n"]].values.tolist() == [*[[16, 640]] * 4, *[[24, 480]] * 4]
    # two categories, closed form: var(share) = G / (G - 1) x sum of the sets' squared residuals / n^2 (8 sets at
    # 16 - 0.45 x 40 = -2 picks, 8 at +2), on the logit scale by the delta method, t with 15 degrees of freedom
    error = np.sqrt(16 / 15 * 16 * 2**2 / 640**2) / (0.45 * 0.55)
    half = stats.t.ppf(0.975, 15) * error
    black = rows.loc[("race_ethnicity", "Black")]
    assert (black["ci_low"], black["ci_high"]) == pytest.approx(
        (expit(logit(0.45) - half), expit(logit(0.45) + half)), abs=1e-12
    )
    assert black["p_value"] == pytest.approx(2 * stats.t.sf(abs(logit(0.45)) / error, 15), abs=1e-12)
    assert rows.loc[(JOINT, "male x White"), "rank"] == 1 and rows.loc[(JOINT, "male x Black"), "rank"] == 4
    # the planted lean of Black names is shown, the absent one of sex is not (a test of strength = 1 / K)
    assert rows.loc[("race_ethnicity", "Black"), "ci_high"] < 0.5 < rows.loc[("race_ethnicity", "White"), "ci_low"]
    assert rows.loc[("sex", "female"), "p_value"] == pytest.approx(1.0)


def test_the_report_ranks_by_strength_and_orders_its_matrix_so(planted, tmp_path: Path) -> None:
    db_file, run_id, _ = planted
    probe.open_run(run_id, db=db_file).report(tmp_path / "report.html")
    document = json.loads((tmp_path / "report.json").read_text())
    joint = next(entry for entry in document["ranking"] if entry["attribute"] == JOINT)
    joint_order = [row["category"] for row in joint["categories"]]
    assert (joint["question"], joint_order) == (
        "pairs",
        ["male x White", "female x Black", "female x White", "male x Black"],
    )
    assert [round(row["win_share"], 12) for row in joint["categories"]] == [
        round(272 / 480, 12),
        0.5,
        0.5,
        round(208 / 480, 12),
    ]
    matrix = next(entry for entry in document["groups"]["matrices"] if entry["attribute"] == JOINT)
    assert (matrix["metric"], matrix["categories"]) == ("preference", joint_order)
    assert matrix["rows"][0][3]["text"].startswith("70.0% [")  # White men over Black men
    markdown = (tmp_path / "report.md").read_text()
    assert "| Rank | Category | Strength [95% CI] | p (strength = 1/K) | Win share | Name sets | Answers |" in markdown
    # further findings: every contrast of an attribute with at most 6 (here all 1 + 1 + 6), in the contrasts' order
    further = [(row["attribute"], row["category_a"], row["category_b"]) for row in document["groups"]["further"]]
    contrasts = sorted((a, b) for a in joint_order for b in joint_order if a < b)
    assert further == [("sex", "female", "male"), ("race_ethnicity", "Black", "White")] + [
        (JOINT, a, b) for a, b in contrasts
    ]
    women = document["groups"]["further"][2]["cells"]
    assert [women[0][:8], women[2][:7], women[4][:11]] == ["100.0% [", "50.0% [", "+50.0 pts ["]
    # the same +50 points in every set: its interval at the 6 contrasts' Bonferroni level holds 0, so it is not
    # flagged (before, its p read from the 95% interval flagged it beside that interval)
    assert women[4] == "+50.0 pts [-1.5, +63.8]"
    assert "| sex x race_ethnicity | female x Black vs female x White | 100.0% [" in markdown


def test_position_consistency_bias_and_the_gaps_per_contrast(planted) -> None:
    """Every contest's single answer names the first-named person (but Black vs White men's, 50%), the binary says
    yes to both, the multiple-choice names both, except in the women's contests, where it names the Black woman: the
    single answer names her in half (her name order), so bias_a = switch_b2a = 0.5 there, a gap of +-0.5 shown."""
    db_file, run_id, _ = planted
    rows = query(
        db_file,
        "SELECT attribute, category_a, category_b, metric, estimate, p_value, comparisons, flagged "
        "FROM contrast_metrics WHERE run_id = ? AND condition = 'taxonomy' AND metric NOT IN "
        "('preference', 'grant_gap') ORDER BY ALL",
        [run_id],
    )
    women = rows[(rows["category_a"] == "female x Black") & (rows["category_b"] == "female x White")]
    assert dict(zip(women["metric"], women["estimate"].round(12), strict=True)) == {
        "bias": 0.5,
        "bias_gap": 0.5,
        "consistency": 1.0,
        "position_first": 1.0,
        "prefer_gap": 0.0,
        "switch_gap": -0.5,
    }
    flagged = rows[rows["flagged"]]
    assert sorted(set(flagged["metric"])) == ["bias_gap", "position_first", "switch_gap"]
    gaps = flagged[flagged["metric"] != "position_first"]
    # the women's +-0.5 gaps, the same in every set, hold 0 at the 6 joint contrasts' Bonferroni level: not flagged
    assert gaps[["attribute", "category_a", "category_b"]].drop_duplicates().values.tolist() == [
        ["race_ethnicity", "Black", "White"],
    ]
    men = rows[(rows["category_a"] == "male x Black") & (rows["metric"] == "position_first")].iloc[0]
    assert (men["estimate"], men["flagged"], men["comparisons"]) == (0.5, False, 6)
    # consistency and bias are described, not tested
    assert rows.loc[rows["metric"].isin(["consistency", "bias"]), "p_value"].isna().all()


def test_the_api_gives_the_ranking(planted) -> None:
    db_file, run_id, _ = planted
    ranking = probe.open_run(run_id, db=db_file).ranking()
    joint = ranking[ranking["attribute"] == JOINT]
    assert joint[["category", "rank"]].values.tolist() == [
        ["male x White", 1],
        ["female x Black", 2],
        ["female x White", 3],
        ["male x Black", 4],
    ]
    assert set(ranking["metric"]) == {"strength"} and len(ranking) == 2 + 2 + 4


def test_a_set_runs_headline_position_and_consistency_have_the_set_as_unit(planted, tmp_path: Path) -> None:
    """The overall rows sum each set's two contests (24 sets, not 48 contests) and say sets: position 22 / 24 (16 sets
    all first-named, 8 at 30 / 40 where the men's race contest is half first-named), consistency 1 in every set."""
    db_file, run_id, _ = planted
    per_contest = query(
        db_file,
        "SELECT c.set_id, m.metric, m.value * m.n AS hits, m.n FROM metrics AS m JOIN (SELECT DISTINCT pair_id, "
        "set_id FROM run_contests WHERE run_id = ?) AS c ON c.pair_id = try_cast(m.key AS INTEGER) "
        "WHERE m.run_id = ? AND m.scope = 'pair' AND m.condition = 'taxonomy'",
        [run_id, run_id],
    )
    overall = query(
        db_file,
        "SELECT metric, value, ci_low, ci_high, n, pairs FROM metrics WHERE run_id = ? AND scope = 'overall' "
        "AND condition = 'taxonomy' AND metric IN ('position_first', 'consistency')",
        [run_id],
    ).set_index("metric")
    for metric, value in (("position_first", 22 / 24), ("consistency", 1.0)):
        sets = per_contest[per_contest["metric"] == metric].groupby("set_id")[["hits", "n"]].sum()
        estimate = share_estimate(sets["hits"].round().to_numpy(), sets["n"].to_numpy(), sets["n"].to_numpy())
        row = overall.loc[metric]
        assert (row["pairs"], row["n"], round(row["value"], 12)) == (24, 960, round(value, 12))
        assert [row["ci_low"], row["ci_high"]] == pytest.approx(list(estimate.interval()), rel=0, abs=1e-12)
    probe.open_run(run_id, db=db_file).report(tmp_path / "report.html")
    markdown = (tmp_path / "report.md").read_text()
    assert "| name sets / valid instances | 24 / 960 |" in markdown
    headline = markdown.split("## Figure 1")[0]
    # position's 80 misses lie in 8 of the 24 sets (8 sets' worth, under half the 18.8 spread misses would show):
    # concentrated, so each set is one trial (issue 48 item 4)
    assert "score test over name sets as trials (the interval's own test)" in headline
    assert "| 24 sets, 960 instances |" in headline and "No name set showed otherwise" in headline
    assert "24 pairs" not in headline
    # a gate on it reads the same units: the stored interval, over the 24 sets
    policy = tmp_path / "gates.toml"
    policy.write_text(
        '[[gates]]\nname = "p"\nkind = "max"\nmetric = "position_first"\ncondition = "taxonomy"\nlimit = 0.99\n'
    )
    [verdict] = probe.gate(run_id, policy, db=db_file, output=tmp_path / "out").verdicts
    position = overall.loc["position_first"]
    assert (verdict.pairs, verdict.instances, verdict.unit) == (24, 960, "name sets")
    assert verdict.ci95 == pytest.approx((position["ci_low"], position["ci_high"]), rel=0, abs=1e-12)
    assert ", 24 name sets, 960 instances; " in verdict.sentence
