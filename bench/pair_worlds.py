"""Do the pair-level estimators keep their promises on worlds they were not tuned on? Measured by simulation.

Each world draws, per simulated run, what the analyzers hand the estimators (hits and valid instances per name
pair) and checks the 95% interval of the product's `share_estimate` / `difference_estimate` against the truth.
Beside the chosen procedure, the ones tried are measured on the same draws:

- shares: `chosen` (score, no-event bound or betting, as the pairs call for); `score` (the score interval on every
  draw: CR2, Bell-McCaffrey df, the estimator's own floor); `before` (the procedure before issue 29: CR1, pairs - 1
  df, the floor p(1-p) / instances whatever the metric);
- differences: `chosen` (paired cluster t); `before` (the difference mapped onto [0, 1] and given the share's score
  interval, as before issue 29); `paired t` on the pair differences (scipy) as the power reference.

Worlds (DESIGN.md sections 5 and 10; issue 29):
- beta-binomial: pair rates from a beta with mean 0.02-0.9 and intra-pair correlation 0.05-0.7, pair sizes 2 and
  40 valid instances alternating (as refusals produce), pooled rates and means of pair values;
- one-in-K: one pair in K at 0.5, the rest at 0.01 (rare preferences and switches carried by a few pairs);
- rare grants: women 5% vs men 2% (and 3.5% both, no gap), 48 answers per subject per pair less 0-80% refusals
  varying by pair, a pair effect shared by both genders (logit sd 0.8);
- compare: two runs on the same pairs (a mean-of-pairs metric each, correlated through the pair), the difference
  of run b and run a, and the rank intervals of three runs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
from scipy import stats
from scipy.special import expit, logit

from probe.analysis.differences import difference_estimate
from probe.analysis.resampling import expanded_tail
from probe.analysis.statistics import ShareEstimate, share_estimate
from probe.compare.leaderboard import ranks, resampled_values

PAIR_COUNTS = (6, 12, 20, 70)
MEANS = (0.02, 0.1, 0.3, 0.5, 0.9)
CORRELATIONS = (0.05, 0.3, 0.7)
SIZES = (2, 40)


def _beta_binomial(rng: np.random.Generator, mean: float, correlation: float, sizes: np.ndarray) -> np.ndarray:
    """Hits per pair: a pair rate from Beta(mean, intra-pair correlation), then binomial over its instances."""
    total = (1 - correlation) / correlation
    return rng.binomial(sizes.astype(int), rng.beta(mean * total, (1 - mean) * total, len(sizes)))


def _before(numerator: np.ndarray, denominator: np.ndarray, sizes: np.ndarray) -> ShareEstimate:
    """The procedure before issue 29: CR1 variance, pairs - 1 df, floor p(1-p) / instances, score everywhere."""
    pairs, value = len(numerator), numerator.sum() / denominator.sum()
    psi = (numerator - value * denominator) / denominator.mean()
    variance = float(np.sum(psi**2) / (pairs * (pairs - 1)))
    return ShareEstimate(value, variance, pairs, int(sizes.sum()), 1 / sizes.sum(), pairs - 1)


def _score(numerator: np.ndarray, denominator: np.ndarray, sizes: np.ndarray) -> ShareEstimate:
    estimate = share_estimate(numerator, denominator, sizes)
    return ShareEstimate(
        estimate.value, estimate.variance, estimate.pairs, estimate.instances, estimate.floor_scale, estimate.df
    )


SHARE_METHODS: dict[str, Callable[..., ShareEstimate]] = {"chosen": share_estimate, "score": _score, "before": _before}


class Tally:
    """Coverage, misses below and above (the truth below the interval, above it: what a one-sided gate reads),
    mean width and rejections of one method in one cell, and coverage where the estimate is 0 or 1."""

    def __init__(self) -> None:
        self.runs = self.covered = self.rejected = self.boundary = self.boundary_covered = 0
        self.below = self.above = 0
        self.width = 0.0

    def add(self, interval: tuple[float, float] | None, truth: float, estimate: float, rejected: bool = False) -> None:
        self.runs += 1
        hit = interval is not None and interval[0] <= truth <= interval[1]
        self.covered += hit
        self.below += interval is not None and truth < interval[0]
        self.above += interval is not None and truth > interval[1]
        self.width += (interval[1] - interval[0]) if interval else 1.0
        self.rejected += rejected
        if estimate in (0.0, 1.0):
            self.boundary += 1
            self.boundary_covered += hit

    def figures(self) -> dict[str, float]:
        result = {
            "coverage": self.covered / self.runs,
            "below": self.below / self.runs,
            "above": self.above / self.runs,
            "width": self.width / self.runs,
            "rejects": self.rejected / self.runs,
        }
        if self.boundary:
            result |= {"boundary_runs": self.boundary, "boundary_coverage": self.boundary_covered / self.boundary}
        return result


def share_cells(runs: int, seed: int) -> dict[tuple, dict[str, Tally]]:
    """Beta-binomial and one-in-K worlds: per (world, mean, correlation, pairs, aggregation), one Tally per method."""
    rng = np.random.default_rng(seed)
    cells: dict[tuple, dict[str, Tally]] = {}
    worlds = [("beta-binomial", mean, correlation) for mean in MEANS for correlation in CORRELATIONS]
    worlds += [("one-in-K", 0.5 / k + 0.01 * (1 - 1 / k), k) for k in (4, 12)]
    for world, mean, shape in worlds:
        for pairs in PAIR_COUNTS:
            sizes = np.resize(np.array(SIZES), pairs)
            for aggregation in ("pooled", "mean of pairs"):
                cell = (world, mean, shape, pairs, aggregation)
                tallies = cells.setdefault(cell, {method: Tally() for method in SHARE_METHODS})
                for _ in range(runs):
                    if world == "one-in-K":
                        rates = np.where(rng.random(pairs) < 1 / shape, 0.5, 0.01)
                        hits = rng.binomial(sizes, rates)
                    else:
                        hits = _beta_binomial(rng, mean, shape, sizes)
                    terms = (hits, sizes, sizes) if aggregation == "pooled" else (hits / sizes, np.ones(pairs), sizes)
                    for method, build in SHARE_METHODS.items():
                        estimate = build(*(np.asarray(term, dtype=float) for term in terms))
                        tallies[method].add(estimate.interval(), mean, estimate.value)
    return cells


def grant_cells(runs: int, seed: int) -> dict[tuple, dict[str, Tally]]:
    """Rare grants, paired by name pair: attr_yes_f, attr_yes_m and their difference (with and without a gap)."""
    rng = np.random.default_rng(seed)
    cells: dict[tuple, dict[str, Tally]] = {}
    for gap, (women, men) in (("gap", (0.05, 0.02)), ("no gap", (0.035, 0.035))):
        truth = _pooled_truth(rng, women, men)
        for pairs in PAIR_COUNTS:
            tallies = cells.setdefault(
                ("rare grants", gap, pairs),
                {
                    name: Tally()
                    for name in ("attr_yes_f", "attr_yes_m", "diff chosen", "diff before", "diff paired t (scipy)")
                },
            )
            for _ in range(runs):
                f, m = _grant_draw(rng, women, men, pairs)
                for name, side, true in (("attr_yes_f", f, truth[0]), ("attr_yes_m", m, truth[1])):
                    estimate = share_estimate(*side)
                    tallies[name].add(estimate.interval(), true, estimate.value)
                chosen = difference_estimate(f, m)
                rejects = (chosen.p_value(0.0) or 1.0) < 0.05
                tallies["diff chosen"].add(chosen.interval(), truth[0] - truth[1], chosen.value, rejects)
                before = _difference_before(f, m)
                tallies["diff before"].add(before[0], truth[0] - truth[1], chosen.value, before[1] < 0.05)
                both = (f[1] > 0) & (m[1] > 0)
                reference = stats.ttest_rel(f[0][both] / f[1][both], m[0][both] / m[1][both]).pvalue
                tallies["diff paired t (scipy)"].add(None, truth[0] - truth[1], chosen.value, reference < 0.05)
    return cells


def _grant_draw(rng: np.random.Generator, women: float, men: float, pairs: int) -> tuple[tuple, tuple]:
    """One run's (hits, n, n) per pair for women and men: a shared pair effect, refusals 0-80% by pair."""
    effect = 0.8 * rng.standard_normal(pairs)
    answered = rng.binomial(48, 1 - rng.uniform(0.0, 0.8, pairs), size=(2, pairs)).astype(float)
    hits = [
        rng.binomial(answered[index].astype(int), expit(logit(rate) + effect)).astype(float)
        for index, rate in enumerate((women, men))
    ]
    return (hits[0], answered[0], answered[0]), (hits[1], answered[1], answered[1])


