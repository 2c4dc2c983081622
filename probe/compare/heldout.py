"""Held-out checks of a mitigation (`probe compare BASE MITIGATED --heldout-seed N`): does what helped on the items
it was tuned on help on occupations, names and wordings it was not tuned on?

The split: the runs' occupations by SOC major group (the first two digits of the O*NET-SOC code: a held-out group
shares no occupation family with the tuning part), their name pairs and their wordings, each shuffled by the seed
and cut in two (tuning: the first half, rounded up; the paper's wording always tunes). It is recorded in
compare.json with the seed, so the same seed gives the same split for the same runs.

The measure is the metric's distance from its ideal per name pair, over a part's cells: female_share (default):
the mean over the part's occupations of |the woman's order-balanced share - 50%| (how strongly the picks follow
gender per occupation); position_first: |share - 50%|; bias: the share itself; consistency: 1 - the share. The
mitigation's effect on a part = the mean over its name pairs of (distance in BASE - distance in MITIGATED):
positive = it helped. Its interval and test are the project's one procedure for a difference over the same pairs
(`differences.difference_estimate`, as attr_yes_diff and `probe gate`'s baseline gates): a paired cluster t over
name pairs, no interval below 6 pairs and no p below the pairs' exact bound 2 x 0.5^pairs, and where every pair
improves alike the two runs' own intervals combined (never a zero-width interval). A held-out part's effect
generalizes when its interval lies above 0 and it is not significantly smaller than the tuning part's (one-sided at
0.05: paired by name pair for held-out occupations and wordings, which keep the tuning pairs; Welch for held-out
names, which are other pairs); with too few pairs for an interval, or where the tuning part's own interval does not
lie above 0 (no tuning effect to generalize), whether it generalizes is not decided (null), and the verdict says why.
Two runs over name sets: the set in the pair's place throughout, and the section's `unit` (its page's, method's and
verdict's word) says so.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import duckdb
import numpy as np
import pandas as pd
from scipy import stats

from probe.analysis.binomial import SIGNIFICANCE
from probe.analysis.contrasts import SLOT_METRICS, contest_sets, over_name_sets
from probe.analysis.differences import difference_estimate, no_spread
from probe.analysis.metric_registry import BIAS, CONSISTENCY, FEMALE_SHARE, POSITION_FIRST
from probe.analysis.metrics import metric_queries
from probe.analysis.statistics import paired_t_method
from probe.common.errors import UserError
from probe.common.vocabulary import CONDITIONS, PAPER_WORDING

# A contrast's preference: its cells (metrics.sql contrast_choice_cells) count category_a's picks in the woman's
# place, so its distance is female_share's
PREFERENCE = "preference"
# metric -> (what the distance measures, how it is computed from the per-cell share)
MEASURES = {
    FEMALE_SHARE: "mean over occupations of |the woman's order-balanced share - 50%|",
    POSITION_FIRST: "|share of picks naming the first-named person - 50%|",
    BIAS: "share of instances with the same gender picked in S and M",
    CONSISTENCY: "1 - consistency",
    PREFERENCE: "mean over occupations of |the first category's order-balanced share of picks - 50%| in the "
    "contests between the contrast's two categories (a run over name sets; the name set in the pair's place)",
}
PAIRS, SETS = "name pairs", "name sets"  # the unit the check splits and pairs: a run over name sets', the set


def method(unit: str = PAIRS) -> str:
    """The check's method in words, naming its unit (PAIRS or SETS)."""
    one = unit.removeprefix("name ").removesuffix("s")
    return (
        f"distance in the base run - distance in the mitigated run, each {one}'s two runs paired: the "
        f"{paired_t_method(one)}; generalizes: the held-out interval lies above 0 and the held-out effect is not "
        f"significantly smaller than the tuning one (one-sided 0.05: paired t over the shared {one}s, Welch for "
        f"held-out names); undecided below 6 {unit} or where the tuning part shows no improvement"
    )


PARTS = ("tuning", "held-out occupations", "held-out names", "held-out wordings")


