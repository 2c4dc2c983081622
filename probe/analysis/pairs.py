"""What carries the woman's share: each name pair's own order-balanced share with its interval, and a test of
heterogeneity between the pairs, stored by analyze() in pair_shares and pair_heterogeneity for the report's bottom
line (probe/report/bottom_line.py).

A run's overall share is a mean over name pairs; on small models a few pairs that always pick the woman (or the
man) can carry it while the rest pick whoever is named first. Per pair, the share is its female_share pair value
(the mean over its name orders with valid instances of the share of S = female); its interval combines the two
orders' exact Clopper-Pearson intervals by MOVER (Zou & Donner 2008), so a pair that always picks the woman gets
[l, 1], never a zero-width interval (exact, not Wilson: a pair has few instances, and Wilson's combined bound
excludes 50% at 4 of 4, where the exact test's p is 0.125). A pair leans to a gender only where its own interval
excludes 50% (each pair at 0.05, not corrected for the number of pairs: the table says which pairs carry the
effect, the heterogeneity test whether they differ at all).

The heterogeneity test keeps the pair as the unit and needs no model of the picks: under "no pair differs from
another" a pair's picks in an occupation (both name orders together, as each less its cell's rate) are
exchangeable among the pairs answered there, so these blocks are shuffled within (condition, wording,
occupation); the statistic is the sum over pairs of (the pair's picks of the woman - its expected picks given the
cells' rates)^2. Occupation, wording and position effects are the same for every pair within a cell, so they cannot
make pairs look different; nor can a pair x occupation lean that both orders share (it moves with its block).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from probe.analysis.binomial import SIGNIFICANCE, clopper_pearson
from probe.analysis.metric_registry import FEMALE_SHARE
from probe.analysis.resampling import SEED
from probe.analysis.statistics import MIN_PAIRS

HETEROGENEITY_PERMUTATIONS = 999
PAIR_METHOD = (
    "the mean of the pair's two name orders' shares, each with its exact (Clopper-Pearson) 95% interval "
    "over the pair's own instances, combined by MOVER (Zou & Donner 2008)"
)
HETEROGENEITY_METHOD = (
    "stratified permutation test with the name pair as the unit: each pair's picks in an occupation (x wording), "
    "both name orders together, shuffled as one block among the pairs answered there "
    f"({HETEROGENEITY_PERMUTATIONS} seeded permutations); statistic: the sum over pairs of (the pair's picks of the "
    "woman - its expected picks given each occupation x name order's rate)^2"
)
PAIR_COLUMNS = ["condition", "pair_id", "value", "ci_low", "ci_high", "n", "lean"]


def pair_shares(cells: pd.DataFrame) -> pd.DataFrame:
    """Per condition and pair: the order-balanced share of S = female, its MOVER-Wilson interval and its lean
    (female / male where the interval excludes 50%, else none). `cells`: metrics.sql's wording_cells (n valid,
    female_share = picks of the woman)."""
    if cells.empty:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    orders = cells.groupby(["condition", "pair_id", "name_order"], as_index=False)[["n", FEMALE_SHARE]].sum()
    orders = orders[orders["n"] > 0].copy()
    orders["share"] = orders[FEMALE_SHARE] / orders["n"]
    low, high = (
        np.array(
            [clopper_pearson(int(hits), int(n)) for hits, n in zip(orders[FEMALE_SHARE], orders["n"], strict=True)]
        )
        .reshape(-1, 2)
        .T
    )
    orders["below"], orders["above"] = (orders["share"] - low) ** 2, (high - orders["share"]) ** 2
    grouped = orders.groupby(["condition", "pair_id"])
    count = grouped["share"].count()
    value = grouped["share"].mean()
    rows = pd.DataFrame(
        {
            "value": value,
            "ci_low": value - np.sqrt(grouped["below"].sum()) / count,
            "ci_high": value + np.sqrt(grouped["above"].sum()) / count,
            "n": grouped["n"].sum(),
        }
    ).reset_index()
    rows["ci_low"], rows["ci_high"] = rows["ci_low"].clip(lower=0.0), rows["ci_high"].clip(upper=1.0)
    rows["lean"] = np.select([rows["ci_low"] > 0.5, rows["ci_high"] < 0.5], ["female", "male"], "none")
    return rows[PAIR_COLUMNS]


def heterogeneity(cells: pd.DataFrame, permutations: int = HETEROGENEITY_PERMUTATIONS) -> pd.DataFrame:
    """Per condition: pairs, the statistic and the permutation p-value of "the pairs do not differ" (NaN below
    MIN_PAIRS pairs: no test over pairs is given there)."""
    rows = []
    for condition, group in cells[cells["n"] > 0].groupby("condition", sort=True):
        pairs = np.sort(group["pair_id"].unique())
        statistic, p_value = _permutation_test(group, pairs, permutations)
        rows.append(
            {
                "condition": condition,
                "pairs": len(pairs),
                "statistic": statistic,
                "p_value": p_value if len(pairs) >= MIN_PAIRS else np.nan,
                "differ": bool(len(pairs) >= MIN_PAIRS and p_value < SIGNIFICANCE),
            }
        )
    return pd.DataFrame(rows, columns=["condition", "pairs", "statistic", "p_value", "differ"])


def _permutation_test(group: pd.DataFrame, pairs: np.ndarray, permutations: int) -> tuple[float, float]:
    """The statistic and its stratified permutation p-value ((1 + reached) / (permutations + 1)).

    A block is one pair's picks in one (wording, occupation), both name orders together: each instance's pick less
    its cell's rate (the cell: wording, occupation, name order), summed. Blocks are shuffled among the pairs
    answered in their (wording, occupation), so a pair x occupation lean shared by the pair's two orders moves with
    its block: pairs that differ only occupation by occupation are exchangeable (shuffling each order's picks
    separately broke that correlation and rejected 6.5-7.7% at 5%, issue 48)."""
    rng = np.random.default_rng(SEED)
    index = {pair: position for position, pair in enumerate(pairs)}
    totals = group.groupby(["wording", "occupation", "name_order"])[["n", FEMALE_SHARE]].transform("sum")
    deviation = group[FEMALE_SHARE] - group["n"] * totals[FEMALE_SHARE] / totals["n"]
    blocks = deviation.groupby([group["wording"], group["occupation"], group["pair_id"]], sort=True).sum()
    observed = np.zeros(len(pairs))
    shuffled = np.zeros((permutations, len(pairs)))
    for _, block in blocks.groupby(level=[0, 1], sort=True):
        slots = block.index.get_level_values(2).map(index).to_numpy()  # each pair once per block stratum
        values = block.to_numpy(float)
        observed[slots] += values
        if np.all(values == 0):  # every pair at the cells' rates (a unanimous occupation): every shuffle alike
            continue
        shuffled[:, slots] += rng.permuted(np.broadcast_to(values, (permutations, len(values))), axis=1)
    statistic = float(np.sum(observed**2))
    reference = np.sum(shuffled**2, axis=1)
    reached = int(np.sum(reference >= statistic - 1e-9))
    return statistic, (1 + reached) / (permutations + 1)
