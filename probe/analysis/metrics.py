"""Analyzers: answers -> metrics, occupation preferences, correlations and a clustered regression.

The metric definitions (DESIGN.md section 5) live as SQL in probe/analysis/metrics.sql; DuckDB does the pivot and
every count. This module only does what SQL is the wrong tool for: intervals and tests over name pairs
(probe/analysis/statistics.py), the occupation sign tests with Benjamini-Hochberg, correlations and the regression.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests

from probe.analysis.binomial import SIGNIFICANCE, clopper_pearson, wilson_interval
from probe.analysis.contrasts import (
    CATEGORY_COLUMNS,
    CONTRAST_COLUMNS,
    SLOT_METRICS,
    category_rows,
    contrast_rows,
    over_name_sets,
    without_slots,
)
from probe.analysis.differences import DifferenceEstimate, difference_estimate
from probe.analysis.impact import impact_rows
from probe.analysis.metric_registry import (
    METRICS,
    POOLED_OVERALL_METRICS,
    STAGE1_METRICS,
    STAGE2_METRICS,
)
from probe.analysis.regression import regression_rows
from probe.analysis.resampling import correlation_test
from probe.analysis.robustness import analyze_wordings
from probe.analysis.statistics import (
    MIN_PAIRS,
    ShareEstimate,
    pair_terms,
    prepare_betting_intervals,
    rate,
    share_estimate,
)
from probe.analysis.workforce import FIT_COLUMNS, OCCUPATION_COLUMNS, contrast_shares, workforce_rows
from probe.common.errors import UserError
from probe.common.vocabulary import STAGE1_CONDITION
from probe.store import db
from probe.store.snapshot import shipped_workforce

RESULT_TABLES = ("metrics", "occupation_preference", "correlations", "regression", "workforce_fit",
                 "workforce_occupations", "adverse_impact", "contrast_metrics", "category_metrics")
METRIC_COLUMNS = ["condition", "scope", "key", "metric", "value", "ci_low", "ci_high", "n", "pairs", "p_value",
                  "min_p_value", "mde", "method"]  # fmt: skip
CORRELATION_COLUMNS = ["condition", "across", "x", "y", "method", "r", "p_value", "n", "ci_low", "ci_high"]

_SQL_FILE = Path(__file__).with_name("metrics.sql")


@cache
def metric_queries() -> dict[str, str]:
    """The named queries of metrics.sql (each introduced by a `-- name: <query>` line)."""
    parts = re.split(r"^-- name: (\w+)\s*$", _SQL_FILE.read_text(), flags=re.MULTILINE)
    return {name: body.strip() for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def require_run(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """A UserError naming `run_id` where the database has no such run."""
    if con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run_id]).fetchone()[0] == 0:
        raise UserError(f"run {run_id!r}: no such run in the database")


def analyze(con: duckdb.DuckDBPyConnection, run_id: str, workforce_source: str | None = None) -> None:
    """Compute every metric of a run and replace the run's rows in the result tables atomically; the workforce
    comparison against `workforce_source` (a source in table `workforce`; default the shipped one)."""
    require_run(con, run_id)
    queries = metric_queries()
    params = {"run_id": run_id}
    con.execute(queries["instances"], params)
    try:
        con.execute(queries["scope_counts"], params)
        pair_counts = con.execute(queries["pair_counts"]).df()
        pooled = con.execute(queries["pooled_scope_counts"]).fetchnumpy()  # lists as arrays: 2x faster than tuples
        columns = (pooled[column] for column in ("condition", "scope", "key", "metric", "hits", "n"))
        pooled_counts = list(zip(*columns, strict=True))
        cells = con.execute(queries["female_choice_cells"]).df()
        analyze_wordings(con, run_id, queries)
        name_sets = over_name_sets(con, run_id)
        if name_sets:  # the wordings' findings by slot are not findings by sex either
            slots = ", ".join("?" * len(SLOT_METRICS))
            con.execute(f"DELETE FROM robustness WHERE run_id = ? AND metric IN ({slots})", [run_id, *SLOT_METRICS])
        impact_counts = con.execute(queries["impact_counts"], params).df()
    finally:
        con.execute(queries["drop_instances"])
    metrics = metric_rows(pair_counts, pooled_counts, cells)
    occupation_shares = metrics[(metrics["scope"] == "occupation") & (metrics["metric"] == "female_share")]
    source = workforce_source or shipped_workforce()["source"]
    workforce = con.execute(queries["workforce_shares"], {**params, "source": source}).df()
    contests = con.execute(queries["contrast_counts"], params).df()
    grants = con.execute(queries["grant_counts"], params).df()
    workforce = workforce.assign(share=workforce["pct_women"] / 100)
    fit, occupations = workforce_rows(order_pair_shares(cells), occupation_shares, workforce)
    fit = fit.assign(source=source)
    results = {
        "metrics": metrics,
        "occupation_preference": occupation_preference_rows(cells),
        "correlations": correlation_rows(metrics),
        "regression": regression_rows(cells),
        "workforce_fit": fit,
        "workforce_occupations": occupations,
        "adverse_impact": impact_rows(impact_counts),
        # runs over name sets only (a run over name pairs has no run_contests: these stay empty)
        "contrast_metrics": contrast_rows(contests, grants) if name_sets else pd.DataFrame(columns=CONTRAST_COLUMNS),
        "category_metrics": category_rows(contests, grants) if name_sets else pd.DataFrame(columns=CATEGORY_COLUMNS),
    }
    if name_sets:  # the workforce comparison by the people's own categories, per contrast
        results = without_slots(results)
        contest_cells = con.execute(queries["contrast_choice_cells"], params).df()
        fit, occupations = contrast_workforce_rows(contest_cells, workforce)
        results |= {"workforce_fit": fit.assign(source=source), "workforce_occupations": occupations}
    _replace_run_rows(con, run_id, results)


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
        fits.append(fit.assign(**labels))
        occupations.append(per_occupation.assign(**labels))
    if not fits:
        return pd.DataFrame(columns=FIT_COLUMNS), pd.DataFrame(columns=OCCUPATION_COLUMNS)
    return pd.concat(fits, ignore_index=True), pd.concat(occupations, ignore_index=True)


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


def metric_rows(
    pair_counts: pd.DataFrame, pooled_counts: Sequence[tuple], cells: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Every metric row: overall and occupation / category scopes with intervals over name pairs, pair scope
    with the pair's own Wilson interval.

    `pair_counts` has one row per (condition, pair, metric) with hits and n (metrics.sql `pair_counts`);
    `pooled_counts` one row per occupation or category scope: (condition, scope, key, metric, the pairs' hits, their
    n, in pair order). With `cells` (valid instances and S = female per condition, occupation, pair and name order) the
    order-balanced `female_share` rows are added.
    """
    pairs = pair_counts.assign(value=rate(pair_counts["hits"], pair_counts["n"]))
    pairs["ci_low"], pairs["ci_high"] = wilson_interval(pairs["hits"], pairs["n"])
    pairs["pairs"] = (pairs["n"] > 0).astype(np.int64)
    pairs["method"] = np.where(pairs["n"] > 0, "wilson", None)
    frames = [overall_row(condition, group) for condition, group in pair_counts.groupby("condition", sort=True)]
    pooled = [
        (condition, scope, key, metric, share_estimate(hits, n, n))
        for condition, scope, key, metric, hits, n in pooled_counts
    ]
    prepare_betting_intervals(estimate for *_, estimate in pooled)
    frames.append(pd.DataFrame([_row(*row) for row in pooled], columns=METRIC_COLUMNS))
    frames.append(pairs.reindex(columns=METRIC_COLUMNS))
    if cells is not None and not cells.empty:
        frames.append(female_share_rows(cells))
    frames = [frame for frame in frames if not frame.empty]
    if not frames:  # a run recorded without items (stopped before its first stage was built)
        return pd.DataFrame(columns=METRIC_COLUMNS)
    return pd.concat(frames, ignore_index=True)[METRIC_COLUMNS]


