"""Findings per contrast (DESIGN.md section 11): for a run over name sets, every finding by the people's own
categories, with the name set as the unit, never by the slots (first / second person) a contest is stored in.

A contrast is (attribute, category_a, category_b): two categories of one of the file's attributes (a marginal
contrast: women vs men over every mixed-sex contest, Black vs White over every contest between a Black and a White
name) or of their intersection ('female x Black' vs 'male x White'). Per contrast:

- `preference`: the share of single-subject picks that name category_a's person in the contests between the two,
  both name orders together (each contest is asked in both, so the position effect cancels), with share_estimate's
  interval and test of 0.5 over the sets that asked the contrast;
- `grant_gap`: the stage-1 grant rate of category_a minus category_b's, paired by set (difference_estimate).

The contrasts of one attribute are a family: each interval is at 1 - 0.05 / m and each p-value Bonferroni's m x p
(m = the attribute's contrasts with an estimate), so `flagged` (p < 0.05) holds exactly where the interval excludes
the null; with too few sets for that level (2 x 0.5**sets >= 0.05 / m) no interval is given. Per category:
`win_share` (the share of its contests it won, against any other category of the attribute: the ranking's strength;
under the rotation every category meets every other equally often over a cycle of sets, so the win share is the mean
of its pairwise preference shares, the Borda score, which orders the categories as a Bradley-Terry fit does for a
balanced design), `grant_rate` and `grant_ratio` (to the highest grant rate, the adverse-impact table's ratio
procedure, probe/analysis/impact.py).
"""

from __future__ import annotations

import math
from itertools import combinations

import duckdb
import numpy as np
import pandas as pd

from probe.analysis.binomial import CONFIDENCE, SIGNIFICANCE, binomial_min_p
from probe.analysis.differences import DifferenceEstimate, difference_estimate
from probe.analysis.impact import group_ratios
from probe.analysis.statistics import ShareEstimate, share_estimate

# The metrics that read a contest's slots as the woman and the man (DESIGN.md section 5): for a run over name sets the
# slots are only the first and second person of a contest, so these are not stored for it; its findings by sex (and
# every other attribute) are the contrasts'.
SLOT_METRICS = ("female_share", "attr_yes_f", "attr_yes_m", "attr_yes_diff", "bias_f", "bias_m", "prefer_f",
                "prefer_m", "switch_f2m", "switch_m2f")  # fmt: skip
# The result tables whose every row reads the slots as sex (occupation leans, the gender term, the workforce's share of
# women against the woman's share): empty for a run over name sets.
SLOT_TABLES = ("occupation_preference", "regression", "workforce_fit", "workforce_occupations")
CONTRAST_COLUMNS = ["condition", "attribute", "category_a", "category_b", "metric", "estimate", "ci_low", "ci_high",
                    "p_value", "sets", "n", "comparisons", "method", "flagged"]  # fmt: skip
CATEGORY_COLUMNS = ["condition", "attribute", "category", "metric", "estimate", "ci_low", "ci_high", "p_value",
                    "sets", "n", "rank", "method"]  # fmt: skip
CONTRAST_NULLS = {"preference": 0.5, "grant_gap": 0.0}
RANKING_METHOD = (
    "win share: the share of its contests a category's people won against any other category of the attribute "
    "(single-subject question, both name orders), its interval over name sets (score interval; betting or no-event "
    "bound where the sets call for it); under the rotation of contests over sets every pair of categories meets "
    "equally often, so the win share is the mean of the category's preference shares (its Borda score) and orders the "
    "categories as a Bradley-Terry fit of a balanced design does"
)
CONTRAST_METHOD = (
    "Per contrast over the name sets that asked it: preference = share of picks of the first category (score "
    "interval, test of 50%), grant gap = stage-1 rate of the first minus the second paired by set (paired cluster t); "
    "Bonferroni over the attribute's contrasts: each interval at 1 - 0.05 / contrasts, p = contrasts x p"
)


