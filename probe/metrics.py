"""Analyzers: answers -> metrics, occupation preferences, correlations and a clustered regression.

The metric definitions (DESIGN.md section 5) live as SQL in probe/metrics.sql; DuckDB does the pivot and
every count. This module only does what SQL is the wrong tool for: bootstrap and Wilson intervals,
binomial tests with Benjamini-Hochberg, correlations and the regression.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
from rich.table import Table
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from probe import db
from probe.errors import UserError

BOOTSTRAP_REPLICATES = 2000
BOOTSTRAP_SEED = 20240229
CONFIDENCE = 0.95
SIGNIFICANCE = 0.05

# Overall values that are a pooled share over the whole condition; every other metric's overall value is
# the mean of its per-pair values ("averaged across gendered names").
POOLED_OVERALL_METRICS = frozenset(
    {"unknown_rate", "order_consistency", "context_sensitivity", "attr_yes_f", "attr_yes_m"}
)
FIGURE1_METRICS = ("consistency", "bias", "prefer_f", "prefer_m", "switch_f2m", "switch_m2f")
HEADLINE_METRICS = (*FIGURE1_METRICS, "unknown_rate", "order_consistency", "context_sensitivity")
CONDITION_ORDER = ("taxonomy", "baseline", "control")
CORRELATED_WITH_CONSISTENCY = ("bias", "prefer_f", "prefer_m")
RESULT_TABLES = ("metrics", "occupation_preference", "correlations", "regression")
STAGE2_METRICS = (
    "consistency",
    "consistency_strict",
    "prefer_f",
    "prefer_m",
    "bias",
    "bias_f",
    "bias_m",
    "neutral",
    "switch_f2m",
    "switch_m2f",
    "position_first",
    "unknown_rate",
)

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
    metrics = metric_rows(counts)
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
                    con.execute(
                        f"INSERT INTO {table} BY NAME SELECT ?::VARCHAR AS run_id, * FROM {view}", [run_id]
                    )
    finally:
        for view in views.values():
            con.unregister(view)


def wilson_interval(hits: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """95% Wilson score interval per row; NaN where n = 0."""
    hits = np.asarray(hits, dtype=float)
    n = np.asarray(n, dtype=float)
    low = np.full(len(n), np.nan)
    high = np.full(len(n), np.nan)
    has_data = n > 0
    if has_data.any():
        low[has_data], high[has_data] = proportion_confint(
            hits[has_data], n[has_data], alpha=1 - CONFIDENCE, method="wilson"
        )
    return low, high


def metric_rows(counts: pd.DataFrame) -> pd.DataFrame:
    """Pair and occupation rows (pooled share, Wilson CI) plus the overall rows (bootstrap CI over pairs)."""
    scoped = counts.copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        scoped["value"] = np.where(scoped["n"] > 0, scoped["hits"] / scoped["n"], np.nan)
    scoped["ci_low"], scoped["ci_high"] = wilson_interval(scoped["hits"], scoped["n"])
    overall = [
        overall_row(condition, pair_counts)
        for condition, pair_counts in counts[counts["scope"] == "pair"].groupby("condition", sort=True)
    ]
    columns = ["condition", "scope", "key", "metric", "value", "ci_low", "ci_high", "n"]
    overall_frame = pd.concat(overall, ignore_index=True) if overall else pd.DataFrame(columns=columns)
    return pd.concat([overall_frame[columns], scoped[columns]], ignore_index=True)


def overall_row(condition: str, pair_counts: pd.DataFrame) -> pd.DataFrame:
    """Overall value of every metric of one condition with a 95% percentile bootstrap CI over name pairs.

    Each overall value is a ratio of pair sums: mean-of-pairs metrics sum the pair values over pairs with
    at least one valid instance; pooled metrics sum hits over instances. Resampling pairs with replacement
    re-weights those sums, so all replicates of all metrics are two matrix products.
    """
    wide = pair_counts.pivot(index="key", columns="metric", values=["hits", "n"]).fillna(0)
    wide = wide.loc[sorted(wide.index, key=int)]
    metrics = sorted(set(wide["hits"].columns) | set(overall_metrics(condition)))
    hits = wide["hits"].reindex(columns=metrics, fill_value=0).to_numpy(float)
    n = wide["n"].reindex(columns=metrics, fill_value=0).to_numpy(float)
    n_pairs = len(wide)
    pooled = np.array([metric in POOLED_OVERALL_METRICS for metric in metrics])
    with np.errstate(invalid="ignore", divide="ignore"):
        pair_values = np.where(n > 0, hits / n, 0.0)
        numerator = np.where(pooled, hits, pair_values)
        denominator = np.where(pooled, n, (n > 0).astype(float))
        estimate = numerator.sum(axis=0) / denominator.sum(axis=0)
        rng = np.random.default_rng(BOOTSTRAP_SEED)
        weights = rng.multinomial(n_pairs, np.full(n_pairs, 1 / n_pairs), size=BOOTSTRAP_REPLICATES)
        replicates = (weights @ numerator) / (weights @ denominator)
    tail = (1 - CONFIDENCE) / 2 * 100
    low = np.full(len(metrics), np.nan)
    high = np.full(len(metrics), np.nan)
    # With a single contributing pair there is no between-pair variation to resample: no interval.
    has_spread = (denominator > 0).sum(axis=0) >= 2
    if has_spread.any():
        low[has_spread], high[has_spread] = np.nanpercentile(
            replicates[:, has_spread], [tail, 100 - tail], axis=0
        )
    return pd.DataFrame(
        {
            "condition": condition,
            "scope": "overall",
            "key": "all",
            "metric": metrics,
            "value": np.where(denominator.sum(axis=0) > 0, estimate, np.nan),
            "ci_low": low,
            "ci_high": high,
            "n": n.sum(axis=0).astype(np.int64),
        }
    )


def overall_metrics(condition: str) -> tuple[str, ...]:
    """The metrics every condition has an overall row for (NULL when nothing to compute it from)."""
    if condition == "stage1":
        return ("attr_yes_f", "attr_yes_m", "unknown_rate")
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


def regression_rows(cells: pd.DataFrame) -> pd.DataFrame:
    """Logistic regression of [S = female] with standard errors clustered by name pair, per condition.

    Two models per condition, both without a reference category so every coefficient reads on its own:
    term `overall` is the intercept-only model (log-odds of choosing the female subject; 0 = no
    preference), and term `occupation:<name>` is the model with one indicator per occupation and no
    intercept (the occupation's log-odds of S = female; tested against 0, i.e. a share of 0.5). Standard
    errors are cluster-robust by name pair (CR1: the sandwich times G/(G-1)*(N-1)/(N-K), N = instances,
    as statsmodels' GLM with cov_type='cluster' on one row per instance); p-values and CIs use a t
    distribution with G-1 degrees of freedom, the usual guard when clusters are few.

    A term whose valid instances all chose the same gender has no finite estimate (separation), and one
    whose instances come from a single name pair has no clustered error; such terms get a row with NULL
    estimates and the reason in `note`. Where every pair has the same female share the sandwich is 0: the
    estimate is kept, the error, CI and p-value are NULL, with a note.
    """
    rows = []
    for condition, group in cells.groupby("condition", sort=True):
        usable = group[group["n"] > 0]
        overall = _fit_terms(usable.assign(term="overall"), terms=["overall"])
        occupation_terms = sorted(set("occupation:" + group["occupation"]))
        by_occupation = _fit_terms(usable.assign(term="occupation:" + usable["occupation"]), occupation_terms)
        rows += [overall.assign(condition=condition), by_occupation.assign(condition=condition)]
    columns = [
        "condition", "term", "coef", "std_err", "ci_low", "ci_high", "p_value", "odds_ratio", "n",
        "n_clusters", "note",
    ]  # fmt: skip
    if not rows:
        return pd.DataFrame(columns=columns)
    return pd.concat(rows, ignore_index=True).reindex(columns=columns)


def _fit_terms(cells: pd.DataFrame, terms: list[str]) -> pd.DataFrame:
    """Fit a no-intercept logistic model with one indicator per term, errors clustered by pair.

    With one indicator per term and nothing else the model is saturated, so its maximum-likelihood fit
    is closed-form: coef = logit(share female of the term), information N_t p_t (1 - p_t), and pair g's
    score for term t is (female_gt - n_gt p_t); the sandwich's diagonal needs only those. This is exact
    (tests compare it with statsmodels) and fast on a 1M-answer run, where an IRLS fit of the dense
    (cells x occupations) design is not.
    """
    by_pair = cells.groupby(["term", "pair_id"], as_index=False)[["n", "n_female"]].sum()
    fit = (
        by_pair.groupby("term")
        .agg(n=("n", "sum"), n_female=("n_female", "sum"), n_clusters=("pair_id", "nunique"))
        .reindex(terms)
        .fillna({"n": 0, "n_female": 0, "n_clusters": 0})
    )
    fit["note"] = np.select(
        [fit["n"] == 0, fit["n_female"] == 0, fit["n_female"] == fit["n"], fit["n_clusters"] < 2],
        [
            "no valid instances",
            "separation: S is never female",
            "separation: S is always female",
            "fewer than 2 name pairs: no clustered standard error",
        ],
        "",
    )
    estimable = fit.index[fit["note"] == ""]
    if len(estimable):  # every estimable term has >= 2 pairs, so the model has >= 2 clusters
        model = fit.loc[estimable]
        share = model["n_female"] / model["n"]
        fit_pairs = by_pair[by_pair["term"].isin(estimable)]
        scores = fit_pairs["n_female"] - fit_pairs["n"] * share.loc[fit_pairs["term"]].to_numpy()
        meat = (scores**2).groupby(fit_pairs["term"]).sum().loc[estimable]
        information = model["n"] * share * (1 - share)
        groups, n_obs, n_params = fit_pairs["pair_id"].nunique(), model["n"].sum(), len(estimable)
        cr1 = groups / (groups - 1) * (n_obs - 1) / (n_obs - n_params)
        sandwich_err = np.sqrt(meat / information**2 * cr1).to_numpy()
        # Every pair choosing the woman equally often leaves the sandwich nothing to measure: no inference.
        no_spread = sandwich_err < 1e-9
        std_err = np.where(no_spread, np.nan, sandwich_err)
        coef = np.log(share / (1 - share)).to_numpy()
        critical = stats.t.ppf(1 - (1 - CONFIDENCE) / 2, groups - 1)
        fit.loc[estimable, "coef"] = coef
        fit.loc[estimable, "std_err"] = std_err
        fit.loc[estimable, "ci_low"] = coef - critical * std_err
        fit.loc[estimable, "ci_high"] = coef + critical * std_err
        fit.loc[estimable, "p_value"] = 2 * stats.t.sf(np.abs(coef / std_err), groups - 1)
        fit.loc[estimable, "odds_ratio"] = np.exp(coef)
        fit.loc[estimable[no_spread], "note"] = "no variation between name pairs: clustered standard error 0"
    fit["note"] = fit["note"].replace("", None)
    return fit.drop(columns="n_female").rename_axis("term").reset_index()


def headline_table(con: duckdb.DuckDBPyConnection, run_id: str) -> Table:
    """The paper's Figure 1 metrics (overall, mean over name pairs) per condition, with 95% bootstrap CIs."""
    overall = con.execute(
        "SELECT condition, metric, value, ci_low, ci_high, n FROM metrics "
        "WHERE run_id = ? AND scope = 'overall'",
        [run_id],
    ).df()
    stage2 = overall[overall["condition"] != "stage1"]
    conditions = sorted(set(stage2["condition"]), key=_condition_rank)
    table = Table(title=f"Run {run_id}: overall metrics, mean over name pairs [95% bootstrap CI]")
    table.add_column("metric")
    for condition in conditions:
        table.add_column(condition, justify="right")
    cells = {(row.condition, row.metric): row for row in stage2.itertuples()}
    for metric in HEADLINE_METRICS:
        if any((condition, metric) in cells for condition in conditions):
            table.add_row(metric, *(_format_cell(cells.get((condition, metric))) for condition in conditions))
    table.add_row("valid instances", *(_format_count(cells.get((c, "consistency"))) for c in conditions))
    stage1 = {row.metric: row for row in overall[overall["condition"] == "stage1"].itertuples()}
    if "attr_yes_f" in stage1 or "attr_yes_m" in stage1:
        table.caption = (
            f"stage 1: attr_yes_f {_format_cell(stage1.get('attr_yes_f'))}, "
            f"attr_yes_m {_format_cell(stage1.get('attr_yes_m'))}"
        )
    return table


def preference_table(con: duckdb.DuckDBPyConnection, run_id: str) -> Table:
    """Occupations the model significantly prefers one gender for (BH q < 0.05), per condition."""
    prefs = con.execute(
        "SELECT condition, preferred, occupation, share_female, q_value FROM occupation_preference "
        "WHERE run_id = ? AND preferred <> 'none' ORDER BY condition, preferred, share_female",
        [run_id],
    ).df()
    table = Table(title=f"Run {run_id}: preferred gender per occupation (share S = female, BH q < 0.05)")
    for column in ("condition", "prefers women", "prefers men"):
        table.add_column(column)
    for condition in sorted(set(prefs["condition"]), key=_condition_rank):
        chosen = prefs[prefs["condition"] == condition]
        lists = [
            ", ".join(
                f"{row.occupation} ({row.share_female:.2f})"
                for row in chosen[chosen["preferred"] == gender].itertuples()
            )
            or "-"
            for gender in ("female", "male")
        ]
        table.add_row(condition, *lists)
    if prefs.empty:
        table.caption = "no occupation with a significant preference"
    return table


def _condition_rank(condition: str) -> tuple[int, str]:
    return (
        CONDITION_ORDER.index(condition) if condition in CONDITION_ORDER else len(CONDITION_ORDER),
        condition,
    )


def _format_cell(row) -> str:
    if row is None or pd.isna(row.value):
        return "-"
    if pd.isna(row.ci_low):
        return f"{row.value:.3f}"
    return f"{row.value:.3f} [{row.ci_low:.3f}, {row.ci_high:.3f}]"


def _format_count(row) -> str:
    return "-" if row is None else f"{row.n:,}"
