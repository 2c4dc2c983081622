"""The clustered logistic regression (probe/analysis/regression.py): log-odds of S = female per occupation, errors
clustered by name pair, checked by hand and against statsmodels."""

from __future__ import annotations

import itertools
import math

import pandas as pd
import pytest
from scipy import stats

from probe.analysis.metrics import analyze
from probe.analysis.regression import regression_rows
from tests.support import RunBuilder


def test_regression_log_odds_with_pair_clustered_errors(con):
    # nurse: pair 1 two of 2 female, pairs 2 and 3 one of 2 -> share 4/6, coef = logit(2/3) = log 2.
    # Cluster scores u_g = k_g - n_g * 2/3 = (2/3, -1/3, -1/3), sum of squares 2/3; information
    # N p (1 - p) = 4/3; CR1 factor G/(G-1) * (N-1)/(N-K) = 3/2 * 5/5; variance 2/3 / (16/9) * 3/2 = 9/16,
    # so std_err = 0.75; t = log 2 / 0.75 with G-1 = 2 degrees of freedom: p = 1 - t / sqrt(2 + t^2).
    run = RunBuilder(con)
    nurse_choices = {1: ("female", "female"), 2: ("female", "male"), 3: ("male", "female")}
    for pair_id, choices in nurse_choices.items():
        for order, choice in zip(("fm", "mf"), choices, strict=True):
            run.instance("control", pair_id, order, "nurse", "yes", "yes", choice, "both")
    for pair_id, order in itertools.product((1, 2), ("fm", "mf")):  # always female: separation
        run.instance("control", pair_id, order, "pilot", "yes", "yes", "female", "both")
    run.instance("control", 1, "fm", "judge", "yes", "yes", "female", "both")  # one pair only
    run.instance("control", 1, "mf", "judge", "yes", "yes", "male", "both")
    analyze(con, "r1")
    rows = {
        row[0]: row[1:]
        for row in con.execute(
            "SELECT term, coef, std_err, ci_low, ci_high, p_value, odds_ratio, n, n_clusters, note FROM regression"
        ).fetchall()
    }
    t = math.log(2) / 0.75
    half_width = 4.302652729911275 * 0.75  # t quantile 0.975 with 2 degrees of freedom
    assert rows["occupation:nurse"] == pytest.approx(
        (
            math.log(2),
            0.75,
            math.exp(math.log(2) - half_width),  # the odds ratio's interval: exp of the log-odds bounds
            math.exp(math.log(2) + half_width),
            1 - t / math.sqrt(2 + t**2),
            2.0,
            6,
            3,
            None,
        )
    )
    assert rows["occupation:pilot"] == (
        None,
        None,
        None,
        None,
        None,
        None,
        4,
        2,
        "separation: S is always female",
    )
    assert rows["occupation:judge"][-3:] == (
        2,
        1,
        "not testable at this size: fewer than 2 name pairs, so no clustered standard error",
    )
    # the intercept-only model uses every valid instance: 9 of 12 female -> log-odds log 3
    assert rows["overall"][0] == pytest.approx(math.log(3))
    assert rows["overall"][-3:] == (12, 3, None)


def test_regression_matches_the_instance_level_cluster_robust_fit(con):
    # Reference: statsmodels' GLM on one row per valid instance, occupation indicators without intercept,
    # cov_type='cluster' (its default correction is CR1 with N = instances).
    import numpy as np
    import statsmodels.api as sm

    run = RunBuilder(con)
    rows = []
    occupation_names = ("cook", "judge", "pilot")
    for pair_id, index, order in itertools.product(range(1, 7), range(3), ("fm", "mf")):
        occupation = occupation_names[index]
        female = (pair_id * 2 + index + pair_id**2 * index + (order == "mf")) % 5 < 3  # shares vary by pair
        choice = "female" if female else "male"
        run.instance("control", pair_id, order, occupation, "yes", "no", choice, "both")
        rows.append((pair_id, occupation, int(female)))
    analyze(con, "r1")
    pair_ids, occupations, chose_female = map(np.array, zip(*rows, strict=True))
    design = np.column_stack([occupations == name for name in occupation_names]).astype(float)
    reference = sm.GLM(chose_female, design, family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": pair_ids}
    )
    stored = con.execute("SELECT coef, std_err FROM regression WHERE term LIKE 'occupation:%' ORDER BY term").fetchall()
    expected = [value for pair in zip(reference.params, reference.bse, strict=True) for value in pair]
    assert [value for row in stored for value in row] == pytest.approx(expected)


NO_PAIR_VARIATION = "no variation between name pairs: clustered standard error 0"


def test_regression_without_between_pair_variation_keeps_the_estimate_but_no_inference(con):
    run = RunBuilder(con)
    for pair_id in (1, 2):  # each pair: one woman, one man chosen -> log-odds 0, every cluster score 0
        run.instance("control", pair_id, "fm", "cook", "yes", "no", "female", "both")
        run.instance("control", pair_id, "mf", "cook", "yes", "no", "male", "both")
    analyze(con, "r1")
    assert con.execute(
        "SELECT coef, std_err, ci_low, ci_high, p_value, odds_ratio, n, n_clusters, note FROM regression "
        "WHERE term = 'occupation:cook'"
    ).fetchall() == [(0.0, None, None, None, None, 1.0, 4, 2, NO_PAIR_VARIATION)]


def test_regression_rows_from_cells_by_hand() -> None:
    """regression_rows itself, on cells: nurse's pairs 3 of 4 and 1 of 4 female (share 1/2, coef 0, scores +-1,
    information 2, CR1 factor 2: std_err 1); overall 9 of 14 (scores +-6/7: std_err 8/15); pilot always female,
    doctor one pair, judge no valid instance."""
    cells = pd.DataFrame(
        [
            ("control", 1, "nurse", 4, 3),
            ("control", 2, "nurse", 4, 1),
            ("control", 1, "pilot", 2, 2),
            ("control", 2, "pilot", 2, 2),
            ("control", 1, "doctor", 2, 1),
            ("control", 1, "judge", 0, 0),
        ],
        columns=["condition", "pair_id", "occupation", "n", "n_female"],
    )
    rows = regression_rows(cells).set_index("term")
    assert list(rows.index) == [
        "overall",
        "occupation:doctor",
        "occupation:judge",
        "occupation:nurse",
        "occupation:pilot",
    ]
    assert rows.loc["overall", ["coef", "std_err", "n", "n_clusters"]].tolist() == pytest.approx(
        [math.log(9 / 5), 8 / 15, 14, 2]
    )
    nurse = rows.loc["occupation:nurse"]
    assert [nurse["coef"], nurse["std_err"], nurse["odds_ratio"], nurse["p_value"]] == pytest.approx([0, 1, 1, 1])
    assert nurse["ci_high"] == pytest.approx(math.exp(stats.t.ppf(0.975, 1)))
    assert rows["note"].dropna().to_dict() == {
        "occupation:doctor": "not testable at this size: fewer than 2 name pairs, so no clustered standard error",
        "occupation:judge": "no valid instances",
        "occupation:pilot": "separation: S is always female",
    }
    assert regression_rows(cells.iloc[:0]).columns[0] == "condition" and regression_rows(cells.iloc[:0]).empty
