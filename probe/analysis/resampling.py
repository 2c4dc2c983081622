"""Inference by resampling name pairs: the consistency-bias correlation's permutation test and the bootstrap
behind the rank intervals of `probe compare`.

Both resample the pair, the unit of every inference here, from a fixed seed, so a run's figures are the same on
every machine.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
from scipy import stats

from probe.analysis.binomial import CONFIDENCE, POWER, SIGNIFICANCE
from probe.analysis.statistics import MIN_PAIRS

SEED = 20240229
BOOTSTRAP_REPLICATES = 2000
PERMUTATIONS = 9999
_TIE = 1e-12  # permuted correlations within this of the observed one count as reaching it (float ties)
_NEAR_ONE = 1 - 1e-15

PERCENTILE_METHOD = f"bootstrap over name pairs ({BOOTSTRAP_REPLICATES} resamples, expanded percentile)"
CORRELATION_METHOD = (
    f"Fisher z interval whose critical value is the permutation distribution's ({PERMUTATIONS} permutations of "
    "the pairs' bias values), Bonferroni over the conditions tested: the interval excludes 0 exactly when the "
    "permutation test's adjusted p is below 0.05, and the test keeps its size however skewed the pair values"
)


def bootstrap_weights(n_units: int, seed: int = SEED) -> np.ndarray:
    """(replicates x units) resampling counts: each row draws `n_units` units with replacement."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_units, np.full(n_units, 1 / n_units), size=BOOTSTRAP_REPLICATES)


def expanded_tail(n_units: int) -> float:
    """The lower percentile (in %) of Hesterberg's expanded percentile bootstrap for `n_units` clusters.

    A plain percentile interval over few clusters is too narrow (it ignores the n/(n-1) bias of the resampled
    variance and the t-shape of a mean over few units). The expanded interval takes the percentiles at alpha'
    with z_{alpha'/2} = sqrt(n/(n-1)) * t_{alpha/2, n-1} (Hesterberg 2015, "What teachers should know about the
    bootstrap", section 5); it tends to the plain percentile as n grows.
    """
    alpha = 1 - CONFIDENCE
    z = math.sqrt(n_units / (n_units - 1)) * stats.t.ppf(1 - alpha / 2, n_units - 1)
    return 100 * float(stats.norm.sf(z))


def correlation_test(x: np.ndarray, y: np.ndarray, tests: int = 1) -> dict[str, float | None]:
    """Pearson r over pairs with its permutation test and the interval that test calibrates.

    The reference set: every permutation of the pairs' y values where there are at most PERMUTATIONS + 1 (7 pairs
    or fewer: the test is exact), else the observed order and PERMUTATIONS seeded random ones. p = the share of the
    set with |r| at least the observed; adjusted = min(1, tests * p). The interval is tanh(atanh(r) -+ atanh(r_c)),
    r_c the |r| of the set beyond which the adjusted p is below 0.05: it excludes 0 exactly when the test rejects.
    r is None below 3 pairs or for a constant variable; the test and interval need MIN_PAIRS pairs (as every test
    over pairs: with 5 the exact permutation set's smallest p is 1 / 60), the interval |r| < 1.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(x)
    result: dict[str, float | None] = {"r": None, "p_value": None, "p_adjusted": None, "ci_low": None, "ci_high": None}
    if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return result
    r = result["r"] = float(stats.pearsonr(x, y)[0])
    if n < MIN_PAIRS:
        return result
    reference = np.abs(_pearson_rows(x, _reference_orders(y)))
    p_value = float(np.mean(reference >= abs(r) - _TIE))
    result |= {"p_value": p_value, "p_adjusted": min(1.0, tests * p_value)}
    if abs(r) >= _NEAR_ONE:
        return result
    # adjusted p < 0.05 exactly when at most `allowed` members of the set reach the observed |r|, that is when
    # |r| exceeds the (allowed + 1)-th largest |r| of the set: that value is the interval's critical r
    allowed = math.ceil(SIGNIFICANCE / max(tests, 1) * len(reference)) - 1
    critical_r = np.sort(reference)[::-1][allowed] + _TIE if allowed < len(reference) else 1.0
    half, centre = math.atanh(min(critical_r, _NEAR_ONE)), math.atanh(r)
    return result | {"ci_low": math.tanh(centre - half), "ci_high": math.tanh(centre + half)}


def _reference_orders(y: np.ndarray) -> np.ndarray:
    """The y orders the permutation test compares with: all of them for few pairs, else seeded random ones."""
    if math.factorial(len(y)) <= PERMUTATIONS + 1:
        return np.array(list(itertools.permutations(y)))
    return np.vstack([y, y[_permutations(len(y))]])


@functools.lru_cache(maxsize=2)
def _permutations(units: int) -> np.ndarray:
    """PERMUTATIONS seeded random orders of `units` positions. A shuffle moves positions whatever the values, so
    these orders give the values `rng.permuted` would, and every condition of a run (the same pairs) reuses them:
    a shuffle of 10,000 x 500 values cost 0.3 s."""
    rng = np.random.default_rng(SEED)
    orders = rng.permuted(np.broadcast_to(np.arange(units, dtype=np.int32), (PERMUTATIONS, units)), axis=1)
    orders.flags.writeable = False
    return orders


def _pearson_rows(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Pearson r of x with each row of `rows`."""
    xc = x - x.mean()
    rc = rows - rows.mean(axis=1, keepdims=True)
    return (rc @ xc) / (np.sqrt((rc**2).sum(axis=1)) * math.sqrt((xc**2).sum()))


def correlation_mde(n: int, alpha: float = SIGNIFICANCE) -> float | None:
    """Smallest |r| detected over n pairs with 80% power at `alpha` (two-sided; Fisher z, which the permutation
    test matches for pair values without heavy skew); None below MIN_PAIRS pairs, where no test is given."""
    if n < MIN_PAIRS:
        return None
    z = (stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(POWER)) / math.sqrt(n - 3)
    return float(math.tanh(z))
