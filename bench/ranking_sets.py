"""Issue 48 item 5: the category ranking's sandwich intervals (probe/analysis/ranking.py, Bradley-Terry over
contests, clustered by name set) with few sets: K = 4 and 8 categories x 7, 8 and 12 sets, 1,000 runs a cell.

    .venv/bin/python -m bench.ranking_sets --runs 1000 [--categories 4] [--sets 8 12]

A set shows one person of each category; every two categories meet in a contest of 20 answers, the first picked
with probability expit(b_i + u_i - b_j - u_j), u the set's names' own effects (normal, sd 0.5 or 0: `agree`, where
every set differs only by binomial noise). Worlds: `null` (b = 0: truth 1 / K exactly) and `apart` (b spread
evenly over [-0.5, 0.5]: truth the strengths fitted on 20,000 sets). Per category: truth below / above its 95%
interval, median width (points of strength); and the runs whose every category's interval covers.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
from scipy import special

from probe.analysis.ranking import Picks, _fit, luce_strengths

ANSWERS, NAME_SD = 20, 0.5


def _picks(rng: np.random.Generator, effects: np.ndarray, sets: int, name_sd: float) -> Picks:
    """The contests of `sets` sets as ranking.Picks (both sides of each contest)."""
    count = len(effects)
    first, second = np.array(list(itertools.combinations(range(count), 2))).T
    names = effects[None, :] + rng.normal(0, name_sd, (sets, count))
    hits = rng.binomial(ANSWERS, special.expit(names[:, first] - names[:, second])).ravel()
    a, b = np.tile(first, sets), np.tile(second, sets)
    rows = np.arange(len(a))
    shown = np.zeros((len(a), count))
    shown[rows, a] = shown[rows, b] = 1
    cluster = np.repeat(np.arange(sets), len(first))
    return Picks(
        np.vstack([shown, shown]),
        np.concatenate([a, b]),
        np.concatenate([hits, ANSWERS - hits]).astype(float),
        np.concatenate([cluster, cluster]),
    )


def truth(effects: np.ndarray, name_sd: float) -> np.ndarray:
    """The strengths fitted on 20,000 sets (ranking's own maximum likelihood, without the sandwich: its per-set
    scores over 20,000 sets cost minutes)."""
    if not effects.any():
        return np.full(len(effects), 1 / len(effects))
    logits = _fit(_picks(np.random.default_rng(3), effects, 20_000, name_sd))
    return np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()


def cell(count: int, sets: int, world: str, name_sd: float, runs: int, seed: int) -> dict[str, float]:
    effects = np.zeros(count) if world == "null" else np.linspace(-0.5, 0.5, count)
    target = truth(effects, name_sd)
    rng = np.random.default_rng(seed)
    below, above, widths, joint, shown = 0, 0, [], 0, 0
    for _ in range(runs):
        fit = luce_strengths(_picks(rng, effects, sets, name_sd))
        if not np.isfinite(fit.ci_low).all():
            continue
        shown += 1
        below += int((target < fit.ci_low).sum())
        above += int((target > fit.ci_high).sum())
        joint += int(np.all((fit.ci_low <= target) & (target <= fit.ci_high)))
        widths += list(fit.ci_high - fit.ci_low)
    intervals = max(shown * count, 1)
    return {
        "shown": shown,
        "below": below / intervals,
        "above": above / intervals,
        "coverage": 1 - (below + above) / intervals,
        "joint": joint / max(shown, 1),
        "width": float(np.median(widths)) if widths else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--categories", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--sets", type=int, nargs="+", default=[7, 8, 12])
    args = parser.parse_args()
    runs = args.runs
    started = time.process_time()
    print(
        "| K | sets | world | name sd | runs (with intervals) | coverage per category | truth below / above | "
        "every category covered | median width |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for count, sets, (world, name_sd) in itertools.product(
        args.categories, args.sets, (("null", NAME_SD), ("apart", NAME_SD), ("null", 0.0))
    ):
        f = cell(count, sets, world, name_sd, runs, seed=count * 100 + sets)
        found = (
            f"{f['coverage']:.3f} | {f['below']:.4f} / {f['above']:.4f} | {f['joint']:.3f} | {100 * f['width']:.1f}"
            if f["shown"]
            else f"no interval ({sets} sets < {count} categories) | - | - | -"
        )
        print(f"| {count} | {sets} | {world} | {name_sd} | {runs} ({f['shown']}) | {found} |", flush=True)
    print(f"\nCPU {time.process_time() - started:.0f} s")


if __name__ == "__main__":
    main()
