"""The heterogeneity test between name pairs computed for all conditions at once (issue 49): each condition's
p-value is the one it gets alone, whether it shares its permutation orders with a condition whose strata have the
same sizes or draws its own on another thread."""

from __future__ import annotations

import numpy as np
import pandas as pd

from probe.analysis.pairs import heterogeneity


def _cells(condition: str, picks: np.ndarray, missing: tuple[int, int] | None = None) -> pd.DataFrame:
    """wording_cells rows of one condition: picks[pair, cell] of the woman (one instance a cell, cells alternate the
    name orders of 4 occupations); `missing` (pair, occupation): that pair has no valid instance there."""
    rows = [
        (condition, "paper", pair + 1, f"o{cell // 2}", ("fm", "mf")[cell % 2], 1, int(picks[pair, cell]))
        for pair in range(picks.shape[0])
        for cell in range(picks.shape[1])
    ]
    frame = pd.DataFrame(
        rows, columns=["condition", "wording", "pair_id", "occupation", "name_order", "n", "female_share"]
    )
    if missing is not None:
        pair, occupation = missing
        frame.loc[(frame["pair_id"] == pair) & (frame["occupation"] == f"o{occupation}"), ["n", "female_share"]] = 0
    return frame


def test_each_condition_gets_the_p_value_it_gets_alone() -> None:
    rng = np.random.default_rng(49)
    leaning = (rng.random((8, 8)) < np.linspace(0.2, 0.8, 8)[:, None]).astype(int)  # pairs that differ
    alike = (rng.random((8, 8)) < 0.5).astype(int)
    frames = [
        _cells("baseline", leaning),
        _cells("control", alike),  # strata of the same sizes as baseline's: one draw of orders for both
        _cells("taxonomy", leaning, missing=(3, 1)),  # 7 pairs answered in occupation 1: its own draw
    ]
    together = heterogeneity(pd.concat(frames, ignore_index=True), permutations=199)
    alone = pd.concat([heterogeneity(frame, permutations=199) for frame in frames], ignore_index=True)
    pd.testing.assert_frame_equal(together, alone)
    assert together["p_value"].tolist() == [0.08, 0.435, 0.045]  # as the code before (one condition at a time)
