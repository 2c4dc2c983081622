"""Differences of rates over the same name pairs (and contrasts of several: a difference of two differences), with
the name pair as the unit: the paired cluster t (CR2 variance, Bell-McCaffrey or Satterthwaite degrees of freedom,
a binomial floor where both rates are rare, and then the spread read at the rates each null implies), the rates'
own intervals combined where every pair differs alike, and a betting interval over the pairs' differences where
the events are fewer than the pairs (issue 40)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy import optimize, stats

from probe.analysis.binomial import CONFIDENCE, POWER, binomial_min_p
from probe.analysis.freedom import bell_mccaffrey_df, satterthwaite_df, t_quantile
from probe.analysis.statistics import MIN_PAIRS, RARE, ShareEstimate, events, share_estimate

_NO_SPREAD = 1e-24  # a variance below this (times the squared estimate) is float noise, not spread between pairs


@dataclass(frozen=True)
class DifferenceEstimate:
    """A difference of two rates over the same name pairs (value in [-1, 1]): the paired cluster t; or a contrast
    of several (`signs`: +1 or -1 per side, a difference of two differences in [-2, 2]).

    `variance` is the CR2 variance over pairs of each pair's influence on the first rate minus its influence on
    the second, `df` its Bell-McCaffrey degrees of freedom (pairs - 1 for pairs of equal size; for a difference of
    means of pairs, Satterthwaite's from the pairs' sizes); `sides` are the rates' own estimates (their intervals
    combine where every pair differs alike); `mapped`: for a difference of two rates whose events are fewer than its
    pairs, each pair's share of the pooled difference mapped onto [0, 1] (`_mapped_differences`: its mean is
    (value / scale + 1) / 2) as a betting share whose interval and test the difference's are (method "betting").
    """

    value: float
    variance: float
    pairs: int
    instances: int
    sides: tuple[ShareEstimate, ...] = field(repr=False)
    df: float = math.nan
    method: str = "paired_t"
    mapped: ShareEstimate | None = field(default=None, repr=False)
    signs: tuple[int, ...] = (1, -1)
    scale: float = 1.0

    @property
    def bound(self) -> float:
        """The largest size the contrast can take: 1 for a difference of two rates, 2 for one of two differences."""
        return len(self.signs) / 2

    @property
    def estimable(self) -> bool:
        return self.pairs >= 2 and self.instances > 0 and np.isfinite(self.value)

    def _critical(self, confidence: float) -> float:
        return t_quantile(1 - (1 - confidence) / 2, self.df)

    def _combined(self) -> bool:
        """No spread: every pair differs alike (float noise of a difference like 0.1 counts as none)."""
        return no_spread(self.variance, self.value)

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
        """value -+ t * se; for rare rates the values whose test (`_variance_at`) does not reject; where every pair
        differs alike (no spread), MOVER over the two rates' own intervals (Newcombe), which count pairs at 0 or 1.
        None with < MIN_PAIRS pairs."""
        if not self.estimable or self.pairs < MIN_PAIRS:
            return None
        if self.mapped is not None:
            mapped = self.mapped.interval(confidence)
            if mapped is None:
                return None
            return max(self.scale * (2 * mapped[0] - 1), -1.0), min(self.scale * (2 * mapped[1] - 1), 1.0)
        if self._combined():
            bounds = [side.interval(confidence) for side in self.sides]
            if any(interval is None for interval in bounds):
                return None
            below = [side.value - interval[0] for side, interval in zip(self.sides, bounds, strict=True)]
            above = [interval[1] - side.value for side, interval in zip(self.sides, bounds, strict=True)]
            signed = list(zip(self.signs, below, above, strict=True))
            low = self.value - math.hypot(*(down if sign > 0 else up for sign, down, up in signed))
            high = self.value + math.hypot(*(up if sign > 0 else down for sign, down, up in signed))
            return max(low, -self.bound), min(high, self.bound)
        critical = self._critical(confidence)
        if not self._rare:
            half = critical * math.sqrt(self._floored)
            return max(self.value - half, -self.bound), min(self.value + half, self.bound)

        def excess(candidate: float) -> float:
            return (self.value - candidate) ** 2 - critical**2 * self._variance_at(candidate)

        ends = (-self.bound, self.bound)
        return tuple(
            end if excess(end) <= 0 else optimize.brentq(excess, min(self.value, end), max(self.value, end), xtol=1e-14)
            for end in ends
        )

    def p_value(self, null: float, confidence: float = 0.95) -> float | None:
        """The paired t test of `null` (never below 2 * 0.5**pairs); without spread, the floor where the
        combined interval at `confidence` (the level of the interval shown beside it: 1 - 0.05 / m under
        Bonferroni) excludes `null` and 1 where it holds it, so the two cannot disagree."""
        if not self.estimable:
            return None
        floor = binomial_min_p(self.pairs)
        if self.mapped is not None:
            return self.mapped.p_value((null / self.scale + 1) / 2)
        if self._combined():
            interval = self.interval(confidence)
            return 1.0 if interval is None or interval[0] <= null <= interval[1] else floor
        statistic = abs(self.value - null) / math.sqrt(self._variance_at(null))
        return max(float(2 * stats.t.sf(statistic, self.df)), floor)

    @cached_property
    def _rare(self) -> bool:
        """Every rate within RARE of an end of the range."""
        return all(min(side.value, 1 - side.value) < RARE for side in self.sides)

    @cached_property
    def _floored(self) -> float:
        """The spread between pairs, where every rate is rare at least their binomial variance: pairs that missed a
        rare metric's few large values show a small mean and a small spread together (issue 40: 8% vs 4%, 12 pairs
        of 2 and 40, a mean of pairs: the truth above the t interval in 7.8% of runs)."""
        return max(self.variance, self._binomial) if self._rare else self.variance

    def _variance_at(self, null: float) -> float:
        """The variance the test of `null` reads: for rare rates, `_floored` moved to the rates `null` implies, by
        their binomial variance (a score test: a rare rate's spread follows its size, so a run whose rates came out
        low has the small spread of low rates and the t at its own estimate left the truth above it in 3.1% of runs,
        rare grants 5% - 2% at 20 pairs); each rate moves by its share of the binomial variance, so the signed sum
        moves to `null`. Never below `_floored`: a rate at exactly 0 or 1 has no binomial variance and would not move,
        so a null that moves the other rate onto the same end read no spread at all and rejected at the floor (7 sets,
        one side granted every time, the other 14-16 of 16: p 0.016 where the spread at the estimate gives 0.034;
        test_differences); the score test only widens the side where the rates grow apart. Elsewhere the
        spread between pairs itself."""
        if not self._rare or self._binomial <= 0:
            return self._floored
        shift = (null - self.value) / self._binomial
        moved = 0.0
        for sign, side in zip(self.signs, self.sides, strict=True):
            share = side.value * (1 - side.value) * side.floor_scale
            rate = min(max(side.value + sign * share * shift, 0.0), 1.0)
            moved += rate * (1 - rate) * side.floor_scale
        return self._floored * max(moved / self._binomial, 1.0)

    @property
    def _binomial(self) -> float:
        return sum(side.value * (1 - side.value) * side.floor_scale for side in self.sides)

    def min_p_value(self, null: float) -> float | None:
        """Every pair differing alike, away from `null`: the sign-flip bound 2 * 0.5**pairs."""
        return binomial_min_p(self.pairs) if self.estimable else None

    def mde(self, null: float) -> float | None:
        """Shift from `null` detected with 80% power at 5%, with this run's spread (at least the binomial variance)."""
        if not self.estimable or self.pairs < MIN_PAIRS:
            return None
        return (self._critical(CONFIDENCE) + t_quantile(POWER, self.df)) * math.sqrt(max(self.variance, self._binomial))


