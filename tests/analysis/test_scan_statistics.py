"""The scan's statistics (probe/analysis/sequential.py) and decision rules (probe/analysis/scan_rules.py), exact
where possible."""

from __future__ import annotations

import math

import numpy as np
import pytest

from probe.analysis.scan_rules import (
    BUDGET,
    CLEARED,
    CONTINUE,
    EXHAUSTED,
    FLAGGED,
    clearable,
    decide,
    depth_schedule,
    pick_within_budget,
)
from probe.analysis.sequential import GRID, confidence_sequence, e_bh, log_capital, log_e_values


def test_e_value_of_two_pairs_for_the_woman_is_eleven_sevenths() -> None:
    # Step 1: the prior mean is 0.5, so the first stake is 0. Step 2: mean 0.75, variance (0.25 + 0.0625) / 2,
    # stake 0.25 / (0.15625 + 0.0625) = 8/7, capital 1 + 8/7 * 0.5 = 11/7.
    assert math.exp(log_e_values(np.array([[1.0, 1.0]]))[0]) == pytest.approx(11 / 7, rel=1e-12)


def test_ties_and_missing_pairs_leave_the_capital_at_one() -> None:
    ties = np.array([[0.5, 0.5, 0.5, np.nan], [np.nan, np.nan, np.nan, np.nan]])
    assert log_e_values(ties).tolist() == [0.0, 0.0]


def test_a_missing_pair_changes_nothing_in_between() -> None:
    with_gap = np.array([[1.0, np.nan, 1.0, 0.0, 1.0]])
    without = np.array([[1.0, 1.0, 0.0, 1.0]])
    assert log_e_values(with_gap)[0] == pytest.approx(log_e_values(without)[0], abs=1e-12)


def test_the_stake_is_capped_so_one_bad_pair_cannot_ruin_the_bettor() -> None:
    # Nine pairs for the woman, then one for the man: the capital drops by at most 1 - 0.75 (MAX_STAKE).
    before = log_e_values(np.array([[1.0] * 9]))[0]
    after = log_e_values(np.array([[1.0] * 9 + [0.0]]))[0]
    assert after - before >= math.log(0.25) - 1e-12


def test_e_values_average_one_under_the_null() -> None:
    """A martingale with predictable stakes: E[capital] = 1 exactly when the mean is 0.5 (seeded)."""
    draws = np.random.default_rng(7).choice([0.0, 0.5, 1.0], p=[0.3, 0.4, 0.3], size=(40_000, 12))
    assert np.exp(log_e_values(draws)).mean() == pytest.approx(1.0, abs=0.03)


def test_e_bh_rejects_the_largest_e_values_step_up() -> None:
    log_e = np.log([100.0, 50.0, 1.0, 0.5])  # K = 4, alpha 0.05: e_(k) >= 80, 40, 26.7, 20
    assert e_bh(log_e, 0.05).tolist() == [True, True, False, False]
    assert e_bh(np.log([30.0] * 4), 0.05).tolist() == [True] * 4  # all four pass K / (alpha 4) = 20
    assert e_bh(np.log([79.0, 1, 1, 1]), 0.05).tolist() == [False] * 4
    assert e_bh(np.zeros(0), 0.05).tolist() == []


def test_an_interval_excludes_one_half_exactly_when_the_e_value_reaches_one_over_alpha() -> None:
    rng = np.random.default_rng(3)
    draws = rng.choice([0.0, 0.5, 1.0], p=[0.15, 0.3, 0.55], size=(300, 15))
    low, high = confidence_sequence(draws, 0.05)
    excludes = (low > 0.5) | (high < 0.5)
    assert excludes.tolist() == (log_e_values(draws) >= math.log(20)).tolist()
    assert 0 < excludes.sum() < 300  # both cases occur


def test_confidence_sequences_cover_the_mean() -> None:
    draws = np.random.default_rng(11).choice([0.0, 0.5, 1.0], p=[0.1, 0.3, 0.6], size=(2000, 20))  # mean 0.75
    low, high = confidence_sequence(draws, 0.05)
    assert ((low <= 0.75) & (high >= 0.75)).mean() >= 0.95
    assert np.isnan(confidence_sequence(np.full((1, 3), np.nan), 0.05)[0]).all()


