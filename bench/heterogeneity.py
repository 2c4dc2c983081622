"""Size and power of the pair heterogeneity test (probe/analysis/pairs.py) by simulation (issue 48 item 3).

    .venv/bin/python -m bench.heterogeneity --runs 400

Runs of `pairs` name pairs x `occupations` occupations x 2 name orders, one pick per cell, on the logit scale:
occupation lean (spread -1.5..1.5) + position effect (+0.5 for the first-named) + a pair x occupation lean (sd
`cell_sd`, the same for both orders of the pair) + a pair effect (sd `pair_sd`). Worlds:
- `occupation_noise`: pair_sd 0, cell_sd 1: pairs differ only occupation by occupation (the test must keep 5%);
- `alike`: pair_sd 0, cell_sd 0;
- `pairs_differ`: pair_sd 0.7, cell_sd 1 (power).
Run it under the previous code (PYTHONPATH at a checkout of it) for the "before" column.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy import special

from probe.analysis.pairs import heterogeneity

WORLDS = {"occupation_noise": (0.0, 1.0), "alike": (0.0, 0.0), "pairs_differ": (0.7, 1.0)}  # (pair_sd, cell_sd)


def simulate(rng: np.random.Generator, pairs: int, occupations: int, pair_sd: float, cell_sd: float) -> pd.DataFrame:
    """wording_cells rows of one run (one pick per pair x occupation x name order)."""
    lean = np.linspace(-1.5, 1.5, occupations)[None, :, None]
    position = np.array([0.5, -0.5])[None, None, :]  # fm: the woman named first
    logits = (
        lean
        + position
        + cell_sd * rng.standard_normal((pairs, occupations, 1))
        + pair_sd * rng.standard_normal((pairs, 1, 1))
    )
    picks = rng.random((pairs, occupations, 2)) < special.expit(logits)
    pair, occupation, order = np.meshgrid(np.arange(pairs), np.arange(occupations), np.arange(2), indexing="ij")
    return pd.DataFrame(
        {
            "condition": "taxonomy",
            "wording": "paper",
            "pair_id": pair.ravel() + 1,
            "occupation": [f"o{o:02d}" for o in occupation.ravel()],
            "name_order": np.array(["fm", "mf"])[order.ravel()],
            "n": 1,
            "female_share": picks.ravel().astype(int),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    args = parser.parse_args()
    rng = np.random.default_rng(4803)
    started = time.process_time()
    print("| world | pairs x occupations | runs | rejected at 5% |")
    print("|---|---|---:|---:|")
    for world, (pair_sd, cell_sd) in WORLDS.items():
        for pairs, occupations in ((12, 8), (12, 20)):
            rejected = np.mean(
                [
                    heterogeneity(simulate(rng, pairs, occupations, pair_sd, cell_sd)).iloc[0]["differ"]
                    for _ in range(args.runs)
                ]
            )
            print(f"| {world} | {pairs} x {occupations} | {args.runs} | {rejected:.3f} |")
    print(f"\nCPU {time.process_time() - started:.0f} s")


if __name__ == "__main__":
    main()
