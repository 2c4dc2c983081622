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
- `pair_score`: a rare event (rate below 20% or above 80%) with fewer events than pairs, or carried by fewer than
  MIN_PAIRS pairs' worth (participation ratio of the pairs' distances from the near end). No variance estimate
  from so few events or carriers is reliable, so none is made: the score interval with the largest variance a
  pair's value in [0, 1] of mean p can have, p(1-p) (Bhatia-Davis), over the pairs' effective number (Kish, of
  their weights): each pair counts as one trial, however many answers it has (issue 48: valid in every rare cell of
  issues 29 and 40 and 0.79-0.96 times the betting interval's width). Also a rate of any size concentrated in a
  few pairs: carried by fewer than CONCENTRATED (half) the pairs' worth its events would show spread binomially.
- `betting`: a rare (or concentrated) event carried by fewer than FEW_CARRIERS (3) pairs' worth: too few for the normal
  approximation of the pairs' trials (one all-yes pair in 100, 70 pairs: the truth below pair_score's interval in
  4.2% of runs, 0.8% with this rule); the distribution-free betting interval (sequential.py).
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
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy import optimize, stats

from probe.analysis.binomial import CONFIDENCE, POWER, binomial_min_p
from probe.analysis.freedom import bell_mccaffrey_df, t_quantile
from probe.analysis.sequential import log_capital, mean_intervals

# The score interval's variance function [p(1-p)]^VARIANCE_POWER: 1 is the binomial's (Wilson), 2 the logit
# scale's. Pair values of skewed metrics undercover with 1 and at few pairs with 2; 1.5 came closest to
# 0.93-0.97 for every headline metric at 12, 20 and 70 pairs (BENCHMARKS.md "Statistics").
VARIANCE_POWER = 1.5
# The fewest name pairs any test over pairs can reject with at 5%: even an exact sign-flip test of G pairs that
# all agree cannot go below 2 * 0.5**G (0.0625 at 5, 0.031 at 6). Below it no interval is given, and a p-value is
# never below that bound. The same count of pairs' worth must carry a rare event for the score interval.
MIN_PAIRS = 6
# A rate below RARE (or above 1 - RARE) is a rare event (or a rare absence): where few pairs carry it, no
# variance estimate over pairs is reliable: pair_score (or, carried by very few pairs, betting) takes over.
RARE = 0.2
# A rare event carried by fewer pairs' worth than this gets the betting interval, not pair_score's normal
# approximation over pairs (bench/rare_events.py).
FEW_CARRIERS = 3
# A rate carried by fewer pairs' worth than this share of the pairs' worth its events would have if spread over
# the pairs (binomially, at the pooled rate: `_spread_carriers`) is concentrated in a few pairs, at any rate: its
# size in a run is then mostly how many carrier pairs the run drew, which the spread between pairs cannot show (the
# score interval missed in 4.2-6.0% of runs), so pair_score (or betting) takes over. bench/rare_events.py: the
# score runs of worlds whose events a few pairs carry read 0.18-0.34 (0.49 once), those of spread worlds >= 0.54.
CONCENTRATED = 0.5
_SMALLEST_BASE = 1e-300
_INNER = 1e-12  # at 0 or 1 the estimate's own variance is 0: root searches start just inside the range


def paired_t_method(unit: str = "pair") -> str:
    """The paired cluster t's method in words, over name pairs or (`unit` "set") the name sets of a run over sets."""
    return (
        f"paired cluster t over name {unit}s: the difference's spread between {unit}s (CR2; for two rare rates at "
        "least their binomial variance, read at the rates the tested difference implies), t with Bell-McCaffrey "
        f"degrees of freedom (Satterthwaite's for means of {unit}s of unequal size); the p-value is the same test "
        f"(where every {unit} differs alike, the rates' own intervals combined)"
    )


METHODS = {
    "score": "score interval over name pairs: variance [p(1-p)]^1.5 scaled to the spread between pairs (CR2), at "
    "least the estimator's binomial variance; t with Bell-McCaffrey degrees of freedom; the p-value is the same test",
    "no_events": "no-event bound over name pairs: no pair showed the event (or every pair always did), so the "
    "bound counts pairs, valid whatever the correlation within a pair: 1 - (0.025)^(1/pairs); p = 2 (1 - p0)^pairs",
    "pair_score": "score interval over name pairs with each pair as one trial: fewer events than pairs, or events "
    "carried by fewer than 6 pairs' worth or by under half the pairs' worth the same events spread over the pairs "
    "would show, too few for a variance estimate, so the variance is the largest a pair's value can have, p(1-p), "
    "over the pairs' effective number (Kish); t with Bell-McCaffrey degrees of freedom; the p-value is the same test",
    "betting": "betting interval over name pairs (distribution-free; Waudby-Smith & Ramdas 2023): a rare event "
    "carried by fewer than 3 pairs' worth (for a difference: fewer events than pairs, each pair's part of the pooled "
    "difference); the p-value is 1 / the betting capital",
    "paired_t": paired_t_method(),
    "wilson": "Wilson score interval over the pair's own instances",
}


