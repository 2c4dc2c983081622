"""Differences of two rates over the same name pairs (differences.difference_estimate) and the resampling tests
(probe/analysis/resampling.py), against scipy's paired t test and exact enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from probe.analysis import differences, freedom, resampling
from probe.analysis.differences import difference_estimate
from probe.analysis.statistics import share_estimate


def _side(values: np.ndarray, size: int = 16) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A mean-of-pairs side: (value, 1, size) per pair."""
    return values, np.ones(len(values)), np.full(len(values), float(size))


RARE_WOMEN = np.array([0.05, 0.0, 0.1, 0.05, 0.0, 0.08, 0.02, 0.06, 0.0, 0.04, 0.1, 0.03])
RARE_MEN = np.array([0.0, 0.02, 0.04, 0.0, 0.0, 0.02, 0.0, 0.05, 0.01, 0.0, 0.03, 0.02])


def test_a_difference_of_means_of_pairs_is_scipys_paired_t_test() -> None:
    women, men = RARE_WOMEN + 0.25, RARE_MEN + 0.25  # no rare rates: the spread between pairs alone
    estimate = difference_estimate(_side(women, 1000), _side(men, 1000))
    reference = stats.ttest_rel(women, men)
    assert estimate.method == "paired_t" and estimate.value == pytest.approx(np.mean(women - men))
    assert estimate.p_value(0.0) == pytest.approx(reference.pvalue)
    interval = reference.confidence_interval(0.95)
    assert estimate.interval() == pytest.approx((interval.low, interval.high))
    # the interval is the set of differences its test does not reject: p = 0.05 at each bound
    assert estimate.p_value(interval.low) == pytest.approx(0.05) == estimate.p_value(interval.high)


def test_a_difference_of_two_grant_gaps_is_the_paired_t_over_the_pairs_gap_differences() -> None:
    """`probe compare`'s grant gap of a run minus a reference's: (women - men) - (women' - men') over the same pairs.
    Means of pairs of equal size: scipy's one-sample t over each pair's difference of gaps; values up to 2."""
    rng = np.random.default_rng(7)
    women, men, women_ref, men_ref = (rng.uniform(0, 1, 10) for _ in range(4))
    sides = [_side(values) for values in (women, men, women_ref, men_ref)]
    estimate = differences.contrast_estimate(sides, (1, -1, -1, 1))
    gaps = (women - men) - (women_ref - men_ref)
    reference = stats.ttest_1samp(gaps, 0.0)
    assert estimate.value == pytest.approx(gaps.mean()) and estimate.bound == 2.0
    assert estimate.p_value(0.0) == pytest.approx(reference.pvalue)
    interval = reference.confidence_interval(0.95)
    assert estimate.interval() == pytest.approx((interval.low, interval.high))
    # the two-rate case is difference_estimate, to the last bit
    two = differences.contrast_estimate(sides[:2], (1, -1))
    assert (two.value, two.variance, two.df) == (lambda d: (d.value, d.variance, d.df))(difference_estimate(*sides[:2]))
    # every pair's gap moves alike (+0.5 - 0): no spread, so the four rates' own intervals combine, within [-2, 2]
    same = differences.contrast_estimate([_side(np.full(8, v)) for v in (1.0, 0.5, 0.5, 0.5)], (1, -1, -1, 1))
    low, high = same.interval()
    assert -2.0 <= low < same.value == 0.5 < high <= 2.0


