"""Issue 48 item 5: the per-contrast intervals (probe/analysis/contrasts.py) and the two-way clustering of imported
decisions (probe/analysis/impact.py) on worlds they were not tuned on.

    .venv/bin/python -m bench.untuned --runs 1000

Contrasts, through the real `contrast_rows`: K = 4 categories, every contrast asked in every set; a set's contest
share is the category effects' difference moved by a set x contrast effect (sd 0.5) and by the two names' own
effects (sd 0.5 each: the names differ from set to set); unbalanced sets (each set's usable share of its 20
answers drawn from U(0.1, 1)); stage-1 grants per person 18 questions less the same refusals, rate on the logit
scale = category rate + set effect (sd 0.5) + name effect (sd 0.5). Worlds: `null` (every category alike) and
`apart` (category effects -0.4, 0, 0.2, 0.5 on the logit scale; grant rates 0.1, 0.15, 0.2, 0.3). Per metric:
simultaneous coverage of the family (Bonferroni: >= 0.95 promised), per-contrast truth below / above, median
width, and the runs with some contrast flagged in the null world.

Two-way clustering, through `group_ratios` with names: 200 sets of K people, one per category, each a name drawn
from its category's 20 names with Zipf-like frequencies (a few names in most sets); selected 0/1 on the logit scale
= category rate + set effect (sd 0.5) + name effect (sd 0 or 1). The low category's rate is 0.6 of the others'
(0.3 vs 0.5). Coverage of the low category's ratio with the names (two-way) and without (set only).
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
import pandas as pd
from scipy import special

from probe.analysis.contrasts import contrast_rows
from probe.analysis.impact import group_ratios

CATEGORIES = ("a", "b", "c", "d")
EFFECTS = {"null": np.zeros(4), "apart": np.array([-0.4, 0.0, 0.2, 0.5])}
GRANT_RATES = {"null": np.full(4, 0.2), "apart": np.array([0.1, 0.15, 0.2, 0.3])}
SD = 0.5
ANSWERS, GRANT_QUESTIONS = 20, 18


def _draw_run(rng: np.random.Generator, world: str, sets: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """contrast_counts and grant_counts rows of one run."""
    usable = rng.uniform(0.1, 1.0, sets)
    names = rng.normal(0, SD, (sets, 4))
    contests = []
    for i, j in itertools.combinations(range(4), 2):
        logit = EFFECTS[world][i] - EFFECTS[world][j] + rng.normal(0, SD, sets) + names[:, i] - names[:, j]
        n = rng.binomial(ANSWERS, usable)
        hits = rng.binomial(n, special.expit(logit))
        contests.append(
            pd.DataFrame(
                {
                    "condition": "taxonomy",
                    "attribute": "group",
                    "set_id": np.arange(sets),
                    "category_a": CATEGORIES[i],
                    "category_b": CATEGORIES[j],
                    "hits": hits,
                    "n": n,
                }
            )
        )
    logit = special.logit(GRANT_RATES[world])[None, :] + rng.normal(0, SD, (sets, 1)) + names
    n = rng.binomial(GRANT_QUESTIONS, np.broadcast_to(usable[:, None], (sets, 4)))
    hits = rng.binomial(n, special.expit(logit))
    grants = pd.DataFrame(
        {
            "condition": "stage1",
            "attribute": "group",
            "set_id": np.repeat(np.arange(sets), 4),
            "category": np.tile(CATEGORIES, sets),
            "hits": hits.ravel(),
            "n": n.ravel(),
            "unknown": 0,
        }
    )
    return pd.concat(contests, ignore_index=True), grants


def contrast_truths(world: str, draws: int = 400_000) -> dict[tuple[str, str, str], float]:
    """Each contrast's population preference and grant gap (set and name effects integrated out)."""
    rng = np.random.default_rng(5)
    truths = {}
    spread = rng.normal(0, SD * np.sqrt(3), draws)  # set x contrast effect and the two names' effects
    grant_spread = rng.normal(0, SD * np.sqrt(2), draws)
    rates = [float(special.expit(special.logit(rate) + grant_spread).mean()) for rate in GRANT_RATES[world]]
    for i, j in itertools.combinations(range(4), 2):
        preference = float(special.expit(EFFECTS[world][i] - EFFECTS[world][j] + spread).mean())
        truths[CATEGORIES[i], CATEGORIES[j], "preference"] = preference
        truths[CATEGORIES[i], CATEGORIES[j], "grant_gap"] = rates[i] - rates[j]
    return truths


