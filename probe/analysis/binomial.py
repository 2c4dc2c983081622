"""Tests of one binomial share over independent units: a pair's own Wilson interval over its instances, and the
exact sign test over name pairs (its smallest attainable p, its detectable effect, its Clopper-Pearson interval)
that decides an occupation's preference."""

from __future__ import annotations

import numpy as np
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

# The levels of every interval and test of the project (statistics.py and the report import them from here).
CONFIDENCE = 0.95
SIGNIFICANCE = 0.05
POWER = 0.8


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


def units_for_level(alpha: float) -> int:
    """The fewest units whose exact bound 2 x 0.5**units falls below `alpha`: below it no test over units reaches
    that level (a Bonferroni level over K - 1 comparisons at K = 8 needs 9, over 56 needs 12)."""
    units = 1
    while binomial_min_p(units) >= alpha:
        units += 1
    return units


def binomial_mde(n: int, alpha: float = SIGNIFICANCE) -> float | None:
    """Smallest |share - 0.5| an exact two-sided binomial test on n units detects with 80% power at `alpha`.

    None where no share at all reaches 80% power (the test cannot reject at this size and level).
    """
    if binomial_min_p(n) >= alpha:
        return None
    upper = _smallest_rejected_above_half(n, alpha)  # reject for counts at or above this, by symmetry also below
    for delta in np.arange(0.01, 0.501, 0.01):
        share = 0.5 + delta
        power = stats.binom.sf(upper - 1, n, share) + stats.binom.cdf(n - upper, n, share)
        if power >= POWER:
            return round(float(delta), 2)
    return 0.5


def _smallest_rejected_above_half(n: int, alpha: float) -> int:
    """The smallest count above n / 2 whose exact two-sided binomial test against 0.5 rejects at `alpha` (every
    larger count rejects too). Found from the symmetric tail 2 x P(X >= k) for all counts at once, then settled by
    binomtest itself at the edge, so the answer is binomtest's (one call per count was 10,000 calls at 10,000 pairs)."""
    counts = np.arange(n // 2 + 1, n + 1)
    upper = int(counts[np.argmax(2 * stats.binom.sf(counts - 1, n, 0.5) < alpha)])
    while upper > n // 2 + 1 and stats.binomtest(upper - 1, n, 0.5).pvalue < alpha:
        upper -= 1
    while stats.binomtest(upper, n, 0.5).pvalue >= alpha:
        upper += 1
    return upper


def clopper_pearson(hits: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Exact interval of a binomial share; it excludes 0.5 exactly when binomtest(hits, n, 0.5) < 1 - confidence
    (the binomial is symmetric at 0.5, so the two-sided test is the doubled one-sided one Clopper-Pearson inverts)."""
    if n <= 0:
        return None
    low, high = clopper_pearson_bounds(np.array([hits]), np.array([n]), confidence)
    return float(low[0]), float(high[0])


def clopper_pearson_bounds(
    hits: np.ndarray, n: np.ndarray, confidence: float = CONFIDENCE
) -> tuple[np.ndarray, np.ndarray]:
    """`clopper_pearson` of each (hits, n > 0) at once: one quantile call for all rows (a call per row cost 0.7 s
    over the 3,000 name orders of a run of 1M answers)."""
    tail = (1 - confidence) / 2  # the beta quantiles binomtest's exact interval finds by root search, in closed form
    hits, n = np.asarray(hits, dtype=float), np.asarray(n, dtype=float)
    low, high = np.zeros(len(hits)), np.ones(len(hits))
    some, short = hits > 0, hits < n
    low[some] = stats.beta.ppf(tail, hits[some], n[some] - hits[some] + 1)
    high[short] = stats.beta.ppf(1 - tail, hits[short] + 1, n[short] - hits[short])
    return low, high
