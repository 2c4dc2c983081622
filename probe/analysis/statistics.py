"""Intervals and tests over name pairs: one estimator per kind of finding, each interval the set of values its
own test does not reject.

Rules every inference here keeps (DESIGN.md sections 5 and 10): the name pair is the sampled unit; one procedure
gives a finding's interval and its p-value (an interval excludes a value exactly when the test of that value
rejects at the interval's level); every interval names its method (`METHODS`, stored per metrics row) and stays in
the metric's range; an interval that cannot be estimated is NaN, never zero-width. `share_estimate` chooses the
method for a share or rate from what the pairs show:

- `no_events`: the estimate is exactly 0 (or 1). Every pair showed no event, so the spread is no guide; the bound
  counts pairs, not instances: whatever the correlation within a pair, P(a pair shows no event) <= 1 - p, so
  P(no pair does) <= (1 - p)^pairs, giving [0, 1 - (alpha/2)^(1/pairs)] and p = 2 (1 - p0)^pairs.
- `betting`: a rare event (rate below 20% or above 80%) with fewer events than pairs, or carried by fewer than
  MIN_PAIRS pairs' worth (participation ratio of the pairs' distances from the near end). No variance estimate
  from so few events or carriers is reliable; the distribution-free betting interval (sequential.py) is.
- `score`: otherwise, the score interval with a variance function [p(1-p)]^1.5 scaled to the spread between
  pairs (CR2), floored at the estimator's own binomial variance, with Bell-McCaffrey degrees of freedom (pairs - 1
  when pairs are equal in size, fewer when a few large pairs dominate).

`difference_estimate` is the one procedure for a difference of two rates over the same pairs (attr_yes_diff, the
paired differences of `probe compare`, gates against a baseline): a paired cluster t over the pairs' influence
differences, t on Satterthwaite's df for means of pairs of unequal size; with fewer events than pairs on the two
sides together, the betting interval of the pairs' differences. `python -m bench --coverage` measures every method
(BENCHMARKS.md "Statistics"; bench/edges.py the rare events of issue 40).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy import optimize, stats

from probe.analysis.binomial import CONFIDENCE, POWER, binomial_min_p
from probe.analysis.freedom import bell_mccaffrey_df, satterthwaite_df, t_quantile
from probe.analysis.sequential import log_capital, mean_interval

# The score interval's variance function [p(1-p)]^VARIANCE_POWER: 1 is the binomial's (Wilson), 2 the logit
# scale's. Pair values of skewed metrics undercover with 1 and at few pairs with 2; 1.5 came closest to
# 0.93-0.97 for every headline metric at 12, 20 and 70 pairs (BENCHMARKS.md "Statistics").
VARIANCE_POWER = 1.5
# The fewest name pairs any test over pairs can reject with at 5%: even an exact sign-flip test of G pairs that
# all agree cannot go below 2 * 0.5**G (0.0625 at 5, 0.031 at 6). Below it no interval is given, and a p-value is
# never below that bound. The same count of pairs' worth must carry a rare event for the score interval.
MIN_PAIRS = 6
# A rate below RARE (or above 1 - RARE) is a rare event (or a rare absence): where few pairs carry it, no
# variance estimate over pairs is reliable and the betting interval takes over.
RARE = 0.2
_SMALLEST_BASE = 1e-300
_INNER = 1e-12  # at 0 or 1 the estimate's own variance is 0: root searches start just inside the range
_NO_SPREAD = 1e-24  # a variance below this (times the squared estimate) is float noise, not spread between pairs

METHODS = {
    "score": "score interval over name pairs: variance [p(1-p)]^1.5 scaled to the spread between pairs (CR2), at "
    "least the estimator's binomial variance; t with Bell-McCaffrey degrees of freedom; the p-value is the same test",
    "no_events": "no-event bound over name pairs: no pair showed the event (or every pair always did), so the "
    "bound counts pairs, valid whatever the correlation within a pair: 1 - (0.025)^(1/pairs); p = 2 (1 - p0)^pairs",
    "betting": "betting interval over name pairs (distribution-free; Waudby-Smith & Ramdas 2023): fewer events than "
    "pairs, or events carried by fewer than 6 pairs' worth, too few for a variance estimate (for a difference, of "
    "the pairs' differences); the p-value is 1 / the betting capital",
    "paired_t": "paired cluster t over name pairs: the difference's spread between pairs (CR2; for two rare rates at "
    "least their binomial variance), t with Bell-McCaffrey degrees of freedom (Satterthwaite's for means of pairs of "
    "unequal size); the p-value is the same test (where every pair differs alike, the rates' own intervals combined)",
    "wilson": "Wilson score interval over the pair's own instances",
}


OVERALL_METHOD = (
    "over name pairs, the method chosen per estimate by what the pairs show: "
    f"{METHODS['score']}; at exactly 0 or 100%, the {METHODS['no_events']}; where few pairs carry the events, the "
    f"{METHODS['betting']}; for a difference of two rates, the {METHODS['paired_t']}"
)
OCCUPATION_TEST = (
    "exact two-sided sign test over name pairs (a pair leans to the gender it picked more often, order-balanced), "
    "Benjamini-Hochberg over occupations; Clopper-Pearson interval of the share of leaning pairs that lean female "
    "at the decision's level (false-coverage-rate adjusted: 1 - R x 0.05 / occupations, R the occupations "
    "preferred, at least 1), so it excludes 50% exactly when the occupation is preferred"
)


@dataclass(frozen=True)
class ShareEstimate:
    """A share or rate over name pairs (value in [0, 1]) with what its interval and test need.

    `variance`: the CR2 variance over `pairs`; `df`: its Bell-McCaffrey degrees of freedom; `floor_scale`: the
    estimator's variance per unit p(1-p) were instances independent (1/instances for a pooled rate, sum(1/n_g)/G^2
    for a mean of pair values); `method`: which interval (module docstring); `values` / `weights`: the pairs'
    values and weights the betting interval needs.
    """

    value: float
    variance: float
    pairs: int
    instances: int
    floor_scale: float
    df: float
    method: str = "score"
    values: tuple[float, ...] = field(default=(), repr=False)
    weights: tuple[float, ...] = field(default=(), repr=False)

    @property
    def estimable(self) -> bool:
        return self.pairs >= 2 and self.instances > 0 and np.isfinite(self.value)

    @cached_property
    def _spread(self) -> float:
        """phi: the observed variance over the variance function at the estimate (0 at 0 or 1, or no spread);
        computed once, as an interval's root search asks for it at every candidate."""
        if not 0 < self.value < 1 or not np.isfinite(self.variance):
            return 0.0
        return self.variance / max((self.value * (1 - self.value)) ** VARIANCE_POWER, _SMALLEST_BASE)

    def _variance_at(self, share: float) -> float:
        binomial = share * (1 - share)
        return max(self._spread * binomial**VARIANCE_POWER, binomial * self.floor_scale)

    def _critical(self, confidence: float) -> float:
        return t_quantile(1 - (1 - confidence) / 2, self.df)

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
        """Every value its test does not reject at 1 - confidence; None with < MIN_PAIRS pairs."""
        if not self.estimable or self.pairs < MIN_PAIRS:
            return None
        alpha = 1 - confidence
        if self.method == "no_events":
            bound = 1 - (alpha / 2) ** (1 / self.pairs)
            return (0.0, bound) if self.value == 0 else (1 - bound, 1.0)
        if self.method == "betting":
            low, high = mean_interval(np.array(self.values), np.array(self.weights), alpha)
            return float(low), float(high)
        critical = self._critical(confidence)

        def excess(candidate: float) -> float:
            return (self.value - candidate) ** 2 - critical**2 * self._variance_at(candidate)

        inner = min(max(self.value, _INNER), 1 - _INNER)
        return (
            optimize.brentq(excess, 0.0, inner, xtol=1e-14),
            optimize.brentq(excess, inner, 1.0, xtol=1e-14),
        )

    def p_value(self, null: float) -> float | None:
        """Two-sided p-value of the interval's own test of `null` (below 1 - confidence exactly when the interval
        excludes it), never below the pairs' exact bound 2 * 0.5**pairs."""
        if not self.estimable:
            return None
        floor = binomial_min_p(self.pairs)
        if self.method == "no_events":
            far = 1 - null if self.value == 0 else null
            return max(min(1.0, 2 * far**self.pairs), floor)
        if self.method == "betting":
            inside = min(max(null, _INNER), 1 - _INNER)  # a bet against a mean of 0 or 1 has no bounded stake
            capital = log_capital(np.array([self.values]), inside, np.array([self.weights]))[0, 0]
            return max(min(1.0, math.exp(-capital)), floor)
        variance = self._variance_at(null)
        if variance <= 0:
            return 1.0 if self.value == null else floor
        statistic = abs(self.value - null) / math.sqrt(variance)
        return max(float(2 * stats.t.sf(statistic, self.df)), floor)

    def min_p_value(self, null: float) -> float | None:
        """The smallest p-value this design can reach: every pair at the far end of the range."""
        if not self.estimable:
            return None
        return max(min(1.0, 2 * min(null, 1 - null) ** self.pairs), binomial_min_p(self.pairs))

    def mde(self, null: float) -> float | None:
        """Shift from `null` detected with 80% power at 5% (two-sided), with the spread this run showed.

        (t_{0.975} + t_{0.8}) * sqrt(variance at the null) on the estimate's degrees of freedom; None with
        < MIN_PAIRS pairs.
        """
        if not self.estimable or self.pairs < MIN_PAIRS:
            return None
        critical = self._critical(CONFIDENCE) + t_quantile(POWER, self.df)
        return critical * math.sqrt(self._variance_at(null))