OVERALL_METHOD = (
    "over name pairs, the method chosen per estimate by what the pairs show: "
    f"{METHODS['score']}; at exactly 0 or 100%, the {METHODS['no_events']}; for rare events, the "
    f"{METHODS['pair_score']}; where fewer than three pairs' worth carry them, the {METHODS['betting']}; for a "
    f"difference of two rates, the {METHODS['paired_t']}"
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
    values and weights the betting interval needs; `betting_bounds`: its bounds per alpha, once computed
    (`prepare_betting_intervals` computes many at once); `pair_scale`: 1 / the pairs' effective number, the
    variance per unit p(1-p) of pair_score.
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
    betting_bounds: dict[float, tuple[float, float]] = field(default_factory=dict, repr=False, compare=False)
    pair_scale: float = math.nan

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
        if self.method == "pair_score":
            return binomial * self.pair_scale
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
            if alpha not in self.betting_bounds:
                prepare_betting_intervals([self], confidence)
            return self.betting_bounds[alpha]
        critical = self._critical(confidence)

        def excess(candidate: float) -> float:
            return (self.value - candidate) ** 2 - critical**2 * self._variance_at(candidate)

        inner = min(max(self.value, _INNER), 1 - _INNER)
        return (
            optimize.brentq(excess, 0.0, inner, xtol=1e-14),
            optimize.brentq(excess, inner, 1.0, xtol=1e-14),
        )

    def p_value(self, null: float) -> float | None:
        """Two-sided p-value of the interval's own test of `null` (below 1 - confidence exactly when the interval at
        that level excludes it), never below the pairs' exact bound 2 * 0.5**pairs."""
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


def prepare_betting_intervals(estimates: Iterable[ShareEstimate], confidence: float = CONFIDENCE) -> None:
    """The betting intervals of many estimates in one vectorised pass (`sequential.mean_intervals`), kept in each
    estimate's `betting_bounds` for `interval`: a run's thousand rare rates cost one pass, not a thousand."""
    alpha = 1 - confidence
    pending = [
        estimate
        for estimate in estimates
        if estimate.method == "betting"
        and estimate.estimable
        and estimate.pairs >= MIN_PAIRS
        and alpha not in estimate.betting_bounds
    ]
    samples = [(np.array(estimate.values), np.array(estimate.weights)) for estimate in pending]
    for estimate, bounds in zip(pending, mean_intervals(samples, alpha), strict=True):
        estimate.betting_bounds[alpha] = bounds


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
    if method == "pair_score":
        pair_scale = float(np.sum(denominator**2) / total**2)
        return ShareEstimate(value, variance, pairs, instances, floor_scale, df, method, pair_scale=pair_scale)
    if method != "betting":  # only the betting interval reads the pairs' values (tuples of 500 pairs cost time)
        return ShareEstimate(value, variance, pairs, instances, floor_scale, df, method)
    weights = denominator / denominator.max()
    return ShareEstimate(
        value, variance, pairs, instances, floor_scale, df, method, tuple(numerator / denominator), tuple(weights)
    )


def _share_method(value: float, residual: np.ndarray, denominator: np.ndarray, sizes: np.ndarray, df: float) -> str:
    """no_events at 0 or 1; pair_score for a rare event - a rate within RARE of an end of the range with fewer events
    than pairs, or carried by fewer than MIN_PAIRS pairs' worth and by at most half the pairs the estimate
    effectively rests on (df + 1: 6 large pairs beside 6 small ones are not rare) - and for a rate of any size
    concentrated in a few pairs (below); betting where fewer than FEW_CARRIERS pairs' worth carry it; else score. A
    rate of 0.7 from pairs at 1 and a few below is no rare event: the score interval's variance function holds it.
    Fewer events than pairs: a run cannot tell a rate spread thinly over every pair from one carried by a few pairs
    it did not draw (one pair in 24 at 0.3, 0.01 elsewhere, 70 pairs: the score interval missed in 21% of runs).
    Pairs' worth: the participation ratio (sum d)^2 / sum d^2 of the pairs' distances d from the near end, in the
    estimate's own weighting: k pairs carrying the events alike count k, one pair carrying most of them about 1.
    Concentrated: fewer pairs' worth than CONCENTRATED of what the same events spread binomially would show.
    """
    if value in (0.0, 1.0):
        return "no_events"
    near = 0.0 if value < 0.5 else 1.0
    distance = np.abs(residual + (value - near) * denominator)
    carriers = distance.sum() ** 2 / np.sum(distance**2)
    if carriers >= CONCENTRATED * _spread_carriers(value, denominator, sizes):
        if RARE <= value <= 1 - RARE:
            return "score"
        few = events(value, residual + value * denominator, denominator, sizes) < len(distance)
        if not few and carriers >= min(MIN_PAIRS, (df + 1) / 2):
            return "score"
    return "betting" if carriers < FEW_CARRIERS else "pair_score"


def _spread_carriers(value: float, denominator: np.ndarray, sizes: np.ndarray) -> float:
    """The pairs' worth (participation ratio) events at rate q = min(value, 1 - value) would show if spread over the
    pairs binomially, every instance alike: (q sum w)^2 / sum(q^2 w^2 + q(1 - q) w^2 / n) for pair weights w (the
    denominators) and instances n - the pairs' effective number where events are many, fewer where they are sparse
    (about 1 / (1 / pairs + (1 - q) / events) for pairs of equal size), so sparse events are not read as
    concentrated ones."""
    q = min(value, 1 - value)
    squares = denominator**2
    return (q * denominator.sum()) ** 2 / np.sum(q * q * squares + q * (1 - q) * squares / np.maximum(sizes, 1))


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


def pair_terms(hits: np.ndarray, n: np.ndarray, pooled: bool | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pair, the (numerator, denominator, sizes) `share_estimate` takes for a metric: a pooled rate pools the
    pairs' instances (hits, n, n); a mean of pair values counts every pair with a valid instance once (hits / n, 1,
    n). `pooled` may be an array over the columns of 2-D hits and n."""
    hits, n = np.asarray(hits, dtype=float), np.asarray(n, dtype=float)
    return np.where(pooled, hits, rate(hits, n)), np.where(pooled, n, (n > 0).astype(float)), n
