"""Analyzers: answers -> metrics, occupation preferences, correlations and a clustered regression.

The metric definitions (DESIGN.md section 5) live as SQL in probe/analysis/metrics.sql; DuckDB does the pivot and
every count. This module only does what SQL is the wrong tool for: intervals and tests over name pairs
(probe/analysis/statistics.py), the occupation sign tests with Benjamini-Hochberg, correlations and the regression.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import duckdb
import numpy as np
import pandas as pd

from probe.analysis.binomial import wilson_interval
from probe.analysis.contrast_findings import contrast_findings
from probe.analysis.contrasts import (
    CATEGORY_COLUMNS,
    CONTRAST_COLUMNS,
    SLOT_METRICS,
    by_set,
    category_rows,
    contrast_rows,
    kway_counts,
    without_slots,
)
from probe.analysis.differences import DifferenceEstimate, difference_estimate
from probe.analysis.metric_registry import (
    ATTR_YES_DIFF,
    ATTR_YES_F,
    ATTR_YES_M,
    CONTEXT_SENSITIVITY,
    FEMALE_SHARE,
    METRICS,
    ORDER_CONSISTENCY,
    POOLED_OVERALL_METRICS,
    STAGE1_METRICS,
    STAGE2_METRICS,
)
from probe.analysis.metric_sql import build_instances, metric_queries
from probe.analysis.pairs import pair_shares
from probe.analysis.preference import correlation_rows, occupation_preference_rows
from probe.analysis.regression import regression_rows
from probe.analysis.robustness import wording_rows
from probe.analysis.run_counts import RunCounts, read_counts
from probe.analysis.statistics import ShareEstimate, pair_terms, prepare_betting_intervals, rate, share_estimate
from probe.analysis.workforce import FIT_COLUMNS, OCCUPATION_COLUMNS, contrast_shares, workforce_rows
from probe.common.vocabulary import STAGE1_CONDITION
from probe.store import db
from probe.store.snapshot import shipped_workforce

RESULT_TABLES = (
    "metrics",
    "robustness",
    "occupation_preference",
    "correlations",
    "regression",
    "workforce_fit",
    "workforce_occupations",
    "adverse_impact",
    "contrast_metrics",
    "category_metrics",
    "pair_shares",
    "pair_heterogeneity",
    "instance_metrics",
    "impact_counts",
    "contrast_counts",
    "grant_counts",
    "contrast_occupations",
    "contrast_robustness",
)
METRIC_COLUMNS = [
    "condition",
    "scope",
    "key",
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "pairs",
    "p_value",
    "min_p_value",
    "mde",
    "method",
]


def analyze(
    con: duckdb.DuckDBPyConnection, run_id: str, workforce_source: str | None = None, built: bool = False
) -> None:
    """Compute every metric of a run and replace the run's rows in the result tables atomically; the workforce
    comparison against `workforce_source` (a source in table `workforce`; default the shipped one). The tables hold
    everything the report and compare read (pair shares, the heterogeneity test, per-instance counts): no later step
    computes a statistic. The statistics run on a second thread while DuckDB stores the per-instance rows. `built`:
    the run's instances are built already (metric_sql.build_instances, which pipeline.analyze runs while it imports
    this module)."""
    if not built:
        build_instances(con, run_id)
    queries = metric_queries()
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            counts = read_counts(con, run_id, queries, workforce_source or shipped_workforce()["source"], pool)
            statistics = pool.submit(result_frames, counts)
            _replace_run_rows(con, run_id, queries, statistics.result, counts.name_sets)
    finally:
        con.execute(queries["drop_instances"])


def result_frames(counts: RunCounts) -> dict[str, pd.DataFrame]:
    """The result tables analyze() stores as frames (all but instance_metrics), from the run's counts alone."""
    name_sets = counts.name_sets
    metrics = metric_rows(counts.pair_counts, counts.pooled_counts, counts.cells, counts.sets if name_sets else None)
    occupation_shares = metrics[(metrics["scope"] == "occupation") & (metrics["metric"] == FEMALE_SHARE)]
    impact_counts, contests, grants = counts.impact_counts, counts.contests, counts.grants
    kway = kway_counts(impact_counts)
    workforce = counts.workforce.assign(share=counts.workforce["pct_women"] / 100)
    fit, occupations = workforce_rows(order_pair_shares(counts.cells), occupation_shares, workforce)
    fit = fit.assign(source=counts.source)
    by_sex = counts.by_wording.iloc[0:0] if name_sets else counts.by_wording
    results = {
        "metrics": metrics,
        "robustness": wording_rows(
            counts.by_wording, counts.wording_grants, counts.wordings, counts.sets if name_sets else None
        ),
        "occupation_preference": occupation_preference_rows(counts.cells),
        "correlations": correlation_rows(metrics),  # across the pairs, or a run over name sets' sets
        "regression": regression_rows(counts.cells),
        "workforce_fit": fit,
        "workforce_occupations": occupations,
        "adverse_impact": counts.adverse_impact.result(),
        # what carries the woman's share: none for a run over name sets (its slots are no sexes)
        "pair_shares": pair_shares(by_sex),
        "pair_heterogeneity": counts.heterogeneity.result(),
        "impact_counts": impact_counts[impact_counts["scope"] == "overall"],  # the gates' counts (stored.py)
        "contrast_counts": contests,
        "grant_counts": grants,
        # runs over name sets only (a run over name pairs has no run_contests: these stay empty)
        "contrast_metrics": contrast_rows(contests, grants, kway, counts.instances)
        if name_sets
        else pd.DataFrame(columns=CONTRAST_COLUMNS),
        "category_metrics": category_rows(contests, grants, kway)
        if name_sets
        else pd.DataFrame(columns=CATEGORY_COLUMNS),
    }
    if name_sets:  # the contrasts' findings, and the workforce comparison by the people's own categories
        results = without_slots(results)
        results |= contrast_findings(counts.contest_cells, counts.contest_grants, counts.wordings)
        fit, occupations = contrast_workforce_rows(counts.contest_cells, workforce)
        results |= {"workforce_fit": fit.assign(source=counts.source), "workforce_occupations": occupations}
    return results


