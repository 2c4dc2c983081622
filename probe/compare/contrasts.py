"""`probe compare` of runs over name sets, per contrast (DESIGN.md section 11): each contrast's finding in every run
and its difference to the reference run, paired by name set.

A set is shared where every run asked it of the same people (names and categories) in the same contests, so the
set's contests are the same questions about the same people in each run; the runs' prompts are their own (another
model family reads another prompt format: part of what is compared, not of the pairing). Per condition both runs
asked and per contrast (attribute, category_a, category_b; category_a the first alphabetically):

- `preference`: run minus reference of the share of picks of category_a's person in the contests between the two
  (metrics.sql `contrast_counts`), the paired cluster t over the shared sets (`difference_estimate`);
- `grant_gap` (stage 1, where both runs asked the same attributes): run minus reference of the grant gap
  (category_a's stage-1 grant rate minus category_b's, metrics.sql `grant_counts`), the same t over the four rates
  (`contrast_estimate`, signs +1 -1 -1 +1).

The contrasts of one attribute are a family, as in each run's own contrast table (probe/analysis/contrasts.py):
each interval at 1 - 0.05 / m and p Bonferroni's m x p (m = the attribute's estimable differences of the condition
and metric), no interval with too few sets for that level, `flagged` where p < 0.05. Both queries read the stored
items, answers and run_contests, as `probe gate`'s contrast kind does; nothing is recomputed on temporary tables.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import duckdb
import pandas as pd

from probe.analysis.binomial import CONFIDENCE, SIGNIFICANCE, binomial_min_p
from probe.analysis.contrasts import by_set, contest_sets, over_name_sets
from probe.analysis.differences import DifferenceEstimate, contrast_estimate, difference_estimate, p_beside
from probe.analysis.metrics import metric_queries
from probe.analysis.statistics import METHODS
from probe.common.vocabulary import CONDITIONS, STAGE1_CONDITION
from probe.report.data import clean, order_index

CONTRAST_DIFFERENCE_METHOD = (
    "run minus reference per contrast, paired by name set (a set every run asked of the same people in the same "
    "contests): preference = share of picks of the first category, grant gap = its stage-1 rate minus the second's; "
    "paired cluster t over the shared sets; Bonferroni over an attribute's contrasts: each interval at "
    "1 - 0.05 / contrasts, p = contrasts x p"
)
NOT_ESTIMABLE = "no estimate: the contrast was not asked (or not answered) in the shared sets of both runs"
TOO_FEW_SETS = "no interval: too few shared name sets for the attribute's Bonferroni level"
STAGE1_OTHER_ATTRIBUTES = (
    "The runs asked stage 1 about different attributes (their occupations or top-k differ): no paired grant gap."
)


def set_counts(con: duckdb.DuckDBPyConnection, run_id: str, counts: pd.DataFrame) -> pd.DataFrame:
    """A run over name sets' pair-scope counts (compare's paired differences and ranks) with the set as the unit, as
    its overall rows: each set's contests summed, keyed by the set."""
    return by_set(counts.assign(pair_id=counts["key"].astype(int)), contest_sets(con, run_id))


def sets_of(con: duckdb.DuckDBPyConnection, run_id: str, pairs: Sequence[int]) -> int:
    """How many of a run's name sets the contests `pairs` (pair ids) are of."""
    query = "SELECT count(DISTINCT set_id) FROM run_contests WHERE run_id = ? AND list_contains(?, pair_id)"
    return con.execute(query, [run_id, sorted({int(pair) for pair in pairs})]).fetchone()[0]


