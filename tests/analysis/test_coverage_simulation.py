"""The coverage benchmark's fast version: its simulated worlds agree with the product's metrics, and the
intervals and occupation lists keep their promises on a few dozen simulated runs (the full figures, 400 runs
per cell, are in BENCHMARKS.md: `python -m bench --coverage`)."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from bench.coverage import analyse_simulated, coverage, occupation_errors
from bench.worlds import HEADLINE, ParametricWorld, ResampledWorld, overall_values, to_frames
from probe.store.db import SCHEMA


@pytest.mark.parametrize("world", [ParametricWorld(), ResampledWorld()], ids=["parametric", "resampled"])
def test_the_worlds_numpy_metrics_match_the_products_sql(world) -> None:
    # Two independent implementations of DESIGN section 5: bench/worlds.py (numpy) and probe/analysis/metrics.sql.
    labels = world.draw(np.random.default_rng(3), 9)
    con = duckdb.connect()
    con.execute(SCHEMA)
    rows = analyse_simulated(con, *to_frames(labels)).set_index("metric")["value"]
    assert {metric: rows[metric] for metric in HEADLINE} == pytest.approx(overall_values(labels))


def test_the_parametric_world_is_harder_than_real_runs() -> None:
    labels = ParametricWorld().draw(np.random.default_rng(5), 400)
    refused = (labels.s == 2) | (labels.m == 4)
    refusal_by_pair = refused.mean(axis=(1, 2))
    assert refusal_by_pair.min() == 0.0 and refusal_by_pair.max() > 0.5  # refusals 0 to 60% by pair
    values = overall_values(labels)
    assert values["prefer_f"] < 0.05 and values["switch_m2f"] < 0.05 and values["consistency"] > 0.8


def test_intervals_cover_at_the_quick_presets_size() -> None:
    # 40 runs of 12 pairs: a method that ignored the pairs' skew (the clipped t interval) covered prefer_f
    # about 0.75 here. The score interval's coverage is 0.93-0.97 (BENCHMARKS.md, 400 runs); 40 runs give a
    # binomial spread of +-0.035, so every metric must cover at least 34 of 40.
    shares = coverage(ParametricWorld(), pairs=12, runs=40, seed=11)
    assert min(shares.values()) >= 34 / 40, shares


def test_intervals_cover_a_real_runs_resampled_pairs_but_not_an_unseen_rare_pair() -> None:
    # The real run's switch_m2f comes mostly from one of its 12 pairs (0.5; the others 0 to 0.06): 12 pairs
    # drawn with replacement miss it 35% of the time ((11/12)^12), and then the interval reaches the truth only
    # when the other pairs' switches widen it. That metric is the one exception (BENCHMARKS.md: 0.858).
    shares = coverage(ResampledWorld(), pairs=12, runs=40, seed=11)
    assert min(share for metric, share in shares.items() if metric != "switch_m2f") >= 34 / 40, shares
    assert shares["switch_m2f"] >= 0.75


def test_occupation_list_keeps_its_error_rates_when_pairs_lean() -> None:
    # 70 pairs x 62 occupations, pair lean sd 1 and pair x occupation sd 1: a test over instances flags an
    # occupation in 12-17% of null runs; the sign test over pairs with BH stays at the 5% level.
    figures = occupation_errors(runs=30, seed=4)
    assert figures["occupation_fwer_null"] <= 0.1
    assert figures["occupation_fdr_planted"] <= 0.1
    assert figures["occupation_power_planted"] >= 0.8
