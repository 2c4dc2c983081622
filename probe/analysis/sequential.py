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

from dataclasses import dataclass

import numpy as np

MAX_STAKE = 0.75  # fraction of the largest admissible bet (1/m up, 1/(1-m) down): never bet everything
GRID = np.linspace(0.0, 1.0, 401)[1:-1]  # candidate means for confidence sequences (0.5 is on it)
BISECTION_STEPS = 20  # refines an interval's ends from the grid's 0.0025 to ~2e-9
COARSE = 20  # the grid is read at every 20th mean first, then halved to a mean where the ends lie
FINE_STEPS = int(np.ceil(np.log2(COARSE)))  # halvings from a coarse step to one mean
CHUNK = 2**18  # cells (rows x steps x candidate means) evaluated at once: 2 MB arrays stay in the cache


@dataclass(frozen=True)
class _Bets:
    """A sample's observations and each step's running mean and variance: what every bet needs except the
    candidate mean, computed once however many means are tried. (steps, rows) arrays: step-major, so the capital is
    summed over whole rows of memory, step after step (`_log_capital`)."""

    values: np.ndarray  # the observation, 0 where none
    seen: np.ndarray
    weights: np.ndarray
    mean_hat: np.ndarray  # the running estimates before each step: priors mean 1/2, variance 1/4 (one pseudo-
    var_hat: np.ndarray  # observation), then the observations so far


def _bets(x: np.ndarray, weights: np.ndarray | None) -> _Bets:
    """The running estimates of every step at once: cumulative sums in step order (the same additions, in the
    same order, as one step after another)."""
    seen = ~np.isnan(x)
    values = np.where(seen, x, 0.0)
    weights = np.ones_like(x) if weights is None else np.atleast_2d(np.asarray(weights, dtype=float))
    total = np.cumsum(values, axis=1)
    count = np.cumsum(seen, axis=1).astype(float)
    updated_mean = (0.5 + total) / (count + 1)
    squares = np.cumsum(np.where(seen, (values - updated_mean) ** 2, 0.0), axis=1)
    before = np.zeros((x.shape[0], 1))
    count_before = np.hstack([before, count[:, :-1]])
    mean_hat = (0.5 + np.hstack([before, total[:, :-1]])) / (count_before + 1)
    var_hat = (0.25 + np.hstack([before, squares[:, :-1]])) / (count_before + 1)
    return _Bets(*(np.ascontiguousarray(array.T) for array in (values, seen, weights, mean_hat, var_hat)))


