"""Analyzers: answers -> metrics, occupation preferences, correlations and a clustered regression.

The metric definitions (DESIGN.md section 5) live as SQL in probe/metrics.sql; DuckDB does the pivot and
every count. This module only does what SQL is the wrong tool for: clustered and Wilson intervals,
binomial tests with Benjamini-Hochberg, correlations and the regression.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests

from probe import db
from probe.errors import UserError
from probe.metric_registry import POOLED_OVERALL_METRICS, STAGE1_METRICS, STAGE2_METRICS
from probe.regression import regression_rows
from probe.statistics import (
    SIGNIFICANCE,
    cluster_standard_error,
    cluster_t_interval,
    ratio_influence,
    wilson_interval,
)

CORRELATED_WITH_CONSISTENCY = ("bias", "prefer_f", "prefer_m")
RESULT_TABLES = ("metrics", "occupation_preference", "correlations", "regression")
METRIC_COLUMNS = ["condition", "scope", "key", "metric", "value", "ci_low", "ci_high", "n"]

_SQL_FILE = Path(__file__).with_name("metrics.sql")


@cache
def metric_queries() -> dict[str, str]:
    """The named queries of metrics.sql (each introduced by a `-- name: <query>` line)."""
    parts = re.split(r"^-- name: (\w+)\s*$", _SQL_FILE.read_text(), flags=re.MULTILINE)
    return {name: body.strip() for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def analyze(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """Compute every metric of a run and replace the run's rows in the four result tables atomically."""
    if con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run_id]).fetchone()[0] == 0:
        raise UserError(f"run {run_id!r}: no such run in the database")
    queries = metric_queries()
    params = {"run_id": run_id}
    con.execute(queries["instances"], params)
    try:
        counts = con.execute(queries["scope_counts"], params).df()
        cells = con.execute(queries["female_choice_cells"]).df()
    finally:
        con.execute(queries["drop_instances"])
    metrics = metric_rows(counts, cells)
    results = {
        "metrics": metrics,
        "occupation_preference": occupation_preference_rows(cells),
        "correlations": correlation_rows(metrics),
        "regression": regression_rows(cells),
    }
    _replace_run_rows(con, run_id, results)


def _replace_run_rows(con: duckdb.DuckDBPyConnection, run_id: str, results: dict[str, pd.DataFrame]) -> None:
    """Delete the run's old analysis and insert the new one in one transaction (never duplicates)."""
    views = {table: f"new_{table}_rows" for table in RESULT_TABLES}
    for table, view in views.items():
        con.register(view, results[table])
    try:
        with db.transaction(con):
            for table, view in views.items():
                con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
                if not results[table].empty:
                    con.execute(f"INSERT INTO {table} BY NAME SELECT ?::VARCHAR AS run_id, * FROM {view}", [run_id])
    finally:
        for view in views.values():
            con.unregister(view)


def metric_rows(counts: pd.DataFrame, cells: pd.DataFrame | None = None) -> pd.DataFrame:
    """Pair and occupation rows (pooled share, Wilson CI) plus the overall rows (cluster-robust CI over pairs).

    With `cells` (valid instances and S = female per condition, occupation, pair and name order) the
    order-balanced `female_share` rows are added.
    """
    scoped = counts.copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        scoped["value"] = np.where(scoped["n"] > 0, scoped["hits"] / scoped["n"], np.nan)
    scoped["ci_low"], scoped["ci_high"] = wilson_interval(scoped["hits"], scoped["n"])
    overall = [
        overall_row(condition, pair_counts)
        for condition, pair_counts in counts[counts["scope"] == "pair"].groupby("condition", sort=True)
    ]
    if cells is not None and not cells.empty:
        overall.append(female_share_rows(cells))
    overall_frame = pd.concat(overall, ignore_index=True) if overall else pd.DataFrame(columns=METRIC_COLUMNS)
    return pd.concat([overall_frame[METRIC_COLUMNS], scoped[METRIC_COLUMNS]], ignore_index=True)


