"""The workforce comparison's correlations: Spearman and Pearson of model share and workforce share over occupations,
with Fisher z intervals.

Over fewer than MIN_JACKKNIFE_OCCUPATIONS occupations the formula's interval: at z(r), standard error 1/sqrt(n - 3)
(Spearman: Bonett and Wright's sqrt((1 + r^2/2)/(n - 3)), r read at most half a rank step from +-1). From there the
same interval read through the jackknife over occupations (each left out in turn): centred at the bias-corrected z,
moved at most one formula standard error from z(r), standard error the jackknife's held between 1 and JACKKNIFE_CAP
times the formula's. Why: the shares are not bivariate normal; at a true 0.95-0.98 a rank correlation is biased low by
O(1/n) and a linear one high, and the formula's intervals missed on one side in up to 8.2% of runs from 12
occupations; below 12 the jackknife's correction is itself too noisy (over 8 occupations it missed in 8 of 12
simulated cells, the truth below Pearson's interval in up to 10.7% of runs). Each row's method names what was applied
(BENCHMARKS.md "Issue 48 item 2").
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from probe.analysis.binomial import CONFIDENCE

# The slope's verdict threshold (workforce.MIN_VERDICT_OCCUPATIONS) and, for its own reason, the jackknife's: below it
# the bias correction overshoots (BENCHMARKS.md)
MIN_JACKKNIFE_OCCUPATIONS = 12
# The jackknife holds occupations^2 values a run: beyond this many occupations (a bias of O(1/n) is then a few percent
# of the interval's half-width) the formula alone
MAX_JACKKNIFE_OCCUPATIONS = 2000
# The jackknife's standard error is read up to this many times the formula's: over few occupations it is itself noisy
# (uncapped, 0.3-3.3% of the intervals over 8 occupations were all of [-1, 1] at a true 0.91-0.98; BENCHMARKS.md)
JACKKNIFE_CAP = 1.5
FORMULA_METHODS = {
    "spearman": "rank correlation; Fisher z interval over occupations, standard error sqrt((1 + r^2/2)/(n - 3)) "
    "(Bonett-Wright)",
    "pearson": "linear correlation; Fisher z interval over occupations, standard error 1/sqrt(n - 3)",
}
JACKKNIFE_METHODS = {
    "spearman": "rank correlation; Fisher z interval over occupations through their jackknife: centred at the "
    "bias-corrected z (moved at most one standard error), standard error the jackknife's held between 1 and 1.5 "
    "times sqrt((1 + r^2/2)/(n - 3)) (Bonett-Wright)",
    "pearson": "linear correlation; Fisher z interval over occupations through their jackknife: centred at the "
    "bias-corrected z (moved at most one standard error), standard error the jackknife's held between 1 and 1.5 "
    "times 1/sqrt(n - 3)",
}


def correlation_fits(share: np.ndarray, x: np.ndarray) -> dict[str, tuple[np.ndarray, ...]]:
    """(r, ci_low, ci_high, method) of Spearman and Pearson of each row of shares (R x occupations; x the logit
    workforce shares): the jackknife where `jackknifed`, the formula elsewhere, each row's method saying which."""
    n = np.isfinite(share).sum(axis=1)
    # fewer occupations than the jackknife needs, or more than it can hold: the formula for every row
    jackknife = MIN_JACKKNIFE_OCCUPATIONS <= share.shape[1] <= MAX_JACKKNIFE_OCCUPATIONS
    left_out = leave_one_out(share, x) if jackknife else {}
    found = {}
    for name, r in correlations(share, x).items():
        parts = left_out.get(name)
        method = np.where(jackknifed(r, n, parts), JACKKNIFE_METHODS[name], FORMULA_METHODS[name])
        found[name] = (*correlation_interval(name, r, n, parts), method)
    return found


def correlations(share: np.ndarray, x: np.ndarray) -> dict[str, np.ndarray]:
    """Spearman and Pearson of each row (occupations with a NaN share left out)."""
    used = ~np.isnan(share)
    return {
        "spearman": _pearson(
            stats.rankdata(share, axis=1, nan_policy="omit"),
            stats.rankdata(np.where(used, x, np.nan), axis=1, nan_policy="omit"),
            used,
        ),
        "pearson": _pearson(share, special.expit(x), used),
    }