def contrast_workforce_rows(cells: pd.DataFrame, workforce: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A run over name sets' workforce comparison: per contrast whose two categories the source has shares for,
    category_a's share of picks in the woman's place and the sets in the pairs' (metrics.sql
    `contrast_choice_cells`), set against category_a's share of the two categories' workers."""
    fits, occupations = [], []
    for (attribute, a, b), group in cells.groupby(["attribute", "category_a", "category_b"], sort=True):
        shares = contrast_shares(workforce, attribute, a, b)
        if shares is None:
            continue
        rows = female_share_rows(group)
        fit, per_occupation = workforce_rows(order_pair_shares(group), rows[rows["scope"] == "occupation"], shares)
        labels = {"attribute": attribute, "category_a": a, "category_b": b}
        method = fit["method"].str.replace("name pairs", "name sets").str.replace("woman named first", f"{a} first")
        fits.append(fit.assign(**labels, method=method))  # its units are the sets, its first-named person a's
        occupations.append(per_occupation.assign(**labels))
    if not fits:
        return pd.DataFrame(columns=FIT_COLUMNS), pd.DataFrame(columns=OCCUPATION_COLUMNS)
    return pd.concat(fits, ignore_index=True), pd.concat(occupations, ignore_index=True)


def _replace_run_rows(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    queries: dict[str, str],
    results: Callable[[], dict[str, pd.DataFrame]],
    name_sets: bool,
) -> None:
    """Delete the run's old analysis and insert the new one in one transaction (never duplicates): first the
    per-instance rows, straight from metric_instances in DuckDB (metrics.sql `instance_units`, a run over name sets'
    slot metrics left out: seconds at 1M answers, while `results` computes the statistics on another thread), then
    the frames `results()` returns."""
    with db.transaction(con):
        for table in RESULT_TABLES:
            con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
        without = list(SLOT_METRICS) if name_sets else []
        con.execute(queries["instance_units"], {"run_id": run_id, "without": without})
        for table, frame in results().items():
            if frame.empty:
                continue
            view = f"new_{table}_rows"
            con.register(view, frame)
            try:
                con.execute(f"INSERT INTO {table} BY NAME SELECT ?::VARCHAR AS run_id, * FROM {view}", [run_id])
            finally:
                con.unregister(view)


def metric_rows(
    pair_counts: pd.DataFrame,
    pooled_counts: Sequence[tuple],
    cells: pd.DataFrame | None = None,
    sets: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Every metric row: overall and occupation / category scopes with intervals over name pairs, pair scope
    with the pair's own Wilson interval.

    `pair_counts` has one row per (condition, pair, metric) with hits and n (metrics.sql `pair_counts`);
    `pooled_counts` one row per occupation or category scope: (condition, scope, key, metric, its units' hits, their
    n: the pairs', or a run over name sets' sets'). With `cells` (valid instances and S = female per condition,
    occupation, pair and name order) the order-balanced `female_share` rows are added. With `sets` (a run over name
    sets: each contest's pair_id and set_id) the overall rows have the set as their unit, each set's counts summed
    over its contests, and each set has a row of its own (scope `set`, its Wilson interval)."""
    units = pair_counts if sets is None else by_set(pair_counts, sets)
    frames = [overall_row(condition, group) for condition, group in units.groupby("condition", sort=True)]
    pooled = [
        (condition, scope, key, metric, share_estimate(hits, n, n))
        for condition, scope, key, metric, hits, n in pooled_counts
    ]
    prepare_betting_intervals(estimate for *_, estimate in pooled)
    frames.append(pd.DataFrame([_row(*row) for row in pooled], columns=METRIC_COLUMNS))
    frames += [_unit_rows(pair_counts)] + ([] if sets is None else [_unit_rows(units.assign(scope="set"))])
    if cells is not None and not cells.empty:
        frames.append(female_share_rows(cells))
    frames = [frame for frame in frames if not frame.empty]
    if not frames:  # a run recorded without items (stopped before its first stage was built)
        return pd.DataFrame(columns=METRIC_COLUMNS)
    return pd.concat(frames, ignore_index=True)[METRIC_COLUMNS]


