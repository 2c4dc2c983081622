"""Issue 48 item 1 by simulation: the impact ratio's tails, width, four-fifths verdict and gate at their limits.

    .venv/bin/python -m bench.impact_verdicts --runs 1000

Worlds of bench/impact.py (set and name effects, sd 0.5 each; 10 binary questions per person, 90% usable), with
the low category's rate chosen so that its population ratio to the others is exactly `ratio`:
- K = 2 at high base rates (top 0.5 and 0.9), ratio 0.8: lower and upper tail misses of the 95% interval, its
  median width, and the impact_ratio gate's pass rate (its 90% lower end above 0.8: promised <= 0.05);
- K = 8, every rate equal (ratio 1) and ratio 0.9: how often some category is flagged below 0.8 by the point
  estimate (the `four_fifths` column) and by the interval (`four_fifths_verdict` "shown below 0.8").
Run it under the previous code (PYTHONPATH at a checkout of it) for the "before" column: it reads only the public
`group_ratios` / `GroupRatios.interval`.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import optimize

from bench.impact import NAME_SD, SET_SD, population_rate, simulate
from probe.analysis.impact import FOUR_FIFTHS, group_ratios


def low_rate(top: float, ratio: float, draws: np.ndarray) -> float:
    """The low category's logit-scale rate whose population rate is `ratio` x the top's."""
    target = ratio * population_rate(top, draws)
    return optimize.brentq(lambda rate: population_rate(rate, draws) - target, 1e-6, top)


def tails(rng: np.random.Generator, top: float, sets: int, runs: int, draws: np.ndarray) -> dict[str, float]:
    """K = 2 at ratio 0.8: the low category's interval misses below / above, median width, gate passes."""
    rates = np.array([low_rate(top, FOUR_FIFTHS, draws), top])
    below = above = passes = 0
    widths = []
    for _ in range(runs):
        ratios = group_ratios(simulate(rng, sets, rates, False).astype({"category": str}))
        low = "0"  # the low category
        interval = ratios.interval(low) if low in ratios.rates else None
        if interval is None:
            interval = (1.0, 1.0) if ratios.value(low) == 1.0 else (math.nan, math.nan)
        below += interval[0] > FOUR_FIFTHS  # the truth below the interval
        above += interval[1] < FOUR_FIFTHS
        widths.append(interval[1] - interval[0])
        shown90 = ratios.interval(low, 0.90, comparisons=1) or ((1.0, 1.0) if ratios.value(low) == 1.0 else None)
        passes += shown90 is not None and shown90[0] > FOUR_FIFTHS
    return {
        "lower_miss": below / runs,
        "upper_miss": above / runs,
        "median_width": float(np.nanmedian(widths)),
        "gate_pass": passes / runs,
    }


def flags(rng: np.random.Generator, ratio: float, sets: int, runs: int, draws: np.ndarray) -> dict[str, float]:
    """K = 8, one category at `ratio`, the others equal: runs with some category flagged below 0.8."""
    rates = np.array([low_rate(0.5, ratio, draws) if ratio < 1 else 0.5, *[0.5] * 7])
    point = shown = 0
    for _ in range(runs):
        ratios = group_ratios(simulate(rng, sets, rates, False).astype({"category": str}))
        intervals = [ratios.interval(category) for category in ratios.rates]
        point += any(ratios.value(category) < FOUR_FIFTHS for category in ratios.rates)
        shown += any(interval is not None and interval[1] < FOUR_FIFTHS for interval in intervals)
    return {"point_flag": point / runs, "shown_below": shown / runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    rng = np.random.default_rng(48)
    draws = rng.normal(0, math.hypot(SET_SD, NAME_SD), 200_000)
    started = time.process_time()
    print("| K | top rate | sets | runs | truth below interval | truth above | median width | gate passes at 0.8 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for top in (0.5, 0.9):
        for sets in (12, 20, 50):
            cell = tails(rng, top, sets, args.runs, draws)
            print(
                f"| 2 | {top} | {sets} | {args.runs} | {cell['lower_miss']:.3f} | {cell['upper_miss']:.3f} | "
                f"{cell['median_width']:.3f} | {cell['gate_pass']:.3f} |"
            )
    print("\n| K | ratio of one category | sets | runs | some category point-flagged | some shown below 0.8 |")
    print("|---|---:|---:|---:|---:|---:|")
    for ratio in (1.0, 0.9):
        for sets in (12, 50):
            cell = flags(rng, ratio, sets, args.runs // 2, draws)
            print(f"| 8 | {ratio} | {sets} | {args.runs // 2} | {cell['point_flag']:.3f} | {cell['shown_below']:.3f} |")
    print(f"\nCPU {time.process_time() - started:.0f} s")


if __name__ == "__main__":
    main()