def leave_one_out(share: np.ndarray, x: np.ndarray) -> dict[str, np.ndarray]:
    """Spearman and Pearson of each row with each occupation left out in turn: R x occupations, NaN where that
    occupation has no share or where the rest's correlation is undefined (their shares or workforce shares all
    equal). A rank left out moves the others' ranks: those above it by 1, those tied with it by 1/2 (mid-ranks)."""
    used = ~np.isnan(share)
    occupations = share.shape[1]
    others = used[:, None, :] & ~np.eye(occupations, dtype=bool)[None]  # R x left out x kept
    ranks = {}
    for label, values in (("share", share), ("x", np.where(used, x, np.nan))):
        rank = stats.rankdata(values, axis=1, nan_policy="omit")
        above = (values[:, :, None] < values[:, None, :]) + 0.5 * (values[:, :, None] == values[:, None, :])
        ranks[label] = rank[:, None, :] - above
    wide = (len(share) * occupations, occupations)
    found = {
        "spearman": _pearson(ranks["share"].reshape(wide), ranks["x"].reshape(wide), others.reshape(wide)),
        "pearson": _pearson(
            np.broadcast_to(share[:, None, :], others.shape).reshape(wide),
            np.broadcast_to(special.expit(x)[:, None, :], others.shape).reshape(wide),
            others.reshape(wide),
        ),
    }
    return {name: np.where(used, value.reshape(share.shape), np.nan) for name, value in found.items()}


def jackknifed(r: np.ndarray, n: np.ndarray, left_out: np.ndarray | None) -> np.ndarray:
    """The rows whose interval is read through the jackknife: at least MIN_JACKKNIFE_OCCUPATIONS occupations, r
    defined, and a correlation without each occupation defined (`left_out`: R x occupations, NaN where none)."""
    if left_out is None:
        return np.zeros(r.shape, dtype=bool)
    return (n >= MIN_JACKKNIFE_OCCUPATIONS) & np.isfinite(r) & ((~np.isnan(left_out)).sum(axis=1) == n)


def correlation_interval(
    name: str, r: np.ndarray, n: np.ndarray, left_out: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """r with its Fisher z interval over n occupations: at z(r), standard error the formula's (`spearman_centre`
    for a Spearman near +-1). On the rows `jackknifed` (R x occupations of `leave_one_out`): centred at the
    bias-corrected n z(r) - (n - 1) mean(z(r without one)), moved at most one formula standard error from z(r),
    standard error the jackknife's sqrt((n - 1)/n sum (z(r without one) - their mean)^2) held between 1 and
    JACKKNIFE_CAP times the formula's. In the correction r and every left-out r are read at most half a rank step
    over n occupations from +-1 (Pearson's too): one edge, so that a correlation of exactly 1, whose left-out ones
    are all 1, is not moved. The shift being under the half-width, every interval holds z(r)'s r (a Spearman of
    +-1 read at its edge, as in the formula)."""
    centre = spearman_centre(r, n) if name == "spearman" else np.clip(r, -1 + 1e-12, 1 - 1e-12)
    spread = np.sqrt((1 + centre**2 / 2) if name == "spearman" else 1.0) / np.sqrt(np.maximum(n - 3, 1))
    z = np.arctanh(centre)
    used = jackknifed(r, n, left_out)
    if used.any():  # every z of the correction read at the same edge, Pearson's r too
        edge = spearman_centre(np.ones_like(r), n)[:, None]
        parts = np.arctanh(np.clip(np.nan_to_num(left_out), -edge, edge))  # an occupation without a share: 0
        count = np.maximum(n, 1)
        mean = parts.sum(axis=1) / count
        deviations = np.where(np.isnan(left_out), 0.0, parts - mean[:, None])
        jackknife = np.sqrt((n - 1) / count * (deviations**2).sum(axis=1))
        shift = np.clip((n - 1) * (np.arctanh(np.clip(r, -edge[:, 0], edge[:, 0])) - mean), -spread, spread)
        z = np.where(used, z + shift, z)
        spread = np.where(used, np.clip(jackknife, spread, JACKKNIFE_CAP * spread), spread)
    half = stats.norm.isf((1 - CONFIDENCE) / 2) * spread
    return r, np.tanh(z - half), np.tanh(z + half)


def spearman_centre(r: np.ndarray, n: np.ndarray) -> np.ndarray:
    """r moved at most to 1 - 6 / (n (n^2 - 1)) from +-1: half the smallest step of a rank correlation (the sum of
    squared rank differences moves by 2). Over 8 occupations every rank agrees in many runs (r = 1: z infinite, the
    interval [1, 1]); that half step gives them a real interval (coverage 0.899-0.920 -> 0.969, BENCHMARKS.md)."""
    edge = 1 - 6 / np.maximum(n * (n**2 - 1), 6.000001)
    return np.clip(r, -edge, edge)


def _pearson(a: np.ndarray, b: np.ndarray, used: np.ndarray) -> np.ndarray:
    weight = used.astype(float)
    a, b = np.where(used, a, 0.0), np.where(used, b, 0.0)
    n = weight.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):  # a row without occupations: NaN
        ac = (a - (a * weight).sum(axis=1, keepdims=True) / n) * weight
        bc = (b - (b * weight).sum(axis=1, keepdims=True) / n) * weight
        return (ac * bc).sum(axis=1) / np.sqrt((ac**2).sum(axis=1) * (bc**2).sum(axis=1))
