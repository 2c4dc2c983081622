"""Findings per contrast by simulation (issue 45, probe/analysis/contrasts.py): the preference intervals of one
attribute's family of contrasts (Bonferroni over them), the family's false flags where no contrast differs, the
simultaneous coverage and the power to flag one planted contrast, through the real `contrast_rows`.

Each world: K = 4 categories (6 contrasts, as the 2 x 2 intersection of sex and race), each contrast asked in
`sets` name sets, 20 single answers per contest (10 occupations x 2 name orders); each set's own share is the truth
moved on the logit scale by N(0, 0.4) (names differ), its answers binomial around it.

    .venv/bin/python -m bench.contrasts            # 1,000 runs per cell (~8 minutes on 2 shared cores)
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
import pandas as pd

from probe.analysis.contrasts import contrast_rows

CATEGORIES = ("female x Black", "female x White", "male x Black", "male x White")
ANSWERS = 20  # per contest
SPREAD = 0.4  # sd of a set's share around the truth, logit scale
PLANTED = ("male x Black", "male x White")


def simulated_contests(truth: dict[tuple[str, str], float], sets: int, rng: np.random.Generator) -> pd.DataFrame:
    """metrics.sql `contrast_counts` rows of one run: per contrast `sets` sets, hits of category_a."""
    rows = []
    for (a, b), share in truth.items():
        logits = np.log(share / (1 - share)) + rng.normal(0, SPREAD, sets)
        hits = rng.binomial(ANSWERS, 1 / (1 + np.exp(-logits)))
        rows += [
            ("taxonomy", "sex x race_ethnicity", set_id, a, b, int(h), ANSWERS)
            for set_id, h in enumerate(hits, start=1)
        ]
    return pd.DataFrame(rows, columns=["condition", "attribute", "set_id", "category_a", "category_b", "hits", "n"])


def simulate(planted: float, sets: int, runs: int, seed: int) -> dict[str, float]:
    """Family-wise false flags, simultaneous and per-contrast coverage, power on the planted contrast."""
    rng = np.random.default_rng(seed)
    truth = {pair: (planted if pair == PLANTED else 0.5) for pair in itertools.combinations(CATEGORIES, 2)}
    grants = pd.DataFrame(columns=["condition", "attribute", "set_id", "category", "hits", "n", "unknown"])
    false_flags = simultaneous = covered = flagged = intervals = 0
    for _ in range(runs):
        rows = contrast_rows(simulated_contests(truth, sets, rng), grants)
        rows = rows[rows["ci_low"].notna()]
        intervals += len(rows)
        truths = np.array([truth[a, b] for a, b in zip(rows["category_a"], rows["category_b"], strict=True)])
        inside = (rows["ci_low"].to_numpy() <= truths) & (truths <= rows["ci_high"].to_numpy())
        covered += int(inside.sum())
        simultaneous += int(inside.all() and len(rows) == len(truth))
        null = truths == 0.5
        false_flags += int(rows["flagged"].to_numpy()[null].any())
        is_planted = (rows["category_a"] == PLANTED[0]) & (rows["category_b"] == PLANTED[1])
        flagged += int(rows.loc[is_planted, "flagged"].any()) if planted != 0.5 else 0
    return {
        "false_flag_rate": false_flags / runs,
        "simultaneous_coverage": simultaneous / runs,
        "coverage": covered / max(intervals, 1),
        "power": flagged / runs if planted != 0.5 else float("nan"),
        "with_interval": intervals / (runs * len(truth)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    arguments = parser.parse_args()
    for planted, sets in itertools.product((0.5, 0.3), (8, 16, 24)):
        figures = simulate(planted, sets, arguments.runs, seed=sets * 10 + int(planted * 10))
        print(f"planted={planted} sets={sets} " + " ".join(f"{k}={v:.3f}" for k, v in figures.items()), flush=True)


if __name__ == "__main__":
    main()