def p_beside(estimate: ShareEstimate | DifferenceEstimate, null: float, confidence: float) -> float | None:
    """The p-value of `null` that agrees with the estimate's interval at `confidence` shown beside it: a share's own
    test (its interval inverts it at every level), a difference's read from that interval where it has no spread."""
    if isinstance(estimate, DifferenceEstimate):
        return estimate.p_value(null, confidence)
    return estimate.p_value(null)


def no_spread(variance: float, value: float) -> bool:
    """A variance below 1e-24 times the squared value (or times 1) is float noise, not spread between pairs:
    differences like +0.1 in every pair leave a variance of ~1e-34, which a t would read as a huge effect."""
    return not variance > _NO_SPREAD * max(1.0, value**2)


def difference_estimate(
    first: tuple[np.ndarray, np.ndarray, np.ndarray], second: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> DifferenceEstimate:
    """Rate of `first` minus rate of `second`, paired by name pair (rows aligned).

    Each side is (numerator, denominator, sizes) per pair as for `share_estimate`. A pair counts where either side
    has data; its influence on a side without data is 0. Instances: both sides' together. The variance is CR2 and
    the degrees of freedom Bell-McCaffrey's over the pairs' combined sizes, as for a share: with refusals leaving a
    few large pairs, the paired test would otherwise reject too often.
    """
    return contrast_estimate((first, second), (1, -1))


def contrast_estimate(
    sides: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], signs: Sequence[int]
) -> DifferenceEstimate:
    """The signed sum of several rates over the same name pairs (rows aligned), by `difference_estimate`'s paired
    cluster t: a difference of two rates is (1, -1); `probe compare`'s difference between two runs of a difference
    of rates (the stage-1 grant gap) is (1, -1, -1, 1) over run women, run men, reference women, reference men."""
    sides = [tuple(np.asarray(a, dtype=float).ravel() for a in side) for side in sides]
    used = np.logical_or.reduce([side[1] > 0 for side in sides])
    estimates = tuple(share_estimate(*side) for side in sides)
    pairs = int(used.sum())
    instances = int(sum(side[2][used].sum() for side in sides))
    signs = tuple(signs)
    if pairs == 0 or any(side[1].sum() == 0 for side in sides):
        return DifferenceEstimate(math.nan, math.nan, pairs, instances, estimates, signs=signs)
    influence = np.zeros(pairs)
    for sign, (numerator, denominator, _), estimate in zip(signs, sides, estimates, strict=True):
        numerator, denominator = numerator[used], denominator[used]
        residual = np.where(denominator > 0, numerator - estimate.value * denominator, 0.0)
        influence += sign * residual / denominator.mean()
    combined = sum(side[1][used] / side[1].sum() for side in sides)
    leverage = combined / combined.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = float(np.sum(influence**2 / (1 - leverage)) / pairs**2) if pairs >= 2 else math.nan
    if all(np.ptp(side[1][side[1] > 0]) == 0 for side in sides):  # means of pair values: pairs weigh alike
        df = satterthwaite_df(sum(np.where(side[1][used] > 0, 1 / np.maximum(side[2][used], 1), 0.0) for side in sides))
    else:
        df = bell_mccaffrey_df(combined)
    value = sum(sign * estimate.value for sign, estimate in zip(signs, estimates, strict=True))
    few = sum(events(estimate.value, *side) for estimate, side in zip(estimates, sides, strict=True)) < pairs
    if signs == (1, -1) and few and not no_spread(variance, value):  # no spread: the rates' own intervals combine
        mapped, scale = _mapped_differences(value, sides, used, instances)
        return DifferenceEstimate(value, variance, pairs, instances, estimates, df, "betting", mapped, scale=scale)
    return DifferenceEstimate(value, variance, pairs, instances, estimates, df, signs=signs)


