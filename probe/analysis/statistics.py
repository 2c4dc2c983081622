"""Interval and test building blocks shared by the analyzers, the report and the coverage benchmark.

Rules every inference here keeps (DESIGN.md sections 5 and 10): the name pair is the sampled unit (overall
and occupation-scope intervals take their variance from the spread between pairs, the occupation tests count
pairs, the regression clusters its errors by pair); one procedure gives a finding's interval and its p-value
(the interval is the set of values its test does not reject); every interval names its method and stays in
the metric's range without clipping; an interval that cannot be estimated (one pair) is NaN, never
zero-width. `python -m bench --coverage` measures the coverage of each headline metric (BENCHMARKS.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats
from statsmodels.stats.proportion import proportion_confint

BOOTSTRAP_REPLICATES = 2000
BOOTSTRAP_SEED = 20240229
CONFIDENCE = 0.95
SIGNIFICANCE = 0.05
POWER = 0.8
# The score interval's variance function [p(1-p)]^VARIANCE_POWER: 1 is the binomial's (Wilson), 2 the logit
# scale's. Pair values of rare events are right-skewed (a few pairs carry most of the events); 1 undercovers
# them, 2 undercovers at few pairs; 1.5 came closest to 0.93-0.97 for every headline metric at 12, 20 and 70
# pairs in both simulated worlds (BENCHMARKS.md "Statistics", `python -m bench --coverage`, with the figures
# that miss: a behaviour of one real pair in 12 that a sample may not include).
VARIANCE_POWER = 1.5

SCORE_METHOD = (
    "score interval over name pairs: variance [p(1-p)]^1.5 scaled to the spread between pairs (CR1), at least "
    "the binomial p(1-p)/instances; t with pairs - 1 df; the p-value is the same test"
)
WITHIN_PAIR_METHOD = "Wilson score interval over the pair's own instances"
PERCENTILE_METHOD = f"bootstrap over name pairs ({BOOTSTRAP_REPLICATES} resamples, expanded percentile)"
FISHER_METHOD = (
    "Fisher z interval and test over name pairs, Bonferroni over the conditions tested (the interval at level "
    "1 - 0.05 / conditions, so it excludes 0 exactly when the adjusted p is below 0.05)"
)
CLUSTERED_METHOD = "logistic regression, errors clustered by name pair (CR1, t with pairs - 1 df)"
OCCUPATION_TEST = (
    "exact two-sided sign test over name pairs (a pair leans to the gender it picked more often, order-balanced), "
    "Clopper-Pearson interval of the share of leaning pairs that lean female, Benjamini-Hochberg over occupations"
)
_MIN_WIDTH = 1e-12
# The fewest name pairs any test over pairs can reject with at 5%: even an exact sign-flip test of G pairs that
# all agree cannot go below 2 * 0.5**G (0.0625 at 5, 0.031 at 6). Below it no interval is given, and a p-value
# is never below that bound: instances of one pair are not independent, so agreeing pairs are not more evidence
# than their number allows.
MIN_PAIRS = 6
_SMALLEST_BASE = 1e-300


def bootstrap_weights(n_units: int, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """(replicates x units) resampling counts: each row draws `n_units` units with replacement."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_units, np.full(n_units, 1 / n_units), size=BOOTSTRAP_REPLICATES)


def expanded_tail(n_units: int) -> float:
    """The lower percentile (in %) of Hesterberg's expanded percentile bootstrap for `n_units` clusters.

    A plain percentile interval over few clusters is too narrow (it ignores the n/(n-1) bias of the
    resampled variance and the t-shape of a mean over few units). The expanded interval takes the
    percentiles at alpha' with z_{alpha'/2} = sqrt(n/(n-1)) * t_{alpha/2, n-1} (Hesterberg 2015, "What
    teachers should know about the bootstrap", section 5); it tends to the plain percentile as n grows.
    """
    alpha = 1 - CONFIDENCE
    z = math.sqrt(n_units / (n_units - 1)) * stats.t.ppf(1 - alpha / 2, n_units - 1)
    return 100 * float(stats.norm.sf(z))