def _log_capital(bets: _Bets, means: np.ndarray) -> np.ndarray:
    """Log capital (rows, k) of the bets at candidate means (rows, k): every step and mean in one (steps, rows, k)
    array, summed over the steps in step order; rows in chunks of at most CHUNK cells."""
    steps, rows = bets.values.shape
    per_chunk = max(1, CHUNK // max(1, steps * means.shape[1]))
    result = np.zeros((rows, means.shape[1]))
    for first in range(0, rows if steps else 0, per_chunk):
        part = slice(first, first + per_chunk)
        m = means[part][None, :, :]
        gap = bets.mean_hat[:, part, None] - m
        stake = gap / (bets.var_hat[:, part, None] + gap**2)
        np.maximum(stake, -MAX_STAKE / (1 - m), out=stake)  # np.clip's two steps, without its slow broadcasting
        np.minimum(stake, MAX_STAKE / m, out=stake)
        stake *= bets.weights[:, part, None] * (bets.values[:, part, None] - m)
        growth = np.log1p(stake, out=stake)
        if not bets.seen[:, part].all():
            growth[~bets.seen[:, part]] = 0.0
        result[part] = _sum_in_step_order(growth)
    return result


def _sum_in_step_order(growth: np.ndarray) -> np.ndarray:
    """The sum over axis 0, one step after another (the capital as it grows). numpy adds along an axis that is not
    the fastest in memory one row after another, but pairwise along the fastest: a single column (one row, one
    mean) is accumulated instead."""
    if growth[0].size > 1:
        return np.add.reduce(growth, axis=0)
    return np.add.accumulate(growth, axis=0)[-1]


def log_capital(x: np.ndarray, m: np.ndarray | float, weights: np.ndarray | None = None) -> np.ndarray:
    """Log capital of the betting process for each row of `x` and each candidate mean `m`.

    `x`: (rows, steps) observations in [0, 1] in the order they were made, NaN for none (a title asked
    fewer pairs); `m`: candidate means for every row (k,) or per row (rows, k); returns (rows, k). Each bet
    uses only the row's earlier observations (predictable). `weights` in (0, 1] (rows, steps), default 1: each
    bet pays weight * (x - m), so the process tests the weighted mean sum(w x) / sum(w) - a pooled rate of
    pairs of unequal size, x the pair's rate and w its size over the largest - and stays positive.
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    means = np.asarray(m, dtype=float)
    means = means if means.ndim == 2 else np.broadcast_to(np.atleast_1d(means)[None, :], (len(x), means.size))
    return _log_capital(_bets(x, weights), means)


def log_e_values(x: np.ndarray) -> np.ndarray:
    """Log e-value of "mean = 0.5" per row of `x` (the capital at m = 0.5)."""
    return log_capital(x, 0.5)[:, 0]


def confidence_sequence(
    x: np.ndarray, alpha: float | np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Anytime-valid (1 - alpha) interval for the mean of each row (alpha per row or one for all).

    The means whose capital stays below 1/alpha: the first and last kept means of GRID (`_kept_ends`), refined by
    bisection to BISECTION_STEPS halvings from inside the set: so an interval excludes 0.5 exactly when the
    e-value of 0.5 reaches 1/alpha. NaN bounds for a row with no observation.
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    bets = _bets(x, weights)
    thresholds = np.log(1 / np.broadcast_to(np.asarray(alpha, dtype=float), (len(x),)))
    first, last, usable = _kept_ends(bets, thresholds)
    usable &= ~np.isnan(x).all(axis=1)
    edges = np.concatenate([[0.0], GRID, [1.0]])  # the rejected neighbours of the first and last kept means
    inside = np.stack([GRID[first], GRID[last]], axis=1)
    outside = np.stack([edges[first], edges[last + 2]], axis=1)
    for _ in range(BISECTION_STEPS):  # both ends of every row at once
        middle = (inside + outside) / 2
        kept = _log_capital(bets, middle) < thresholds[:, None]
        inside, outside = np.where(kept, middle, inside), np.where(kept, outside, middle)
    return np.where(usable, inside[:, 0], np.nan), np.where(usable, inside[:, 1], np.nan)


def _kept_ends(bets: _Bets, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row the indices of the first and last GRID means whose capital stays below the threshold, and whether
    any does.

    The kept means form one interval around the running mean (the capital grows away from it on either side;
    tests/analysis/test_scan_statistics.py checks the whole grid agrees), so the grid is read at every COARSE-th
    mean, then each end is halved down to one mean within the coarse step where it lies: 31 means instead of 399
    (the 62 of a scan of both steps cost a third of a run's betting intervals). Where no coarse mean is kept (an
    interval narrower than a coarse step) the interval lies within a step beside the coarse mean of least capital:
    both steps are read (`_ends_beside`).
    """
    rows, last_index = len(thresholds), len(GRID) - 1
    coarse = np.unique(np.append(np.arange(0, len(GRID), COARSE), last_index))
    capital = _log_capital(bets, np.broadcast_to(GRID[coarse], (rows, len(coarse))))
    kept = capital < thresholds[:, None]
    found = kept.any(axis=1)
    first_kept, last_kept = np.argmax(kept, axis=1), len(coarse) - 1 - np.argmax(kept[:, ::-1], axis=1)
    bounds = np.append(coarse, len(GRID))  # a rejected mean beyond the grid's last one
    # (rejected, kept) below the interval and (kept, rejected) above it: halved at once, rows and ends together
    outside = np.stack([np.where(first_kept > 0, coarse[first_kept - 1], -1), bounds[last_kept + 1]], axis=1)
    inside = np.stack([coarse[first_kept], coarse[last_kept]], axis=1)
    for _ in range(FINE_STEPS):
        middle = np.where(np.abs(outside - inside) > 1, (outside + inside) // 2, inside)  # an end found stays
        is_kept = _log_capital(bets, GRID[middle]) < thresholds[:, None]
        inside, outside = np.where(is_kept, middle, inside), np.where(is_kept, outside, middle)
    first, last = inside[:, 0], inside[:, 1]
    missing = np.flatnonzero(~found)
    if len(missing):
        least = coarse[np.argmin(capital[missing], axis=1)]
        first[missing], last[missing], found[missing] = _ends_beside(_rows(bets, missing), thresholds[missing], least)
    return first, last, found


def _ends_beside(bets: _Bets, thresholds: np.ndarray, least: np.ndarray) -> tuple[np.ndarray, ...]:
    """`_kept_ends` for rows without a kept coarse mean: every mean of the coarse steps on both sides of the coarse
    mean of least capital, and where none of those is kept either, the whole grid."""
    rows, last_index = len(thresholds), len(GRID) - 1
    steps = np.arange(COARSE + 1)
    candidates = np.clip(np.hstack([(least - COARSE)[:, None] + steps, least[:, None] + steps]), 0, last_index)
    fine = _log_capital(bets, GRID[candidates]) < thresholds[:, None]
    first = candidates[np.arange(rows), np.argmax(fine, axis=1)]
    last = candidates[np.arange(rows), candidates.shape[1] - 1 - np.argmax(fine[:, ::-1], axis=1)]
    found = fine.any(axis=1)
    missing = np.flatnonzero(~found)
    if len(missing):
        whole = _log_capital(_rows(bets, missing), np.broadcast_to(GRID, (len(missing), len(GRID))))
        whole_kept = whole < thresholds[missing, None]
        found[missing] = whole_kept.any(axis=1)
        first[missing] = np.argmax(whole_kept, axis=1)
        last[missing] = last_index - np.argmax(whole_kept[:, ::-1], axis=1)
    return first, last, found


def _rows(bets: _Bets, rows: np.ndarray) -> _Bets:
    """The bets of some rows."""
    names = ("values", "seen", "weights", "mean_hat", "var_hat")
    return _Bets(*(np.ascontiguousarray(getattr(bets, name)[:, rows]) for name in names))


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


def mean_intervals(samples: list[tuple[np.ndarray, np.ndarray]], alpha: float) -> list[tuple[float, float]]:
    """(1 - alpha) betting intervals of the weighted means of several samples of pairs (values in [0, 1], weights
    in (0, 1]) in one vectorised pass: each the confidence sequence at its last step, used as a fixed-sample
    interval (valid, conservative). A shorter sample's missing steps are NaN, which bet nothing."""
    if not samples:
        return []
    steps = max(len(values) for values, _ in samples)
    x, w = np.full((len(samples), steps), np.nan), np.ones((len(samples), steps))
    for row, (values, weights) in enumerate(samples):
        x[row, : len(values)], w[row, : len(weights)] = values, weights
    low, high = confidence_sequence(x, alpha, w)
    return [(float(a), float(b)) for a, b in zip(low, high, strict=True)]


def mean_interval(values: np.ndarray, weights: np.ndarray, alpha: float) -> tuple[float, float]:
    """The betting interval of one sample (`mean_intervals`)."""
    return mean_intervals([(np.asarray(values, dtype=float), np.asarray(weights, dtype=float))], alpha)[0]
