"""Occupation preference with the name pair as the unit (probe/analysis/preference.py), on hand-made cells."""

from __future__ import annotations

import pandas as pd
import pytest

from probe.analysis.preference import occupation_preference_rows


def _cells(leans: dict[str, list[float]]) -> pd.DataFrame:
    """Per occupation, each pair's share of S = female in both name orders (4 valid instances per order)."""
    rows = [
        {
            "condition": "taxonomy",
            "occupation": occupation,
            "pair_id": pair,
            "name_order": order,
            "n": 4,
            "n_female": round(4 * share),
        }
        for occupation, shares in leans.items()
        for pair, share in enumerate(shares, start=1)
        for order in ("female_first", "male_first")
    ]
    return pd.DataFrame(rows)


def test_eight_pairs_leaning_female_make_an_occupation_preferred_and_ties_do_not_count() -> None:
    rows = occupation_preference_rows(_cells({"nurse": [0.75] * 8, "pilot": [0.5] * 4 + [0.25] * 4}))
    nurse, pilot = (rows.set_index("occupation").loc[name] for name in ("nurse", "pilot"))
    assert (nurse["pairs_female"], nurse["pairs_male"], nurse["pairs"]) == (8, 0, 8)
    assert nurse["p_value"] == pytest.approx(2 / 2**8)  # exact two-sided sign test, 8 of 8
    assert nurse["q_value"] == pytest.approx(2 * 2 / 2**8)  # Benjamini-Hochberg over 2 occupations: 2p
    assert nurse["preferred"] == "female" and nurse["share_female"] == pytest.approx(0.75)
    # the 4 tied pairs lean neither way: 4 male leaners of 4 give p = 0.125, not a preference
    assert (pilot["pairs_female"], pilot["pairs_male"], pilot["p_value"]) == (0, 4, pytest.approx(0.125))
    assert pilot["preferred"] == "none"