def over_name_sets(con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
    """Whether the run asked name sets (its contests' people are in run_contests) rather than name pairs."""
    return con.execute("SELECT count(*) FROM run_contests WHERE run_id = ?", [run_id]).fetchone()[0] > 0


def without_slots(results: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """A run over name sets' result tables without the findings that read slots as sex (SLOT_METRICS, SLOT_TABLES)."""
    metrics = results["metrics"]
    return results | {"metrics": metrics[~metrics["metric"].isin(SLOT_METRICS)].reset_index(drop=True)} | {
        table: results[table].iloc[0:0] for table in SLOT_TABLES}  # fmt: skip


Contrast = tuple[str, str, str, str, str]  # condition, attribute, category_a, category_b, metric


def contrast_estimates(contests: pd.DataFrame, grants: pd.DataFrame
                       ) -> dict[Contrast, ShareEstimate | DifferenceEstimate]:  # fmt: skip
    """Each contrast's estimate over the sets, from metrics.sql `contrast_counts` and `grant_counts`: the preference
    of every stage-2 condition, the grant gap of stage 1 (analyze's rows and the contrast gate read these)."""
    estimates: dict[Contrast, ShareEstimate | DifferenceEstimate] = {}
    for (condition, attribute, a, b), group in contests.groupby(["condition", "attribute", "category_a",
                                                                 "category_b"]):  # fmt: skip
        used = group[group["n"] > 0]
        estimates[condition, attribute, a, b, "preference"] = share_estimate(used["hits"], used["n"], used["n"])
    for (condition, attribute), group in grants.groupby(["condition", "attribute"]):
        wide = group.pivot_table(index="set_id", columns="category", values=["hits", "n"], aggfunc="sum",
                                 fill_value=0)  # fmt: skip
        for a, b in combinations(sorted(wide["n"].columns), 2):
            sides = [(wide["hits"][c].to_numpy(float), wide["n"][c].to_numpy(float), wide["n"][c].to_numpy(float))
                     for c in (a, b)]  # fmt: skip
            estimates[condition, attribute, a, b, "grant_gap"] = difference_estimate(*sides)
    return estimates


def contrast_rows(contests: pd.DataFrame, grants: pd.DataFrame) -> pd.DataFrame:
    """The contrast_metrics rows from metrics.sql `contrast_counts` and `grant_counts`."""
    rows = [_contrast(*key, estimate) for key, estimate in contrast_estimates(contests, grants).items()]
    families: dict[tuple[str, str, str], int] = {}
    for row in rows:
        key = (row["condition"], row["attribute"], row["metric"])
        families[key] = families.get(key, 0) + row["_estimate"].estimable
    for row in rows:
        row |= _test(row.pop("_estimate"), row["metric"], max(families[row["condition"], row["attribute"],
                                                                           row["metric"]], 1))  # fmt: skip
    table = pd.DataFrame(rows, columns=CONTRAST_COLUMNS)
    table["flagged"] = (table["p_value"] < SIGNIFICANCE).astype(bool)
    return table.astype({"estimate": float, "ci_low": float, "ci_high": float, "p_value": float})


def _contrast(condition: str, attribute: str, a: str, b: str, metric: str,
              estimate: ShareEstimate | DifferenceEstimate) -> dict:  # fmt: skip
    return {"condition": condition, "attribute": attribute, "category_a": a, "category_b": b, "metric": metric,
            "estimate": estimate.value if estimate.instances else math.nan, "sets": estimate.pairs,
            "n": estimate.instances, "_estimate": estimate}  # fmt: skip


def _test(estimate: ShareEstimate | DifferenceEstimate, metric: str, comparisons: int) -> dict:
    """The row's interval at 1 - 0.05 / comparisons and its Bonferroni p-value (none without an estimate; no
    interval where the sets cannot reach that level)."""
    alpha = (1 - CONFIDENCE) / comparisons
    reachable = estimate.pairs > 0 and binomial_min_p(estimate.pairs) < alpha
    interval = estimate.interval(1 - alpha) if reachable else None
    p_value = estimate.p_value(CONTRAST_NULLS[metric])
    return {"comparisons": comparisons, "ci_low": interval[0] if interval else math.nan,
            "ci_high": interval[1] if interval else math.nan,
            "p_value": math.nan if p_value is None else min(1.0, comparisons * p_value),
            "method": estimate.method if interval else None}  # fmt: skip


def category_rows(contests: pd.DataFrame, grants: pd.DataFrame) -> pd.DataFrame:
    """The category_metrics rows: each category's win share (ranked, 1 = the highest), grant rate and grant ratio."""
    rows = []
    as_a = contests.rename(columns={"category_a": "category"}).assign(wins=contests["hits"])
    as_b = contests.rename(columns={"category_b": "category"}).assign(wins=contests["n"] - contests["hits"])
    played = pd.concat([as_a, as_b]).groupby(["condition", "attribute", "category", "set_id"])[["wins", "n"]].sum()
    for (condition, attribute), group in played.groupby(level=["condition", "attribute"]):
        shares = []
        for category, per_set in group.groupby(level="category"):
            used = per_set[per_set["n"] > 0]
            estimate = share_estimate(used["wins"], used["n"], used["n"])
            shares.append(_category(condition, attribute, category, "win_share", estimate, estimate.interval(), None))
        ranked = sorted(shares, key=lambda row: -row["estimate"] if np.isfinite(row["estimate"]) else math.inf)
        rows += [row | {"rank": rank} for rank, row in enumerate(ranked, start=1)]
    for (condition, attribute), group in grants.groupby(["condition", "attribute"]):
        ratios = group_ratios(group)
        for category, per_set in group.groupby("category"):
            used = per_set[per_set["n"] > 0]
            estimate = share_estimate(used["hits"], used["n"], used["n"])
            rows.append(_category(condition, attribute, category, "grant_rate", estimate, estimate.interval(), None))
            p_value = ratios.p_below(category)
            rows.append(_category(condition, attribute, category, "grant_ratio", estimate, ratios.interval(category),
                                  p_value, ratios.value(category), "fieller"))  # fmt: skip
    table = pd.DataFrame(rows, columns=CATEGORY_COLUMNS)
    return table.astype({"estimate": float, "ci_low": float, "ci_high": float, "p_value": float, "rank": "Int64"})


def _category(condition: str, attribute: str, category: str, metric: str, estimate: ShareEstimate,
              interval: tuple[float, float] | None, p_value: float | None, value: float | None = None,
              method: str | None = None) -> dict:  # fmt: skip
    return {"condition": condition, "attribute": attribute, "category": category, "metric": metric,
            "estimate": estimate.value if value is None else value,
            "ci_low": interval[0] if interval else math.nan, "ci_high": interval[1] if interval else math.nan,
            "p_value": math.nan if p_value is None else p_value, "sets": estimate.pairs, "n": estimate.instances,
            "rank": None, "method": (method or estimate.method) if interval else None}  # fmt: skip

