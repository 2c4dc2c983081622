"""Share estimates over name pairs (probe/analysis/statistics.py): which method the pairs call for, and each
method against an outside reference or an independent derivation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import linalg, stats
from statsmodels.stats.proportion import proportion_confint

from probe.analysis import binomial, differences, freedom, statistics
from probe.analysis.sequential import confidence_sequence
from probe.analysis.statistics import share_estimate
from tests.support import score_interval_reference


def test_smallest_attainable_p_of_the_exact_tests() -> None:
    # A two-sided exact test of n agreeing units cannot go below 2 * 0.5**n.
    assert binomial.binomial_min_p(2) == 0.5
    assert binomial.binomial_min_p(5) == 0.0625
    assert binomial.binomial_min_p(6) == 0.03125
    assert binomial.binomial_min_p(0) == 1.0


def test_minimum_detectable_share_of_the_binomial_test_at_a_level() -> None:
    # 5 units cannot reach p < 0.05 at all; 12 units reject at 10 of 12 (p = 0.0386):
    # power at share 0.5 + d is P(X >= 10) + P(X <= 2): 0.7697 at d = 0.36, 0.8023 at d = 0.37.
    assert binomial.binomial_mde(5) is None
    assert binomial.binomial_mde(12) == 0.37
    # At Benjamini-Hochberg's level for a lone discovery among 8 (0.00625), 12 units reject only at 12 or 0
    # of 12 (p = 2 / 4096; 11 of 12 gives 0.0063): power 0.5 + d to the 12th >= 0.8 from d = 0.49.
    assert binomial.binomial_mde(12, 0.05 / 8) == 0.49
    assert binomial.binomial_mde(7, 0.05 / 8) is None  # 2 / 128 = 0.0156 > 0.00625


def _instance_level_cr2(sizes: list[int], hits: list[int]) -> tuple[float, float]:
    """CR2 variance and Bell-McCaffrey df of a pooled rate written out at the instance level (Imbens & Kolesar
    2016, section 3: A_g = (I - H_gg)^(-1/2), G_g = (I - H)_g' A_g X_g (X'X)^-1, df from the eigenvalues of G'G),
    independently of the pair-level formulas in the code."""
    total = sum(sizes)
    y = np.concatenate([[1.0] * h + [0.0] * (n - h) for n, h in zip(sizes, hits, strict=True)])
    residual = y - y.mean()
    hat = np.full((total, total), 1 / total)
    blocks, columns, start = [], [], 0
    for n in sizes:
        rows = slice(start, start + n)
        adjust = linalg.inv(linalg.sqrtm(np.eye(n) - hat[rows, rows])).real
        blocks.append(float(np.ones(n) @ adjust @ residual[rows]) / total)
        columns.append((np.eye(total) - hat)[rows].T @ adjust @ np.ones(n) / total)
        start += n
    eigenvalues = linalg.eigvalsh(np.array(columns) @ np.array(columns).T)
    return float(np.sum(np.square(blocks))), float(eigenvalues.sum() ** 2 / np.sum(eigenvalues**2))


@pytest.mark.parametrize(
    ("sizes", "hits"), [([4, 4, 4, 4], [1, 3, 2, 0]), ([2, 40, 2, 40, 2, 40, 7], [1, 30, 0, 12, 2, 33, 3])]
)
def test_pooled_rate_variance_and_degrees_of_freedom_match_the_instance_level_derivation(sizes, hits) -> None:
    estimate = share_estimate(np.array(hits), np.array(sizes), np.array(sizes))
    variance, df = _instance_level_cr2(sizes, hits)
    assert (estimate.variance, estimate.df) == pytest.approx((variance, df))
    if len(set(sizes)) == 1:
        assert estimate.df == pytest.approx(len(sizes) - 1)  # equal pairs: the usual pairs - 1
    else:
        assert estimate.df < len(sizes) - 1 - 2  # a few large pairs carry most instances: fewer df


def test_a_mean_of_pair_values_has_the_sample_variance_over_pairs_and_its_own_binomial_floor() -> None:
    values, sizes = np.array([0.2, 0.4, 0.6, 0.8]), np.array([2.0, 40.0, 10.0, 4.0])
    estimate = share_estimate(values, np.ones(4), sizes)
    assert (estimate.value, estimate.variance, estimate.df) == pytest.approx((0.5, np.var(values, ddof=1) / 4, 3))
    # p(1-p) sum(1/n_g) / G^2, not p(1-p) / instances: small pairs weigh as much as large ones
    assert estimate.floor_scale == pytest.approx((1 / 2 + 1 / 40 + 1 / 10 + 1 / 4) / 16)
    assert estimate.instances == 56


@pytest.mark.parametrize(
    ("value", "spread", "pairs", "per_pair"),
    [(0.3, 0.1, 6, 16), (0.05, 0.02, 12, 32), (0.97, 0.01, 70, 40), (0.5, 0.14, 6, 4)],
)  # rare rates with at least as many events as pairs (fewer: betting)
def test_score_interval_matches_an_independent_grid_solution(value, spread, pairs, per_pair) -> None:
    # Equal pairs of `per_pair` instances: df pairs - 1 and the floor 1 / instances, as the reference assumes.
    offsets = spread * np.where(np.arange(pairs) % 2 == 0, 1.0, -1.0)
    estimate = share_estimate((value + offsets) * per_pair, np.full(pairs, per_pair), np.full(pairs, per_pair))
    assert estimate.method == "score"
    reference = score_interval_reference(estimate.value, estimate.variance, pairs, pairs * per_pair)
    assert estimate.interval() == pytest.approx(reference, abs=1e-6)


def test_score_interval_without_spread_is_the_wilson_interval_with_a_t_quantile() -> None:
    # Every pair at 0.25 of 10: only the binomial floor p(1-p)/N is left, i.e. Wilson with z = t(0.975, G-1).
    estimate = share_estimate(np.full(12, 2.5), np.full(12, 10.0), np.full(12, 10.0))
    t = stats.t.ppf(0.975, 11)
    centre = (0.25 + t**2 / 240) / (1 + t**2 / 120)
    half = t * math.sqrt(0.25 * 0.75 / 120 + t**2 / 4 / 120**2) / (1 + t**2 / 120)
    assert estimate.interval() == pytest.approx((centre - half, centre + half))
    wide = statistics.ShareEstimate(0.25, 0.0, 10**7, 40, 1 / 40, 10**7 - 1)
    assert wide.interval() == pytest.approx(proportion_confint(10, 40, method="wilson"), abs=1e-6)  # z: statsmodels


def test_no_events_bound_counts_pairs_not_instances() -> None:
    # 12 pairs of 16 instances, no event: [0, 1 - 0.025^(1/12)] = [0, 0.264], not [0, t^2/(N + t^2)] = [0, 0.025]
    estimate = share_estimate(np.zeros(12), np.full(12, 16.0), np.full(12, 16.0))
    assert estimate.method == "no_events"
    assert estimate.interval() == pytest.approx((0.0, 1 - 0.025 ** (1 / 12)))
    assert estimate.p_value(0.5) == 2 * 0.5**12  # 2 (1 - p0)^pairs
    assert estimate.p_value(0.1) == pytest.approx(2 * 0.9**12)
    everyone = share_estimate(np.full(8, 5.0), np.full(8, 5.0), np.full(8, 5.0))
    assert everyone.interval() == pytest.approx((0.025 ** (1 / 8), 1.0))
    assert everyone.interval(0.9) == pytest.approx((0.05 ** (1 / 8), 1.0))


def test_events_carried_by_few_pairs_get_the_betting_interval() -> None:
    # One pair of 12 at 0.5, the rest at 0.01: the events are one pair's worth -> betting, the same interval as
    # the scan's confidence sequence over the pair values.
    values = np.array([0.5, *[0.01] * 11])
    estimate = share_estimate(values, np.ones(12), np.full(12, 16.0))
    assert estimate.method == "betting"
    low, high = confidence_sequence(values[None, :], 0.05)
    assert estimate.interval() == pytest.approx((low[0], high[0]))
    assert low[0] < estimate.value < high[0]
    # Spread over 8 of 12 pairs: score. Half the pairs at 1 and half at 0: not rare, score.
    assert share_estimate(np.array([0.1] * 8 + [0.0] * 4), np.ones(12), np.full(12, 16.0)).method == "score"
    assert share_estimate(np.array([1.0, 0.0] * 3), np.ones(6), np.full(6, 16.0)).method == "score"


def test_one_pair_has_no_interval_and_no_test() -> None:
    estimate = share_estimate(np.array([8.0]), np.array([16.0]), np.array([16.0]))
    assert (estimate.interval(), estimate.p_value(0.5), estimate.min_p_value(0.5), estimate.mde(0.5)) == (
        None,
        None,
        None,
        None,
    )


def test_fewer_than_six_pairs_give_no_interval_and_no_p_below_the_pairs_exact_bound() -> None:
    # 5 pairs that all agree, 500 instances: 5 pairs are 5 units, even an exact sign-flip test cannot go below
    # 2 * 0.5**5 = 0.0625.
    estimate = share_estimate(np.full(5, 100.0), np.full(5, 100.0), np.full(5, 100.0))
    assert (estimate.interval(), estimate.mde(0.5)) == (None, None)
    assert estimate.p_value(0.5) == estimate.min_p_value(0.5) == 0.0625
    six = share_estimate(np.full(6, 100.0), np.full(6, 100.0), np.full(6, 100.0))
    assert six.p_value(0.5) == 0.03125  # from 6 pairs on, testable


def test_smallest_attainable_p_and_detectable_shift_of_the_score_test() -> None:
    estimate = share_estimate(np.array([0.1, 0.7] * 6), np.ones(12), np.full(12, 16.0))
    assert estimate.method == "score" and estimate.min_p_value(0.5) == 2 * 0.5**12
    # mde = (t.975 + t.8) * sqrt(phi * 0.25^1.5), phi = variance / 0.24^1.5 (the spread this run showed)
    phi = estimate.variance / 0.24**1.5
    expected = (stats.t.ppf(0.975, 11) + stats.t.ppf(0.8, 11)) * math.sqrt(phi * 0.25**1.5)
    assert estimate.mde(0.5) == pytest.approx(expected)


@settings(max_examples=300, deadline=None)
@given(
    rates=st.lists(st.floats(0.0, 1.0), min_size=6, max_size=40),
    sizes=st.lists(st.integers(1, 40), min_size=40, max_size=40),
    null=st.floats(0.001, 0.999),
    pooled=st.booleans(),
)
def test_every_interval_excludes_the_null_exactly_when_its_test_rejects(rates, sizes, null, pooled) -> None:
    n = np.array(sizes[: len(rates)], dtype=float)
    hits = np.round(np.array(rates) * n)
    estimate = share_estimate(hits, n, n) if pooled else share_estimate(hits / n, np.ones(len(n)), n)
    low, high = estimate.interval()
    assert 0.0 <= low < high <= 1.0 and low <= estimate.value <= high  # in range, never zero-width
    p = estimate.p_value(null)
    if abs(p - 0.05) > 1e-6 and min(abs(null - low), abs(null - high)) > 1e-6:
        assert (p < 0.05) == (null < low or null > high), estimate.method


def test_clopper_pearson_matches_statsmodels_and_the_binomial_test_at_any_level() -> None:
    assert binomial.clopper_pearson(6, 7) == pytest.approx(proportion_confint(6, 7, method="beta"))
    assert binomial.clopper_pearson(6, 7, 0.99) == pytest.approx(proportion_confint(6, 7, 0.01, method="beta"))
    assert binomial.clopper_pearson(0, 0) is None
    # 9 of 10 leaning pairs: binomtest p = 0.0215 < 0.05, and the 95% interval excludes 0.5; the 99% one holds it
    assert stats.binomtest(9, 10).pvalue < 0.05 and binomial.clopper_pearson(9, 10)[0] > 0.5
    assert binomial.clopper_pearson(9, 10, 0.99)[0] < 0.5
    # the ends, and scipy's root-searched exact interval at an FCR-adjusted level
    assert binomial.clopper_pearson(0, 12) == pytest.approx((0.0, 1 - 0.025 ** (1 / 12)))
    assert binomial.clopper_pearson(12, 12) == pytest.approx((0.025 ** (1 / 12), 1.0))
    reference = stats.binomtest(17, 40).proportion_ci(1 - 0.05 / 62, method="exact")
    assert binomial.clopper_pearson(17, 40, 1 - 0.05 / 62) == pytest.approx((reference.low, reference.high))


def test_clopper_pearson_bounds_are_each_rows_own_interval_exactly() -> None:
    hits, n = np.array([0, 3, 7, 12, 1]), np.array([12, 7, 7, 40, 1])
    low, high = binomial.clopper_pearson_bounds(hits, n, 0.99)
    tail = (1 - 0.99) / 2
    rows = [stats.beta.ppf(tail, h, k - h + 1) if h else 0.0 for h, k in zip(hits, n, strict=True)]
    assert low.tolist() == rows and low[0] == 0.0
    assert high.tolist() == [
        stats.beta.ppf(1 - tail, h + 1, k - h) if h < k else 1.0 for h, k in zip(hits, n, strict=True)
    ]
    assert (high[2], high[4]) == (1.0, 1.0)


def test_fewer_events_than_pairs_get_the_pair_score_interval_however_spread() -> None:
    # 70 pairs of 40, 14 of them with one event: spread over 14 pairs (participation ratio 14), but 14 events
    # for 70 pairs - a run that missed the few pairs carrying a rare event looks just like this (issue 40).
    hits = np.array([1.0] * 14 + [0.0] * 56)
    estimate = share_estimate(hits, np.full(70, 40.0), np.full(70, 40.0))
    assert estimate.method == "pair_score" and estimate.pair_scale == pytest.approx(1 / 70)
    # each pair one trial: the Wilson interval of 0.005 over 70 trials at t(69), whatever the 2,800 answers
    t, n, p = stats.t.ppf(0.975, 69), 70, 0.005
    centre, half = (
        (p + t**2 / (2 * n)) / (1 + t**2 / n),
        t / (1 + t**2 / n) * math.sqrt(p * (1 - p) / n + t**2 / (4 * n**2)),
    )
    assert estimate.interval() == pytest.approx((centre - half, centre + half), abs=1e-10)
    assert estimate.interval() == pytest.approx((0.00037618413, 0.06288171536), abs=1e-10)
    assert estimate.p_value(estimate.interval()[1]) == pytest.approx(0.05, abs=1e-9)
    # 70 events over the same 70 pairs, one each: score; a mean of pair values counts the pairs' instances alike.
    assert share_estimate(np.ones(70), np.full(70, 40.0), np.full(70, 40.0)).method == "score"
    assert share_estimate(hits / 40, np.ones(70), np.full(70, 40.0)).method == "pair_score"
    # the same 14 events in two pairs (participation ratio 2, below FEW_CARRIERS): the betting interval
    assert share_estimate(np.array([7.0] * 2 + [0.0] * 68), np.full(70, 40.0), np.full(70, 40.0)).method == "betting"
    assert statistics.events(0.9, np.array([3.0, 4.0]), np.array([4.0, 4.0]), np.array([4.0, 4.0])) == 1.0


def test_a_difference_of_means_of_pairs_takes_its_degrees_of_freedom_from_the_pairs_sizes() -> None:
    # 12 pairs of 2 and 40 answers alternating: working variances 1/2 + 1/2 and 1/40 + 1/40 per pair, so
    # S1 = 6.3, S2 = 6.015 and df = (11/12 x 6.3)^2 / (10/12 x 6.015 + 6.3^2 / 144) = 6.3066, not 11.
    sizes = np.resize([2.0, 40.0], 12)
    first = (np.array([0.5, 0.4, 0.0, 0.3, 1.0, 0.35] * 2), np.ones(12), sizes)
    second = (np.array([0.0, 0.2, 0.5, 0.25, 0.5, 0.3] * 2), np.ones(12), sizes)
    estimate = differences.difference_estimate(first, second)
    assert estimate.method == "paired_t"
    assert estimate.df == pytest.approx((11 / 12 * 6.3) ** 2 / (10 / 12 * 6.015 + 6.3**2 / 144))
    assert freedom.satterthwaite_df(np.ones(12)) == pytest.approx(11)


def test_a_difference_with_fewer_events_than_pairs_is_the_betting_interval_of_the_pairs_differences() -> None:
    # 20 pairs of 40: 6 events for women, 2 for men; the pairs' differences mapped onto [0, 1] get the betting
    # interval, and its test is the difference's (p = 0.05 at the interval's ends).
    sizes = np.full(20, 40.0)
    women, men = np.array([1.0] * 6 + [0.0] * 14), np.array([0.0] * 18 + [1.0] * 2)
    estimate = differences.difference_estimate((women, sizes, sizes), (men, sizes, sizes))
    assert (estimate.method, estimate.value) == ("betting", pytest.approx(4 / 800))
    low, high = confidence_sequence((((women - men) / 40 + 1) / 2)[None, :], 0.05)
    assert estimate.interval() == pytest.approx((2 * low[0] - 1, 2 * high[0] - 1))
    assert estimate.p_value(estimate.interval()[1]) == pytest.approx(0.05, abs=1e-6)
    assert estimate.p_value(0.0) > 0.05 and estimate.p_value(0.5) < 0.05


def test_a_rate_a_few_pairs_carry_gets_the_pair_score_interval_at_any_size() -> None:
    # 20 pairs of 10 answers, 5 of them always yes: 0.25 carried by 5 pairs' worth, where the same 50 events spread
    # binomially over the pairs would show (0.25 x 200)^2 / (20 x (0.25^2 x 100 + 0.25 x 0.75 x 100 / 10)) = 15.38;
    # 5 < half of that: concentrated, so each pair is one trial (Wilson over 20 at t(19)), not the score interval.
    n = np.full(20, 10.0)
    assert statistics._spread_carriers(0.25, n, n) == pytest.approx(2500 / 162.5, abs=1e-12)
    estimate = share_estimate(np.array([10.0] * 5 + [0.0] * 15), n, n)
    assert (estimate.method, estimate.value) == ("pair_score", 0.25)
    t, trials, p = stats.t.ppf(0.975, 19), 20, 0.25
    centre, half = (
        (p + t**2 / (2 * trials)) / (1 + t**2 / trials),
        t / (1 + t**2 / trials) * math.sqrt(p * (1 - p) / trials + t**2 / (4 * trials**2)),
    )
    assert estimate.interval() == pytest.approx((centre - half, centre + half), abs=1e-9)
    assert estimate.interval() == pytest.approx((0.10595469904285963, 0.4838856411356384), abs=1e-9)
    assert [estimate.p_value(end) for end in estimate.interval()] == pytest.approx([0.05, 0.05], abs=1e-9)
    # the same 50 events spread over every pair (2 or 3 of 10: 19.2 pairs' worth): the score interval, as before
    spread = share_estimate(np.array([2.0, 3.0] * 10), n, n)
    assert spread.method == "score"
    assert spread.interval() == pytest.approx((0.19173751792161828, 0.3189796110128003), abs=1e-9)


def test_sparse_events_are_not_read_as_concentrated_and_a_rare_rate_of_few_carriers_is() -> None:
    # 12 pairs of 2 answers, 6 events over 5 pairs: 4.5 pairs' worth, fewer than half the pairs' 12, but spread
    # binomially 6 events would show only 0.25^2 x 24^2 / (12 x (0.25^2 x 4 + 0.25 x 0.75 x 2)) = 4.8: score.
    two = np.full(12, 2.0)
    assert statistics._spread_carriers(0.25, two, two) == pytest.approx(4.8, abs=1e-12)
    assert share_estimate(np.array([2.0, 1, 1, 1, 1] + [0] * 7), two, two).method == "score"
    # 70 pairs of 40: 8 pairs at 20 of 40, 14 at 1, the rest 0: 174 events (more than the pairs) over 9.42 pairs'
    # worth (at least 6), which the score interval took, (0.0363, 0.1218); spread they would show 50.8: pair_score.
    forty = np.full(70, 40.0)
    estimate = share_estimate(np.array([20.0] * 8 + [1.0] * 14 + [0.0] * 48), forty, forty)
    assert statistics._spread_carriers(estimate.value, forty, forty) == pytest.approx(50.82411850615478, abs=1e-9)
    assert (estimate.method, estimate.value) == ("pair_score", pytest.approx(174 / 2800, abs=1e-15))
    assert estimate.interval() == pytest.approx((0.02495143007140808, 0.14644408564535552), abs=1e-9)
