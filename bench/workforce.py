"""Coverage, width and power of the workforce comparison's intervals (probe/analysis/workforce.py) by simulation.

A world: occupations drawn from the shipped BLS shares (taxonomy/workforce.csv, one per Census occupation with a
share of women), each with the model's logit share a + b logit(workforce share) + an occupation effect (sd 0.3);
each name pair leans on its own (logit sd 0.4, shared by all occupations) and again per occupation (sd 0.3); each
(occupation, pair) is asked in both name orders, one answer each, the woman's logit raised by `position` where she
is named first and lowered where second. The runs of a cell are drawn at once (runs x occupations x pairs x orders)
and put through `fits`, the function fit_rows applies to a run's stored shares (analyze() calls it).

The estimands. Slope: the quasi-binomial slope of the occupations' marginal shares (over all pairs by Gauss-Hermite
quadrature, and both name orders) on the logit workforce share, over 100,000 occupations; the world's b is solved so
that without position effect this slope is exactly the target (1: mirrors). Position-adjusted slope: the same fit on
each name order's marginal share with the position in the model. Correlations: those of the shares measured with
the run's number of pairs (what the product reports; pair noise lowers them), over 4 draws of 20,000 occupations.
Monte Carlo error of a coverage near 0.95 over R runs: sqrt(0.95 x 0.05 / R) (0.007 at 1,000 runs).
"""

from __future__ import annotations

import time
from functools import cache

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from bench.worlds import REAL_STAGE2
from probe.analysis.binomial import CONFIDENCE
from probe.analysis.metrics import order_pair_shares
from probe.analysis.workforce import BOUNDS, fit_rows, fits, logit_fit, order_array, statistics
from probe.common.resources import resource_dir

OCCUPATION_SD, PAIR_SD, CELL_SD, INTERCEPT = 0.3, 0.4, 0.3, -0.1
OCCUPATIONS, PAIRS = (8, 20, 62), (6, 12, 20)
AMPLIFYING = 1.5  # the slope of a world that exaggerates the workforce (power)
POSITION = 1.0  # the position world: mirrors the workforce, the first-named person's logit +1
STRONG = (2.0, 0.1)  # a world tied closely to the workforce: slope 2, occupation sd 0.1 (correlations near 0.95)
CHUNK = 250  # runs drawn at once
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(40)


@cache
def workforce_shares() -> np.ndarray:
    table = pd.read_csv(resource_dir("taxonomy") / "workforce.csv", dtype={"census_code": str})
    return table.drop_duplicates("census_code")["pct_women"].dropna().to_numpy(float) / 100


