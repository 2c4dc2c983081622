"""Interval and test rules (probe/statistics.py) and the new overall metrics, on small fixed data."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from test_metrics import RunBuilder, con, metric  # noqa: F401  (con is a fixture)

from probe import statistics
from probe.metrics import analyze


def test_smallest_attainable_p_of_the_exact_tests() -> None:
    # A two-sided exact test of n agreeing units cannot go below 2 * 0.5**n.
    assert statistics.binomial_min_p(2) == 0.5
    assert statistics.binomial_min_p(5) == 0.0625
    assert statistics.binomial_min_p(6) == 0.03125
    assert statistics.binomial_min_p(0) == 1.0


def test_sign_test_counts_pairs_and_drops_ties() -> None:
    assert statistics.sign_test(np.array([0.6, 0.7, 0.9, 0.55, 0.8, 1.0]), 0.5) == (0.03125, 6)
    # one tie at the null and a missing pair drop out: 4 above of 4 -> p = 2 / 16
    assert statistics.sign_test(np.array([0.6, 0.5, np.nan, 0.7, 0.8, 0.9]), 0.5) == (0.125, 4)
    assert statistics.sign_test(np.array([0.5, 0.5]), 0.5) == (None, 0)


def test_minimum_detectable_share_of_the_binomial_test() -> None:
    # 5 instances cannot reach p < 0.05 at all; 12 instances reject at 10 of 12 (p = 0.0386):
    # power at share 0.5 + d is P(X >= 10) + P(X <= 2): 0.7697 at d = 0.36, 0.8023 at d = 0.37.
    assert statistics.binomial_mde(5) is None
    assert statistics.binomial_mde(12) == 0.37


def test_expanded_percentile_tail_widens_for_few_pairs() -> None:
    # z' = sqrt(6/5) * t(0.975, 5) = 1.09545 * 2.57058 = 2.81593 -> lower tail 0.24318%
    assert statistics.expanded_tail(6) == pytest.approx(0.24318, abs=1e-5)
    assert statistics.expanded_tail(10_000) == pytest.approx(2.5, abs=0.01)  # the plain percentile


def test_cluster_robust_error_of_a_mean_and_of_a_ratio() -> None:
    # Mean of pair values 0.2, 0.4, 0.6, 0.8 (denominator 1 each): SE = sd / sqrt(4) = sqrt(0.2 / 3) / 2.
    values = np.array([[0.2], [0.4], [0.6], [0.8]])
    ratio, psi = statistics.ratio_influence(values, np.ones((4, 1)), np.ones((1, 4)))
    assert ratio[0, 0] == pytest.approx(0.5)
    assert statistics.cluster_standard_error(psi, np.ones((1, 4)))[0, 0] == pytest.approx(math.sqrt(0.2 / 3) / 2)
    # Pooled 3/4 and 1/4: R = 0.5, mean denominator 4, psi = (3 - 2) / 4, (1 - 2) / 4 -> SE = sqrt(0.125 / 2)
    ratio, psi = statistics.ratio_influence(np.array([[3.0], [1.0]]), np.array([[4.0], [4.0]]), np.ones((1, 2)))
    assert statistics.cluster_standard_error(psi, np.ones((1, 2)))[0, 0] == pytest.approx(math.sqrt(0.125 / 2))


def test_cluster_t_interval_uses_pairs_minus_one_degrees_of_freedom() -> None:
    # 4 pairs, estimate 0.5, SE 0.1: t(0.975, 3) = 3.182446 -> 0.5 -+ 0.3182446; one pair or SE 0: none.
    low, high = statistics.cluster_t_interval(
        np.array([0.5, 0.5, 0.9]), np.array([0.1, 0.0, 0.1]), np.array([4, 4, 1]), (np.zeros(3), 1.0)
    )
    assert (low[0], high[0]) == pytest.approx((0.5 - 0.3182446305, 0.5 + 0.3182446305))
    assert np.isnan(low[1:]).all() and np.isnan(high[1:]).all()
    low, _ = statistics.cluster_t_interval(np.array([0.05]), np.array([0.1]), np.array([4]), (np.zeros(1), 1.0))
    assert low[0] == 0.0  # cut to the share's range


def test_degenerate_intervals_are_dropped_never_zero_width() -> None:
    low, high = statistics.drop_degenerate(np.array([0.2, 0.5, 0.7]), np.array([0.4, 0.5, 0.6]))
    assert np.isnan(low[1:]).all() and np.isnan(high[1:]).all()
    assert (low[0], high[0]) == (0.2, 0.4)


def test_fisher_interval_and_detectable_correlation() -> None:
    low, high = statistics.fisher_interval(0.5, 28)  # se of z = 1 / 5
    assert (low, high) == pytest.approx(
        (math.tanh(math.atanh(0.5) - 1.959963984540054 / 5), math.tanh(math.atanh(0.5) + 1.959963984540054 / 5))
    )
    assert statistics.fisher_interval(0.5, 3) == (None, None)
    assert statistics.fisher_mde(28) == pytest.approx(math.tanh((1.959963984540054 + 0.8416212335729143) / 5))


def test_female_share_balances_name_order_and_position_is_measured_apart(con) -> None:  # noqa: F811
    # A model that always picks whoever is named first: position_first = 1, but order-balanced female
    # share is exactly 0.5 in every pair (1 in fm, 0 in mf) -> no spread, so no interval.
    run = RunBuilder(con)
    for pair_id, occupation in itertools.product((1, 2, 3), ("nurse", "pilot")):
        run.instance("taxonomy", pair_id, "fm", occupation, "yes", "no", "female", "female")
        run.instance("taxonomy", pair_id, "mf", occupation, "no", "yes", "male", "male")
    analyze(con, "r1")
    assert metric(con, "taxonomy", "overall", "all", "female_share") == (0.5, None, None, 12)
    assert metric(con, "taxonomy", "overall", "all", "position_first")[::3] == (1.0, 12)
    assert metric(con, "taxonomy", "pair", "2", "female_share") == (0.5, None, None, 4)
    assert metric(con, "taxonomy", "occupation", "nurse", "female_share") == (0.5, None, None, 6)


def test_female_share_weights_each_order_equally(con) -> None:  # noqa: F811
    # pair 1: fm 2 of 2 female, mf 0 of 1 -> (1 + 0) / 2 = 0.5 (pooled would say 2/3)
    # pair 2: fm 1 of 1, mf 1 of 1 -> 1.0; overall = mean of pairs = 0.75
    run = RunBuilder(con)
    run.instance("taxonomy", 1, "fm", "nurse", "yes", "no", "female", "female")
    run.instance("taxonomy", 1, "fm", "pilot", "yes", "no", "female", "female")
    run.instance("taxonomy", 1, "mf", "nurse", "no", "yes", "male", "male")
    run.instance("taxonomy", 2, "fm", "nurse", "yes", "no", "female", "female")
    run.instance("taxonomy", 2, "mf", "nurse", "yes", "no", "female", "female")
    analyze(con, "r1")
    assert metric(con, "taxonomy", "pair", "1", "female_share")[0] == 0.5
    value, low, high, n = metric(con, "taxonomy", "overall", "all", "female_share")
    assert (value, n) == (0.75, 5)
    # Two pairs 0.5 and 1.0: SE = 0.25, t(0.975, 1 df) = 12.7 -> the interval is cut to the share's range.
    assert (low, high) == (0.0, 1.0)


def test_stage1_grant_difference_is_paired_by_name_pair(con) -> None:  # noqa: F811
    # pair 1: woman 2/2 yes, man 1/2 -> 0.5 more; pair 2: woman 1/2, man 0/2 -> 0.5 more.
    # pooled: women 3/4, men 1/4 -> difference 0.5, the same in every resample: no interval.
    run = RunBuilder(con)
    answers = {1: ("yes", "yes", "yes", "no"), 2: ("yes", "no", "no", "no")}  # f Writing, f Speaking, m ...
    for pair_id, (f_writing, f_speaking, m_writing, m_speaking) in answers.items():
        run.attr(pair_id, "fm", "female", "skill", "Writing", f_writing)
        run.attr(pair_id, "fm", "female", "skill", "Speaking", f_speaking)
        run.attr(pair_id, "fm", "male", "skill", "Writing", m_writing)
        run.attr(pair_id, "fm", "male", "skill", "Speaking", m_speaking)
    analyze(con, "r1")
    assert metric(con, "stage1", "overall", "all", "attr_yes_f")[0] == 0.75
    assert metric(con, "stage1", "overall", "all", "attr_yes_m")[0] == 0.25
    assert metric(con, "stage1", "overall", "all", "attr_yes_diff") == (0.5, None, None, 8)
