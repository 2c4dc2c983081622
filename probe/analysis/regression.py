"""Clustered logistic regression of [S = female]: overall and per occupation, errors clustered by name pair.

Split from probe/analysis/metrics.py (which calls `regression_rows`) because the closed-form sandwich is its own piece
of statistics with its own tests.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from probe.analysis.binomial import CONFIDENCE

CLUSTERED_METHOD = "logistic regression, errors clustered by name pair (CR1, t with pairs - 1 df)"


def regression_rows(cells: pd.DataFrame) -> pd.DataFrame:
    """Logistic regression of [S = female] with standard errors clustered by name pair, per condition.

    Two models per condition, both without a reference category so every coefficient reads on its own:
    term `overall` is the intercept-only model (log-odds of choosing the female subject; 0 = no
    preference), and term `occupation:<name>` is the model with one indicator per occupation and no
    intercept (the occupation's log-odds of S = female; tested against 0, i.e. a share of 0.5). Standard
    errors are cluster-robust by name pair (CR1: the sandwich times G/(G-1)*(N-1)/(N-K), N = instances,
    as statsmodels' GLM with cov_type='cluster' on one row per instance); p-values and CIs use a t
    distribution with G-1 degrees of freedom, the usual guard when clusters are few. `ci_low`/`ci_high`
    bound the odds ratio (exponentiated log-odds bounds), so every odds ratio lies inside its interval.

    A term whose valid instances all chose the same gender has no finite estimate (separation), and one
    whose instances come from a single name pair has no clustered error; such terms get a row with NULL
    estimates and the reason in `note`. Where every pair has the same female share the sandwich is 0: the
    estimate is kept, the error, CI and p-value are NULL, with a note.
    """
    rows = []
    for condition, group in cells.groupby("condition", sort=True):
        usable = group[group["n"] > 0]
        overall = _fit_terms(usable.assign(term="overall"), terms=["overall"])
        # each occupation once before its name is written: pandas' text columns iterate element by element (0.2-0.3 s
        # over a 1M-answer run's 190K cells)
        occupation_terms = sorted(set("occupation:" + group["occupation"].drop_duplicates()))
        by_occupation = _fit_terms(usable.assign(term="occupation:" + usable["occupation"]), occupation_terms)
        rows += [overall.assign(condition=condition), by_occupation.assign(condition=condition)]
    columns = [
        "condition",
        "term",
        "coef",
        "std_err",
        "ci_low",
        "ci_high",
        "p_value",
        "odds_ratio",
        "n",
        "n_clusters",
        "note",
    ]
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
            "not testable at this size: fewer than 2 name pairs, so no clustered standard error",
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
        # The interval of the odds ratio (exp of the log-odds bounds), so ci_low <= odds_ratio <= ci_high.
        fit.loc[estimable, "ci_low"] = np.exp(coef - critical * std_err)
        fit.loc[estimable, "ci_high"] = np.exp(coef + critical * std_err)
        fit.loc[estimable, "p_value"] = 2 * stats.t.sf(np.abs(coef / std_err), groups - 1)
        fit.loc[estimable, "odds_ratio"] = np.exp(coef)
        fit.loc[estimable[no_spread], "note"] = "no variation between name pairs: clustered standard error 0"
    fit["note"] = fit["note"].replace("", None)
    return fit.drop(columns="n_female").rename_axis("term").reset_index()