def test_pooled_grant_rates_of_unequal_pairs_are_paired_through_their_influence() -> None:
    # Pooled rates: each pair's influence on a rate is (hits - rate n) / mean(n); the difference's CR2 variance
    # is the spread of the influence differences over pairs, each scaled by 1 / (1 - its leverage), the pair's
    # share of the two sides' instances (each side's share averaged).
    hits_f, n_f = np.array([2.0, 0.0, 1.0, 3.0, 0.0, 1.0]), np.array([40.0, 2.0, 20.0, 40.0, 8.0, 30.0])
    hits_m, n_m = np.array([1.0, 0.0, 0.0, 1.0, 0.0, 0.0]), np.array([40.0, 4.0, 20.0, 36.0, 8.0, 30.0])
    estimate = difference_estimate((hits_f, n_f, n_f), (hits_m, n_m, n_m))
    rate_f, rate_m = hits_f.sum() / n_f.sum(), hits_m.sum() / n_m.sum()
    influence = (hits_f - rate_f * n_f) / n_f.mean() - (hits_m - rate_m * n_m) / n_m.mean()
    assert estimate.value == pytest.approx(rate_f - rate_m)
    leverage = (n_f / n_f.sum() + n_m / n_m.sum()) / 2
    assert estimate.variance == pytest.approx(np.sum(influence**2 / (1 - leverage)) / 36)
    assert estimate.df == pytest.approx(freedom.bell_mccaffrey_df(n_f / n_f.sum() + n_m / n_m.sum()))
    assert estimate.df < 5  # unequal pairs: fewer than pairs - 1
    assert estimate.instances == int(n_f.sum() + n_m.sum()) and estimate.pairs == 6


def test_a_difference_the_same_in_every_pair_combines_the_two_rates_own_intervals() -> None:
    # Women always granted, men never, 8 pairs: no spread; the rates' no-event bounds [0.025^(1/8), 1] and
    # [0, 1 - 0.025^(1/8)] combine (MOVER) and the p-value is the 8 pairs' sign-flip bound.
    bound = 1 - 0.025 ** (1 / 8)
    estimate = difference_estimate(_side(np.ones(8)), _side(np.zeros(8)))
    assert estimate.interval() == pytest.approx((1 - math.hypot(bound, bound), 1.0))
    assert estimate.p_value(0.0) == 2 * 0.5**8
    # Nobody ever granted: the difference 0 with [-bound, bound], p = 1
    none = difference_estimate(_side(np.zeros(8)), _side(np.zeros(8)))
    assert none.interval() == pytest.approx((-bound, bound)) and none.p_value(0.0) == 1.0


def test_a_difference_alike_in_every_pair_up_to_float_noise_has_no_spread() -> None:
    # 0.1 is not exact in binary: the pairs' differences agree only to about 1e-17, the variance is ~1e-34
    values = np.linspace(0.3, 0.7, 8)
    estimate = difference_estimate(_side(values), _side(values - 0.1))
    low, high = estimate.interval()
    # the two rates' own intervals combined (MOVER), never a zero-width interval; its p agrees with it
    assert low < 0 < 0.1 < high and estimate.p_value(0.0) == 1.0


def test_a_difference_needs_six_pairs_for_an_interval() -> None:
    estimate = difference_estimate(_side(np.array([0.1, 0.2, 0.3, 0.2, 0.1])), _side(np.zeros(5)))
    assert estimate.interval() is None and estimate.p_value(0.0) == 0.0625  # never below 2 * 0.5**5


def test_the_difference_sides_are_the_rates_own_estimates() -> None:
    women, men = np.array([0.2, 0.4, 0.3, 0.5, 0.1, 0.6]), np.array([0.1, 0.3, 0.2, 0.2, 0.2, 0.3])
    estimate = difference_estimate(_side(women), _side(men))
    assert [side.value for side in estimate.sides] == pytest.approx([women.mean(), men.mean()])
    assert estimate.sides[0].interval() == share_estimate(*_side(women)).interval()


def test_permutation_correlation_test_is_exact_for_few_pairs() -> None:
    x, y = np.array([0.9, 0.5, 0.4, 0.8, 0.1, 0.3]), np.array([0.7, 0.6, 0.1, 0.9, 0.2, 0.2])
    r = stats.pearsonr(x, y).statistic
    exact = np.mean([abs(stats.pearsonr(x, order).statistic) >= abs(r) - 1e-12 for order in itertools.permutations(y)])
    result = resampling.correlation_test(x, y)
    assert (result["r"], result["p_value"], result["p_adjusted"]) == pytest.approx((r, exact, exact))
    assert resampling.correlation_test(x, y, tests=3)["p_adjusted"] == pytest.approx(min(1.0, 3 * exact))