def share_estimate(numerator: np.ndarray, denominator: np.ndarray, sizes: np.ndarray) -> ShareEstimate:
    """sum(numerator) / sum(denominator) over pairs, with the method its pairs call for (module docstring).

    A pooled rate passes (hits, n, n) per pair; a mean of pair values passes (value, 1, n); `sizes` are the valid
    instances behind each pair (the binomial floor). Pairs with denominator 0 are left out.
    """
    numerator, denominator, sizes = (np.asarray(a, dtype=float).ravel() for a in (numerator, denominator, sizes))
    used = denominator > 0
    numerator, denominator, sizes = numerator[used], denominator[used], sizes[used]
    pairs, instances = len(numerator), int(sizes.sum())
    if pairs == 0:
        return ShareEstimate(math.nan, math.nan, 0, 0, math.nan, math.nan)
    total = denominator.sum()
    value = float(numerator.sum() / total)
    residual = numerator - value * denominator
    leverage = denominator / total
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = float(np.sum(residual**2 / (1 - leverage)) / total**2) if pairs >= 2 else math.nan
        floor_scale = float(np.sum(leverage**2 / np.maximum(sizes, 1)))
    df = bell_mccaffrey_df(denominator)
    method = _share_method(value, residual, denominator, sizes, df)
    weights = denominator / denominator.max()
    return ShareEstimate(value, variance, pairs, instances, floor_scale, df, method, tuple(numerator / denominator),
                         tuple(weights))  # fmt: skip