def _unit_rows(counts: pd.DataFrame) -> pd.DataFrame:
    """One metrics row per unit (a pair, or a set) and metric: its value with its own Wilson interval."""
    units = counts.assign(value=rate(counts["hits"], counts["n"]), pairs=(counts["n"] > 0).astype(np.int64))
    units["ci_low"], units["ci_high"] = wilson_interval(units["hits"], units["n"])
    units["method"] = np.where(units["n"] > 0, "wilson", None)
    return units.reindex(columns=METRIC_COLUMNS)


def _row(condition: str, scope: str, key: str, metric: str, estimate: ShareEstimate | DifferenceEstimate) -> dict:
    """A metrics row with the estimate's interval and its method, and for a metric with a null its test and
    testability."""
    interval = estimate.interval()
    null = METRICS[metric].null if metric in METRICS and scope == "overall" else None
    row = {
        "condition": condition,
        "scope": scope,
        "key": key,
        "metric": metric,
        "value": estimate.value if estimate.instances else np.nan,
        "ci_low": interval[0] if interval else np.nan,
        "ci_high": interval[1] if interval else np.nan,
        "n": estimate.instances,
        "pairs": estimate.pairs,
        "method": estimate.method if interval else None,
    }
    if null is not None:
        row |= {"p_value": estimate.p_value(null), "min_p_value": estimate.min_p_value(null), "mde": estimate.mde(null)}
    return row


def overall_row(condition: str, pair_counts: pd.DataFrame) -> pd.DataFrame:
    """Overall value of every metric of one condition with its interval over name pairs.

    Each overall value is a ratio of pair sums: mean-of-pairs metrics sum the pair values over pairs with
    at least one valid instance; pooled metrics sum hits over instances. The interval is the one
    `share_estimate` chooses for what the pairs show. Stage 1 also gets `attr_yes_diff` (women minus men),
    paired by name pair: `difference_estimate`, the paired cluster t over the pairs' influence differences.
    """
    wide = pair_counts.pivot(index="key", columns="metric", values=["hits", "n"]).fillna(0)
    wide = wide.loc[sorted(wide.index, key=int)]
    metrics = sorted((set(wide["hits"].columns) | set(overall_metrics(condition))) - {ATTR_YES_DIFF})
    hits = wide["hits"].reindex(columns=metrics, fill_value=0).to_numpy(float)
    n = wide["n"].reindex(columns=metrics, fill_value=0).to_numpy(float)
    pooled = np.array([metric in POOLED_OVERALL_METRICS for metric in metrics])
    columns = np.stack(pair_terms(hits, n, pooled))  # (numerator, denominator, sizes) x pairs x metrics
    terms = {metric: tuple(columns[:, :, index]) for index, metric in enumerate(metrics)}
    estimates: dict[str, ShareEstimate | DifferenceEstimate] = {
        metric: share_estimate(*terms[metric]) for metric in metrics
    }
    if condition == STAGE1_CONDITION:
        estimates[ATTR_YES_DIFF] = difference = difference_estimate(terms[ATTR_YES_F], terms[ATTR_YES_M])
        if difference.mapped is not None:
            prepare_betting_intervals([difference.mapped])
    prepare_betting_intervals(estimate for estimate in estimates.values() if isinstance(estimate, ShareEstimate))
    rows = [_row(condition, "overall", "all", metric, estimate) for metric, estimate in estimates.items()]
    return pd.DataFrame(rows).reindex(columns=METRIC_COLUMNS)


