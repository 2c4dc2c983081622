"""Coverage of the workforce comparison's intervals (probe/analysis/workforce.py) by simulation.

A world: occupations drawn from the shipped BLS shares (taxonomy/workforce.csv, one per Census occupation with a
share of women), each with the model's logit share a + b logit(workforce share) + an occupation effect (sd 0.3);
each name pair leans on its own (logit sd 0.4, shared by all occupations) and again per occupation (sd 0.3); each
(occupation, pair) is asked in both name orders, one answer each, and the pair's order-balanced share is the mean of
the two picks: the matrix analyze() hands `fit_rows` (the function measured here, the one analyze() calls).

The estimands. Slope: the quasi-binomial slope of the occupations' marginal shares (over all pairs: Gauss-Hermite
quadrature over the pair effects) on the logit workforce share, over 100,000 occupations; the world's b is solved so
that this slope is exactly the target (1: mirrors). Correlations: those of the shares measured with the run's number
of pairs (what the product reports; pair noise lowers them), averaged over 10 draws of 20,000 occupations.
Monte Carlo error of a coverage near 0.95 over R runs: sqrt(0.95 x 0.05 / R) (0.022 at 100 runs).
"""

from __future__ import annotations

import time
from functools import cache

import numpy as np
import pandas as pd
from scipy import optimize, special

from bench.worlds import REAL_STAGE2
from probe.analysis.metrics import occupation_pair_shares
from probe.analysis.workforce import BOUNDS, STATISTICS, fit_rows, statistics
from probe.common.resources import resource_dir

OCCUPATION_SD, PAIR_SD, CELL_SD, INTERCEPT = 0.3, 0.4, 0.3, -0.1
SIZES = ((8, 12), (8, 20), (62, 12), (62, 20))
LARGE_SIZES = ((300, 12), (300, 20))
AMPLIFYING = 1.5  # the slope of a world that exaggerates the workforce (for the power figure)
WEAK = (0.3, 1.0)  # a world that nearly ignores the workforce: slope 0.3, occupation sd 1 (correlations about 0.47)
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(40)


@cache
def workforce_shares() -> np.ndarray:
    table = pd.read_csv(resource_dir("taxonomy") / "workforce.csv", dtype={"census_code": str})
    return table.drop_duplicates("census_code")["pct_women"].dropna().to_numpy(float) / 100


def draw(
    rng: np.random.Generator, b: float, occupations: int, pairs: int, spread: float = OCCUPATION_SD
) -> tuple[np.ndarray, np.ndarray]:
    """(occupations x pairs order-balanced shares, the occupations' workforce shares) of one simulated run."""
    share = rng.choice(workforce_shares(), occupations)
    eta = INTERCEPT + b * special.logit(np.clip(share, *BOUNDS)) + rng.normal(0, spread, occupations)
    lean = eta[:, None] + rng.normal(0, PAIR_SD, pairs)[None, :] + rng.normal(0, CELL_SD, (occupations, pairs))
    return rng.binomial(2, special.expit(lean)) / 2, share


def marginal_slope(b: float, spread: float = OCCUPATION_SD, occupations: int = 100_000, seed: int = 11) -> float:
    """The slope over infinitely many pairs: each occupation's share averaged over the pair effects by quadrature."""
    rng = np.random.default_rng(seed)
    share = rng.choice(workforce_shares(), occupations)
    x = special.logit(np.clip(share, *BOUNDS))
    eta = INTERCEPT + b * x + rng.normal(0, spread, occupations)
    pair_spread = np.hypot(PAIR_SD, CELL_SD)
    marginal = special.expit(eta[:, None] + pair_spread * _NODES[None, :]) @ _WEIGHTS / _WEIGHTS.sum()
    return float(statistics(marginal[None, :], x[None, :])["slope"][0])


@cache
def world_b(target: float, spread: float = OCCUPATION_SD) -> float:
    """The world's b whose marginal slope is `target`."""
    return optimize.brentq(lambda b: marginal_slope(b, spread) - target, 0.2 * target, 3 * target + 1, xtol=1e-6)