def _share_method(value: float, residual: np.ndarray, denominator: np.ndarray, sizes: np.ndarray, df: float) -> str:
    """no_events at 0 or 1; betting for a rare event - a rate within RARE of an end of the range with fewer events
    than pairs, or carried by fewer than MIN_PAIRS pairs' worth and by at most half the pairs the estimate
    effectively rests on (df + 1: 6 large pairs beside 6 small ones are not rare); else score. A rate of 0.7 from
    pairs at 1 and a few below is no rare event: the score interval's variance function holds it.
    Fewer events than pairs: a run cannot tell a rate spread thinly over every pair from one carried by a few pairs
    it did not draw (one pair in 24 at 0.3, 0.01 elsewhere, 70 pairs: the score interval missed in 21% of runs).
    Pairs' worth: the participation ratio (sum d)^2 / sum d^2 of the pairs' distances d from the near end, in the
    estimate's own weighting: k pairs carrying the events alike count k, one pair carrying most of them about 1.
    """
    if value in (0.0, 1.0):
        return "no_events"
    if RARE <= value <= 1 - RARE:
        return "score"
    near = 0.0 if value < 0.5 else 1.0
    distance = np.abs(residual + (value - near) * denominator)
    if events(value, residual + value * denominator, denominator, sizes) < len(distance):
        return "betting"
    carriers = distance.sum() ** 2 / np.sum(distance**2)
    return "betting" if carriers < min(MIN_PAIRS, (df + 1) / 2) else "score"