def split(seed: int, major_groups: Sequence[str], pairs: Sequence[int], wordings: Sequence[str]) -> dict[str, dict]:
    """{dimension: {"tuning": [...], "held_out": [...]}}: each dimension shuffled by `seed` and halved."""
    rng = np.random.default_rng(seed)

    def halves(values: Sequence, keep_first: object = None) -> dict[str, list]:
        rest = [value for value in sorted(values) if value != keep_first]
        shuffled = [rest[index] for index in rng.permutation(len(rest))]
        ordered = ([keep_first] if keep_first in values else []) + shuffled
        cut = math.ceil(len(ordered) / 2)
        return {"tuning": sorted(ordered[:cut]), "held_out": sorted(ordered[cut:])}

    return {
        "major_groups": halves(major_groups),
        "pairs": halves([int(pair) for pair in pairs]),
        "wordings": halves(wordings, PAPER_WORDING),
    }


CELL_KEYS = ["condition", "wording", "pair_id", "occupation", "name_order"]


def _cells(con: duckdb.DuckDBPyConnection, run_id: str, contrast: Sequence[str] | None = None) -> pd.DataFrame:
    """Per (condition, wording, pair, occupation, name order) of one run: the valid instances (n), the hits of each
    measured metric and the occupation's SOC major group (the first two digits of its O*NET-SOC code). From the
    stored per-instance counts (instance_metrics; over name sets, each set's contests summed as pair_id); with
    `contrast`, a run over name sets' cells of that contrast from metrics.sql `contrast_choice_cells` (the set as
    pair_id, category_a's picks as female_share's hits; any attribute whose categories the two are: a marginal
    contrast pools every contest between them)."""
    keys = CELL_KEYS
    if contrast is None:
        placeholders = ", ".join("?" for _ in MEASURES)
        units = con.execute(
            "SELECT condition, wording, pair_id, occupation, name_order, metric, hits, n FROM instance_metrics "
            f"WHERE run_id = ? AND other_condition IS NULL AND metric IN ({placeholders})",
            [run_id, *MEASURES],
        ).df()
        if over_name_sets(con, run_id):  # the set is the unit (its contests summed), as the headline's
            units = (
                units.merge(contest_sets(con, run_id), on="pair_id")
                .drop(columns="pair_id")
                .rename(columns={"set_id": "pair_id"})
            )
        hits = units.pivot_table(index=keys, columns="metric", values="hits", aggfunc="sum")
        # every measure counts valid instances; position_first is stored for every run (female_share not for sets)
        counts = hits.assign(n=units[units["metric"] == POSITION_FIRST].groupby(keys)["n"].sum())
    else:
        a, b = sorted(contrast)
        cells = con.execute(metric_queries()["contrast_choice_cells"], {"run_id": run_id}).df()
        own = cells[(cells["category_a"] == a) & (cells["category_b"] == b)]
        if own.empty:
            raise UserError(f"--heldout-contrast {a},{b}: run {run_id} has no contests between these two categories")
        counts = own.groupby(keys)[["n", "n_female"]].sum().rename(columns={"n_female": FEMALE_SHARE})
    groups = con.execute(
        "SELECT DISTINCT occupation, left(soc_code, 2) AS major_group FROM run_attributes WHERE run_id = ?", [run_id]
    ).df()
    return counts.reset_index().merge(groups, on="occupation", how="left")


def _distances(cells: pd.DataFrame, metric: str) -> pd.Series:
    """The metric's distance from its ideal per name pair, over the given cells (NaN: no valid instance)."""
    sums = cells.groupby(["pair_id", "occupation", "name_order"])[["n", metric]].sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        share = sums[metric] / sums["n"].where(sums["n"] > 0)
    if metric == FEMALE_SHARE:
        per_occupation = share.groupby(level=["pair_id", "occupation"]).mean()
        return (per_occupation - 0.5).abs().groupby(level="pair_id").mean()
    totals = cells.groupby("pair_id")[["n", metric]].sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = totals[metric] / totals["n"].where(totals["n"] > 0)
    return {POSITION_FIRST: (pooled - 0.5).abs(), BIAS: pooled, CONSISTENCY: 1 - pooled}[metric]


