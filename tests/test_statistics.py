"""Interval and test rules (probe/analysis/statistics.py), on small fixed inputs and against outside references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from probe.analysis import statistics
from probe.analysis.statistics import PairEstimate
from tests.support import score_interval_reference


def test_smallest_attainable_p_of_the_exact_tests() -> None:
    # A two-sided exact test of n agreeing units cannot go below 2 * 0.5**n.
    assert statistics.binomial_min_p(2) == 0.5
    assert statistics.binomial_min_p(5) == 0.0625
    assert statistics.binomial_min_p(6) == 0.03125
    assert statistics.binomial_min_p(0) == 1.0


def test_minimum_detectable_share_of_the_binomial_test_at_a_level() -> None:
    # 5 units cannot reach p < 0.05 at all; 12 units reject at 10 of 12 (p = 0.0386):
    # power at share 0.5 + d is P(X >= 10) + P(X <= 2): 0.7697 at d = 0.36, 0.8023 at d = 0.37.
    assert statistics.binomial_mde(5) is None
    assert statistics.binomial_mde(12) == 0.37
    # At Benjamini-Hochberg's level for a lone discovery among 8 (0.00625), 12 units reject only at 12 or 0
    # of 12 (p = 2 / 4096; 11 of 12 gives 0.0063): power 0.5 + d to the 12th >= 0.8 from d = 0.49.
    assert statistics.binomial_mde(12, 0.05 / 8) == 0.49
    assert statistics.binomial_mde(7, 0.05 / 8) is None  # 2 / 128 = 0.0156 > 0.00625


def test_ratio_variance_of_a_mean_and_of_a_ratio() -> None:
    # Mean of pair values 0.2, 0.4, 0.6, 0.8 (denominator 1 each): variance = s^2 / 4 = (0.2 / 3) / 4.
    ratio, variance = statistics.ratio_variance(np.array([[0.2], [0.4], [0.6], [0.8]]), np.ones((4, 1)))
    assert (ratio[0], variance[0]) == pytest.approx((0.5, 0.2 / 3 / 4))
    # Pooled 3/4 and 1/4: R = 0.5, mean denominator 4, psi = (3 - 2) / 4, (1 - 2) / 4 -> 0.125 / 2.
    ratio, variance = statistics.ratio_variance(np.array([[3.0], [1.0]]), np.array([[4.0], [4.0]]))
    assert (ratio[0], variance[0]) == pytest.approx((0.5, 0.0625))
    ratio, variance = statistics.ratio_variance(np.array([[1.0]]), np.array([[2.0]]))
    assert ratio[0] == 0.5 and np.isnan(variance[0])  # one pair: no spread between pairs to measure


@pytest.mark.parametrize(
    ("value", "variance", "pairs", "instances"),
    [(0.3, 0.01, 6, 96), (0.05, 0.0004, 12, 192), (0.97, 0.0001, 70, 1120), (0.5, 0.02, 6, 24), (0.0, 0.0, 12, 192)],
)
def test_score_interval_matches_an_independent_grid_solution(value, variance, pairs, instances) -> None:
    low, high = PairEstimate(value, variance, pairs, instances).interval()
    assert (low, high) == pytest.approx(score_interval_reference(value, variance, pairs, instances), abs=1e-6)


def test_score_interval_without_spread_is_the_wilson_interval_with_a_t_quantile() -> None:
    # No spread between pairs: only the binomial floor p(1-p)/N is left, i.e. Wilson with z = t(0.975, G-1).
    t = stats.t.ppf(0.975, 11)
    low, high = PairEstimate(0.25, 0.0, 12, 40).interval()
    centre = (0.25 + t**2 / 80) / (1 + t**2 / 40)
    half = t * math.sqrt(0.25 * 0.75 / 40 + t**2 / 6400) / (1 + t**2 / 40)
    assert (low, high) == pytest.approx((centre - half, centre + half))
    # ... and with t replaced by z it is statsmodels' Wilson interval over instances (10 of 40).
    z_equivalent = PairEstimate(0.25, 0.0, 10**7, 40).interval()
    assert z_equivalent == pytest.approx(proportion_confint(10, 40, method="wilson"), abs=1e-6)


def test_a_difference_is_scored_on_its_range() -> None:
    # [-1, 1] is mapped to [0, 1]: value 0.2 -> 0.6, variance / 4; bounds map back.
    low, high = PairEstimate(0.2, 0.04, 10, 400, lowest=-1.0, width=2.0).interval()
    reference = score_interval_reference(0.6, 0.01, 10, 400)
    assert (low, high) == pytest.approx((2 * reference[0] - 1, 2 * reference[1] - 1), abs=1e-6)


def test_p_value_is_the_intervals_own_test() -> None:
    # At a bound of the interval the test statistic equals the t quantile: p = 0.05 exactly.
    estimate = PairEstimate(0.3, 0.01, 6, 96)
    low, high = estimate.interval()
    assert estimate.p_value(low) == pytest.approx(0.05, abs=1e-6)
    assert estimate.p_value(high) == pytest.approx(0.05, abs=1e-6)
    assert estimate.p_value(0.3) == 1.0


@settings(max_examples=300, deadline=None)
@given(
    value=st.floats(0.0, 1.0),
    spread=st.floats(0.0, 0.3),
    pairs=st.integers(6, 80),
    per_pair=st.integers(1, 40),
    null=st.floats(0.001, 0.999),
)
def test_the_interval_excludes_the_null_exactly_when_p_is_below_5_percent(value, spread, pairs, per_pair, null):
    estimate = PairEstimate(value, spread**2, pairs, pairs * per_pair)
    low, high = estimate.interval()
    assert 0.0 <= low < high <= 1.0  # in range without clipping, never zero-width
    p = estimate.p_value(null)
    if abs(p - 0.05) > 1e-9:
        assert (p < 0.05) == (null < low or null > high)


def test_one_pair_has_no_interval_and_no_test() -> None:
    estimate = PairEstimate(0.5, float("nan"), 1, 16)
    assert (estimate.interval(), estimate.p_value(0.5), estimate.min_p_value(0.5), estimate.mde(0.5)) == (
        None, None, None, None,
    )  # fmt: skip


def test_fewer_than_six_pairs_give_no_interval_and_no_p_below_the_pairs_exact_bound() -> None:
    # 5 pairs that all agree, 500 instances: the binomial floor alone would say p ~ 1e-6, but 5 pairs are 5
    # units: even an exact sign-flip test cannot go below 2 * 0.5**5 = 0.0625.
    estimate = PairEstimate(1.0, 0.0, 5, 500)
    assert (estimate.interval(), estimate.mde(0.5)) == (None, None)
    assert estimate.p_value(0.5) == estimate.min_p_value(0.5) == 0.0625
    assert PairEstimate(1.0, 0.0, 6, 600).p_value(0.5) == 0.03125  # from 6 pairs on, testable


def test_smallest_attainable_p_and_detectable_shift_of_the_score_test() -> None:
    # Most extreme data: every pair at 0, no spread -> variance at the null 0.25 / N, statistic sqrt(N).
    # p = 2 t.sf(sqrt(192), 11) = 3e-8, but never below the 12 pairs' exact bound 2 * 0.5**12.
    estimate = PairEstimate(0.4, 0.01, 12, 192)
    assert 2 * stats.t.sf(math.sqrt(192), 11) < 2 * 0.5**12 == estimate.min_p_value(0.5)
    # mde = (t.975 + t.8) * sqrt(phi * 0.25^1.5) with phi = 0.01 / 0.24^1.5 (the spread this run showed)
    phi = 0.01 / 0.24**1.5
    expected = (stats.t.ppf(0.975, 11) + stats.t.ppf(0.8, 11)) * math.sqrt(phi * 0.25**1.5)
    assert estimate.mde(0.5) == pytest.approx(expected)


def test_clopper_pearson_matches_statsmodels_and_the_binomial_test() -> None:
    assert statistics.clopper_pearson(6, 7) == pytest.approx(proportion_confint(6, 7, method="beta"))
    assert statistics.clopper_pearson(0, 0) is None
    # 9 of 10 leaning pairs: binomtest p = 0.0215 < 0.05, and the interval excludes 0.5
    low, _ = statistics.clopper_pearson(9, 10)
    assert stats.binomtest(9, 10).pvalue < 0.05 and low > 0.5


def test_expanded_percentile_tail_widens_for_few_pairs() -> None:
    # z' = sqrt(6/5) * t(0.975, 5) = 1.09545 * 2.57058 = 2.81593 -> lower tail 0.24318%
    assert statistics.expanded_tail(6) == pytest.approx(0.24318, abs=1e-5)
    assert statistics.expanded_tail(10_000) == pytest.approx(2.5, abs=0.01)  # the plain percentile


def test_degenerate_intervals_are_dropped_never_zero_width() -> None:
    low, high = statistics.drop_degenerate(np.array([0.2, 0.5, 0.7]), np.array([0.4, 0.5, 0.6]))
    assert np.isnan(low[1:]).all() and np.isnan(high[1:]).all()
    assert (low[0], high[0]) == (0.2, 0.4)


def test_fisher_interval_test_and_detectable_correlation() -> None:
    low, high = statistics.fisher_interval(0.5, 28)  # se of z = 1 / 5
    assert (low, high) == pytest.approx(
        (math.tanh(math.atanh(0.5) - 1.959963984540054 / 5), math.tanh(math.atanh(0.5) + 1.959963984540054 / 5))
    )
    assert statistics.fisher_p_value(0.5, 28) == pytest.approx(2 * stats.norm.sf(math.atanh(0.5) * 5))
    assert statistics.fisher_interval(0.5, 3) == (None, None)
    assert statistics.fisher_p_value(0.5, 3) is None
    assert statistics.fisher_mde(28) == pytest.approx(math.tanh((1.959963984540054 + 0.8416212335729143) / 5))
