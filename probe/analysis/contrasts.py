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
import pandas as pd

from probe.analysis import metric_registry as registry
from probe.analysis.binomial import CONFIDENCE, SIGNIFICANCE, binomial_min_p
from probe.analysis.differences import DifferenceEstimate, difference_estimate, p_beside
from probe.analysis.impact import group_ratios
from probe.analysis.ranking import strength_rows
from probe.analysis.statistics import ShareEstimate, share_estimate

# The metrics that read a contest's slots as the woman and the man (DESIGN.md section 5): for a run over name sets the
# slots are only the first and second person of a contest, so these are not stored for it; its findings by sex (and
# every other attribute) are the contrasts'.
SLOT_METRICS = (
    registry.FEMALE_SHARE,
    registry.ATTR_YES_F,
    registry.ATTR_YES_M,
    registry.ATTR_YES_DIFF,
    registry.BIAS_F,
    registry.BIAS_M,
    registry.PREFER_F,
    registry.PREFER_M,
    registry.SWITCH_F2M,
    registry.SWITCH_M2F,
)
# The result tables whose every row reads the slots as sex (occupation leans, the gender term, the workforce's share of
# women against the woman's share): empty for a run over name sets.
SLOT_TABLES = ("occupation_preference", "regression", "workforce_fit", "workforce_occupations")
CONTRAST_COLUMNS = [
    "condition",
    "attribute",
    "category_a",
    "category_b",
    "metric",
    "estimate",
    "ci_low",
    "ci_high",
    "p_value",
    "sets",
    "n",
    "comparisons",
    "method",
    "flagged",
]
CATEGORY_COLUMNS = [
    "condition",
    "attribute",
    "category",
    "metric",
    "estimate",
    "ci_low",
    "ci_high",
    "p_value",
    "sets",
    "n",
    "rank",
    "method",
]
CONTRAST_NULLS = {
    "preference": 0.5,
    "kway_preference": 0.5,
    "grant_gap": 0.0,
    registry.POSITION_FIRST: 0.5,
    "prefer_gap": 0.0,
    "bias_gap": 0.0,
    "switch_gap": 0.0,
}
# The direct findings of a contrast (the report's bottom line and matrices); the others describe how it was decided
DIRECT = ("preference", "kway_preference", "grant_gap")
# Per-contrast shares of the valid instances of its contests (DESIGN.md section 5's metrics read by the people's
# categories): described with a 95% interval, no test (no value of them means "no group difference")
DESCRIBED = (registry.CONSISTENCY, registry.BIAS)
# category_a's share minus category_b's, paired by set: the group-directed metrics of section 5 (prefer_f - prefer_m,
# bias_f - bias_m, switch_f2m - switch_m2f with a and b for f and m)
GAPS = {
    "prefer_gap": ("prefer_a", "prefer_b"),
    "bias_gap": ("bias_a", "bias_b"),
    "switch_gap": ("switch_a2b", "switch_b2a"),
}
# category_metrics' ranked metrics: rank 1 = the highest estimate of its condition, attribute and metric
RANKED = ("strength", "kway_strength", "win_share")
RANKING_METHOD = (
    "strength: a Bradley-Terry fit over the single-subject picks of the contests between two categories (both name "
    "orders), and for the K-way choice a Luce (first-stage Plackett-Luce) fit over its top picks; a category's "
    "strength is the share of picks its person would win in a choice among one person of each category (1 / K = no "
    "difference), its 95% interval logit(strength) +- t(sets - 1) standard errors from the sandwich covariance "
    "clustered by name set, p the same test of 1 / K; the win share (the share of its contests a category won, the "
    "Borda score) orders the categories alike when every pair meets equally often"
)
CONTRAST_METHOD = (
    "Per contrast over the name sets that asked it: preference = share of picks of the first category (score "
    "interval, test of 50%), in the K-way choice the share of the two categories' top picks that went to the first, "
    "grant gap = stage-1 rate of the first minus the second paired by set (paired cluster t); Bonferroni over the "
    "attribute's contrasts: each interval at 1 - 0.05 / contrasts, p = contrasts x p"
)