def _pair_distances(cells: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per name pair: the distance from the ideal and the valid instances it rests on (pairs without any left out)."""
    valid = cells.groupby("pair_id")["n"].sum()
    return pd.DataFrame({"distance": _distances(cells, metric), "n": valid}).dropna()


def _in_part(cells: pd.DataFrame, groups: list, pairs: list, wordings: list) -> pd.DataFrame:
    return cells[cells["major_group"].isin(groups) & cells["pair_id"].isin(pairs) & cells["wording"].isin(wordings)]


def heldout_section(
    con: duckdb.DuckDBPyConnection,
    base: str,
    mitigated: str,
    seed: int,
    metric: str = FEMALE_SHARE,
    contrast: Sequence[str] | None = None,
) -> dict[str, object]:
    """compare.json's `heldout`: the split and, per part, the mitigation's effect with its interval and verdict.
    `contrast` (two categories, with metric preference): the check of two runs over name sets on that contrast."""
    over_sets = [run_id for run_id in (base, mitigated) if over_name_sets(con, run_id)]
    if len(over_sets) == 1:
        pairs = mitigated if over_sets == [base] else base
        raise UserError(
            f"--heldout-seed: run {over_sets[0]} asked name sets and run {pairs} name pairs; the held-out check "
            "pairs the same people in both runs"
        )
    base_cells, mitigated_cells = _measured_cells(con, (base, mitigated), over_sets, metric, contrast)
    unit = SETS if over_sets else PAIRS
    shared = [c for c in CONDITIONS if c in set(base_cells["condition"]) & set(mitigated_cells["condition"])]
    if not shared:
        raise UserError(f"--heldout-seed: runs {base} and {mitigated} share no stage-2 condition")
    condition = shared[0]
    base_cells = base_cells[base_cells["condition"] == condition]
    mitigated_cells = mitigated_cells[mitigated_cells["condition"] == condition]
    parts = split(
        seed,
        sorted(set(base_cells["major_group"].dropna())),
        sorted(set(base_cells["pair_id"])),
        sorted(set(base_cells["wording"])),
    )
    tuning = {dimension: halves["tuning"] for dimension, halves in parts.items()}
    choices = {"tuning": tuning}
    for part, dimension in zip(PARTS[1:], ("major_groups", "pairs", "wordings"), strict=True):
        if parts[dimension]["held_out"]:
            choices[part] = {**tuning, dimension: parts[dimension]["held_out"]}
    improvements, rows = {}, []
    for part, chosen in choices.items():
        where = (chosen["major_groups"], chosen["pairs"], chosen["wordings"])
        measured = FEMALE_SHARE if metric == PREFERENCE else metric
        both = pd.merge(
            _pair_distances(_in_part(base_cells, *where), measured),
            _pair_distances(_in_part(mitigated_cells, *where), measured),
            left_index=True,
            right_index=True,
            suffixes=("_base", "_mitigated"),
        )
        improvements[part] = both["distance_base"] - both["distance_mitigated"]
        ones = np.ones(len(both))
        estimate = difference_estimate(
            (both["distance_base"].to_numpy(float), ones, both["n_base"].to_numpy(float)),
            (both["distance_mitigated"].to_numpy(float), ones, both["n_mitigated"].to_numpy(float)),
        )
        interval = estimate.interval()
        row = {
            "part": part,
            "major_groups": chosen["major_groups"],
            "pairs": len(both),
            "wordings": chosen["wordings"],
            "effect": _finite(estimate.value),
            "ci_low": interval[0] if interval else None,
            "ci_high": interval[1] if interval else None,
            "p_value": estimate.p_value(0.0),
        }
        if part != "tuning":
            smaller_p = _smaller_p(improvements["tuning"], improvements[part], paired=part != "held-out names")
            row |= {"smaller_p": smaller_p, **_generalizes(rows[0], row, smaller_p, unit)}
        rows.append(row)
    return {
        "base": base,
        "mitigated": mitigated,
        "seed": seed,
        "metric": metric,
        "measure": MEASURES[metric],
        "contrast": sorted(contrast) if contrast else None,
        "condition": condition,
        "split": parts,
        "unit": unit,
        "method": method(unit),
        "parts": rows,
    }


def _measured_cells(
    con: duckdb.DuckDBPyConnection,
    runs: tuple[str, str],
    over_sets: list[str],
    metric: str,
    contrast: Sequence[str] | None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both runs' (base, mitigated) cells of the measure (a UserError naming the option where the runs cannot give
    it); `over_sets`: those of the runs that asked name sets."""
    base, mitigated = runs
    if metric not in MEASURES:
        raise UserError(f"--heldout-metric {metric}: choose from {', '.join(MEASURES)}")
    if (metric == PREFERENCE) != (contrast is not None):
        raise UserError("--heldout-contrast: goes with --heldout-metric preference, and it with a contrast")
    if metric in SLOT_METRICS and over_sets:  # its per-cell share reads a contest's first person as the woman
        raise UserError(
            f"--heldout-metric {metric}: run {over_sets[0]} asked name sets, whose questions have no woman "
            "and man slot; choose position_first, bias, consistency, or preference with --heldout-contrast"
        )
    if contrast is None:
        return _cells(con, base), _cells(con, mitigated)
    if len(set(contrast)) != 2:
        raise UserError(f"--heldout-contrast {','.join(contrast)}: name two categories, comma-separated")
    pairs = [run_id for run_id in (base, mitigated) if run_id not in over_sets]
    if pairs:
        raise UserError(f"--heldout-contrast: run {pairs[0]} asked name pairs; a contrast needs runs over name sets")
    return _cells(con, base, contrast), _cells(con, mitigated, contrast)


def _generalizes(tuning: dict, held_out: dict, smaller_p: float | None, unit: str = PAIRS) -> dict[str, object]:
    """`generalizes` (True, False, or None: undecided) and the verdict in words (too few of the check's `unit`).
    Nothing generalizes where the tuning part shows no improvement (its interval not above 0): there was no tuning
    effect to generalize."""
    if tuning["ci_low"] is None or held_out["ci_low"] is None:
        return {"generalizes": None, "verdict": f"too few {unit.removeprefix('name ')}"}
    if tuning["ci_low"] <= 0:
        return {"generalizes": None, "verdict": "no tuning effect to generalize"}
    if smaller_p is not None and smaller_p < SIGNIFICANCE:
        return {"generalizes": False, "verdict": "no: smaller than on the tuning part"}
    if held_out["ci_low"] > 0:
        return {"generalizes": True, "verdict": "yes"}
    return {"generalizes": False, "verdict": "not shown: the held-out interval includes 0"}


def _smaller_p(tuning: pd.Series, held_out: pd.Series, *, paired: bool) -> float | None:
    """One-sided p of "the held-out improvement is smaller than the tuning one". Where the values have no spread
    beyond float noise (a t of noise reads as a huge effect), the exact test: every pair's difference alike, the
    sign-flip bound 0.5^pairs; two groups of equal values, the permutation bound 1 / C(n1 + n2, n1)."""
    if paired:
        both = pd.concat([tuning, held_out], axis=1, join="inner").to_numpy(float)
        if len(both) < 2:
            return None
        differences = both[:, 0] - both[:, 1]
        if _no_spread(differences):
            return 0.5 ** len(differences) if _above(float(differences.mean()), 0.0) else 1.0
        return float(stats.ttest_rel(both[:, 0], both[:, 1], alternative="greater").pvalue)
    if len(tuning) < 2 or len(held_out) < 2:
        return None
    if _no_spread(tuning) and _no_spread(held_out):
        smaller = _above(float(tuning.mean()), float(held_out.mean()))
        return 1 / math.comb(len(tuning) + len(held_out), len(tuning)) if smaller else 1.0
    with warnings.catch_warnings():  # scipy warns of "catastrophic cancellation" for a group of equal values,
        warnings.simplefilter("ignore", RuntimeWarning)  # whose variance is 0: Welch takes it as it is
        return _finite(float(stats.ttest_ind(tuning, held_out, equal_var=False, alternative="greater").pvalue))


def _above(value: float, other: float) -> bool:
    """`value` > `other` by more than float noise (the difference's square is more than noise in a variance)."""
    return not no_spread((value - other) ** 2, other) and value > other


def _no_spread(values: np.ndarray | pd.Series) -> bool:
    values = np.asarray(values, dtype=float)
    return no_spread(float(np.var(values)), float(np.mean(values)))


def _finite(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)
