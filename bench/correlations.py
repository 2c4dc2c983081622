"""Issue 48 item 2: the workforce comparison's correlation intervals (probe/analysis/correlations.py
`correlation_fits`) per cell, 8/10/12/20/62 occupations x 6/12/20 pairs, 1,000 runs each, in bench/workforce.py's
mirror world (slope 1) and strong world (slope 2, occupation sd 0.1: correlations 0.95-0.98).

    .venv/bin/python -m bench.correlations --runs 1000

"Now": the product's interval (the jackknife from 12 occupations, the formula below); "before": the formula alone
(Fisher z at r, Bonett-Wright for Spearman, centred at most half a rank step from +-1: the product until issue 48's
second pass). Truth: bench/workforce.py's (the correlations of shares measured with the run's number of pairs, over
80,000 occupations: the population correlation the report describes). Per cell also the runs whose interval is
all of [-1, 1] (wider than 1.9), whose estimate lies outside its interval (now, before: a Spearman of +-1, read half
a rank step inside, lies outside both), and whose interval went through the jackknife.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from bench.workforce import OCCUPATION_SD, PAIRS, STRONG, correlation_truth, draw, world_b
from probe.analysis.correlations import JACKKNIFE_METHODS, correlation_fits, correlation_interval

WORLDS = {"mirror": (1.0, OCCUPATION_SD), "strong": STRONG}
OCCUPATIONS = (8, 10, 12, 20, 62)  # 10 and 12: either side of the jackknife's threshold


def _tails(truth: float, low: np.ndarray, high: np.ndarray) -> str:
    covered = np.mean((low <= truth) & (truth <= high))
    return f"{covered:.3f}, {np.mean(truth < low):.3f} / {np.mean(truth > high):.3f}, {np.median(high - low):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    runs = parser.parse_args().runs
    started = time.process_time()
    print(
        "| world | occupations x pairs | statistic | truth | runs | now: coverage, truth below / above, median width | "
        "before: the same | now / before width | [-1, 1] now, before | estimate outside now, before | jackknifed |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (label, (target, spread)), occupations, pairs in itertools.product(WORLDS.items(), OCCUPATIONS, PAIRS):
        b = world_b(target, spread)
        truths = correlation_truth(b, pairs, spread, 0.0)
        picks, x = draw(np.random.default_rng(occupations * 100 + pairs), b, runs, occupations, pairs, spread)
        n = np.full(runs, occupations)
        for name, (r, low, high, method) in correlation_fits(picks.mean(axis=(2, 3)), x).items():
            _, old_low, old_high = correlation_interval(name, r, n)
            ratio = np.median(high - low) / np.median(old_high - old_low)
            print(
                f"| {label} | {occupations} x {pairs} | {name} | {truths[name]:.3f} | {runs} | "
                f"{_tails(truths[name], low, high)} | {_tails(truths[name], old_low, old_high)} | {ratio:.2f} | "
                f"{np.mean(high - low > 1.9):.3f}, {np.mean(old_high - old_low > 1.9):.3f} | "
                f"{np.mean((r < low) | (r > high)):.3f}, {np.mean((r < old_low) | (r > old_high)):.3f} | "
                f"{np.mean(method == JACKKNIFE_METHODS[name]):.3f} |",
                flush=True,
            )
    print(f"\nCPU {time.process_time() - started:.0f} s")


if __name__ == "__main__":
    main()
