"""Coverage of the impact ratio's interval when names recur across sets, as in Bloomberg's study (100 names per
group, each in about 10 of 1,000 rankings): `python -m bench.recurring_names [replicates]` (about 2.5 minutes of
CPU at 100 replicates).

A world like theirs, smaller: 300 rankings of 8 people, one per category, each drawn from the category's 30 names
(each name in about 10 rankings); the top pick is a multinomial logit of a category effect plus the name's own
effect (normal on the logit scale, sd 0, 0.5 or 1: names carry more than their group). One category's pick rate is
0.6 of the others'. The estimand: each category's population rate (name effects integrated over new names) over the
highest. Coverage of every category's 95% interval, built as analyze() builds them (group_ratios), two-way (by
ranking and by name) and ranking-only (the same counts without the names).
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from probe.analysis.impact import group_ratios

CATEGORIES, SETS, NAMES = 8, 300, 30
NAME_SDS = (0.0, 0.5, 1.0)
LOW_EFFECT = np.log(0.6)  # the low category's logit shift: about 0.6 the others' rate


def _effects() -> np.ndarray:
    return np.array([LOW_EFFECT] + [0.0] * (CATEGORIES - 1))


def population_rates(name_sd: float, generator: np.random.Generator, draws: int = 400_000) -> np.ndarray:
    """Each category's pick rate over fresh names (Monte Carlo)."""
    utility = _effects() + generator.normal(0, name_sd, (draws, CATEGORIES))
    weights = np.exp(utility)
    return (weights / weights.sum(axis=1, keepdims=True)).mean(axis=0)


def simulated_counts(name_sd: float, generator: np.random.Generator) -> pd.DataFrame:
    """One study: per ranking and category the name shown and whether it was picked (impact_counts' columns)."""
    name_effects = generator.normal(0, name_sd, (CATEGORIES, NAMES))
    shown = generator.integers(0, NAMES, (SETS, CATEGORIES))
    utility = _effects() + name_effects[np.arange(CATEGORIES), shown]
    picked = np.argmax(utility + generator.gumbel(size=utility.shape), axis=1)
    hits = (np.arange(CATEGORIES) == picked[:, None]).astype(int)
    sets, categories = np.meshgrid(np.arange(1, SETS + 1), np.arange(CATEGORIES), indexing="ij")
    return pd.DataFrame(
        {
            "set_id": sets.ravel(),
            "category": [f"c{c}" for c in categories.ravel()],
            "name": [f"c{c}-{n}" for c, n in zip(categories.ravel(), shown.ravel(), strict=True)],
            "hits": hits.ravel(),
            "n": 1,
            "unknown": 0,
        }
    )


def coverage(name_sd: float, replicates: int, seed: int = 46) -> dict[str, float]:
    """Share of category intervals covering the true ratio, two-way and ranking-only, and their mean widths."""
    generator = np.random.default_rng(seed)
    rates = population_rates(name_sd, generator)
    truth = {f"c{c}": rates[c] / rates.max() for c in range(CATEGORIES)}
    covered = {"two_way": [], "one_way": []}
    widths = {"two_way": [], "one_way": []}
    for _ in range(replicates):
        counts = simulated_counts(name_sd, generator)
        for method, frame in (("two_way", counts), ("one_way", counts.drop(columns="name"))):
            ratios = group_ratios(frame)
            for category, value in truth.items():
                interval = ratios.interval(category) or (1.0, 1.0)  # shown to be the highest: [1, 1]
                covered[method].append(interval[0] <= value <= interval[1])
                widths[method].append(interval[1] - interval[0])
    return {
        f"{method}_{kind}": float(np.mean(values))
        for method in covered
        for kind, values in (("coverage", covered[method]), ("width", widths[method]))
    }


def main(replicates: int) -> None:
    for name_sd in NAME_SDS:
        result = coverage(name_sd, replicates)
        print(
            f"name_sd={name_sd} replicates={replicates} "
            + " ".join(f"{key}={value:.3f}" for key, value in result.items())
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
