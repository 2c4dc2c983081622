"""A guard on the cost of the analysis's hot paths that no timing noise can flake (issue 49): the Python-level calls
(functions and builtins, counted with sys.setprofile) of a betting interval and of an adverse-impact group must not
grow with the name pairs or sets, nor a run's betting intervals with their number. The code before issue 49 made
9,896 calls for a betting interval over 20 pairs and 181,276 over 400 (a Python loop over pairs inside a grid and
bisection of Python calls), and 15,000 / 42,530 for a group of 2 categories x 12 sets / 4 x 50 (a pandas pivot)."""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
import pandas as pd

from probe.analysis.impact import group_ratios
from probe.analysis.sequential import mean_interval
from probe.analysis.statistics import ShareEstimate, prepare_betting_intervals, share_estimate

MOST_CALLS = 1_000  # 628 for a betting interval, about 600 for a group (688 and 550 when issue 49 closed)
PER_ESTIMATE = 10  # calls each further betting estimate may add to one pass (7: reading its values into the arrays)


def python_calls(function: Callable[..., object], *args: object) -> int:
    """How many Python functions and builtins `function(*args)` calls."""
    count = 0

    def profiler(frame: object, event: str, arg: object) -> None:
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(profiler)
    try:
        function(*args)
    finally:
        sys.setprofile(None)
    return count


def rare_values(pairs: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.where(rng.random(pairs) < 0.05, rng.random(pairs), 0.0)


def test_a_betting_interval_costs_the_same_calls_over_400_pairs_as_over_2000() -> None:
    # both intervals narrower than a coarse step of the grid: the path with the most calls (over 20 pairs: 541)
    few, many = (python_calls(mean_interval, rare_values(pairs, 1), np.ones(pairs), 0.05) for pairs in (400, 2000))
    assert few == many
    assert many < MOST_CALLS


def test_fifty_betting_intervals_cost_about_the_calls_of_five() -> None:
    def rare_rate(seed: int) -> ShareEstimate:
        """3 hits of 200 answers over 20 pairs (fewer events than pairs: the betting interval)."""
        hits = np.zeros(20)
        hits[seed % 20] += 2
        hits[(7 * seed + 3) % 20] += 1
        return share_estimate(hits, np.full(20, 10.0), np.full(20, 10.0))

    def estimates(count: int) -> list[ShareEstimate]:
        rare = [rare_rate(seed) for seed in range(count)]
        assert {estimate.method for estimate in rare} == {"betting"}
        return rare

    five, fifty = (python_calls(prepare_betting_intervals, estimates(count)) for count in (5, 50))
    assert five < MOST_CALLS  # one pass for all: rows whose interval is narrower than a coarse step add one call
    assert fifty - five < PER_ESTIMATE * 45


def test_an_impact_group_costs_few_calls_whatever_its_sets() -> None:
    rng = np.random.default_rng(2)

    def counts(sets: int, categories: int) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {"set_id": s, "category": f"c{c}", "hits": int(rng.integers(0, 5)), "n": 5, "unknown": 0}
                for s in range(sets)
                for c in range(categories)
            ]
        )

    small, large = python_calls(group_ratios, counts(12, 2)), python_calls(group_ratios, counts(50, 4))
    assert max(small, large) < MOST_CALLS