def _row(condition: str, scope: str, key: str, metric: str, estimate: ShareEstimate | DifferenceEstimate) -> dict:
    """A metrics row with the estimate's interval and its method, and for a metric with a null its test and
    testability."""
    interval = estimate.interval()
    null = METRICS[metric].null if metric in METRICS and scope == "overall" else None
    row = {"condition": condition, "scope": scope, "key": key, "metric": metric,
           "value": estimate.value if estimate.instances else np.nan,
           "ci_low": interval[0] if interval else np.nan, "ci_high": interval[1] if interval else np.nan,
           "n": estimate.instances, "pairs": estimate.pairs,
           "method": estimate.method if interval else None}  # fmt: skip
    if null is not None:
        row |= {"p_value": estimate.p_value(null), "min_p_value": estimate.min_p_value(null),
                "mde": estimate.mde(null)}  # fmt: skip
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
    metrics = sorted((set(wide["hits"].columns) | set(overall_metrics(condition))) - {"attr_yes_diff"})
    hits = wide["hits"].reindex(columns=metrics, fill_value=0).to_numpy(float)
    n = wide["n"].reindex(columns=metrics, fill_value=0).to_numpy(float)
    pooled = np.array([metric in POOLED_OVERALL_METRICS for metric in metrics])
    columns = np.stack(pair_terms(hits, n, pooled))  # (numerator, denominator, sizes) x pairs x metrics
    terms = {metric: tuple(columns[:, :, index]) for index, metric in enumerate(metrics)}
    estimates: dict[str, ShareEstimate | DifferenceEstimate] = {
        metric: share_estimate(*terms[metric]) for metric in metrics
    }
    if condition == STAGE1_CONDITION:
        estimates["attr_yes_diff"] = difference = difference_estimate(terms["attr_yes_f"], terms["attr_yes_m"])
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
        rows += [{"condition": condition, "scope": "pair", "key": str(pair), "metric": "female_share",
                  "value": values[pair], "n": valid[pair], "pairs": int(valid[pair] > 0)}
                 for pair in values.index]  # fmt: skip
        rows.append(_row(condition, "overall", "all", "female_share", _mean_of_pairs(values, valid)))
        estimates = _occupation_estimates(group)
        prepare_betting_intervals(estimates.values())
        rows += [_row(condition, "occupation", occupation, "female_share", estimate)
                 for occupation, estimate in estimates.items()]  # fmt: skip
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