def overall_row(condition: str, pair_counts: pd.DataFrame) -> pd.DataFrame:
    """Overall value of every metric of one condition with a 95% CI clustered by name pair.

    Each overall value is a ratio of pair sums: mean-of-pairs metrics sum the pair values over pairs with
    at least one valid instance; pooled metrics sum hits over instances. Its interval uses the ratio's
    cluster-robust standard error over pairs (for a mean of pair values: their standard deviation over
    sqrt(pairs)) with a t quantile on pairs - 1 degrees of freedom. Stage 1 also gets `attr_yes_diff`
    (women minus men), paired by name pair.
    """
    wide = pair_counts.pivot(index="key", columns="metric", values=["hits", "n"]).fillna(0)
    wide = wide.loc[sorted(wide.index, key=int)]
    metrics = sorted((set(wide["hits"].columns) | set(overall_metrics(condition))) - {"attr_yes_diff"})
    hits = wide["hits"].reindex(columns=metrics, fill_value=0).to_numpy(float)
    n = wide["n"].reindex(columns=metrics, fill_value=0).to_numpy(float)
    pooled = np.array([metric in POOLED_OVERALL_METRICS for metric in metrics])
    with np.errstate(invalid="ignore", divide="ignore"):
        pair_values = np.where(n > 0, hits / n, 0.0)
    numerator = np.where(pooled, hits, pair_values)
    denominator = np.where(pooled, n, (n > 0).astype(float))
    totals = n.sum(axis=0)
    difference = None
    if condition == "stage1":
        difference = (metrics.index("attr_yes_f"), metrics.index("attr_yes_m"))
        metrics.append("attr_yes_diff")
        totals = np.append(totals, totals[difference[0]] + totals[difference[1]])
    return _overall_frame(condition, metrics, *_cluster_interval(numerator, denominator, difference), totals)