def correlation_truth(b: float, pairs: int, spread: float, draws: int = 10, occupations: int = 20_000) -> dict:
    rng = np.random.default_rng(13)
    found = []
    for _ in range(draws):
        values, share = draw(rng, b, occupations, pairs, spread)
        x = special.logit(np.clip(share, *BOUNDS))
        found.append({k: float(v[0]) for k, v in statistics(values.mean(axis=1)[None, :], x[None, :]).items()})
    return pd.DataFrame(found)[["spearman", "pearson"]].mean().to_dict()


def coverage(
    target: float, occupations: int, pairs: int, runs: int, seed: int, spread: float = OCCUPATION_SD
) -> dict[str, float]:
    """Share of runs whose interval holds each estimand; `amplifying`: share whose slope interval lies above 1."""
    b = world_b(target, spread)
    truth = correlation_truth(b, pairs, spread) | {"slope": target}
    rng = np.random.default_rng(seed)
    held = {name: 0 for name in STATISTICS}
    amplifying = 0
    for _ in range(runs):
        values, share = draw(rng, b, occupations, pairs, spread)
        for row in fit_rows("baseline", values, share):
            held[row["statistic"]] += row["ci_low"] <= truth[row["statistic"]] <= row["ci_high"]
            amplifying += row["statistic"] == "slope" and row["ci_low"] > 1
    return {**{name: held[name] / runs for name in STATISTICS}, "amplifying": amplifying / runs}


def stored_run_fit() -> dict[str, float]:
    """The fit on the real SmolLM2 quick run kept in bench/data/ (taxonomy condition; 7 of its 8 occupations have a
    BLS share: dancer has none), through the product's own order-balanced pair shares."""
    stage2 = pd.read_parquet(REAL_STAGE2)
    valid = (stage2["bf"].isin(["yes", "no"]) & stage2["bm"].isin(["yes", "no"]) & stage2["s"].isin(["female", "male"])
             & (stage2["m"] != "unknown"))  # fmt: skip
    marked = stage2.assign(condition="taxonomy", n=valid, n_female=valid & (stage2["s"] == "female"))
    cells = marked.groupby(["condition", "occupation", "pair_id", "name_order"])[["n", "n_female"]].sum()
    matrix = occupation_pair_shares(cells.reset_index()).loc["taxonomy"]
    curated = pd.read_csv(resource_dir("taxonomy") / "occupations.csv")
    table = pd.read_csv(resource_dir("taxonomy") / "workforce.csv", dtype={"census_code": str})
    share = curated.merge(table, on="soc_code").set_index("occupation")["pct_women"].dropna() / 100
    matrix = matrix.loc[matrix.index.intersection(share.index)]
    rows = fit_rows("taxonomy", matrix.to_numpy(float), share.loc[matrix.index].to_numpy(float))
    return {f"workforce_smollm2_quick_{row['statistic']}_{part}": round(row[key], 3) for row in rows
            for part, key in (("estimate", "estimate"), ("ci_low", "ci_low"), ("ci_high", "ci_high"))}  # fmt: skip


def measure(quick: bool, large: bool = False) -> dict[str, float]:
    """Coverage per size in a slope-1 world (and how often it is called amplifying); coverage and power in a
    slope-1.5 world at 62 x 12 (300 x 20 with `large`)."""
    runs = 40 if quick else 100
    figures: dict[str, float] = {"workforce_runs": runs, **stored_run_fit()}
    started = time.perf_counter()
    for occupations, pairs in LARGE_SIZES if large else SIZES:
        found = coverage(1.0, occupations, pairs, runs, seed=occupations * 100 + pairs)
        for name, value in found.items():
            figures[f"workforce_{occupations}x{pairs}_{name}"] = round(value, 3)
    occupations, pairs = LARGE_SIZES[-1] if large else SIZES[2]
    found = coverage(AMPLIFYING, occupations, pairs, runs, seed=7)  # power: how often a slope-1.5 world is called so
    figures[f"workforce_{occupations}x{pairs}_slope_{AMPLIFYING}_coverage"] = round(found["slope"], 3)
    figures[f"workforce_{occupations}x{pairs}_slope_{AMPLIFYING}_called_amplifying"] = round(found["amplifying"], 3)
    found = coverage(WEAK[0], occupations, pairs, runs, seed=9, spread=WEAK[1])  # a weakly related world
    for name, value in found.items():
        figures[f"workforce_{occupations}x{pairs}_weak_{name}"] = round(value, 3)
    figures["workforce_seconds"] = round(time.perf_counter() - started, 1)
    return figures
