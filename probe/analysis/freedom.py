"""Degrees of freedom of the variances over name pairs (statistics.py): Bell-McCaffrey's for a ratio of pair sums,
Satterthwaite's for a mean of pairs of unequal size, and the t quantiles they are read at."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import stats


@lru_cache(maxsize=4096)
def t_quantile(probability: float, df: float) -> float:
    """Student t quantile, remembered: a run's thousands of intervals share a few degrees of freedom (pairs - 1)."""
    return float(stats.t.ppf(probability, df))


def bell_mccaffrey_df(sizes: np.ndarray) -> float:
    """Degrees of freedom of the CR2 variance of a ratio of pair sums (Bell & McCaffrey 2002, Imbens & Kolesar
    2016), working model: independent instances. pairs - 1 for pairs of equal size; fewer when a few pairs carry
    most instances (2 and 40 valid answers, as refusals produce). NaN below 2 pairs."""
    sizes = np.asarray(sizes, dtype=float)
    pairs, total = len(sizes), float(sizes.sum())
    if pairs < 2:
        return math.nan
    leverage = sizes / total
    if np.any(leverage >= 1):
        return math.nan
    # df = (1/T)^2 / sum_gh b_g b_h Q_gh^2, with b_g = 1 / (T^2 (1 - h_g)) and Q = diag(n) - n n' / T expanded
    # into sums over pairs (O(pairs), not O(pairs^2)).
    weight = 1 / (total**2 * (1 - leverage))
    squares = np.sum(weight**2 * sizes**2) - 2 * np.sum(weight**2 * sizes**3) / total
    squares += np.sum(weight * sizes**2) ** 2 / total**2
    return float((1 / total) ** 2 / squares)


def satterthwaite_df(variances: np.ndarray) -> float:
    """Degrees of freedom of the sample variance of a mean of pairs whose values have these (working) variances:
    E[V]^2 / (Var[V] / 2) for V = the residuals' sum of squares, ((1 - 1/G) S1)^2 / ((1 - 2/G) S2 + S1^2 / G^2)
    with S1 = sum v, S2 = sum v^2. Pairs - 1 for equal variances; fewer where small pairs (1 / their valid
    instances) carry most of the noise: pairs of 2 and 40 answers alternating leave about half the pairs' worth
    (issue 40: a mean-of-pairs difference over 12 such pairs covered 0.88 on 11 df). NaN below 2 pairs."""
    variances = np.asarray(variances, dtype=float)
    pairs = len(variances)
    if pairs < 2:
        return math.nan
    first, second = variances.sum(), np.sum(variances**2)
    return float(((1 - 1 / pairs) * first) ** 2 / ((1 - 2 / pairs) * second + first**2 / pairs**2))


def cluster_effect_traces(shares: np.ndarray) -> tuple[float, float]:
    """(tr A, tr A^2) of the CR2 variance of a weighted mean over clusters whose own effects dominate (working
    model: each cluster's mean of equal variance, so its part of the sum varies as its share squared), A = M' D M
    with M = I - 1 w' and D = diag(w^2 / (1 - w)). Its degrees of freedom are tr(A)^2 / tr(A^2); traces add over
    independent groups (the two categories of a ratio). With Zipf-like shares of 20 names they are 2.4, where
    Bell-McCaffrey's working model (independent answers) reads 7.3."""
    shares = np.asarray(shares, dtype=float)
    shares = shares / shares.sum()
    centring = np.eye(len(shares)) - shares[None, :]
    inflated = centring.T @ np.diag(shares**2 / np.maximum(1 - shares, 1e-12)) @ centring
    return float(np.trace(inflated)), float(np.sum(inflated * inflated.T))