def _cluster_interval(
    numerator: np.ndarray, denominator: np.ndarray, difference: tuple[int, int] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Estimate, 95% bounds and contributing pairs of sum(numerator) / sum(denominator) per column.

    Bounds: cluster-robust (CR1) standard error over name pairs with a t quantile on pairs - 1 df. With
    `difference` = (i, j), a column for ratio i minus ratio j is appended, its influence values the
    difference of theirs, so its interval is paired by name pair.
    """
    weights = np.ones((1, len(numerator)))
    ratio, psi = ratio_influence(numerator, denominator, weights)
    units = (denominator > 0).sum(axis=0)
    lowest = np.zeros(len(units))  # every overall metric is a share (0 to 1) but the difference (-1 to 1)
    if difference is not None:
        first, second = difference
        ratio = np.column_stack([ratio, ratio[:, first] - ratio[:, second]])
        psi = np.concatenate([psi, psi[:, :, first : first + 1] - psi[:, :, second : second + 1]], axis=2)
        units = np.append(units, min(units[first], units[second]))
        lowest = np.append(lowest, -1.0)
    errors = cluster_standard_error(psi, weights)
    low, high = cluster_t_interval(ratio[0], errors[0], units, (lowest, 1.0))
    return ratio[0], low, high, units


def _overall_frame(
    condition: str,
    metrics: list[str],
    estimate: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    estimable: np.ndarray,
    totals: np.ndarray,
) -> pd.DataFrame:
    """Overall rows; the interval is NaN with fewer than 2 contributing pairs or no spread between them."""
    return pd.DataFrame(
        {
            "condition": condition,
            "scope": "overall",
            "key": "all",
            "metric": metrics,
            "value": np.where(estimable > 0, estimate, np.nan),
            "ci_low": low,
            "ci_high": high,
            "n": np.asarray(totals).astype(np.int64),
        }
    )


def female_share_rows(cells: pd.DataFrame) -> pd.DataFrame:
    """`female_share`: share of S = female averaged over the two name orders, per pair and overall.

    Balancing over name order removes the position effect (a model that always picks the first-named
    person scores exactly 0.5). Pair value = mean over its orders with valid instances of (S = female) /
    valid; overall = mean of pair values over pairs with any valid instance, cluster-robust CI over pairs;
    occupation scope = the same balance pooled over pairs.
    """
    rows = []
    for condition, group in cells.groupby("condition", sort=True):
        by_order = group.groupby(["pair_id", "name_order"])[["n", "n_female"]].sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            share = (by_order["n_female"] / by_order["n"]).where(by_order["n"] > 0)
        pair_values = share.groupby(level="pair_id").mean()
        valid = group.groupby("pair_id")["n"].sum().reindex(pair_values.index)
        has_value = pair_values.notna().to_numpy(float)[:, None]
        estimate, low, high, units = _cluster_interval(pair_values.fillna(0).to_numpy()[:, None], has_value)
        rows.append(_overall_frame(condition, ["female_share"], estimate, low, high, units, [valid.sum()]))
        pairs = pd.DataFrame({"key": pair_values.index.astype(str), "value": pair_values.to_numpy(),
                              "n": valid.to_numpy()})  # fmt: skip
        rows.append(pairs.assign(condition=condition, scope="pair", metric="female_share"))
        by_occupation = group.groupby(["occupation", "name_order"])[["n", "n_female"]].sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            occupation_share = (by_occupation["n_female"] / by_occupation["n"]).where(by_occupation["n"] > 0)
        occupations = occupation_share.groupby(level="occupation").mean()
        valid_occupation = group.groupby("occupation")["n"].sum().reindex(occupations.index)
        rows.append(
            pd.DataFrame({"key": occupations.index, "value": occupations.to_numpy(), "n": valid_occupation}).assign(
                condition=condition, scope="occupation", metric="female_share"
            )
        )
    frame = pd.concat(rows, ignore_index=True)
    return frame.reindex(columns=METRIC_COLUMNS).astype({"n": np.int64})


def overall_metrics(condition: str) -> tuple[str, ...]:
    """The metrics every condition has an overall row for (NULL when nothing to compute it from)."""
    if condition == "stage1":
        return STAGE1_METRICS
    if condition == "taxonomy":
        return (*STAGE2_METRICS, "order_consistency", "context_sensitivity")
    return (*STAGE2_METRICS, "order_consistency")


def occupation_preference_rows(cells: pd.DataFrame) -> pd.DataFrame:
    """Per condition and occupation: share with S = female, Wilson CI, exact binomial test vs 0.5, BH q."""
    prefs = cells.groupby(["condition", "occupation"], as_index=False)[["n", "n_female"]].sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        prefs["share_female"] = np.where(prefs["n"] > 0, prefs["n_female"] / prefs["n"], np.nan)
    prefs["ci_low"], prefs["ci_high"] = wilson_interval(prefs["n_female"], prefs["n"])
    prefs["p_value"] = [
        stats.binomtest(int(k), int(n), 0.5).pvalue if n > 0 else np.nan
        for k, n in zip(prefs["n_female"], prefs["n"], strict=True)
    ]
    prefs["q_value"] = np.nan
    for _, group in prefs[prefs["n"] > 0].groupby("condition"):
        prefs.loc[group.index, "q_value"] = multipletests(group["p_value"], method="fdr_bh")[1]
    significant = prefs["q_value"] < SIGNIFICANCE
    prefs["preferred"] = np.select(
        [significant & (prefs["share_female"] > 0.5), significant & (prefs["share_female"] < 0.5)],
        ["female", "male"],
        "none",
    )
    return prefs.drop(columns="n_female")


def correlation_rows(metrics: pd.DataFrame) -> pd.DataFrame:
    """Consistency vs bias, prefer_f and prefer_m across name pairs and across occupations, per condition.

    r and p are NULL where undefined: fewer than 3 points or a constant variable.
    """
    rows = []
    scoped = metrics[metrics["scope"].isin(["pair", "occupation"])]
    for (condition, scope), group in scoped.groupby(["condition", "scope"], sort=True):
        wide = group.pivot(index="key", columns="metric", values="value")
        if "consistency" not in wide:
            continue
        for other in CORRELATED_WITH_CONSISTENCY:
            both = wide[["consistency", other]].dropna()
            x, y = both["consistency"].to_numpy(), both[other].to_numpy()
            defined = len(both) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0
            for method, test in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr)):
                r, p = test(x, y) if defined else (np.nan, np.nan)
                rows.append((condition, scope, "consistency", other, method, float(r), float(p), len(both)))
    return pd.DataFrame(rows, columns=["condition", "across", "x", "y", "method", "r", "p_value", "n"])