def bootstrap_interval(replicates: np.ndarray, n_units: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
    """Expanded percentile interval per column of `replicates`; NaN with < 2 units or without spread."""
    replicates = np.atleast_2d(replicates)
    columns = replicates.shape[1]
    units = np.broadcast_to(np.asarray(n_units), (columns,))
    low, high = np.full(columns, np.nan), np.full(columns, np.nan)
    for index in np.flatnonzero(units >= 2):
        usable = replicates[:, index][~np.isnan(replicates[:, index])]
        if len(usable):
            tail = expanded_tail(int(units[index]))
            low[index], high[index] = np.percentile(usable, [tail, 100 - tail])
    return drop_degenerate(low, high)


def ratio_influence(numerator: np.ndarray, denominator: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sum(numerator) / sum(denominator) per column, and each row's (pair's) influence on it.

    numerator, denominator: (pairs x metrics), at least one pair. psi_g = (num_g - R den_g) / mean(den): the
    linearisation whose spread over pairs gives the ratio's cluster-robust variance (`cluster_variance`).
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = numerator.sum(axis=0) / denominator.sum(axis=0)
        psi = (numerator - ratio * denominator) / denominator.mean(axis=0)
    return ratio, psi


def cluster_variance(psi: np.ndarray) -> np.ndarray:
    """sum_g psi_g^2 / (G (G - 1)) per column: the CR1 variance over G pairs; NaN with fewer than 2 pairs."""
    pairs = psi.shape[0]
    if pairs < 2:
        return np.full(psi.shape[1:], np.nan)
    return (psi**2).sum(axis=0) / (pairs * (pairs - 1))


def ratio_variance(numerator: np.ndarray, denominator: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sum(numerator) / sum(denominator) per column, and its cluster-robust (CR1) variance over the rows (pairs).

    For a mean of pair values (denominator 1) the variance is s^2 / G. NaN without pairs, variance NaN with one.
    """
    if numerator.shape[0] == 0:
        return np.full(numerator.shape[1], np.nan), np.full(numerator.shape[1], np.nan)
    ratio, psi = ratio_influence(numerator, denominator)
    return ratio, cluster_variance(psi)


@dataclass(frozen=True)
class PairEstimate:
    """An estimate over name pairs with what its score interval and test need.

    value lies in [lowest, lowest + width] (a share: [0, 1]; a difference of shares: [-1, 1]); variance is its
    cluster-robust variance over `pairs`; `instances` counts the instances behind it (the binomial floor).
    """

    value: float
    variance: float
    pairs: int
    instances: int
    lowest: float = 0.0
    width: float = 1.0

    def _unit(self, value: float) -> float:
        return (value - self.lowest) / self.width

    def _spread(self) -> float:
        """phi: the observed variance over the variance function at the estimate (0 at 0 or 1, or no spread)."""
        share = self._unit(self.value)
        if not 0 < share < 1 or not np.isfinite(self.variance):
            return 0.0
        base = max((share * (1 - share)) ** VARIANCE_POWER, _SMALLEST_BASE)  # a share of 1e-209 underflows
        return self.variance / self.width**2 / base

    def _variance_at(self, share: float) -> float:
        binomial = share * (1 - share)
        return max(self._spread() * binomial**VARIANCE_POWER, binomial / self.instances)

    def _critical(self, level: float = CONFIDENCE) -> float:
        return float(stats.t.ppf(1 - (1 - level) / 2, self.pairs - 1))

    @property
    def estimable(self) -> bool:
        return self.pairs >= 2 and self.instances > 0 and np.isfinite(self.value)

    def interval(self) -> tuple[float, float] | None:
        """The 95% interval: every value the score test does not reject at 5%. None with < MIN_PAIRS pairs."""
        if not self.estimable or self.pairs < MIN_PAIRS:
            return None
        share, critical = self._unit(self.value), self._critical()

        def excess(candidate: float) -> float:
            return (share - candidate) ** 2 - critical**2 * self._variance_at(candidate)

        # At 0 or 1 the estimate's own variance is 0, so the search starts just inside the range.
        inner = min(max(share, 1e-12), 1 - 1e-12)
        low = 0.0 if share <= 0 else optimize.brentq(excess, 0.0, inner, xtol=1e-14)
        high = 1.0 if share >= 1 else optimize.brentq(excess, inner, 1.0, xtol=1e-14)
        return self.lowest + self.width * low, self.lowest + self.width * high

    def p_value(self, null: float) -> float | None:
        """Two-sided p-value of the score test of `null`, never below the pairs' exact bound 2 * 0.5**pairs (the
        interval excludes null exactly when p < 0.05: the bound is below 0.05 from MIN_PAIRS pairs on)."""
        if not self.estimable:
            return None
        share, candidate = self._unit(self.value), self._unit(null)
        variance = self._variance_at(candidate)
        if variance <= 0:
            return 1.0 if share == candidate else binomial_min_p(self.pairs)
        statistic = abs(share - candidate) / math.sqrt(variance)
        return max(float(2 * stats.t.sf(statistic, self.pairs - 1)), binomial_min_p(self.pairs))

    def min_p_value(self, null: float) -> float | None:
        """The smallest p-value this design can reach: every pair at the far end of the range, no spread."""
        if not self.estimable:
            return None
        candidate = self._unit(null)
        extreme = PairEstimate(float(candidate < 0.5), 0.0, self.pairs, self.instances)
        return extreme.p_value(candidate)

    def mde(self, null: float) -> float | None:
        """Shift from `null` detected with 80% power at 5% (two-sided), with the spread this run showed.

        (t_{0.975} + t_{0.8}) * sqrt(variance at the null), both t on pairs - 1 df; None with < MIN_PAIRS pairs.
        """
        if not self.estimable or self.pairs < MIN_PAIRS:
            return None
        critical = self._critical() + float(stats.t.ppf(POWER, self.pairs - 1))
        return self.width * critical * math.sqrt(self._variance_at(self._unit(null)))


def drop_degenerate(low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NaN both bounds where the interval has (about) zero width or is inverted: not an interval."""
    low, high = np.asarray(low, dtype=float).copy(), np.asarray(high, dtype=float).copy()
    with np.errstate(invalid="ignore"):
        bad = ~(high - low > _MIN_WIDTH)
    low[bad], high[bad] = np.nan, np.nan
    return low, high


def wilson_interval(hits: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """95% Wilson score interval per row; NaN where n = 0 (never zero-width for n > 0)."""
    hits = np.asarray(hits, dtype=float)
    n = np.asarray(n, dtype=float)
    low = np.full(len(n), np.nan)
    high = np.full(len(n), np.nan)
    has_data = n > 0
    if has_data.any():
        low[has_data], high[has_data] = proportion_confint(
            hits[has_data], n[has_data], alpha=1 - CONFIDENCE, method="wilson"
        )
    return low, high


def binomial_min_p(n: int) -> float:
    """Smallest two-sided p-value an exact binomial test against 0.5 can reach with n trials."""
    return 1.0 if n <= 0 else min(1.0, 2 * 0.5**n)


def binomial_mde(n: int, alpha: float = SIGNIFICANCE) -> float | None:
    """Smallest |share - 0.5| an exact two-sided binomial test on n units detects with 80% power at `alpha`.

    None where no share at all reaches 80% power (the test cannot reject at this size and level).
    """
    if binomial_min_p(n) >= alpha:
        return None
    counts = np.arange(n + 1)
    pvalues = np.array([stats.binomtest(int(k), n, 0.5).pvalue for k in counts])
    rejecting = counts[pvalues < alpha]
    upper = rejecting[rejecting > n / 2]  # reject for counts at or above this, by symmetry also below
    for delta in np.arange(0.01, 0.501, 0.01):
        share = 0.5 + delta
        power = stats.binom.sf(upper.min() - 1, n, share) + stats.binom.cdf(n - upper.min(), n, share)
        if power >= POWER:
            return round(float(delta), 2)
    return 0.5


def clopper_pearson(hits: int, n: int) -> tuple[float, float] | None:
    """Exact 95% interval of a binomial share; it excludes 0.5 exactly when binomtest(hits, n, 0.5) < 0.05."""
    if n <= 0:
        return None
    interval = stats.binomtest(hits, n, 0.5).proportion_ci(CONFIDENCE, method="exact")
    return float(interval.low), float(interval.high)


def fisher_interval(r: float | None, n: int, confidence: float = CONFIDENCE) -> tuple[float | None, float | None]:
    """Fisher z interval of a Pearson r over n points (95% unless `confidence`); None below 4 points or at |r| = 1."""
    if r is None or (isinstance(r, float) and math.isnan(r)) or n < 4 or abs(r) >= 1:
        return None, None
    half = stats.norm.ppf(1 - (1 - confidence) / 2) / math.sqrt(n - 3)
    return math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)


def fisher_p_value(r: float | None, n: int) -> float | None:
    """Two-sided Fisher z test of r = 0: the test the Fisher interval inverts (excludes 0 iff p < 0.05)."""
    if r is None or (isinstance(r, float) and math.isnan(r)) or n < 4:
        return None
    if abs(r) >= 1:
        return 0.0
    return float(2 * stats.norm.sf(abs(math.atanh(r)) * math.sqrt(n - 3)))


def fisher_mde(n: int, alpha: float = SIGNIFICANCE) -> float | None:
    """Smallest |r| a Fisher z test over n points detects with 80% power at `alpha` (two-sided)."""
    if n < 4:
        return None
    z = (stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(POWER)) / math.sqrt(n - 3)
    return float(math.tanh(z))
