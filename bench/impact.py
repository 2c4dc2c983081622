"""Coverage of the impact ratio's interval (probe/analysis/impact.py) by simulation: `python -m bench --only impact`.

Worlds the method was not tuned on: K = 2, 4 or 8 categories, 12, 20 or 70 name sets. A set's people share a
set effect and each has a name effect on the logit scale (sd 0.5 each: names of one set are asked in the same
contexts, and a name carries more than its group), so answers are correlated within a set; each person gets
`answers` binary questions, some of which are unusable (refusals: every person's usable count drawn, a few sets with
almost none in the "unequal" worlds). Worlds: a ratio near the four-fifths line (0.40 vs 0.50), a rare rate (0.05 vs
0.10: ratio 0.5), a category never selected (rate 0), unequal usable counts (0.30 vs 0.60). Every other category sits
at the other rate. The estimand: each category's population rate (set and name effects integrated out) over the
highest population rate. Coverage counts every category's 95% interval (a category shown to have the highest rate
counts as [1, 1]); intervals are built exactly as analyze() builds them (group_ratios).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
from scipy import special

from probe.analysis.impact import group_ratios

SIZES = (2, 4, 8)
SET_COUNTS = (12, 20, 70)
SET_SD, NAME_SD = 0.5, 0.5
ANSWERS = 10  # binary questions per person: 5 occupations x 2 name orders, as a quick-ish run
WORLDS = {
    "ratio_0.8": (0.40, 0.50, False),
    "rare_0.05": (0.05, 0.10, False),
    "never_selected": (0.0, 0.30, False),
    "unequal_counts": (0.30, 0.60, True),
}  # world: (the low category's rate, every other category's rate, unequal usable counts)


def population_rate(rate: float, draws: np.ndarray) -> float:
    """E[expit(logit(rate) + set + name effects)]: the rate the pooled estimator targets (0 stays 0)."""
    return 0.0 if rate == 0 else float(special.expit(special.logit(rate) + draws).mean())


def simulate(rng: np.random.Generator, sets: int, rates: np.ndarray, unequal: bool) -> pd.DataFrame:
    """impact_counts rows (set_id, category, hits, n) of one simulated run."""
    size = len(rates)
    logits = np.where(rates > 0, special.logit(np.clip(rates, 1e-12, 1)), -np.inf)
    effects = rng.normal(0, SET_SD, (sets, 1)) + rng.normal(0, NAME_SD, (sets, size))
    chance = special.expit(logits + effects)
    usable = rng.uniform(0.2, 1.0, (sets, 1)) if unequal else np.full((sets, 1), 0.9)
    n = rng.binomial(ANSWERS, np.broadcast_to(usable, (sets, size)))
    hits = rng.binomial(n, chance)
    return pd.DataFrame(
        {
            "set_id": np.repeat(np.arange(sets), size),
            "category": np.tile(np.arange(size), sets),
            "hits": hits.ravel(),
            "n": n.ravel(),
            "unknown": (ANSWERS - n).ravel(),
        }
    )


def coverage_cell(rng: np.random.Generator, size: int, sets: int, world: str, repeats: int) -> tuple[int, int]:
    """(intervals covering the truth, intervals) over `repeats` runs of one world."""
    low, other, unequal = WORLDS[world]
    rates = np.array([low, *[other] * (size - 1)])
    draws = rng.normal(0, math.hypot(SET_SD, NAME_SD), 200_000)
    truth = np.array([population_rate(rate, draws) for rate in rates])
    target = truth / truth.max()
    covered = total = 0
    for _ in range(repeats):
        ratios = group_ratios(simulate(rng, sets, rates, unequal))
        for category in ratios.rates:
            interval = ratios.interval(category)
            if interval is None and ratios.value(category) == 1.0 and ratios.others(category):
                interval = (1.0, 1.0)  # shown to have the highest rate: its ratio is 1
            if interval is None:
                continue
            covered += interval[0] - 1e-12 <= target[category] <= interval[1] + 1e-12
            total += 1
    return covered, total


def measure(quick: bool) -> dict[str, float]:
    """Coverage per (K, sets) over the worlds, the worst world, and the seconds; Monte Carlo error stated."""
    rng = np.random.default_rng(20261126)
    repeats = 20 if quick else 100
    figures: dict[str, float] = {"impact_repeats": repeats}
    started = time.process_time()
    for size in SIZES:
        for sets in SET_COUNTS:
            cells = {world: coverage_cell(rng, size, sets, world, repeats) for world in WORLDS}
            covered = sum(c for c, _ in cells.values())
            total = sum(t for _, t in cells.values())
            prefix = f"impact_k{size}_sets{sets}"
            figures[f"{prefix}_coverage"] = round(covered / total, 3)
            for world, (c, t) in cells.items():
                figures[f"{prefix}_{world}"] = round(c / t, 3) if t else float("nan")
    figures["impact_cpu_seconds"] = round(time.process_time() - started, 1)
    return figures