def contrast_cell(world: str, sets: int, runs: int, seed: int, chunk: int = 250) -> dict[str, dict[str, float]]:
    """The cell's runs through `contrast_rows`, `chunk` runs a call (each run its own condition: the Bonferroni
    families are per condition, so the rows are those of separate calls)."""
    rng = np.random.default_rng(seed)
    truths = contrast_truths(world)
    parts = []
    for start in range(0, runs, chunk):
        drawn = [_draw_run(rng, world, sets) for _ in range(min(chunk, runs - start))]
        contests, grants = (
            pd.concat([run[side].assign(condition=f"{start + i}") for i, run in enumerate(drawn)], ignore_index=True)
            for side in (0, 1)
        )
        parts.append(contrast_rows(contests, grants))
    rows = pd.concat(parts, ignore_index=True)
    rows["truth"] = [truths[key] for key in zip(rows["category_a"], rows["category_b"], rows["metric"], strict=True)]
    shown = rows["ci_low"].notna()
    rows = rows.assign(
        shown=shown,
        below=shown & (rows["truth"] < rows["ci_low"]),
        above=shown & (rows["truth"] > rows["ci_high"]),
        width=rows["ci_high"] - rows["ci_low"],
    )
    rows["covered"] = rows["shown"] & ~rows["below"] & ~rows["above"]
    found = {}
    for metric, part in rows.groupby("metric"):
        per_run = part.groupby("condition")
        intervals = max(int(part["shown"].sum()), 1)
        found[metric] = {
            "simultaneous": float(per_run["covered"].all().mean()),
            "below": part["below"].sum() / intervals,
            "above": part["above"].sum() / intervals,
            "width": float(part["width"].median()),
            "some_flagged": float(per_run["flagged"].any().mean()),
        }
    return found


def recurring_names_cell(count: int, name_sd: float, runs: int, seed: int, sets: int = 200, names: int = 20) -> dict:
    """Low category's interval with names (two-way) and without (set only): truth below / above, median width."""
    rng = np.random.default_rng(seed)
    rates = np.array([0.3, *[0.5] * (count - 1)])
    frequency = 1 / np.arange(1, names + 1)
    frequency /= frequency.sum()
    effects = rng.normal(0, SD, 400_000)[:, None] + rng.normal(0, name_sd, (400_000, 1))
    population = special.expit(special.logit(rates)[None, :] + effects).mean(axis=0)
    truth = population[0] / population.max()
    tallies = {way: {"below": 0, "above": 0, "widths": []} for way in ("two_way", "set_only")}
    for _ in range(runs):
        name_effects = rng.normal(0, name_sd, (count, names))
        shown = rng.choice(names, size=(sets, count), p=frequency)
        logit = special.logit(rates)[None, :] + rng.normal(0, SD, (sets, 1)) + name_effects[np.arange(count), shown]
        hits = (rng.random((sets, count)) < special.expit(logit)).astype(int)
        frame = pd.DataFrame(
            {
                "set_id": np.repeat(np.arange(sets), count),
                "category": np.tile([f"c{c}" for c in range(count)], sets),
                "name": [f"c{c}-{n}" for c, n in zip(np.tile(np.arange(count), sets), shown.ravel(), strict=True)],
                "hits": hits.ravel(),
                "n": 1,
                "unknown": 0,
            }
        )
        for way, counts in (("two_way", frame), ("set_only", frame.drop(columns="name"))):
            interval = group_ratios(counts).interval("c0")
            if interval is None:
                continue
            tallies[way]["below"] += truth < interval[0]
            tallies[way]["above"] += truth > interval[1]
            tallies[way]["widths"].append(interval[1] - interval[0])
    return {
        way: {"below": t["below"] / runs, "above": t["above"] / runs, "width": float(np.median(t["widths"]))}
        for way, t in tallies.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--part", choices=("contrasts", "names", "both"), default="both")
    args = parser.parse_args()
    started = time.process_time()
    if args.part != "names":
        _contrast_table(args.runs)
    if args.part != "contrasts":
        _names_table(args.runs)
    print(f"\nCPU {time.process_time() - started:.0f} s")


def _contrast_table(runs: int) -> None:
    print(
        "| world | sets | metric | runs | simultaneous coverage | truth below / above (per contrast) | median width | "
        "some contrast flagged |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for world, sets in itertools.product(EFFECTS, (12, 24)):
        for metric, f in contrast_cell(world, sets, runs, seed=sets + len(world)).items():
            print(
                f"| {world} | {sets} | {metric} | {runs} | {f['simultaneous']:.3f} | {f['below']:.4f} / "
                f"{f['above']:.4f} | {f['width']:.3f} | {f['some_flagged']:.3f} |",
                flush=True,
            )


def _names_table(runs: int) -> None:
    print("\n| K | name sd | runs | two-way: below / above | width | set only: below / above | width |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for count, name_sd in itertools.product((2, 4), (0.0, 1.0)):
        f = recurring_names_cell(count, name_sd, runs, seed=count * 10 + int(name_sd))
        print(
            f"| {count} | {name_sd} | {runs} | {f['two_way']['below']:.3f} / {f['two_way']['above']:.3f} | "
            f"{f['two_way']['width']:.3f} | {f['set_only']['below']:.3f} / {f['set_only']['above']:.3f} | "
            f"{f['set_only']['width']:.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
