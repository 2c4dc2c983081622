"""The Luce fit of a name-set run's categories: with two categories shown together the strength is the pooled share
of picks; with every category shown once in each set it is each one's share of the picks; no estimate where a
category won all of its picks, and no interval under MIN_PAIRS sets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from probe.analysis.ranking import BRADLEY_TERRY, LUCE, contest_picks, kway_picks, luce_strengths, strength_rows
from probe.analysis.statistics import MIN_PAIRS


def _contests(wins: list[tuple[int, int]]) -> pd.DataFrame:
    """One contest row per set: `a` picked hits times out of n against `b`."""
    return pd.DataFrame(
        {
            "condition": "taxonomy",
            "attribute": "sex",
            "category_a": "a",
            "category_b": "b",
            "set_id": range(1, len(wins) + 1),
            "hits": [hits for hits, _ in wins],
            "n": [n for _, n in wins],
        }
    )


def test_contest_picks_count_each_contest_from_both_sides() -> None:
    categories, picks = contest_picks(_contests([(3, 4)]))
    assert categories == ["a", "b"]
    assert picks.shown.tolist() == [[1, 1], [1, 1]]
    assert picks.picked.tolist() == [0, 1]
    assert picks.weight.tolist() == [3, 1]
    assert picks.cluster.tolist() == [1, 1]


def test_two_categories_have_the_pooled_share_and_no_interval_under_min_pairs_sets() -> None:
    fit = luce_strengths(contest_picks(_contests([(3, 4), (3, 4)]))[1])
    assert fit.strength == pytest.approx([0.75, 0.25])
    assert np.isnan(fit.ci_low).all() and np.isnan(fit.p_value).all()  # 2 sets < MIN_PAIRS
    assert fit.sets.tolist() == [2, 2] and fit.n.tolist() == [8, 8]


def test_enough_sets_give_an_interval_around_the_share() -> None:
    contests = _contests([(3, 4), (1, 4)] * (MIN_PAIRS // 2 + 1))
    fit = luce_strengths(contest_picks(contests)[1])
    assert [row["method"] for row in strength_rows(contests, None)] == [BRADLEY_TERRY, BRADLEY_TERRY]
    assert fit.strength == pytest.approx([0.5, 0.5])
    assert fit.p_value == pytest.approx([1.0, 1.0])
    assert (fit.ci_low < 0.5).all() and (fit.ci_high > 0.5).all()
    assert fit.ci_low[0] == pytest.approx(1 - fit.ci_high[0])


def test_a_category_that_won_every_pick_has_no_estimate() -> None:
    fit = luce_strengths(contest_picks(_contests([(4, 4), (2, 2)]))[1])
    assert np.isnan(fit.strength).all()
    assert fit.n.tolist() == [6, 6]


def test_the_kway_choice_with_each_category_shown_once_is_its_share_of_the_picks() -> None:
    kway = pd.DataFrame(
        {
            "condition": "taxonomy",
            "attribute": "race",
            "set_id": [1, 1, 1, 2, 2, 2],
            "category": ["x", "y", "z"] * 2,
            "shown": 1,
            "hits": [3, 2, 1, 3, 2, 1],
        }
    )
    categories, picks = kway_picks(kway)
    assert categories == ["x", "y", "z"]
    assert picks.shown.tolist() == [[1, 1, 1]] * 6
    assert luce_strengths(picks).strength == pytest.approx([0.5, 1 / 3, 1 / 6], abs=1e-6)
    rows = strength_rows(_contests([(3, 4), (3, 4)]), kway)
    assert [(row["metric"], row["category"], row["method"]) for row in rows] == [
        ("strength", "a", None),
        ("strength", "b", None),
        ("kway_strength", "x", None),
        ("kway_strength", "y", None),
        ("kway_strength", "z", None),
    ]
    assert rows[0]["estimate"] == pytest.approx(0.75) and rows[0]["sets"] == 2 and rows[0]["n"] == 8


def test_a_kway_choice_over_enough_sets_has_luce_intervals() -> None:
    sets = MIN_PAIRS
    kway = pd.DataFrame(
        {
            "condition": "taxonomy",
            "attribute": "race",
            "set_id": np.repeat(np.arange(sets), 3),
            "category": ["x", "y", "z"] * sets,
            "shown": 1,
            "hits": [3, 2, 1, 2, 3, 1] * (sets // 2),
        }
    )
    rows = strength_rows(_contests([(3, 4), (1, 4)] * 3), kway)
    kway_rows = [row for row in rows if row["metric"] == "kway_strength"]
    assert [row["method"] for row in kway_rows] == [LUCE] * 3
    assert [row["estimate"] for row in kway_rows] == pytest.approx([5 / 12, 5 / 12, 1 / 6], abs=1e-6)
    assert kway_rows[2]["ci_high"] < 1 / 3  # z is picked least in every set: its interval lies below 1 / K
