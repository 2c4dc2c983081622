"""The coverage benchmark's worlds: they agree with the product's metrics, and the parametric one is harder than
real runs. Whether the intervals and the occupation lists keep their promises is measured by simulation in the
benchmark (400 runs per cell, BENCHMARKS.md: `python -m bench --coverage`); the tests check each interval and test
by hand on small exact cases (tests/analysis/test_statistics.py, test_inference.py, test_preference.py)."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from bench.coverage import analyse_simulated
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
