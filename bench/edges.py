"""Statistics at the edges real runs reach (issue 40): rare events carried by a few pairs, differences and gates on
rare metrics. Measured by simulation through the product's `share_estimate` / `difference_estimate` and the gates'
`interval_verdict`.

Every cell draws, per simulated run, hits and valid instances per name pair (pairs of 2 and 40 valid answers
alternating, as refusals produce, unless the cell says otherwise) and records, for the 95% interval, how often the
truth lies below it and above it (each should stay <= 0.025, <= 0.035 with Monte Carlo error: the one-sided gates
- max, min, non-inferiority - read one end), its coverage and its mean width; for a gate cell, how often the gate
passes with the truth at its margin (<= 0.05).

Cells (the issue's, then this module's own on the same edges):
- share_bg0.01_70 / share_bg0.005_70: one pair in 24 at 0.3, the rest at a background of 0.01 (0.005), 70 pairs,
  pooled; share_bg0.01_20: the same at 20 pairs;
- diff_one_in_12_20: women 0.3 vs men 0.1 in one pair in 12 (the rest 0.01 both), 20 pairs, pooled;
- diff_8_4_mean_12: women 8% vs men 4% in every pair, 12 pairs, mean of pair values (compare's path);
  diff_8_4_pooled_12: the same pooled;
- ni_rare_12 / ni_rare_20: a non-inferiority gate (higher is worse, margin 0.02) on a rare metric, baseline pairs
  at 3% (beta, intra-pair correlation 0.1, 16 valid answers a pair), the candidate 2 points higher in every pair
  (exactly the margin);
- one_in_12_70: one pair in 12 at 0.5, the rest 0.01, 70 pairs, pooled (the bench's worst share cell before).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from probe.analysis.differences import difference_estimate
from probe.analysis.statistics import share_estimate
from probe.gates.policy import Gate
from probe.gates.verdicts import PASS, interval_verdict

SIZES = np.array([2.0, 40.0])
NON_INFERIORITY = Gate("worse", "non_inferiority", "taxonomy", "bias", margin=0.02, worse="higher")
Draw = Callable[[np.random.Generator], tuple[object, float]]


def _sizes(pairs: int) -> np.ndarray:
    return np.resize(SIZES, pairs)


def carried_share(pairs: int, every: int, rate: float, background: float) -> tuple[Draw, float]:
    """A pooled rate: one pair in `every` at `rate`, the rest at `background`."""
    sizes = _sizes(pairs)

    def draw(rng: np.random.Generator) -> tuple[object, float]:
        rates = np.where(rng.random(pairs) < 1 / every, rate, background)
        hits = rng.binomial(sizes.astype(int), rates).astype(float)
        return share_estimate(hits, sizes, sizes), 0.0

    return draw, rate / every + background * (1 - 1 / every)


def carried_difference(pairs: int, every: int, women: float, men: float, background: float) -> tuple[Draw, float]:
    """A pooled difference over the same pairs: one pair in `every` at (women, men), the rest at background."""
    sizes = _sizes(pairs)

    def draw(rng: np.random.Generator) -> tuple[object, float]:
        carries = rng.random(pairs) < 1 / every
        sides = [
            rng.binomial(sizes.astype(int), np.where(carries, rate, background)).astype(float) for rate in (women, men)
        ]
        return difference_estimate(*((hits, sizes, sizes) for hits in sides)), 0.0

    return draw, (women - men) / every


def rate_difference(pairs: int, women: float, men: float, pooled: bool) -> tuple[Draw, float]:
    """Women's rate minus men's in every pair, pooled or as a mean of pair values."""
    sizes = _sizes(pairs)

    def draw(rng: np.random.Generator) -> tuple[object, float]:
        sides = [rng.binomial(sizes.astype(int), rate, pairs).astype(float) for rate in (women, men)]
        terms = [(hits, sizes, sizes) if pooled else (hits / sizes, np.ones(pairs), sizes) for hits in sides]
        return difference_estimate(*terms), 0.0

    return draw, women - men


def rare_non_inferiority(pairs: int, baseline: float = 0.03, instances: int = 16) -> tuple[Draw, float]:
    """Baseline pair rates from a beta (mean `baseline`, intra-pair correlation 0.1), the candidate's the same +
    the gate's margin; each pair's value over `instances` valid answers, a mean of pair values as the gate reads.
    The draw's second item: 1.0 where the gate passes."""
    sizes = np.full(pairs, float(instances))
    total = (1 - 0.1) / 0.1

    def draw(rng: np.random.Generator) -> tuple[object, float]:
        rates = rng.beta(baseline * total, (1 - baseline) * total, pairs)
        sides = [
            rng.binomial(instances, np.clip(rates + shift, 0, 1)) / instances for shift in (NON_INFERIORITY.margin, 0.0)
        ]
        estimate = difference_estimate(*((values, np.ones(pairs), sizes) for values in sides))
        return estimate, float(interval_verdict(NON_INFERIORITY, estimate).verdict == PASS)

    return draw, NON_INFERIORITY.margin


CELLS: dict[str, tuple[Draw, float]] = {
    "share_bg0.01_70": carried_share(70, 24, 0.3, 0.01),
    "share_bg0.005_70": carried_share(70, 24, 0.3, 0.005),
    "share_bg0.01_20": carried_share(20, 24, 0.3, 0.01),
    "one_in_12_70": carried_share(70, 12, 0.5, 0.01),
    "diff_one_in_12_20": carried_difference(20, 12, 0.3, 0.1, 0.01),
    "diff_8_4_mean_12": rate_difference(12, 0.08, 0.04, pooled=False),
    "diff_8_4_pooled_12": rate_difference(12, 0.08, 0.04, pooled=True),
    "ni_rare_12": rare_non_inferiority(12),
    "ni_rare_20": rare_non_inferiority(20),
}


def cell_figures(draw: Draw, truth: float, runs: int, seed: int) -> dict[str, float]:
    """Below / above / coverage / width of the 95% interval over `runs` runs (a missing interval counts as a miss
    on both sides' total, not on either side), the gate's pass rate where the cell has a gate, and the Monte
    Carlo error of a rate of 0.05 at this many runs."""
    rng = np.random.default_rng(seed)
    below = above = missing = passed = 0
    widths = []
    for _ in range(runs):
        estimate, passes = draw(rng)
        interval = estimate.interval()
        passed += passes
        if interval is None:
            missing += 1
            continue
        below += truth < interval[0]
        above += truth > interval[1]
        widths.append(interval[1] - interval[0])
    return {
        "truth_below": below / runs,
        "truth_above": above / runs,
        "coverage": 1 - (below + above + missing) / runs,
        "width": float(np.mean(widths)),
        "gate_passes": passed / runs,
        "mc_error_at_0.05": math.sqrt(0.05 * 0.95 / runs),
    }


def measure(quick: bool, runs: int | None = None, only: tuple[str, ...] = ()) -> dict[str, float]:
    """Every cell's figures as `edges_<cell>_<figure>=value` (--quick: 300 runs a cell, else 2,000)."""
    runs = runs or (300 if quick else 2000)
    started = time.perf_counter()
    figures: dict[str, float] = {"edges_runs_per_cell": runs}
    for index, (name, (draw, truth)) in enumerate(CELLS.items()):
        if only and name not in only:
            continue
        for figure, value in cell_figures(draw, truth, runs, seed=40 + index).items():
            if figure != "gate_passes" or name.startswith("ni_"):
                figures[f"edges_{name}_{figure}"] = round(value, 4)
    figures["edges_seconds"] = round(time.perf_counter() - started, 1)
    return figures