def set_signatures(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[int, frozenset]:
    """Each set of a run over name sets as its contests, each the two people with their categories (run_contests and
    run_name_pairs: a run stored before run_people existed has them too)."""
    seats = con.execute(
        "SELECT s.set_id, s.pair_id, CASE s.slot WHEN 'female' THEN p.female ELSE p.male END, s.attribute, "
        "s.category FROM run_contests AS s JOIN run_name_pairs AS p ON p.run_id = s.run_id AND p.pair_id = s.pair_id "
        "WHERE s.run_id = ?",
        [run_id],
    ).fetchall()
    contests: dict[tuple[int, int], set] = {}
    for set_id, pair_id, *person in seats:
        contests.setdefault((int(set_id), int(pair_id)), set()).add(tuple(person))
    played: dict[int, set] = {}
    for (set_id, _), people in contests.items():
        played.setdefault(set_id, set()).add(frozenset(people))
    return {set_id: frozenset(people) for set_id, people in played.items()}


def shared_sets(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> list[int]:
    """The sets every run asked of the same people in the same contests (none unless every run asked name sets)."""
    if not all(over_name_sets(con, run_id) for run_id in run_ids):
        return []
    signatures = [set_signatures(con, run_id) for run_id in run_ids]
    common = set.intersection(*(set(signature) for signature in signatures))
    return sorted(set_id for set_id in common if len({signature[set_id] for signature in signatures}) == 1)


def same_stage1_attributes(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> bool:
    """Whether every run asked stage 1 about the same occupations' same attributes (the grant gaps then pair)."""
    asked = [
        set(
            con.execute(
                "SELECT DISTINCT occupation, category, element_name FROM run_attributes WHERE run_id = ?", [run_id]
            ).fetchall()
        )
        for run_id in run_ids
    ]
    return all(attributes == asked[0] for attributes in asked)


def contrast_comparison(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str], reference: str) -> dict[str, Any]:
    """compare.json's `per_contrast`: the shared sets and every contrast's difference to `reference`."""
    sets = shared_sets(con, run_ids)
    stage1 = same_stage1_attributes(con, run_ids)
    queries = metric_queries()
    counts = {run_id: _counts(con, queries, run_id, sets) for run_id in run_ids} if sets else {}
    rows = [
        {"run_a": reference, "run_b": run_id, **row}
        for run_id in run_ids
        if run_id != reference and counts
        for row in _differences(counts[reference], counts[run_id], stage1)
    ]
    asked = bool(counts) and not counts[reference][1].empty
    return {
        "shared_sets": sets,
        "differences": _tested(rows),
        "method": CONTRAST_DIFFERENCE_METHOD,
        "notes": [] if stage1 or not asked else [STAGE1_OTHER_ATTRIBUTES],
    }


def _counts(
    con: duckdb.DuckDBPyConnection, queries: dict[str, str], run_id: str, sets: Sequence[int]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The run's contest and stage-1 grant counts per set (metrics.sql), restricted to the shared `sets`."""
    params = {"run_id": run_id}
    contests = con.execute(queries["contrast_counts"], params).df()
    grants = con.execute(queries["grant_counts"], params).df()
    return contests[contests["set_id"].isin(sets)], grants[grants["set_id"].isin(sets)]


def _differences(
    reference: tuple[pd.DataFrame, pd.DataFrame], run: tuple[pd.DataFrame, pd.DataFrame], stage1: bool
) -> list[dict[str, Any]]:
    """Every contrast's run-minus-reference estimate (untested) in the conditions both runs asked."""
    rows = []
    keys = ["condition", "attribute", "category_a", "category_b"]
    both = (
        reference[0]
        .merge(run[0], on=[*keys, "set_id"], how="outer", suffixes=("_ref", "_run"))
        .fillna({"hits_ref": 0, "n_ref": 0, "hits_run": 0, "n_run": 0})
    )
    conditions = set(reference[0]["condition"]) & set(run[0]["condition"])
    for key, group in both[both["condition"].isin(conditions)].groupby(keys):
        sides = [
            tuple(group[f"{column}_{side}"].to_numpy(float) for column in ("hits", "n", "n")) for side in ("run", "ref")
        ]
        rows.append(_row(*key, "preference", difference_estimate(*sides), ((1, 0),), ((1, 1),)))
    grants = [frame[frame["condition"] == STAGE1_CONDITION] for frame in (reference[1], run[1])]
    if stage1 and not any(frame.empty for frame in grants):
        for attribute in sorted(set(grants[0]["attribute"]) & set(grants[1]["attribute"])):
            wide = [
                frame[frame["attribute"] == attribute].pivot_table(
                    index="set_id", columns="category", values=["hits", "n"], aggfunc="sum", fill_value=0
                )
                for frame in grants
            ]
            sets = sorted(set(wide[0].index) | set(wide[1].index))
            wide = [table.reindex(sets, fill_value=0) for table in wide]
            categories = sorted(set(wide[0]["n"].columns) & set(wide[1]["n"].columns))
            for a, b in combinations(categories, 2):
                sides = [
                    (table["hits"][c].to_numpy(float), table["n"][c].to_numpy(float), table["n"][c].to_numpy(float))
                    for table in (wide[1], wide[0])
                    for c in (a, b)
                ]
                estimate = contrast_estimate(sides, (1, -1, -1, 1))
                rows.append(
                    _row(STAGE1_CONDITION, attribute, a, b, "grant_gap", estimate, ((1, 0), (-1, 1)), ((1, 2), (-1, 3)))
                )
    return rows


def _row(
    condition: str,
    attribute: str,
    a: str,
    b: str,
    metric: str,
    estimate: DifferenceEstimate,
    run_sides: tuple[tuple[int, int], ...],
    reference_sides: tuple[tuple[int, int], ...],
) -> dict[str, Any]:
    """One difference row; each run's own value over the shared sets is the signed sum of its sides'."""
    values = [
        sum(sign * estimate.sides[index].value for sign, index in sides) for sides in (reference_sides, run_sides)
    ]
    return {
        "condition": condition,
        "attribute": attribute,
        "category_a": a,
        "category_b": b,
        "metric": metric,
        "value_a": clean(values[0]),
        "value_b": clean(values[1]),
        "difference": clean(estimate.value) if estimate.instances else None,
        "sets": estimate.pairs,
        "n_instances": estimate.instances,
        "_estimate": estimate,
    }


def _tested(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with their family's interval, Bonferroni p and flag, in condition, attribute and contrast order."""
    families: dict[tuple, int] = {}
    for row in rows:
        family = (row["run_b"], row["condition"], row["attribute"], row["metric"])
        families[family] = families.get(family, 0) + int(row["_estimate"].estimable)
    tested = []
    for row in rows:
        estimate = row.pop("_estimate")
        comparisons = max(families[row["run_b"], row["condition"], row["attribute"], row["metric"]], 1)
        alpha = (1 - CONFIDENCE) / comparisons
        reachable = estimate.estimable and binomial_min_p(estimate.pairs) < alpha
        interval = estimate.interval(1 - alpha) if reachable else None
        p_value = p_beside(estimate, 0.0, 1 - alpha) if estimate.estimable else None
        p_value = None if p_value is None or math.isnan(p_value) else min(1.0, comparisons * p_value)
        tested.append(
            row
            | {
                "ci_low": clean(interval[0]) if interval else None,
                "ci_high": clean(interval[1]) if interval else None,
                "confidence": clean(1 - alpha),
                "p_value": clean(p_value),
                "comparisons": comparisons,
                "flagged": p_value is not None and p_value < SIGNIFICANCE,
                "method": METHODS[estimate.method] if interval else None,
                "note": None if interval else (TOO_FEW_SETS if estimate.estimable else NOT_ESTIMABLE),
            }
        )
    conditions = [STAGE1_CONDITION, *CONDITIONS]
    return sorted(
        tested,
        key=lambda row: (
            row["run_b"],
            order_index(conditions, row["condition"]),
            row["attribute"].count(" x "),
            row["attribute"],
            row["metric"],
            row["category_a"],
            row["category_b"],
        ),
    )