@pytest.mark.parametrize("seed", range(12))
def test_the_correlation_interval_excludes_0_exactly_when_the_permutation_test_rejects(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.beta(0.3, 2.0, 20)  # skewed pair values, as rare biases are
    y = 0.4 * (seed % 3) * x + rng.beta(0.3, 2.0, 20)  # independent of x, then more and more related
    result = resampling.correlation_test(x, y, tests=1 + seed % 2)
    if abs(result["p_adjusted"] - 0.05) > 1e-9:
        assert (result["p_adjusted"] < 0.05) == (result["ci_low"] > 0 or result["ci_high"] < 0)
    assert result["ci_low"] < result["r"] < result["ci_high"]


def test_correlation_needs_six_pairs_and_variation() -> None:
    assert resampling.correlation_test(np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0]))["p_value"] is None
    # issue 37: a test and an interval were given from 4 pairs; every test over pairs needs MIN_PAIRS (6)
    five = resampling.correlation_test(np.arange(5.0), np.array([0.0, 1.0, 3.0, 2.0, 4.0]))
    assert five["r"] == pytest.approx(0.9) and five["p_value"] is None and five["ci_low"] is None
    assert resampling.correlation_test(np.arange(6.0), np.array([0.0, 1.0, 3.0, 2.0, 4.0, 5.0]))["p_value"] < 0.05
    assert resampling.correlation_mde(5) is None and resampling.correlation_mde(6) is not None
    assert resampling.correlation_test(np.ones(6), np.arange(6.0))["r"] is None
    assert resampling.correlation_mde(28) == pytest.approx(math.tanh((1.959963984540054 + 0.8416212335729143) / 5))


def test_expanded_percentile_tail_widens_for_few_pairs() -> None:
    # z' = sqrt(6/5) * t(0.975, 5) = 1.09545 * 2.57058 = 2.81593 -> lower tail 0.24318%
    assert resampling.expanded_tail(6) == pytest.approx(0.24318, abs=1e-5)
    assert resampling.expanded_tail(10_000) == pytest.approx(2.5, abs=0.01)  # the plain percentile


def test_a_difference_of_rare_rates_with_less_spread_than_their_binomial_variance_takes_that_variance() -> None:
    # 12 pairs of 16, women 1 or 2 of 16 and men 0 or 2 (in step): the pairs' differences (0.0625, 0) spread far
    # less than the two rates' own binomial variance p(1-p) / 16 / 12 each side; both rates rare: the floor holds.
    women, men = np.array([0.0625, 0.125] * 6), np.array([0.0, 0.125] * 6)
    estimate = difference_estimate(_side(women), _side(men))
    binomial = (0.09375 * 0.90625 + 0.0625 * 0.9375) / 16 / 12
    assert estimate.variance == pytest.approx(np.var(women - men, ddof=1) / 12) and estimate.variance < binomial / 5
    assert (estimate.method, estimate.df) == ("paired_t", pytest.approx(11))
    # read at the null's rates, never below the floor: "no difference" moves each rate by its share of the
    # binomial variance to a common 0.0752551, whose variance 2 x 0.0752551 x 0.9247449 is below the floor, so the
    # floor is read (the lower end as the plain t); above, the rates move apart and the variance grows (upper end)
    common_rate = 0.09375 - 0.03125 * (0.09375 * 0.90625) / (0.09375 * 0.90625 + 0.0625 * 0.9375)
    assert 2 * common_rate * (1 - common_rate) / 16 / 12 < binomial
    half = stats.t.ppf(0.975, 11) * math.sqrt(binomial)
    assert estimate.p_value(0.0) == pytest.approx(2 * stats.t.sf(0.03125 / math.sqrt(binomial), 11), abs=1e-12)
    assert estimate.interval() == pytest.approx((0.03125 - half, 0.09260515420709547), abs=1e-9)
    assert estimate.interval()[1] > 0.03125 + half
    assert [estimate.p_value(end) for end in estimate.interval()] == pytest.approx([0.05, 0.05], abs=1e-9)
    # rates of 0.28 and 0.19 are no rare events: the spread between pairs alone (scipy's paired t)
    common = difference_estimate(_side(women + 0.1875), _side(men + 0.1875))
    reference = stats.ttest_rel(women, men).confidence_interval(0.95)
    assert common.interval() == pytest.approx((reference.low, reference.high))


