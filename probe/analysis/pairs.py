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

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from probe.analysis.binomial import SIGNIFICANCE, clopper_pearson_bounds
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
    low, high = clopper_pearson_bounds(orders[FEMALE_SHARE].to_numpy(), orders["n"].to_numpy())
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
    tested = {condition: _blocks(group) for condition, group in cells[cells["n"] > 0].groupby("condition", sort=True)}
    references = _permuted_statistics(tested, permutations)
    rows = []
    for condition, (pairs, observed, _) in tested.items():
        statistic = float(np.sum(observed**2))
        reached = int(np.sum(references[condition] >= statistic - 1e-9))
        p_value = (1 + reached) / (permutations + 1)
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


Blocks = tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]]]


def _blocks(group: pd.DataFrame) -> Blocks:
    """A condition's pairs (sorted), their observed sums of blocks and the strata to shuffle: per (wording,
    occupation) in order, the pairs' positions and block values, where some block is not 0.

    A block is one pair's picks in one (wording, occupation), both name orders together: each instance's pick less
    its cell's rate (the cell: wording, occupation, name order), summed. Blocks are shuffled among the pairs
    answered in their (wording, occupation), so a pair x occupation lean shared by the pair's two orders moves with
    its block: pairs that differ only occupation by occupation are exchangeable (shuffling each order's picks
    separately broke that correlation and rejected 6.5-7.7% at 5%, issue 48)."""
    pairs = np.sort(group["pair_id"].unique())
    totals = group.groupby(["wording", "occupation", "name_order"])[["n", FEMALE_SHARE]].transform("sum")
    deviation = group[FEMALE_SHARE] - group["n"] * totals[FEMALE_SHARE] / totals["n"]
    blocks = deviation.groupby([group["wording"], group["occupation"], group["pair_id"]], sort=True).sum()
    stratum = blocks.index.droplevel(2)
    starts = np.flatnonzero(np.r_[True, stratum[1:] != stratum[:-1]])  # where each (wording, occupation) begins
    slots = np.searchsorted(pairs, blocks.index.get_level_values(2).to_numpy())  # each pair once per stratum
    values = blocks.to_numpy(float)
    observed = np.zeros(len(pairs))
    strata = []
    for begin, end in zip(starts, [*starts[1:], len(values)], strict=True):
        observed[slots[begin:end]] += values[begin:end]
        if np.any(values[begin:end] != 0):  # all 0 (a unanimous occupation): every shuffle alike, none drawn
            strata.append((slots[begin:end], values[begin:end]))
    return pairs, observed, strata


def _permuted_statistics(tested: dict[str, Blocks], permutations: int) -> dict[str, np.ndarray]:
    """Per condition the statistic under each of `permutations` stratified shuffles: stratum by stratum, the
    permutations a generator seeded with SEED draws (`rng.permuted` of each stratum's blocks, one row per
    permutation), so the p-values do not depend on the conditions beside. A shuffle moves positions whatever the
    values: conditions whose strata have the same sizes share one draw of the orders (a draw cost 0.5 s at 1M
    answers), and the other conditions draw theirs at the same time on a second core (numpy leaves the lock
    while it shuffles and sums)."""
    by_sizes: dict[tuple[int, ...], list[str]] = {}
    for condition, (_, _, strata) in tested.items():
        by_sizes.setdefault(tuple(len(values) for _, values in strata), []).append(condition)

    def shuffled(sizes: tuple[int, ...], conditions: list[str]) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(SEED)
        sums = {condition: np.zeros((permutations, len(tested[condition][0]))) for condition in conditions}
        for position, size in enumerate(sizes):
            orders = rng.permuted(np.broadcast_to(np.arange(size), (permutations, size)), axis=1)
            for condition in conditions:
                slots, values = tested[condition][2][position]
                if len(slots) == sums[condition].shape[1]:  # every pair answered here: no scatter (7x dearer)
                    sums[condition] += values[orders]
                else:
                    sums[condition][:, slots] += values[orders]
        return {condition: np.sum(rows**2, axis=1) for condition, rows in sums.items()}

    with ThreadPoolExecutor(max_workers=2) as pool:
        draws = pool.map(shuffled, by_sizes.keys(), by_sizes.values())
        return {condition: statistics for draw in draws for condition, statistics in draw.items()}
