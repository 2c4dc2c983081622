"""Anytime-valid statistics for `probe scan`: e-values by betting, confidence sequences, e-BH.

The scan decides after every round which titles to ask again, so a fixed-sample p-value would lose its
meaning. Here each title's evidence is a betting capital process (Waudby-Smith & Ramdas 2023, "Estimating
means of bounded random variables by betting"): a gambler starts with 1 and, before each name pair's
observation x in [0, 1], stakes a fraction chosen from the pairs seen so far on x being above (or below) m.
Under "the mean is m" the capital is a nonnegative martingale, so its value at any stopping time is an
e-value (expected value at most 1): optional stopping and adaptive allocation cannot inflate it. The bet is
the hedged aGRAPA plug-in (half the capital bets up, half down, each with the growth-rate-optimal fraction
for the running mean and variance, capped at MAX_STAKE of the admissible range).

- e-value of "share = 0.5": the capital at m = 0.5.
- Confidence sequence: the m whose capital stays below 1/alpha (same process, so an interval excludes 0.5
  exactly when the e-value reaches 1/alpha).
- e-BH (Wang & Ramdas 2022, "False discovery rate control with e-values"): reject the k largest of K
  e-values, k the largest with e_(k) >= K / (alpha k); FDR <= alpha under any dependence between titles.
"""

from __future__ import annotations

import numpy as np

MAX_STAKE = 0.75  # fraction of the largest admissible bet (1/m up, 1/(1-m) down): never bet everything
GRID = np.linspace(0.0, 1.0, 401)[1:-1]  # candidate means for confidence sequences (0.5 is on it)
BISECTION_STEPS = 20  # refines an interval's ends from the grid's 0.0025 to ~2e-9


def log_capital(x: np.ndarray, m: np.ndarray | float, weights: np.ndarray | None = None) -> np.ndarray:
    """Log capital of the betting process for each row of `x` and each candidate mean `m`.

    `x`: (rows, steps) observations in [0, 1] in the order they were made, NaN for none (a title asked
    fewer pairs); `m`: candidate means for every row (k,) or per row (rows, k); returns (rows, k). Each bet
    uses only the row's earlier observations (predictable). `weights` in (0, 1] (rows, steps), default 1: each
    bet pays weight * (x - m), so the process tests the weighted mean sum(w x) / sum(w) - a pooled rate of
    pairs of unequal size, x the pair's rate and w its size over the largest - and stays positive.
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    weights = np.ones_like(x) if weights is None else np.atleast_2d(np.asarray(weights, dtype=float))
    means = np.asarray(m, dtype=float)
    means = means if means.ndim == 2 else np.atleast_1d(means)[None, :]  # (rows, k): a mean per row
    rows = x.shape[0]
    total, squares, count = np.zeros(rows), np.zeros(rows), np.zeros(rows)
    log_capital_ = np.zeros((rows, means.shape[1]))
    for step in range(x.shape[1]):
        value = x[:, step]
        seen = ~np.isnan(value)
        mean_hat = (0.5 + total) / (count + 1)  # priors: mean 1/2, variance 1/4 (one pseudo-observation)
        var_hat = (0.25 + squares) / (count + 1)
        gap = mean_hat[:, None] - means
        stake = np.clip(gap / (var_hat[:, None] + gap**2), -MAX_STAKE / (1 - means), MAX_STAKE / means)
        centred = weights[:, step, None] * (np.where(seen, value, 0.0)[:, None] - means)
        log_capital_ += np.where(seen[:, None], np.log1p(stake * centred), 0.0)
        total = total + np.where(seen, value, 0.0)
        count = count + seen
        updated_mean = (0.5 + total) / (count + 1)
        squares = np.where(seen, squares + (np.where(seen, value, 0.0) - updated_mean) ** 2, squares)
    return log_capital_


def log_e_values(x: np.ndarray) -> np.ndarray:
    """Log e-value of "mean = 0.5" per row of `x` (the capital at m = 0.5)."""
    return log_capital(x, 0.5)[:, 0]


def confidence_sequence(
    x: np.ndarray, alpha: float | np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Anytime-valid (1 - alpha) interval for the mean of each row (alpha per row or one for all).

    The means whose capital stays below 1/alpha, found on GRID and refined by bisection to BISECTION_STEPS
    halvings from inside the set: so an interval excludes 0.5 exactly when the e-value of 0.5 reaches
    1/alpha. NaN bounds for a row with no observation.
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    thresholds = np.log(1 / np.broadcast_to(np.asarray(alpha, dtype=float), (len(x),)))
    kept = log_capital(x, GRID, weights) < thresholds[:, None]
    usable = kept.any(axis=1) & ~np.isnan(x).all(axis=1)
    first = np.argmax(kept, axis=1)
    last = len(GRID) - 1 - np.argmax(kept[:, ::-1], axis=1)
    edges = np.concatenate([[0.0], GRID, [1.0]])  # the rejected neighbours of the first and last kept means
    low = _boundary(x, weights, thresholds, inside=GRID[first], outside=edges[first])
    high = _boundary(x, weights, thresholds, inside=GRID[last], outside=edges[last + 2])
    return np.where(usable, low, np.nan), np.where(usable, high, np.nan)


def _boundary(
    x: np.ndarray, weights: np.ndarray | None, thresholds: np.ndarray, inside: np.ndarray, outside: np.ndarray
) -> np.ndarray:
    """Bisection per row between a kept mean and a rejected one; returns the kept end."""
    for _ in range(BISECTION_STEPS):
        middle = (inside + outside) / 2
        kept = log_capital(x, middle[:, None], weights)[:, 0] < thresholds
        inside, outside = np.where(kept, middle, inside), np.where(kept, outside, middle)
    return inside


def e_bh(log_e: np.ndarray, alpha: float) -> np.ndarray:
    """e-BH: which hypotheses to reject (boolean per e-value), FDR <= alpha under arbitrary dependence."""
    log_e = np.asarray(log_e, dtype=float)
    count = len(log_e)
    if count == 0:
        return np.zeros(0, dtype=bool)
    ranked = np.sort(log_e)[::-1]
    ks = np.arange(1, count + 1)
    passing = np.flatnonzero(ranked >= np.log(count / (alpha * ks)))
    if passing.size == 0:
        return np.zeros(count, dtype=bool)
    k = int(passing[-1]) + 1
    return log_e >= np.log(count / (alpha * k))


def mean_interval(values: np.ndarray, weights: np.ndarray, alpha: float) -> tuple[float, float]:
    """(1 - alpha) betting interval of the weighted mean of one sample of pairs (values in [0, 1], weights in
    (0, 1]): the confidence sequence at its last step, used as a fixed-sample interval (valid, conservative)."""
    x, w = np.atleast_2d(values), np.atleast_2d(weights)
    low, high = confidence_sequence(x, alpha, w)
    return float(low[0]), float(high[0])