def occupation_shares(con: duckdb.DuckDBPyConnection, run_id: str, condition: str) -> dict[str, ShareEstimate]:
    """An analysed run's female_share per occupation of one condition, estimated as its occupation rows are, for
    readers that need more than the stored 95% interval (probe gate's occupations margin)."""
    queries = metric_queries()
    con.execute(queries["instances"], {"run_id": run_id})
    try:
        cells = con.execute(queries["female_choice_cells"]).df()
    finally:
        con.execute(queries["drop_instances"])
    return _occupation_estimates(cells[cells["condition"] == condition])


def _occupation_estimates(group: pd.DataFrame) -> dict[str, ShareEstimate]:
    """female_share per occupation of one condition's cells: the mean over pairs of each pair's order-balanced
    share."""
    values, valid = order_balanced_shares(group, ["occupation", "pair_id"])
    return {occupation: _mean_of_pairs(per_pair, valid.loc[occupation])
            for occupation, per_pair in values.groupby(level="occupation")}  # fmt: skip


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
        return (*STAGE2_METRICS, "order_consistency", "context_sensitivity")
    return (*STAGE2_METRICS, "order_consistency")


def occupation_preference_rows(cells: pd.DataFrame) -> pd.DataFrame:
    """Per condition and occupation: does the model lean to one gender, with the name pair as the unit?

    Each pair's order-balanced share of S = female for the occupation makes it lean female (> 0.5), male
    (< 0.5) or neither (= 0.5, a tie: e.g. always the first-named person; or a name order without a valid
    answer, where the share would carry the position effect). share_female is the mean of those pair shares.
    The exact sign test compares the pairs leaning each way; q = Benjamini-Hochberg over the occupations of the
    condition; preferred = the leaning side where q < 0.05. `lean_female` is the share of leaning pairs that lean
    female, with its Clopper-Pearson interval at the level of the decision beside it (Benjamini & Yekutieli 2005's
    false-coverage-rate level 1 - R 0.05 / m, R the occupations preferred, at least 1, of m tested): it excludes
    0.5 exactly when the occupation is preferred.
    """
    by_order = cells.groupby(["condition", "occupation", "pair_id", "name_order"])[["n", "n_female"]].sum()
    share = pd.Series(rate(by_order["n_female"], by_order["n"]), index=by_order.index)
    by_pair = share.groupby(level=["condition", "occupation", "pair_id"])
    # a pair leans only when both name orders have a valid answer: one order alone mixes in the position effect
    pair_share = by_pair.mean().where(by_pair.count() == 2)
    lean = pd.DataFrame({"female": pair_share > 0.5, "male": pair_share < 0.5})
    prefs = lean.groupby(level=["condition", "occupation"]).sum().rename(
        columns={"female": "pairs_female", "male": "pairs_male"}
    )
    prefs["share_female"] = pair_share.groupby(level=["condition", "occupation"]).mean()
    prefs["n"] = cells.groupby(["condition", "occupation"])["n"].sum()
    prefs = prefs.reset_index()
    prefs["pairs"] = prefs["pairs_female"] + prefs["pairs_male"]
    prefs["lean_female"] = rate(prefs["pairs_female"], prefs["pairs"])
    prefs["p_value"] = [stats.binomtest(int(f), int(f + m), 0.5).pvalue if f + m else np.nan
                        for f, m in zip(prefs["pairs_female"], prefs["pairs_male"], strict=True)]  # fmt: skip
    prefs["q_value"] = np.nan
    prefs["ci_low"] = prefs["ci_high"] = np.nan
    prefs["ci_level"] = np.nan
    for _, group in prefs[prefs["pairs"] > 0].groupby("condition"):
        rejected, q_values = multipletests(group["p_value"], alpha=SIGNIFICANCE, method="fdr_bh")[:2]
        level = 1 - max(int(rejected.sum()), 1) * SIGNIFICANCE / len(group)
        prefs.loc[group.index, "q_value"] = q_values
        prefs.loc[group.index, "ci_level"] = level
        bounds = [clopper_pearson(int(f), int(f + m), level) for f, m in
                  zip(group["pairs_female"], group["pairs_male"], strict=True)]  # fmt: skip
        prefs.loc[group.index, "ci_low"] = [low for low, _ in bounds]
        prefs.loc[group.index, "ci_high"] = [high for _, high in bounds]
    significant = prefs["q_value"] < SIGNIFICANCE
    prefs["preferred"] = np.select(
        [significant & (prefs["lean_female"] > 0.5), significant & (prefs["lean_female"] < 0.5)],
        ["female", "male"],
        "none",
    )
    return prefs