def _pooled_truth(rng: np.random.Generator, women: float, men: float) -> tuple[float, float]:
    """The pooled rates a run converges to (200,000 simulated pairs)."""
    f, m = _grant_draw(rng, women, men, 200_000)
    return f[0].sum() / f[1].sum(), m[0].sum() / m[1].sum()


def _difference_before(first: tuple, second: tuple) -> tuple[tuple[float, float] | None, float]:
    """Before issue 29: the difference mapped from [-1, 1] onto [0, 1] and given the share's score interval."""
    hits, n = np.vstack([first[0], second[0]]).T, np.vstack([first[1], second[1]]).T
    used = (n > 0).any(axis=1)
    hits, n = hits[used], n[used]
    pairs = len(hits)
    ratio = hits.sum(axis=0) / n.sum(axis=0)
    psi = (hits - ratio * n) / n.mean(axis=0)
    variance = float(np.sum((psi[:, 0] - psi[:, 1]) ** 2) / (pairs * (pairs - 1)))
    mapped = ShareEstimate((ratio[0] - ratio[1] + 1) / 2, variance / 4, pairs, int(n.sum()), 1 / n.sum(), pairs - 1)
    interval = mapped.interval()
    return (None if interval is None else (2 * interval[0] - 1, 2 * interval[1] - 1)), mapped.p_value(0.5) or 1.0