def draw(
    rng: np.random.Generator,
    b: float,
    runs: int,
    occupations: int,
    pairs: int,
    spread: float = OCCUPATION_SD,
    position: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """(runs x occupations x pairs x name orders picks of the woman, runs x occupations logit workforce shares)."""
    x = special.logit(np.clip(rng.choice(workforce_shares(), (runs, occupations)), *BOUNDS))
    eta = INTERCEPT + b * x + rng.normal(0, spread, (runs, occupations))
    lean = (
        eta[:, :, None] + rng.normal(0, PAIR_SD, (runs, 1, pairs)) + rng.normal(0, CELL_SD, (runs, occupations, pairs))
    )
    picks = rng.random((runs, occupations, pairs, 2)) < special.expit(lean[..., None] + [position, -position])
    return picks.astype(float), x


def population_slopes(b: float, spread: float = OCCUPATION_SD, position: float = 0.0) -> tuple[float, float]:
    """(slope, position-adjusted slope) over infinitely many pairs: each occupation's share in each name order
    averaged over the pair effects by quadrature, 100,000 occupations."""
    rng = np.random.default_rng(11)
    x = special.logit(np.clip(rng.choice(workforce_shares(), 100_000), *BOUNDS))
    eta = INTERCEPT + b * x + rng.normal(0, spread, len(x))
    pair_spread = np.hypot(PAIR_SD, CELL_SD)
    by_order = np.stack(
        [
            special.expit(eta[:, None] + shift + pair_spread * _NODES) @ _WEIGHTS / _WEIGHTS.sum()
            for shift in (position, -position)
        ],
        axis=-1,
    )
    found = fits(by_order[None, :, None, :], x[None])
    return float(found["slope"][0][0]), float(found["adjusted_slope"][0][0])


@cache
def world_b(target: float, spread: float = OCCUPATION_SD) -> float:
    """The world's b whose slope without position effect is `target`."""
    return optimize.brentq(lambda b: population_slopes(b, spread)[0] - target, 0.2 * target, 3 * target + 1, xtol=1e-6)


@cache
def correlation_truth(b: float, pairs: int, spread: float, position: float) -> dict[str, float]:
    rng = np.random.default_rng(13)
    found = []
    for _ in range(4):
        picks, x = draw(rng, b, 1, 20_000, pairs, spread, position)
        found.append({k: float(v[0]) for k, v in statistics(picks.mean(axis=(2, 3)), x).items()})
    return pd.DataFrame(found)[["spearman", "pearson"]].mean().to_dict()


def world(
    target: float, spread: float, position: float, occupations: int, pairs: int, runs: int, seed: int
) -> pd.DataFrame:
    """One row per run and statistic: estimate, ci_low, ci_high, truth, and the occupation-only sandwich's interval
    (the best alternative tried) for the slopes."""
    b = world_b(target, spread)
    slope, adjusted = population_slopes(b, spread, position)
    truth = correlation_truth(b, pairs, spread, position) | {"slope": slope, "adjusted_slope": adjusted}
    rng = np.random.default_rng(seed)
    frames = []
    for start in range(0, runs, CHUNK):
        picks, x = draw(rng, b, min(CHUNK, runs - start), occupations, pairs, spread, position)
        for name, (estimate, low, high, _) in fits(picks, x).items():
            frames.append(
                pd.DataFrame(
                    {"statistic": name, "estimate": estimate, "ci_low": low, "ci_high": high, "truth": truth[name]}
                )
            )
        for name, values, design in _designs(picks, x):
            coefficients, occupation_part, _ = logit_fit(values, design)
            half = stats.t.isf((1 - CONFIDENCE) / 2, occupations - design.shape[-1]) * np.sqrt(occupation_part[:, 1, 1])
            frames.append(
                pd.DataFrame(
                    {
                        "statistic": f"{name}_occupation_only",
                        "estimate": coefficients[:, 1],
                        "ci_low": coefficients[:, 1] - half,
                        "ci_high": coefficients[:, 1] + half,
                        "truth": truth[name],
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def _designs(picks: np.ndarray, x: np.ndarray):
    base = np.stack([np.ones_like(x), x], axis=-1)[:, :, None, :]
    position = np.broadcast_to(np.array([1.0, -1.0])[None, None, :, None], (*x.shape, 2, 1))
    yield "slope", picks.mean(axis=3)[..., None], base
    yield "adjusted_slope", picks, np.concatenate([np.broadcast_to(base, (*x.shape, 2, 2)), position], axis=-1)


def summary(rows: pd.DataFrame, null: float = 1.0) -> pd.DataFrame:
    """Per statistic: coverage, the truth below the interval (the interval too high) and above it, median width,
    share of runs whose interval lies above the slope null 1 ('amplifying') and below it ('flattening')."""
    width = rows["ci_high"] - rows["ci_low"]
    table = rows.assign(
        coverage=(rows["ci_low"] <= rows["truth"]) & (rows["truth"] <= rows["ci_high"]),
        truth_below=rows["truth"] < rows["ci_low"],
        truth_above=rows["truth"] > rows["ci_high"],
        width=width,
        amplifying=rows["ci_low"] > null,
        flattening=rows["ci_high"] < null,
        full_range=width > 1.9,
    ).groupby("statistic", sort=False)
    found = table[["coverage", "truth_below", "truth_above", "amplifying", "flattening", "full_range"]].mean()
    found["median_width"] = table["width"].median()
    found["truth"] = table["truth"].first()
    found["mean_estimate"] = table["estimate"].mean()
    found["runs"] = table.size()
    return found


def stored_run_fit() -> dict[str, float]:
    """The fit on the real SmolLM2 quick run kept in bench/data/ (taxonomy condition; 7 of its 8 occupations have a
    BLS share: dancer has none), through the product's own pair shares per name order."""
    stage2 = pd.read_parquet(REAL_STAGE2)
    valid = (
        stage2["bf"].isin(["yes", "no"])
        & stage2["bm"].isin(["yes", "no"])
        & stage2["s"].isin(["female", "male"])
        & (stage2["m"] != "unknown")
    )
    marked = stage2.assign(condition="taxonomy", n=valid, n_female=valid & (stage2["s"] == "female"))
    cells = marked.groupby(["condition", "occupation", "pair_id", "name_order"])[["n", "n_female"]].sum()
    shares = order_pair_shares(cells.reset_index()).loc["taxonomy"]
    curated = pd.read_csv(resource_dir("taxonomy") / "occupations.csv")
    table = pd.read_csv(resource_dir("taxonomy") / "workforce.csv", dtype={"census_code": str})
    share = curated.merge(table, on="soc_code").set_index("occupation")["pct_women"].dropna() / 100
    occupations = shares.index.get_level_values("occupation").unique().intersection(share.index)
    rows = fit_rows("taxonomy", order_array(shares, occupations), share.loc[occupations].to_numpy(float))
    return {
        f"workforce_smollm2_quick_{row['statistic']}_{part}": round(row[part], 3)
        for row in rows
        for part in ("estimate", "ci_low", "ci_high")
    }


def measure(quick: bool, runs: int | None = None) -> dict[str, float]:
    """Per cell (occupations x pairs): the mirror world's coverage with each tail and width, the amplifying
    world's power, the position world's two slopes, the strong world's correlation intervals."""
    runs = runs or (200 if quick else 1000)
    figures: dict[str, float] = {"workforce_runs": runs, **stored_run_fit()}
    started, cpu = time.perf_counter(), time.process_time()
    worlds = {
        "mirror": (1.0, OCCUPATION_SD, 0.0),
        "amplifying": (AMPLIFYING, OCCUPATION_SD, 0.0),
        "position": (1.0, OCCUPATION_SD, POSITION),
        "strong": (*STRONG, 0.0),
    }
    for occupations in OCCUPATIONS:
        for pairs in PAIRS:
            for label, (target, spread, position) in worlds.items():
                rows = world(target, spread, position, occupations, pairs, runs, seed=occupations * 100 + pairs)
                for statistic, found in summary(rows).iterrows():
                    for column, value in found.items():
                        key = f"workforce_{occupations}x{pairs}_{label}_{statistic}_{column}"
                        figures[key] = round(float(value), 4)
    figures["workforce_seconds"] = round(time.perf_counter() - started, 1)
    figures["workforce_cpu_seconds"] = round(time.process_time() - cpu, 1)
    return figures