def _mapped_differences(
    value: float, sides: list[tuple[np.ndarray, ...]], used: np.ndarray, instances: int
) -> tuple[ShareEstimate, float]:
    """Each pair's part of the pooled difference as a betting share, and the scale that maps it back (issue 48).

    The reported value is the difference of pooled rates, H1 / N1 - H2 / N2, so the bet is on the pairs' values
    y = (h1 W / N1 - h2 W / N2) / w, each weighted by its valid answers w = n1 + n2 (W their total): their weighted
    mean is exactly the reported value, given the pairs' answer counts (the answer-weighted mean of per-pair
    differences, which the betting interval read before, is another quantity where a pair's two sides have
    different counts). y lies within -+scale, the largest n W / (N w) of either side (1 where every pair has as many
    answers on both sides: then y is the pair's difference of rates); y / scale is mapped onto [0, 1] by (. + 1) / 2.
    """
    (first, first_den, _), (second, second_den, _) = ((part[used] for part in side) for side in sides)
    weights = first_den + second_den
    first_share, second_share = weights.sum() / first_den.sum(), weights.sum() / second_den.sum()
    scale = float(max(np.max(first_den * first_share / weights), np.max(second_den * second_share / weights)))
    values = (first * first_share / weights - second * second_share / weights) / scale
    mapped = ShareEstimate(
        (value / scale + 1) / 2,
        math.nan,
        len(values),
        instances,
        math.nan,
        math.nan,
        "betting",
        tuple((values + 1) / 2),
        tuple(weights / weights.max()),
    )
    return mapped, scale