def compare_cells(runs: int, seed: int) -> dict[tuple, dict[str, Tally]]:
    """Compare's paired differences (run b - run a) and rank intervals of three runs, at 12 and 20 pairs."""
    rng = np.random.default_rng(seed)
    cells: dict[tuple, dict[str, Tally]] = {}
    means = np.array([0.3, 0.35, 0.5])  # runs a, b, c: true ranks 3, 2, 1
    for pairs in (12, 20):
        sizes = np.resize(np.array([16.0, 8.0]), pairs)
        tallies = cells.setdefault(("compare", pairs), {name: Tally() for name in ("difference b - a", "rank of b")})
        for _ in range(runs):
            lean = 0.8 * rng.standard_normal(pairs)  # the pair shifts every run alike: differences are paired
            values = [
                rng.binomial(sizes.astype(int), expit(logit(mean) + lean + 0.5 * rng.standard_normal(pairs))) / sizes
                for mean in means
            ]
            terms = [(value[:, None], np.ones((pairs, 1)), sizes[:, None]) for value in values]
            estimate = difference_estimate(*(tuple(t[:, 0] for t in term) for term in terms[1::-1]))
            truth = _logit_normal_mean(means[1]) - _logit_normal_mean(means[0])
            tallies["difference b - a"].add(estimate.interval(), truth, estimate.value)
            point, replicates = resampled_values([term[:2] for term in terms])
            rank_b = ranks(replicates)[:, 1, 0]
            tail = expanded_tail(pairs)  # as the product's rank rows
            low, high = np.percentile(rank_b, tail, method="lower"), np.percentile(rank_b, 100 - tail, method="higher")
            tallies["rank of b"].add((low, high), 2.0, float(ranks(point)[1, 0]))
    return cells


def _logit_normal_mean(mean: float, sd: float = math.hypot(0.8, 0.5)) -> float:
    """E[expit(logit(mean) + N(0, sd^2))] by Gauss-Hermite quadrature: the true mean of pair rates."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    return float(np.sum(weights * expit(logit(mean) + sd * nodes)) / np.sqrt(2 * np.pi))


def measure(quick: bool) -> dict[str, float]:
    """Every cell's figures as `cell/method/figure=value` lines, and the summary the issue's targets read."""
    runs = 100 if quick else 400
    started = time.perf_counter()
    figures: dict[str, float] = {"pair_worlds_runs_per_cell": runs}
    summary: dict[str, list[float]] = {}
    for cells in (share_cells(runs, 29), grant_cells(runs, 30), compare_cells(runs, 31)):
        for cell, tallies in cells.items():
            name = "_".join(str(round(part, 3) if isinstance(part, float) else part) for part in cell)
            for method, tally in tallies.items():
                for figure, value in tally.figures().items():
                    figures[f"{name}/{method}/{figure}".replace(" ", "_")] = round(value, 4)
                    summary.setdefault(f"{cell[0]}/{method}/{figure}", []).append(value)
    for key, values in summary.items():
        figures[f"summary/{key}/mean".replace(" ", "_")] = round(float(np.mean(values)), 4)
        figures[f"summary/{key}/min".replace(" ", "_")] = round(float(np.min(values)), 4)
    figures["pair_worlds_seconds"] = round(time.perf_counter() - started, 1)
    return figures