def _unequal_sides() -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """32 pairs: women 1 of 10 in every eighth pair; men 1 of 30 in every eighth pair (10 answers elsewhere), so
    2 events in 8 pairs: the betting interval. Pooled: 4 / 320 - 4 / 400 = 0.0025."""
    women, women_n = np.tile([1.0, 0, 0, 0, 0, 0, 0, 0], 4), np.full(32, 10.0)
    men, men_n = np.tile([0.0, 0, 0, 0, 0, 0, 0, 1], 4), np.tile([10.0] * 7 + [30.0], 4)
    return (women, women_n, women_n), (men, men_n, men_n)


def test_the_betting_interval_of_a_difference_targets_the_difference_of_pooled_rates() -> None:
    # each pair's part of the pooled difference, (h1 W / N1 - h2 W / N2) / (n1 + n2), W = 720, N1 = 320, N2 = 400:
    # +2.25 / 20 in a women's pair, -1.8 / 40 in a men's pair; the widest side's n W / (N w) is 30 x 1.8 / 40 = 1.35
    # (the answer-weighted mean of per-pair differences, read before, was (8 x 0.1 - 4 x 40 / 30) / 720 = 0.0037)
    estimate = difference_estimate(*_unequal_sides())
    assert estimate.method == "betting"
    assert estimate.value == pytest.approx(0.0025, abs=1e-15) and estimate.scale == pytest.approx(1.35, abs=1e-15)
    values, weights = np.array(estimate.mapped.values), np.array(estimate.mapped.weights)
    assert sorted(set(values.round(12))) == pytest.approx([(1 - 0.045 / 1.35) / 2, 0.5, (1 + 0.1125 / 1.35) / 2])
    assert np.sum(values * weights) / np.sum(weights) == pytest.approx((0.0025 / 1.35 + 1) / 2, abs=1e-15)
    assert estimate.interval() == pytest.approx((-0.2675979917049408, 0.2721880710124971), abs=1e-9)


def test_equal_answer_counts_on_both_sides_bet_on_the_pairs_differences_as_before() -> None:
    women, women_n, _ = _unequal_sides()[0]
    men = np.tile([0.0, 0, 0, 0, 0, 0, 0, 1], 4)
    estimate = difference_estimate((women, women_n, women_n), (men, women_n, women_n))
    assert estimate.method == "betting" and estimate.scale == 1.0
    assert estimate.mapped.values == tuple((women / 10 - men / 10 + 1) / 2)


def test_the_betting_difference_p_value_rejects_exactly_outside_its_interval() -> None:
    estimate = difference_estimate(*_unequal_sides())
    low, high = estimate.interval()
    assert estimate.p_value(low) == pytest.approx(0.05, abs=1e-6) and estimate.p_value(high) == pytest.approx(
        0.05, abs=1e-6
    )
    for null in np.linspace(-1, 1, 201):
        if min(abs(null - low), abs(null - high)) > 1e-6:
            assert (estimate.p_value(null) < 0.05) == (not low <= null <= high), null