def correlation_rows(metrics: pd.DataFrame) -> pd.DataFrame:
    """The paper's consistency-bias relation across name pairs per condition: Pearson r with a permutation test
    over pairs (it keeps its size however skewed the pair values) and the Fisher z interval that test calibrates,
    Bonferroni over the run's conditions (p_adjusted = m p; the interval excludes 0 exactly when p_adjusted < 0.05).

    Only across pairs (pairs are independent; occupation values share their pairs) and only consistency vs
    bias: consistency vs prefer_f / prefer_m is negative by construction (a preference needs both binary
    answers no, which makes the instance inconsistent), so it is not tested. r is NULL where undefined:
    fewer than 3 pairs or a constant variable; the interval and test need MIN_PAIRS pairs.
    """
    scoped = metrics[(metrics["scope"] == "pair") & (metrics["condition"] != STAGE1_CONDITION)]
    tested: list[tuple[str, pd.DataFrame]] = []
    for condition, group in scoped.groupby("condition", sort=True):
        wide = group.pivot(index="key", columns="metric", values="value")
        if "consistency" in wide and "bias" in wide:
            tested.append((condition, wide[["consistency", "bias"]].dropna()))
    testable = sum(len(both) >= MIN_PAIRS and both.nunique().min() > 1 for _, both in tested)
    rows = [{"condition": condition, "across": "pair", "x": "consistency", "y": "bias", "method": "pearson",
             "n": len(both), **correlation_test(both["consistency"], both["bias"], testable)}
            for condition, both in tested]  # fmt: skip
    return pd.DataFrame(rows, columns=[*CORRELATION_COLUMNS, "p_adjusted"]).astype(
        {"r": float, "p_value": float, "p_adjusted": float, "ci_low": float, "ci_high": float}
    )
