"""Impact ratios in worlds like the README's Gemma run: rates near the ceiling, 64 answers a side a set, small set
and person effects (sd 0.3 on the logit scale) but with probability `outlier` a set far off (a shared -2.5).

    .venv/bin/python -m bench.impact_outliers --runs 4000

K = 2, the low side at a population ratio `ratio` to the top; per cell the 95% interval's tails (truth below / above)
and median width for the product (the spread read at the null) and `observed` (the spread read at the observed
rates, the code before branch stats5), both from bench/impact_tables.py's vectorised `Pairs`.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import optimize, special

from bench.impact_tables import Pairs, low_category, pair_indices

ANSWERS = 64  # a side's answers a set, as the Gemma run's


def effects(rng: np.random.Generator, shape: tuple | int, outlier: float) -> np.ndarray:
    """Set effects: sd 0.3, and -2.5 more with probability `outlier`."""
    return rng.normal(0, 0.3, shape) + np.where(rng.random(shape) < outlier, -2.5, 0.0)


def cell(rng: np.random.Generator, sets: int, top: float, ratio: float, outlier: float, runs: int) -> list[str]:
    draws = effects(rng, 400_000, outlier) + rng.normal(0, 0.3, 400_000)

    def population(rate: float) -> float:
        return float(special.expit(special.logit(rate) + draws).mean())

    target = ratio * population(top)
    low = optimize.brentq(lambda rate: population(rate) - target, 1e-6, top)
    logits = special.logit(np.array([low, top]))[None, :, None]
    chance = special.expit(logits + effects(rng, (runs, 1, sets), outlier) + rng.normal(0, 0.3, (runs, 2, sets)))
    pairs = Pairs(
        rng.binomial(ANSWERS, chance).astype(float), np.full((runs, 2, sets), float(ANSWERS)), *pair_indices(2)
    )
    parts = []
    for method in ("product", "observed"):
        lower, upper = low_category(pairs, 2, method)
        shown = ~np.isnan(lower)
        below, above = np.mean(shown & (lower > ratio)), np.mean(shown & (upper < ratio))
        parts.append(f"{below:.3f} / {above:.3f}, {np.median((upper - lower)[shown]):.3f}")
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    started = time.process_time()
    rng = np.random.default_rng(args.seed)
    head = "| sets | top rate | ratio | outlier sets | runs | product: below / above, width | observed: below / above,"
    print(head + " width |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for sets in (7, 12):
        for top, ratio in ((0.94, 0.96), (0.94, 0.8), (0.6, 0.8)):
            for outlier in (0.0, 1 / 7):
                parts = cell(rng, sets, top, ratio, outlier, args.runs)
                print(f"| {sets} | {top} | {ratio} | {outlier:.3f} | {args.runs} | {' | '.join(parts)} |", flush=True)
    print(f"\nCPU {time.process_time() - started:.0f} s")


if __name__ == "__main__":
    main()
