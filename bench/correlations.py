"""Issue 48 item 2: the workforce comparison's correlation intervals (probe/analysis/workforce.py
`correlation_interval`) per cell, 8/20/62 occupations x 6/12/20 pairs, 1,000 runs each, in bench/workforce.py's
mirror world (slope 1) and strong world (slope 2, occupation sd 0.1: correlations 0.95-0.98).

    .venv/bin/python -m bench.correlations --runs 1000

"Before": the same Fisher z interval centred at r itself (commit f142620), where a Spearman of exactly 1 (every
rank agrees: frequent over 8 occupations) gave z = inf and the interval [1, 1]. Truth: bench/workforce.py's
(the correlations of shares measured with the run's number of pairs, over 80,000 occupations).
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
from scipy import stats

from bench.workforce import OCCUPATION_SD, OCCUPATIONS, PAIRS, STRONG, correlation_truth, draw, world_b
from probe.analysis.binomial import CONFIDENCE
from probe.analysis.workforce import correlation_interval, correlations

WORLDS = {"mirror": (1.0, OCCUPATION_SD), "strong": STRONG}


def before(name: str, r: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """f142620's interval: Fisher z at r itself (clipped 1e-12 from +-1)."""
    spread = np.sqrt((1 + r**2 / 2) if name == "spearman" else 1.0) / np.sqrt(np.maximum(n - 3, 1))
    z = np.arctanh(np.clip(r, -1 + 1e-12, 1 - 1e-12))
    half = stats.norm.isf((1 - CONFIDENCE) / 2) * spread
    return np.tanh(z - half), np.tanh(z + half)


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
        "before: the same | runs with r = +-1 |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for (label, (target, spread)), occupations, pairs in itertools.product(WORLDS.items(), OCCUPATIONS, PAIRS):
        b = world_b(target, spread)
        truths = correlation_truth(b, pairs, spread, 0.0)
        picks, x = draw(np.random.default_rng(occupations * 100 + pairs), b, runs, occupations, pairs, spread)
        n = np.full(runs, occupations)
        for name, r in correlations(picks.mean(axis=(2, 3)), x).items():
            _, low, high = correlation_interval(name, r, n)
            print(
                f"| {label} | {occupations} x {pairs} | {name} | {truths[name]:.3f} | {runs} | "
                f"{_tails(truths[name], low, high)} | {_tails(truths[name], *before(name, r, n))} | "
                f"{np.mean(np.abs(r) == 1):.3f} |",
                flush=True,
            )
    print(f"\nCPU {time.process_time() - started:.0f} s")


if __name__ == "__main__":
    main()
