"""Do the report's intervals and occupation lists keep their promises? Measured by simulation.

Coverage: each simulated run (bench/worlds.py: a parametric world harder than real runs, and a real SmolLM2
run's pairs resampled) goes through the product's `analyze()` on a DuckDB with the product's schema; the 95%
interval of every headline metric is checked against the metric's true value. An interval that is missing
counts as a miss. Reported per world, number of pairs (the quick preset's 12, then 20 and 70) and metric;
target 0.93-0.97 (at least 0.93 at the quick preset's size).

Occupation lists: 70 pairs x 62 occupations, every pair leaning its own way (logit sd 1) and every pair x
occupation cell again (sd 1), a position effect; S per instance from that. `occupation_preference_rows` (the
product's sign test over pairs with Benjamini-Hochberg) flags occupations. With no effect anywhere the
family-wise error rate (any occupation flagged) must stay <= 0.05; with 10 occupations planted (5 each way)
the false discovery rate must stay <= 0.05; the power to find the planted ones is reported.

Detectable effects: at the quick preset's 12 pairs, the female_share test's size with no effect, and its power
where the truth sits at 0.5 + the minimum detectable shift the runs report (their median): about 0.8 if the
report's detectable effects are honest.
"""

from __future__ import annotations

import time

import duckdb
import numpy as np
import pandas as pd
from scipy import optimize
from scipy.special import expit

from bench.worlds import HEADLINE, ParametricWorld, ResampledWorld, to_frames, true_values
from probe.analysis.metrics import analyze
from probe.analysis.preference import occupation_preference_rows
from probe.store.db import SCHEMA

SIZES = (12, 20, 70)
PLANTED = 10
PLANTED_LOGIT = 2.5  # share 0.92 before the pair and cell leans dilute it


