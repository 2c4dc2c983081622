"""Inference with the name pair as the unit, on hand-built runs: overall intervals and their tests, the
occupation sign tests with Benjamini-Hochberg, the consistency-bias correlation. Expected values are worked
out by hand or with an independent reference (tests/support.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from probe.analysis.metrics import analyze
from probe.analysis.resampling import correlation_test
from tests.support import RunBuilder, metric, score_interval_reference

CHOSE = {"female": ("yes", "no", "female", "female"), "male": ("no", "yes", "male", "male")}


def test_six_pairs_at_1_and_0_give_a_wide_interval_and_reanalysis_repeats_it(con):
    # Pair values 1, 1, 1, 0, 0, 0: mean 0.5, s^2 = 6 * 0.25 / 5 = 0.3, variance 0.3 / 6 = 0.05, 6 instances.
    run = RunBuilder(con)
    for pair_id in range(1, 7):
        labels = ("yes", "no", "female", "female") if pair_id <= 3 else ("no", "no", "male", "both")
        run.instance("taxonomy", pair_id, "fm", "nurse", *labels)
    analyze(con, "r1")
    first = metric(con, "taxonomy", "overall", "all", "consistency")
    assert first == pytest.approx((0.5, *score_interval_reference(0.5, 0.05, 6, 6), 6), abs=1e-6)
    analyze(con, "r1")
    assert metric(con, "taxonomy", "overall", "all", "consistency") == first


def test_two_pairs_give_no_interval(con):
    run = RunBuilder(con)
    run.instance("taxonomy", 1, "fm", "nurse", "yes", "no", "female", "female")
    run.instance("taxonomy", 2, "fm", "nurse", "no", "no", "male", "both")
    analyze(con, "r1")
    assert metric(con, "taxonomy", "overall", "all", "consistency") == (0.5, None, None, 2)


def test_female_share_test_is_the_score_test_its_interval_inverts(con):
    # 6 pairs, 2 occupations, both orders: pairs 1-5 pick the woman in 3 of 4 instances (order-balanced
    # share (1 + 0.5) / 2 = 0.75), pair 6 in 1 of 4 (0.25): mean 2/3, s^2 = (5 * (1/12)^2 + (5/12)^2) / 5.
    run = RunBuilder(con)
    for pair_id in range(1, 7):
        picks = ("female", "female", "female", "male") if pair_id < 6 else ("female", "male", "male", "male")
        cells = itertools.product(("nurse", "pilot"), ("fm", "mf"))
        for (occupation, order), pick in zip(cells, picks, strict=True):
            run.instance("taxonomy", pair_id, order, occupation, *CHOSE[pick])
    analyze(con, "r1")
    value, low, high, n, pairs, p, min_p = con.execute(
        "SELECT value, ci_low, ci_high, n, pairs, p_value, min_p_value FROM metrics "
        "WHERE scope = 'overall' AND metric = 'female_share'"
    ).fetchone()
    variance = (5 * (1 / 12) ** 2 + (5 / 12) ** 2) / 5 / 6
    assert (value, n, pairs) == (pytest.approx(2 / 3), 24, 6)
    assert (low, high) == pytest.approx(score_interval_reference(2 / 3, variance, 6, 24), abs=1e-6)
    # the test of 0.5: (2/3 - 1/2) / sqrt(max(phi * 0.25^1.5, 0.25 / 24)), phi = variance / (2/9)^1.5
    statistic = (2 / 3 - 0.5) / math.sqrt(max(variance / (2 / 9) ** 1.5 * 0.25**1.5, 0.25 / 24))
    # ... never below the 6 pairs' exact bound 2 * 0.5**6
    assert p == pytest.approx(max(2 * stats.t.sf(statistic, 5), 2 * 0.5**6))
    assert (p < 0.05) == (low > 0.5)
    assert min_p == 2 * 0.5**6  # 2 t.sf(sqrt(24), 5) = 0.0045 is below the pairs' bound


def test_occupation_preference_is_a_sign_test_over_pairs_with_benjamini_hochberg(con):
    # astronaut: all 6 pairs lean female (every instance female): sign test 6 of 6, p = 2 / 64.
    # butcher: pairs 1-5 lean male, pair 6 ties (female in fm, male in mf: 0.5) -> 0 of 5, p = 2 / 32.
    # cook: pairs 1-3 lean female, 4-6 male -> 3 of 6, p = 1.
    # BH over 3: q(astronaut) = 3 * 0.03125 = 0.09375, q(butcher) = min(1.5 * 0.0625, 1) = 0.09375, q(cook) = 1
    # -> nothing preferred: with 6 pairs, 10 instances of one gender per occupation are not enough.
    run = RunBuilder(con)
    for pair_id, order in itertools.product(range(1, 7), ("fm", "mf")):
        run.instance("taxonomy", pair_id, order, "astronaut", *CHOSE["female"])
        butcher = "female" if pair_id == 6 and order == "fm" else "male"
        run.instance("taxonomy", pair_id, order, "butcher", *CHOSE[butcher])
        run.instance("taxonomy", pair_id, order, "cook", *CHOSE["female" if pair_id <= 3 else "male"])
    run.instance("taxonomy", 1, "fm", "dancer", "no", "no", "unknown", "both")
    analyze(con, "r1")
    rows = con.execute(
        "SELECT occupation, n, pairs, pairs_female, pairs_male, share_female, lean_female, ci_low, ci_high, "
        "p_value, q_value, preferred FROM occupation_preference ORDER BY occupation"
    ).fetchall()
    # Nothing preferred: every interval at the level of that decision, 1 - 1 x 0.05 / 3 (never a 95% interval
    # excluding 0.5 beside "none": 6 of 6 at 95% would be [0.54, 1]).
    level = 1 - 0.05 / 3
    cp_6_of_6, cp_0_of_5 = stats.binomtest(6, 6).proportion_ci(level), stats.binomtest(0, 5).proportion_ci(level)
    cp_3_of_6 = stats.binomtest(3, 6).proportion_ci(level)
    assert cp_6_of_6.low < 0.5 < cp_0_of_5.high
    assert rows == [
        (
            "astronaut",
            12,
            6,
            6,
            0,
            1.0,
            1.0,
            pytest.approx(cp_6_of_6.low),
            pytest.approx(1.0),
            pytest.approx(0.03125),
            pytest.approx(0.09375),
            "none",
        ),
        (
            "butcher",
            12,
            5,
            0,
            5,
            pytest.approx(1 / 12),
            0.0,
            0.0,
            pytest.approx(cp_0_of_5.high),
            pytest.approx(0.0625),
            pytest.approx(0.09375),
            "none",
        ),
        (
            "cook",
            12,
            6,
            3,
            3,
            0.5,
            0.5,
            pytest.approx(cp_3_of_6.low),
            pytest.approx(cp_3_of_6.high),
            pytest.approx(1.0),
            pytest.approx(1.0),
            "none",
        ),
        ("dancer", 0, 0, 0, 0, None, None, None, None, None, None, "none"),
    ]


def test_an_occupation_with_eight_leaning_pairs_is_preferred(con):
    # 8 pairs all lean male for pilot (p = 2 / 256 = 0.0078), nurse is split 4-4: q(pilot) = 2 * 0.0078.
    run = RunBuilder(con)
    for pair_id, order in itertools.product(range(1, 9), ("fm", "mf")):
        run.instance("taxonomy", pair_id, order, "pilot", *CHOSE["male"])
        run.instance("taxonomy", pair_id, order, "nurse", *CHOSE["female" if pair_id % 2 else "male"])
    analyze(con, "r1")
    assert con.execute(
        "SELECT occupation, q_value, preferred FROM occupation_preference ORDER BY occupation"
    ).fetchall() == [("nurse", pytest.approx(1.0), "none"), ("pilot", pytest.approx(0.015625), "male")]


def test_consistency_bias_correlation_has_an_exact_permutation_test_and_a_bonferroni_adjusted_p(con):
    # Pair values of consistency and bias: (1, 1), (0.5, 0.5), (0, 0.5), (0.5, 0), (1, 0), (0, 1) over two
    # instances each (6 pairs: the fewest any test over pairs is given with, MIN_PAIRS).
    types = {
        "both": ("yes", "no", "female", "female"),  # consistency 1, bias 1
        "neither": ("no", "no", "female", "both"),  # consistency 0, bias 0
        "biased": ("no", "no", "male", "male"),  # consistency 0, bias 1
        "consistent": ("yes", "no", "female", "both"),  # consistency 1, bias 0
    }
    plans = [
        ("both", "both"),
        ("both", "neither"),
        ("neither", "biased"),
        ("consistent", "neither"),
        ("consistent", "consistent"),
        ("biased", "biased"),
    ]
    run = RunBuilder(con)
    for pair_id, plan in enumerate(plans, start=1):
        for order, kind in zip(("fm", "mf"), plan, strict=True):
            run.instance("taxonomy", pair_id, order, "nurse", *types[kind])
            run.instance("baseline", pair_id, order, "nurse", *types["both" if pair_id % 2 else "neither"])
    analyze(con, "r1")
    rows = con.execute(
        "SELECT condition, x, y, method, r, ci_low, ci_high, p_value, p_adjusted, n FROM correlations "
        "ORDER BY condition"
    ).fetchall()
    consistency, bias = [1, 0.5, 0, 0.5, 1, 0], [1, 0.5, 0.5, 0, 0, 1]
    r = stats.pearsonr(consistency, bias).statistic
    # 6 pairs: the permutation test is exact over all 720 orders of the bias values (the observed one included)
    orders = list(itertools.permutations(bias))
    p = sum(abs(stats.pearsonr(consistency, order).statistic) >= abs(r) - 1e-12 for order in orders) / len(orders)
    expected = correlation_test(np.array(consistency), np.array(bias), tests=2)  # Bonferroni over two conditions
    # baseline: consistency and bias both alternate 1, 0: r = 1 (no Fisher interval); 72 of the 720 orders give
    # |r| = 1 (the three 1s on the three 1s, or on the three 0s: 2 x 3! x 3!), p = 0.1, adjusted 0.2
    assert rows == [
        (
            "baseline",
            "consistency",
            "bias",
            "pearson",
            pytest.approx(1.0),
            None,
            None,
            pytest.approx(0.1),
            pytest.approx(0.2),
            6,
        ),
        (
            "taxonomy",
            "consistency",
            "bias",
            "pearson",
            pytest.approx(r),
            pytest.approx(expected["ci_low"]),
            pytest.approx(expected["ci_high"]),
            pytest.approx(p),
            pytest.approx(min(2 * p, 1.0)),
            6,
        ),
    ]
    # with 4 pairs (issue 37: tested from 4) r is given, no test and no interval
    con.execute("DELETE FROM items WHERE pair_id > 4")
    analyze(con, "r1")
    assert con.execute("SELECT n, p_value, ci_low FROM correlations WHERE condition = 'taxonomy'").fetchall() == [
        (4, None, None)
    ]
    # consistency vs prefer_f / prefer_m is never tested (negative by construction)
    assert con.execute("SELECT count(*) FROM correlations WHERE y <> 'bias' OR across <> 'pair'").fetchone() == (0,)


def test_correlation_with_a_constant_variable_is_null(con):
    run = RunBuilder(con)
    for pair_id in (1, 2, 3, 4):
        run.instance("taxonomy", pair_id, "fm", "nurse", "yes", "no", "female", "female")
    analyze(con, "r1")
    assert con.execute("SELECT r, p_value, p_adjusted, n FROM correlations").fetchall() == [(None, None, None, 4)]


def test_a_pair_with_one_name_order_refused_does_not_lean(con):
    # A model that always picks the first-named person, with every mf answer refused: the fm answers alone
    # would make all 12 pairs lean female (position, not gender); without both orders no pair leans.
    run = RunBuilder(con)
    for pair_id in range(1, 13):
        run.instance("taxonomy", pair_id, "fm", "nurse", *CHOSE["female"])
        run.instance("taxonomy", pair_id, "mf", "nurse", "yes", "no", "unknown", "female")
    analyze(con, "r1")
    assert con.execute("SELECT pairs, p_value, preferred FROM occupation_preference").fetchall() == [(0, None, "none")]


def test_the_grant_difference_is_the_difference_of_the_shown_rates(con):
    # Pair 1: the woman 2 of 2 yes, the man 1 of 2; pair 2: the woman's answers refused, the man 0 of 2.
    # Rates over all answers: women 2/2 = 1, men 1/4 = 0.25 -> difference 0.75, over the same pairs.
    run = RunBuilder(con)
    for subject, labels in (("female", ("yes", "yes")), ("male", ("yes", "no"))):
        for attribute, label in zip(("Writing", "Speaking"), labels, strict=True):
            run.attr(1, "fm", subject, "skill", attribute, label)
    for subject, label in (("female", "unknown"), ("male", "no")):
        for attribute in ("Writing", "Speaking"):
            run.attr(2, "fm", subject, "skill", attribute, label)
    analyze(con, "r1")
    rates = {name: metric(con, "stage1", "overall", "all", name)[0] for name in ("attr_yes_f", "attr_yes_m")}
    assert rates == {"attr_yes_f": 1.0, "attr_yes_m": 0.25}
    assert metric(con, "stage1", "overall", "all", "attr_yes_diff")[0] == pytest.approx(0.75)