def over_name_sets(con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
    """Whether the run asked name sets (its contests' people are in run_contests) rather than name pairs."""
    return con.execute("SELECT count(*) FROM run_contests WHERE run_id = ?", [run_id]).fetchone()[0] > 0


def contest_sets(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """Each contest's pair_id and set_id of a run over name sets (none for a run over name pairs)."""
    return con.execute("SELECT DISTINCT pair_id, set_id FROM run_contests WHERE run_id = ?", [run_id]).df()


def by_set(pair_counts: pd.DataFrame, sets: pd.DataFrame) -> pd.DataFrame:
    """Each set's counts summed over its contests, keyed by the set (a run over name sets' unit): `pair_counts` has
    condition, pair_id, metric, hits and n; `sets` each contest's pair_id and set_id."""
    keyed = pair_counts.assign(key=pair_counts["pair_id"].map(sets.set_index("pair_id")["set_id"]).astype(str))
    return keyed.groupby(["condition", "key", "metric"], as_index=False)[["hits", "n"]].sum()


def without_slots(results: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """A run over name sets' result tables without the findings that read slots as sex (SLOT_METRICS in its metrics
    and its findings under a change of wording, SLOT_TABLES)."""
    by_metric = {table: results[table] for table in ("metrics", "robustness")}
    return (
        results
        | {table: rows[~rows["metric"].isin(SLOT_METRICS)].reset_index(drop=True) for table, rows in by_metric.items()}
        | {table: results[table].iloc[0:0] for table in SLOT_TABLES}
    )


Contrast = tuple[str, str, str, str, str]  # condition, attribute, category_a, category_b, metric


def kway_counts(impact_counts: pd.DataFrame) -> pd.DataFrame:
    """Per (condition, attribute, set, category) of the K-way choice: the answers that picked one of the category's
    people (hits) and how many of its people each answer showed (shown), from metrics.sql `impact_counts`' rate kind
    ranking, whose n counts every person shown once per usable answer (a set's usable answers are the smallest n of
    the set: a category of the finest attribute has one person)."""
    ranked = impact_counts[(impact_counts["rate_kind"] == "ranking") & (impact_counts["scope"] == "overall")]
    answers = ranked.groupby(["condition", "set_id"])["n"].transform("min")
    used = ranked[answers > 0]
    shown = (used["n"] / answers[answers > 0]).round().astype(int)
    return used.assign(shown=shown)[["condition", "attribute", "set_id", "category", "hits", "shown"]]


def contrast_estimates(
    contests: pd.DataFrame,
    grants: pd.DataFrame,
    kway: pd.DataFrame | None = None,
    instances: pd.DataFrame | None = None,
) -> dict[Contrast, ShareEstimate | DifferenceEstimate]:
    """Each contrast's estimate over the sets, from metrics.sql `contrast_counts` and `grant_counts` (and the K-way
    choice's `kway_counts`, metrics.sql `contrast_instances`): the preference of every stage-2 condition, the grant
    gap of stage 1, the K-way preference, position, consistency, bias and the gaps (analyze's rows and the contrast
    gate read these)."""
    estimates = _kway_estimates(kway) | _instance_estimates(instances)
    for (condition, attribute, a, b), group in contests.groupby(["condition", "attribute", "category_a", "category_b"]):
        used = group[group["n"] > 0]
        estimates[condition, attribute, a, b, "preference"] = share_estimate(used["hits"], used["n"], used["n"])
    for (condition, attribute), group in grants.groupby(["condition", "attribute"]):
        wide = group.pivot_table(index="set_id", columns="category", values=["hits", "n"], aggfunc="sum", fill_value=0)
        for a, b in combinations(sorted(wide["n"].columns), 2):
            sides = [
                (wide["hits"][c].to_numpy(float), wide["n"][c].to_numpy(float), wide["n"][c].to_numpy(float))
                for c in (a, b)
            ]
            estimates[condition, attribute, a, b, "grant_gap"] = difference_estimate(*sides)
    return estimates


def _kway_estimates(kway: pd.DataFrame | None) -> dict[Contrast, ShareEstimate]:
    """`kway_preference` per contrast: of the top picks that went to either category, the share that went to
    category_a, per set, over the sets (IIA: under a Luce model it estimates the pairwise preference). Only where the
    two categories show as many people in every set (always, for a file whose sets cross every attribute): with more
    people of one, its share of picks would count heads, not preference."""
    if kway is None or kway.empty:
        return {}
    estimates = {}
    for (condition, attribute), group in kway.groupby(["condition", "attribute"]):
        wide = group.pivot_table(
            index="set_id", columns="category", values=["hits", "shown"], aggfunc="sum", fill_value=0
        )
        for a, b in combinations(sorted(wide["hits"].columns), 2):
            if (wide["shown"][a] != wide["shown"][b]).any():
                continue
            both = (wide["hits"][a] + wide["hits"][b]).to_numpy(float)
            estimates[condition, attribute, a, b, "kway_preference"] = share_estimate(wide["hits"][a], both, both)
    return estimates


def _instance_estimates(instances: pd.DataFrame | None) -> dict[Contrast, ShareEstimate | DifferenceEstimate]:
    """position_first, consistency and bias (shares of the contests' valid instances) and the gaps (category_a's
    share minus category_b's, paired by set) per contrast, over the sets."""
    estimates: dict[Contrast, ShareEstimate | DifferenceEstimate] = {}
    if instances is None:
        return estimates
    for key, group in instances.groupby(["condition", "attribute", "category_a", "category_b"]):
        n = group["n"].to_numpy(float)
        for metric in (registry.POSITION_FIRST, *DESCRIBED):
            estimates[(*key, metric)] = share_estimate(group[metric], n, n)
        for gap, (first, second) in GAPS.items():
            estimates[(*key, gap)] = difference_estimate(
                (group[first].to_numpy(float), n, n), (group[second].to_numpy(float), n, n)
            )
    return estimates


def contrast_rows(
    contests: pd.DataFrame,
    grants: pd.DataFrame,
    kway: pd.DataFrame | None = None,
    instances: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The contrast_metrics rows from metrics.sql `contrast_counts` and `grant_counts` (and `kway_counts`, metrics.sql
    `contrast_instances`)."""
    estimates = contrast_estimates(contests, grants, kway, instances)
    rows = [_contrast(*key, estimate) for key, estimate in estimates.items()]
    families: dict[tuple[str, str, str], int] = {}
    for row in rows:
        key = (row["condition"], row["attribute"], row["metric"])
        families[key] = families.get(key, 0) + row["_estimate"].estimable
    for row in rows:
        row |= _test(
            row.pop("_estimate"), row["metric"], max(families[row["condition"], row["attribute"], row["metric"]], 1)
        )
    table = pd.DataFrame(rows, columns=CONTRAST_COLUMNS)
    table["flagged"] = (table["p_value"] < SIGNIFICANCE).astype(bool)
    return table.astype({"estimate": float, "ci_low": float, "ci_high": float, "p_value": float})


def _contrast(
    condition: str, attribute: str, a: str, b: str, metric: str, estimate: ShareEstimate | DifferenceEstimate
) -> dict:
    return {
        "condition": condition,
        "attribute": attribute,
        "category_a": a,
        "category_b": b,
        "metric": metric,
        "estimate": estimate.value if estimate.instances else math.nan,
        "sets": estimate.pairs,
        "n": estimate.instances,
        "_estimate": estimate,
    }


def _test(estimate: ShareEstimate | DifferenceEstimate, metric: str, comparisons: int) -> dict:
    """The row's interval at 1 - 0.05 / comparisons and its Bonferroni p-value (none without an estimate; no
    interval where the sets cannot reach that level)."""
    if metric in DESCRIBED:  # no test: a plain 95% interval
        interval = estimate.interval()
        return {
            "comparisons": 1,
            "ci_low": interval[0] if interval else math.nan,
            "ci_high": interval[1] if interval else math.nan,
            "p_value": math.nan,
            "method": estimate.method if interval else None,
        }
    alpha = (1 - CONFIDENCE) / comparisons
    reachable = estimate.pairs > 0 and binomial_min_p(estimate.pairs) < alpha
    interval = estimate.interval(1 - alpha) if reachable else None
    p_value = p_beside(estimate, CONTRAST_NULLS[metric], 1 - alpha)
    return {
        "comparisons": comparisons,
        "ci_low": interval[0] if interval else math.nan,
        "ci_high": interval[1] if interval else math.nan,
        "p_value": math.nan if p_value is None else min(1.0, comparisons * p_value),
        "method": estimate.method if interval else None,
    }


def category_rows(contests: pd.DataFrame, grants: pd.DataFrame, kway: pd.DataFrame | None = None) -> pd.DataFrame:
    """The category_metrics rows: each category's strength (Bradley-Terry over the contests, Luce over the K-way
    choice) and win share, each ranked (1 = the highest), its grant rate and grant ratio."""
    rows = [*strength_rows(contests, kway), *_win_rows(contests), *_grant_rows(grants)]
    table = pd.DataFrame(rows, columns=CATEGORY_COLUMNS)
    ranked = table[table["metric"].isin(RANKED)].assign(estimate=lambda frame: frame["estimate"].round(12))
    # ties (to rounding) in the categories' alphabetical order
    table["rank"] = (
        ranked.sort_values("category")
        .groupby(["condition", "attribute", "metric"])["estimate"]
        .rank(method="first", ascending=False)
    )
    return table.astype({"estimate": float, "ci_low": float, "ci_high": float, "p_value": float, "rank": "Int64"})


def _win_rows(contests: pd.DataFrame) -> list[dict]:
    """Each category's share of its contests won, over the sets."""
    rows = []
    as_a = contests.rename(columns={"category_a": "category"}).assign(wins=contests["hits"])
    as_b = contests.rename(columns={"category_b": "category"}).assign(wins=contests["n"] - contests["hits"])
    played = pd.concat([as_a, as_b]).groupby(["condition", "attribute", "category", "set_id"])[["wins", "n"]].sum()
    for (condition, attribute, category), per_set in played.groupby(level=["condition", "attribute", "category"]):
        used = per_set[per_set["n"] > 0]
        estimate = share_estimate(used["wins"], used["n"], used["n"])
        rows.append(_category(condition, attribute, category, "win_share", estimate, estimate.interval(), None))
    return rows


def _grant_rows(grants: pd.DataFrame) -> list[dict]:
    """Each category's stage-1 grant rate and its ratio to the highest rate (the adverse-impact table's)."""
    rows = []
    for (condition, attribute), group in grants.groupby(["condition", "attribute"]):
        ratios = group_ratios(group)
        for category, per_set in group.groupby("category"):
            used = per_set[per_set["n"] > 0]
            estimate = share_estimate(used["hits"], used["n"], used["n"])
            rows.append(_category(condition, attribute, category, "grant_rate", estimate, estimate.interval(), None))
            p_value = ratios.p_below(category)
            rows.append(
                _category(
                    condition,
                    attribute,
                    category,
                    "grant_ratio",
                    estimate,
                    ratios.interval(category),
                    p_value,
                    ratios.value(category),
                    "fieller",
                )
            )
    return rows


def _category(
    condition: str,
    attribute: str,
    category: str,
    metric: str,
    estimate: ShareEstimate,
    interval: tuple[float, float] | None,
    p_value: float | None,
    value: float | None = None,
    method: str | None = None,
) -> dict:
    return {
        "condition": condition,
        "attribute": attribute,
        "category": category,
        "metric": metric,
        "estimate": estimate.value if value is None else value,
        "ci_low": interval[0] if interval else math.nan,
        "ci_high": interval[1] if interval else math.nan,
        "p_value": math.nan if p_value is None else p_value,
        "sets": estimate.pairs,
        "n": estimate.instances,
        "rank": None,
        "method": (method or estimate.method) if interval else None,
    }