def events(value: float, numerator: np.ndarray, denominator: np.ndarray, sizes: np.ndarray) -> float:
    """The events behind a rate, counted from the near end of the range (hits for a rate below 0.5, misses above):
    each pair's distance of its rate from that end times its valid instances (pairs with denominator 0 count
    none)."""
    near = 0.0 if value < 0.5 else 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        distance = np.where(denominator > 0, np.abs(numerator / denominator - near) * sizes, 0.0)
    return float(distance.sum())


def rate(hits: np.ndarray, n: np.ndarray) -> np.ndarray:
    """hits / n elementwise, NaN where n is 0 (no valid instance: no rate, not 0)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.asarray(n) > 0, np.asarray(hits, dtype=float) / np.asarray(n), np.nan)


def pair_terms(
    hits: np.ndarray, n: np.ndarray, pooled: bool | np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pair, the (numerator, denominator, sizes) `share_estimate` takes for a metric: a pooled rate pools the
    pairs' instances (hits, n, n); a mean of pair values counts every pair with a valid instance once (hits / n, 1,
    n). `pooled` may be an array over the columns of 2-D hits and n."""
    hits, n = np.asarray(hits, dtype=float), np.asarray(n, dtype=float)
    return np.where(pooled, hits, rate(hits, n)), np.where(pooled, n, (n > 0).astype(float)), n