def female_share_rows(cells: pd.DataFrame) -> pd.DataFrame:
    """`female_share`: share of S = female averaged over the two name orders, per pair, occupation and overall.

    Balancing over name order removes the position effect (a model that always picks the first-named
    person scores exactly 0.5). Pair value = mean over its orders with valid instances of (S = female) /
    valid; overall = mean of pair values over pairs with any valid instance, its interval over pairs;
    occupation scope = the mean over pairs of the pair's order-balanced share for that occupation.
    """
    rows = []
    for condition, group in cells.groupby("condition", sort=True):
        values, valid = order_balanced_shares(group, ["pair_id"])
        rows += [
            {
                "condition": condition,
                "scope": "pair",
                "key": str(pair),
                "metric": FEMALE_SHARE,
                "value": values[pair],
                "n": valid[pair],
                "pairs": int(valid[pair] > 0),
            }
            for pair in values.index
        ]
        rows.append(_row(condition, "overall", "all", FEMALE_SHARE, _mean_of_pairs(values, valid)))
        estimates = occupation_estimates(group)
        prepare_betting_intervals(estimates.values())
        rows += [
            _row(condition, "occupation", occupation, FEMALE_SHARE, estimate)
            for occupation, estimate in estimates.items()
        ]
    return pd.DataFrame(rows).reindex(columns=METRIC_COLUMNS)


def order_balanced_shares(cells: pd.DataFrame, keys: list[str]) -> tuple[pd.Series, pd.Series]:
    """Per `keys` (ending in pair_id): the share of S = female averaged over the name orders with valid instances,
    and the valid instances behind it."""
    by_order = cells.groupby([*keys, "name_order"])[["n", "n_female"]].sum()
    share = pd.Series(rate(by_order["n_female"], by_order["n"]), index=by_order.index)
    values = share.groupby(level=keys).mean()
    return values, cells.groupby(keys)["n"].sum().reindex(values.index)


def order_pair_shares(cells: pd.DataFrame) -> pd.DataFrame:
    """The pair shares behind each occupation's female_share, per name order: index (condition, occupation,
    pair_id), one column per name order (NaN where the pair has no valid answer in it); their mean over the orders
    with an answer is the pair's order-balanced share."""
    if cells.empty:
        return pd.DataFrame(index=pd.MultiIndex.from_tuples([], names=["condition", "occupation", "pair_id"]))
    by_order = cells.groupby(["condition", "occupation", "pair_id", "name_order"])[["n", "n_female"]].sum()
    return pd.Series(rate(by_order["n_female"], by_order["n"]), index=by_order.index).unstack("name_order")


def occupation_estimates(group: pd.DataFrame) -> dict[str, ShareEstimate]:
    """female_share per occupation of one condition's cells: the mean over pairs of each pair's order-balanced
    share."""
    values, valid = order_balanced_shares(group, ["occupation", "pair_id"])
    return {
        occupation: _mean_of_pairs(per_pair, valid.loc[occupation])
        for occupation, per_pair in values.groupby(level="occupation")
    }


def _mean_of_pairs(values: pd.Series, valid: pd.Series) -> ShareEstimate:
    """The mean of pair values (NaN = a pair without valid instances, left out) as a ShareEstimate."""
    present = values.to_numpy(float)
    used = ~np.isnan(present)
    return share_estimate(present[used], np.ones(int(used.sum())), np.asarray(valid, dtype=float)[used])


def overall_metrics(condition: str) -> tuple[str, ...]:
    """The metrics every condition has an overall row for (NULL when nothing to compute it from)."""
    if condition == STAGE1_CONDITION:
        return STAGE1_METRICS
    if condition == "taxonomy":
        return (*STAGE2_METRICS, ORDER_CONSISTENCY, CONTEXT_SENSITIVITY)
    return (*STAGE2_METRICS, ORDER_CONSISTENCY)