def test_without_spread_the_p_value_follows_the_interval_shown_beside_it() -> None:
    """8 pairs, each 2 of 2 against 1 of 2: a difference of 0.5 in every pair. Its 95% interval excludes 0, its
    interval at Bonferroni's 1 - 0.05 / 6 does not; the p-value beside each follows that interval (before, the
    Bonferroni row read 6 x 2 * 0.5**8 = 0.047 beside an interval that held 0)."""
    first = (np.full(8, 2.0), np.full(8, 2.0), np.full(8, 2.0))
    second = (np.full(8, 1.0), np.full(8, 2.0), np.full(8, 2.0))
    estimate = difference_estimate(first, second)
    assert estimate.value == 0.5
    low95, _ = estimate.interval(0.95)
    low_bonferroni, _ = estimate.interval(1 - 0.05 / 6)
    assert low95 == pytest.approx(0.0514354847, abs=1e-9) and low_bonferroni == pytest.approx(-0.0992242101, abs=1e-9)
    assert estimate.p_value(0.0) == 2 * 0.5**8
    assert estimate.p_value(0.0, 1 - 0.05 / 6) == 1.0


def test_a_difference_of_rare_rates_reads_the_spread_at_the_rates_its_null_implies_where_larger() -> None:
    # 12 pairs of 1000, women 4.08% and men 1.58%: the spread between pairs (CR2, far above the binomial floor) moved
    # to each null's rates by their binomial variance where that is larger - above the estimate, where the rates
    # move apart: the interval leans up, as the rates' skew asks (rare grants 5% - 2%, 20 pairs: the truth above
    # the t interval in 3.1% of runs, bench/rare_events.py). At "no difference" (both 2.9%) it would be smaller,
    # and the test of it stays scipy's paired t.
    estimate = difference_estimate(_side(RARE_WOMEN, 1000), _side(RARE_MEN, 1000))
    women, men = RARE_WOMEN.mean(), RARE_MEN.mean()
    spread = np.var(RARE_WOMEN - RARE_MEN, ddof=1) / 12
    assert estimate.variance == pytest.approx(spread, abs=1e-15)
    common = women - (women - men) * women * (1 - women) / (women * (1 - women) + men * (1 - men))
    assert 2 * common * (1 - common) < women * (1 - women) + men * (1 - men)
    reference = stats.ttest_rel(RARE_WOMEN, RARE_MEN)
    assert estimate.p_value(0.0) == pytest.approx(reference.pvalue, abs=1e-12)
    low, high = estimate.interval()
    assert low == pytest.approx(reference.confidence_interval().low, abs=1e-9)
    assert high == pytest.approx(0.04895715683086063, abs=1e-9) and high > reference.confidence_interval().high
    assert [estimate.p_value(end) for end in (low, high)] == pytest.approx([0.05, 0.05], abs=1e-9)


def test_a_rate_at_the_end_of_its_range_does_not_make_a_difference_certain() -> None:
    # 7 pairs of 16: one side granted in every instance (1.0), the other 14-16 of 16 (0.9375 pooled): both rare from
    # the top. A rate at 1 has no binomial variance and would not move under "no difference", so the other rate was
    # moved onto 1, no spread was left and the test rejected at its floor 2 x 0.5^7 = 0.0156 (interval from 0.026).
    # The variance at the estimate (here the binomial floor, above the pairs' spread) is the least read.
    everything, nearly = np.ones(7), np.array([15, 14, 16, 15, 16, 14, 15]) / 16
    estimate = difference_estimate(_side(everything), _side(nearly))
    floor = 0.9375 * 0.0625 / 16 / 7
    assert estimate.method == "paired_t" and estimate.variance < floor and estimate.df == pytest.approx(6)
    assert estimate.p_value(0.0) == pytest.approx(2 * stats.t.sf(0.0625 / math.sqrt(floor), 6), abs=1e-12)
    assert estimate.p_value(0.0) == pytest.approx(0.034071925024652214, abs=1e-12)
    assert estimate.interval()[0] == pytest.approx(0.0625 - stats.t.ppf(0.975, 6) * math.sqrt(floor), abs=1e-9)