@dataclass(frozen=True)
class DifferenceEstimate:
    """A difference of two rates over the same name pairs (value in [-1, 1]): the paired cluster t.

    `variance` is the CR2 variance over pairs of each pair's influence on the first rate minus its influence on
    the second, `df` its Bell-McCaffrey degrees of freedom (pairs - 1 for pairs of equal size); `sides` are the two
    rates' own estimates (their intervals combine where every pair differs alike); `mapped`: where a side's events
    are too few or carried by too few pairs for a spread between pairs (that side's own method is betting), the
    pairs' differences mapped onto [0, 1] ((d + 1) / 2, each pair weighted by its valid answers) as a betting share
    whose interval and test the difference's are (method "betting").
    """

    value: float
    variance: float
    pairs: int
    instances: int
    sides: tuple[ShareEstimate, ShareEstimate] = field(repr=False)
    df: float = math.nan
    method: str = "paired_t"
    mapped: ShareEstimate | None = field(default=None, repr=False)

    @property
    def estimable(self) -> bool:
        return self.pairs >= 2 and self.instances > 0 and np.isfinite(self.value)

    def _critical(self, confidence: float) -> float:
        return t_quantile(1 - (1 - confidence) / 2, self.df)

    def _combined(self) -> bool:
        """No spread: every pair differs alike (float noise of a difference like 0.1 counts as none)."""
        return no_spread(self.variance, self.value)

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
        """value -+ t * se; where every pair differs alike (no spread), MOVER over the two rates' own intervals
        (Newcombe), which count pairs at 0 or 1. None with < MIN_PAIRS pairs."""
        if not self.estimable or self.pairs < MIN_PAIRS:
            return None
        if self.mapped is not None:
            mapped = self.mapped.interval(confidence)
            return None if mapped is None else (2 * mapped[0] - 1, 2 * mapped[1] - 1)
        if self._combined():
            first, second = (side.interval(confidence) for side in self.sides)
            if first is None or second is None:
                return None
            a, b = (side.value for side in self.sides)
            low = self.value - math.hypot(a - first[0], second[1] - b)
            high = self.value + math.hypot(first[1] - a, b - second[0])
            return max(low, -1.0), min(high, 1.0)
        half = self._critical(confidence) * math.sqrt(self._floored)
        return max(self.value - half, -1.0), min(self.value + half, 1.0)

    def p_value(self, null: float) -> float | None:
        """The paired t test of `null` (never below 2 * 0.5**pairs); without spread, the floor where the
        combined interval excludes `null` and 1 where it holds it."""
        if not self.estimable:
            return None
        floor = binomial_min_p(self.pairs)
        if self.mapped is not None:
            return self.mapped.p_value((null + 1) / 2)
        if self._combined():
            interval = self.interval()
            return 1.0 if interval is None or interval[0] <= null <= interval[1] else floor
        statistic = abs(self.value - null) / math.sqrt(self._floored)
        return max(float(2 * stats.t.sf(statistic, self.df)), floor)

    @cached_property
    def _floored(self) -> float:
        """The spread between pairs, where both rates are rare (within RARE of an end) at least their binomial
        variance: pairs that missed a rare metric's few large values show a small mean and a small spread together
        (issue 40: 8% vs 4%, 12 pairs of 2 and 40, a mean of pairs: the truth above the t interval in 7.8% of runs)."""
        rare = all(min(side.value, 1 - side.value) < RARE for side in self.sides)
        return max(self.variance, self._binomial) if rare else self.variance

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
    sides = [tuple(np.asarray(a, dtype=float).ravel() for a in side) for side in (first, second)]
    used = (sides[0][1] > 0) | (sides[1][1] > 0)
    estimates = tuple(share_estimate(*side) for side in sides)
    pairs = int(used.sum())
    instances = int(sum(side[2][used].sum() for side in sides))
    if pairs == 0 or any(side[1].sum() == 0 for side in sides):
        return DifferenceEstimate(math.nan, math.nan, pairs, instances, estimates)
    influence = np.zeros(pairs)
    for sign, (numerator, denominator, _), estimate in zip((1, -1), sides, estimates, strict=True):
        numerator, denominator = numerator[used], denominator[used]
        residual = np.where(denominator > 0, numerator - estimate.value * denominator, 0.0)
        influence += sign * residual / denominator.mean()
    combined = sides[0][1][used] / sides[0][1].sum() + sides[1][1][used] / sides[1][1].sum()
    leverage = combined / combined.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = float(np.sum(influence**2 / (1 - leverage)) / pairs**2) if pairs >= 2 else math.nan
    if all(np.ptp(side[1][side[1] > 0]) == 0 for side in sides):  # means of pair values: pairs weigh alike
        df = satterthwaite_df(sum(np.where(side[1][used] > 0, 1 / np.maximum(side[2][used], 1), 0.0) for side in sides))
    else:
        df = bell_mccaffrey_df(combined)
    value = estimates[0].value - estimates[1].value
    few = sum(events(estimate.value, *side) for estimate, side in zip(estimates, sides, strict=True)) < pairs
    if few and not no_spread(variance, value):  # without spread the rates' own intervals combine (MOVER)
        return DifferenceEstimate(value, variance, pairs, instances, estimates, df, "betting",
                                  _mapped_differences(value, sides, used, instances))  # fmt: skip
    return DifferenceEstimate(value, variance, pairs, instances, estimates, df)


def _mapped_differences(value: float, sides: list[tuple[np.ndarray, ...]], used: np.ndarray,
                        instances: int) -> ShareEstimate:  # fmt: skip
    """The pairs' differences of the two rates mapped onto [0, 1], (d + 1) / 2, each pair weighted by its valid
    answers (both sides' denominators, over the largest), as a betting share (issue 40: the paired t covered 0.81
    with one pair in 12 carrying 0.3 against 0.1). A pair without data on a side has no difference (NaN: the bet
    skips it)."""
    (first, first_den, _), (second, second_den, _) = ((part[used] for part in side) for side in sides)
    both = (first_den > 0) & (second_den > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        differences = np.where(both, first / first_den - second / second_den, np.nan)
    weights = np.where(both, first_den + second_den, 0.0)
    weights = weights / weights.max()
    return ShareEstimate((value + 1) / 2, math.nan, int(both.sum()), instances, math.nan, math.nan, "betting",
                         tuple((differences + 1) / 2), tuple(weights))  # fmt: skip