def test_the_interval_ends_lie_beside_the_first_and_last_kept_means_of_the_whole_grid() -> None:
    # the grid is read coarse first (sequential._kept_ends): its ends must be those of every mean's capital
    rng = np.random.default_rng(48)
    rows, steps = 400, 500
    pairs = np.where(np.arange(rows) < 80, steps, rng.integers(1, 120, rows))  # many pairs: narrow intervals
    rates = rng.choice([0.002, 0.02, 0.1, 0.5, 0.9, 0.99], rows)
    values = np.where(rng.random((rows, steps)) < rates[:, None], rng.random((rows, steps)) ** 2, 0.0)
    values = np.where(rates[:, None] > 0.5, 1 - values, values)
    values[np.arange(steps)[None, :] >= pairs[:, None]] = np.nan
    weights = rng.integers(1, 9, (rows, steps)) / 8
    alphas = rng.choice([0.05, 0.01, 0.05 / 7], rows)
    kept = log_capital(values, GRID, weights) < np.log(1 / alphas)[:, None]
    assert kept.any(axis=1).all()
    first, last = np.argmax(kept, axis=1), len(GRID) - 1 - np.argmax(kept[:, ::-1], axis=1)
    low, high = confidence_sequence(values, alphas, weights)
    edges = np.concatenate([[0.0], GRID, [1.0]])
    assert ((edges[first] < low) & (low <= GRID[first])).all()
    assert ((GRID[last] <= high) & (high < edges[last + 2])).all()
    assert (last - first < 20).sum() > 20  # intervals narrower than a coarse step occur


def test_capital_is_one_at_the_running_mean_prior() -> None:
    assert log_capital(np.array([[0.5, 0.5]]), np.array([0.25, 0.5, 0.75])).shape == (1, 3)


def test_depth_schedule() -> None:
    assert depth_schedule(70) == [2, 3, 4, 5, 6, 8, 10, 13, 17, 22, 29, 38, 49, 64, 70]
    assert depth_schedule(6) == [2, 3, 4, 5, 6]
    assert depth_schedule(1) == [1]


def test_the_budget_goes_to_the_largest_e_values() -> None:
    log_e = np.array([0.0, 3.0, 1.0, 2.0])
    open_titles = np.array([True, True, True, False])
    keys = ["a", "b", "c", "d"]
    assert pick_within_budget(log_e, open_titles, 2, 8, keys).tolist() == [False, True, True, False]
    assert pick_within_budget(log_e, open_titles, 2, 100, keys).tolist() == [True, True, True, False]
    assert pick_within_budget(log_e, open_titles, 2, 3, keys).tolist() == [False] * 4


def test_clearing_needs_a_share_close_to_one_half() -> None:
    # Bound |mean - 0.5| + spread / sqrt(pairs) against 0.3, mean and spread with the e-value's priors: two ties
    # give 0 + sqrt(0.25 / 3) / sqrt(2) = 0.20 (cleared); a pair for the woman and a tie 0.17 + 0.25 (not).
    observed = np.array([[0.5] * 4, [1.0] * 4, [0.5, 0.5, np.nan, np.nan], [1.0, 0.5, np.nan, np.nan]])
    assert clearable(observed).tolist() == [True, False, True, False]


def test_decisions_of_a_round() -> None:
    strong = [1.0] * 14
    observed = np.array([strong, strong, [0.5] * 14, [1.0, 0.5] * 7, [0.5] * 14])
    asked = np.array([True, True, True, True, False])
    decisions, log_e = decide(observed, asked, depth=14, pairs=70)
    assert decisions.tolist() == [FLAGGED, FLAGGED, CLEARED, CONTINUE, None]
    assert decide(observed, asked, depth=14, pairs=14)[0].tolist() == [FLAGGED, FLAGGED, EXHAUSTED, EXHAUSTED, None]
    assert BUDGET not in decisions.tolist()
    assert log_e[2] == 0.0


def test_group_rollup_two_way_interval() -> None:
    """6 titles x 10 pairs, titles alternately all-woman and all-man: share 0.5; each observation's weighted
    residual is +/- 0.5 / 60, title sums +/- 1/12, pair sums 0, so the variance is 6/144 - 60 (1/120)^2 = 3/80,
    and the t quantile has min(6 titles, 10 pairs) - 1 = 5 degrees of freedom."""
    import pandas as pd
    from scipy import stats

    from probe.scanning.report import group_rollup

    observed = np.repeat([[1.0], [0.0]] * 3, 10, axis=1)
    rollup = group_rollup(observed, pd.Series(["29"] * 6)).iloc[0]
    half = stats.t.ppf(0.975, 5) * math.sqrt(3 / 80)
    assert (rollup["titles"], rollup["observations"], rollup["share"]) == (6, 60, 0.5)
    assert (rollup["ci_low"], rollup["ci_high"]) == pytest.approx((0.5 - half, 0.5 + half), abs=1e-12)
    fair = group_rollup(np.full((3, 4), 0.5), pd.Series(["11"] * 3)).iloc[0]
    assert (fair["share"], np.isnan(fair["ci_low"]), np.isnan(fair["ci_high"])) == (0.5, True, True)  # no zero width