def analyse_simulated(con: duckdb.DuckDBPyConnection, items: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
    """Store one simulated run, analyse it with the product's code, return its overall rows."""
    for table in ("runs", "items", "answers"):
        con.execute(f"DELETE FROM {table}")
    con.execute("INSERT INTO runs (run_id, status) VALUES ('sim', 'complete')")
    for table, frame in (("items", items), ("answers", answers)):
        con.register("frame", frame)
        con.execute(f"INSERT INTO {table} BY NAME SELECT 'sim' AS run_id, * FROM frame")
        con.unregister("frame")
    analyze(con, "sim")
    return con.execute(
        "SELECT metric, value, ci_low, ci_high FROM metrics WHERE scope = 'overall' "
        "AND condition IN ('taxonomy', 'stage1')"
    ).df()


def coverage(world: ParametricWorld | ResampledWorld, pairs: int, runs: int, seed: int) -> dict[str, float]:
    """Share of `runs` simulated runs whose 95% interval of each headline metric holds the true value."""
    truth = true_values(world)
    rng = np.random.default_rng(seed)
    con = duckdb.connect()
    con.execute(SCHEMA)
    covered = dict.fromkeys(HEADLINE, 0)
    for _ in range(runs):
        rows = analyse_simulated(con, *to_frames(world.draw(rng, pairs))).set_index("metric")
        for metric in HEADLINE:
            low, high = rows.loc[metric, "ci_low"], rows.loc[metric, "ci_high"]
            covered[metric] += int(not pd.isna(low) and low <= truth[metric] <= high)
    con.close()
    return {metric: hits / runs for metric, hits in covered.items()}


def preference_cells(rng: np.random.Generator, pairs: int, occupations: int, planted: int) -> pd.DataFrame:
    """Valid instances and S = female per (occupation, pair, order): the input of the occupation tests.
    The first `planted` occupations lean strongly, alternately female and male; the rest have no effect."""
    lean = np.zeros(occupations)
    lean[:planted] = PLANTED_LOGIT * np.where(np.arange(planted) % 2 == 0, 1.0, -1.0)
    pair_lean = rng.standard_normal((pairs, 1, 1))
    cell_lean = rng.standard_normal((pairs, occupations, 1))
    position = (0.8 + 0.5 * rng.standard_normal((pairs, 1, 1))) * np.array([1.0, -1.0])
    female = rng.random((pairs, occupations, 2)) < expit(lean[None, :, None] + pair_lean + cell_lean + position)
    pair, occupation, order = (grid.ravel() for grid in np.indices(female.shape))
    return pd.DataFrame(
        {
            "condition": "taxonomy",
            "occupation": [f"o{o:02d}" for o in occupation],
            "pair_id": pair + 1,
            "name_order": np.array(["fm", "mf"])[order],
            "n": 1,
            "n_female": female.ravel().astype(int),
        }
    )


def occupation_errors(runs: int, seed: int, pairs: int = 70, occupations: int = 62) -> dict[str, float]:
    """FWER with no effect, FDR and power with `PLANTED` planted occupations, over `runs` runs each."""
    rng = np.random.default_rng(seed)
    any_flagged, fdrs, found = 0, [], 0
    for _ in range(runs):
        flagged = occupation_preference_rows(preference_cells(rng, pairs, occupations, 0))["preferred"] != "none"
        any_flagged += int(flagged.any())
        prefs = occupation_preference_rows(preference_cells(rng, pairs, occupations, PLANTED))
        planted = prefs["occupation"] < f"o{PLANTED:02d}"
        direction = np.where(prefs["occupation"].str[1:].astype(int) % 2 == 0, "female", "male")
        flagged = prefs["preferred"] != "none"
        false = int((flagged & ~planted).sum())
        fdrs.append(false / flagged.sum() if flagged.any() else 0.0)
        found += int((planted & (prefs["preferred"] == direction)).sum())
    return {
        "occupation_fwer_null": round(any_flagged / runs, 4),
        "occupation_fdr_planted": round(float(np.mean(fdrs)), 4),
        "occupation_power_planted": round(found / (runs * PLANTED), 4),
        "occupation_runs": runs,
    }


def female_share_tests(world: ParametricWorld, pairs: int, runs: int, seed: int) -> tuple[float, float]:
    """(share of runs whose female_share test rejects at 5%, median minimum detectable shift the runs report)."""
    rng = np.random.default_rng(seed)
    con = duckdb.connect()
    con.execute(SCHEMA)
    rejected, shifts = 0, []
    for _ in range(runs):
        analyse_simulated(con, *to_frames(world.draw(rng, pairs)))
        p_value, mde = con.execute(
            "SELECT p_value, mde FROM metrics WHERE scope = 'overall' AND metric = 'female_share'"
        ).fetchone()
        rejected += int(p_value is not None and p_value < 0.05)
        shifts.append(np.nan if mde is None else mde)
    con.close()
    return rejected / runs, float(np.nanmedian(shifts))


def world_at(female_share: float, pairs: int = 20_000) -> ParametricWorld:
    """The parametric world whose true female_share is `female_share` (its refusals, more frequent for some
    occupations, move it off 0.5 at female_lean 0)."""

    def excess(lean: float) -> float:
        return true_values(ParametricWorld(female_lean=lean), pairs=pairs)["female_share"] - female_share

    return ParametricWorld(female_lean=optimize.brentq(excess, -6.0, 6.0, xtol=1e-3))


def detectable_effect(runs: int, pairs: int = 12) -> dict[str, float]:
    """Does the minimum detectable effect a report states hold? Where the truth is 0.5 the test's size (target
    <= 0.05); where it sits at 0.5 + the median shift those runs report, the test's power (target 0.8)."""
    size, shift = female_share_tests(world_at(0.5), pairs, runs, seed=1)
    power, _ = female_share_tests(world_at(0.5 + shift), pairs, runs, seed=2)
    return {
        "female_share_test_size": round(size, 4),
        "female_share_mde_stated": round(shift, 4),
        "female_share_power_at_mde": round(power, 4),
    }


def measure(quick: bool) -> dict[str, float]:
    """Coverage per world, size and metric; occupation-list error rates. --quick: fewer runs per cell."""
    runs = 60 if quick else 400
    started = time.perf_counter()
    figures: dict[str, float] = {"coverage_runs_per_cell": runs}
    for name, world in (("parametric", ParametricWorld()), ("resampled", ResampledWorld())):
        for pairs in SIZES:
            for metric, share in coverage(world, pairs, runs, seed=pairs).items():
                figures[f"coverage_{name}_{pairs}_{metric}"] = round(share, 4)
    covered = [value for key, value in figures.items() if key.startswith("coverage_") and key.endswith(HEADLINE)]
    figures["coverage_min"], figures["coverage_max"] = min(covered), max(covered)
    figures |= occupation_errors(100 if quick else 400, seed=62)
    figures |= detectable_effect(60 if quick else 300)
    figures["coverage_seconds"] = round(time.perf_counter() - started, 1)
    return figures
