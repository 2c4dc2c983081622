"""Interval and test building blocks shared by the analyzers, the report and the coverage benchmark.

Rules every interval here keeps (DESIGN.md section 10): it names its method (`*_METHOD` below); it
respects the design's clustering (name pairs are the sampled unit: overall intervals use cluster-robust
errors over pairs, the sign test counts pairs, compare's bootstrap resamples pairs, the regression clusters
its errors by pair; the studied occupations are a fixed set); and an interval that cannot be estimated
(no spread, one pair) is NaN, never zero-width or inverted.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

BOOTSTRAP_REPLICATES = 2000
BOOTSTRAP_SEED = 20240229
CONFIDENCE = 0.95
SIGNIFICANCE = 0.05
POWER = 0.8

CLUSTER_T_METHOD = "cluster-robust standard error over name pairs (CR1, t with pairs - 1 df)"
PERCENTILE_METHOD = f"bootstrap over name pairs ({BOOTSTRAP_REPLICATES} resamples, expanded percentile)"
WILSON_METHOD = "Wilson score interval (instances treated as independent)"
FISHER_METHOD = "Fisher z interval over name pairs"
CLUSTERED_METHOD = "logistic regression, errors clustered by name pair (CR1, t with pairs - 1 df)"
SIGN_TEST = "exact two-sided sign test over name pairs"
BINOMIAL_TEST = "exact two-sided binomial test over instances, Benjamini-Hochberg over occupations"
_MIN_WIDTH = 1e-12


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


def ratio_influence(
    numerator: np.ndarray, denominator: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Ratios sum(w * numerator) / sum(w * denominator) per weighting and metric, with each pair's influence.

    numerator, denominator: (pairs x metrics); weights: (weightings x pairs), ones for the data itself.
    Returns the (weightings x metrics) ratios and the (weightings x pairs x metrics) influence values
    psi_g = (num_g - R den_g) / mean(den): the linearisation whose spread over pairs gives the ratio's
    cluster-robust standard error.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = (weights @ numerator) / (weights @ denominator)
        mean_denominator = (weights @ denominator) / numerator.shape[0]
        psi = (numerator[None] - ratio[:, None, :] * denominator[None]) / mean_denominator[:, None, :]
    return ratio, psi


def cluster_standard_error(psi: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """sqrt(sum_g w_g psi_g^2 / (G (G - 1))) per resample and metric: the CR1 error of a ratio over G pairs."""
    pairs = weights.shape[1]
    if pairs < 2:  # one pair: no spread between pairs to measure
        return np.full((weights.shape[0], psi.shape[2]), np.nan)
    return np.sqrt(np.einsum("bg,bgm->bm", weights, psi**2) / (pairs * (pairs - 1)))


def cluster_t_interval(
    estimate: np.ndarray, standard_error: np.ndarray, n_units: np.ndarray, bounds: tuple[np.ndarray, float]
) -> tuple[np.ndarray, np.ndarray]:
    """estimate +- t(0.975, G - 1) * cluster-robust SE per metric, cut to the metric's range.

    Over few pairs the t quantile (12.7 at 2 pairs, 2.57 at 6) widens the interval as much as the data
    cannot support; `python -m bench --coverage` measures its coverage (0.94 at 6 pairs). A bootstrap-t
    covered as well but broke down where pairs sit at 0 or 1 (a resample of such pairs has no spread), and
    the percentile bootstrap covered only 0.91 at 6 pairs. NaN with < 2 pairs or no spread between them.
    """
    units = np.broadcast_to(np.asarray(n_units), np.shape(estimate))
    usable = (units >= 2) & (standard_error > 0)
    critical = stats.t.ppf(1 - (1 - CONFIDENCE) / 2, np.maximum(units - 1, 1))
    with np.errstate(invalid="ignore"):
        low = np.where(usable, np.maximum(estimate - critical * standard_error, bounds[0]), np.nan)
        high = np.where(usable, np.minimum(estimate + critical * standard_error, bounds[1]), np.nan)
    return drop_degenerate(low, high)


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


def sign_test(values: np.ndarray, null: float) -> tuple[float | None, int]:
    """Two-sided exact sign test of per-pair values against `null`: (p-value, pairs not tied with it)."""
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    above, below = int((values > null).sum()), int((values < null).sum())
    untied = above + below
    if untied == 0:
        return None, 0
    return float(stats.binomtest(above, untied, 0.5).pvalue), untied


def binomial_mde(n: int) -> float | None:
    """Smallest |share - 0.5| an exact binomial test on n instances detects with 80% power at 5%.

    None where no share at all reaches 80% power (the test cannot reject at this size).
    """
    if binomial_min_p(n) >= SIGNIFICANCE:
        return None
    counts = np.arange(n + 1)
    pvalues = np.array([stats.binomtest(int(k), n, 0.5).pvalue for k in counts])
    rejecting = counts[pvalues < SIGNIFICANCE]
    upper = rejecting[rejecting > n / 2]  # reject for counts at or above this, by symmetry also below
    for delta in np.arange(0.01, 0.501, 0.01):
        share = 0.5 + delta
        power = stats.binom.sf(upper.min() - 1, n, share) + stats.binom.cdf(n - upper.min(), n, share)
        if power >= POWER:
            return round(float(delta), 2)
    return 0.5


def normal_mde(ci_low: float | None, ci_high: float | None) -> float | None:
    """Minimum detectable effect (80% power, 5% two-sided) from a 95% interval: (z.975 + z.8) * SE."""
    if ci_low is None or ci_high is None:
        return None
    z = stats.norm.ppf(1 - SIGNIFICANCE / 2)
    standard_error = (ci_high - ci_low) / (2 * z)
    return float((z + stats.norm.ppf(POWER)) * standard_error)


def fisher_interval(r: float | None, n: int) -> tuple[float | None, float | None]:
    """95% Fisher z interval of a Pearson r over n points; None below 4 points or at |r| = 1."""
    if r is None or (isinstance(r, float) and math.isnan(r)) or n < 4 or abs(r) >= 1:
        return None, None
    half = stats.norm.ppf(1 - (1 - CONFIDENCE) / 2) / math.sqrt(n - 3)
    return math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)


def fisher_mde(n: int) -> float | None:
    """Smallest |r| a Pearson test over n points detects with 80% power at 5% (Fisher z approximation)."""
    if n < 4:
        return None
    z = (stats.norm.ppf(1 - SIGNIFICANCE / 2) + stats.norm.ppf(POWER)) / math.sqrt(n - 3)
    return float(math.tanh(z))
