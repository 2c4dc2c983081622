"""Two findings analyze() stores beside the metrics: per occupation, whether the model leans to one gender with the
name pair as the unit (occupation_preference), and the paper's consistency-bias relation across pairs, or a run over
name sets' sets (correlations)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.multitest import multipletests

from probe.analysis.binomial import SIGNIFICANCE, clopper_pearson
from probe.analysis.metric_registry import BIAS, CONSISTENCY
from probe.analysis.resampling import correlation_test
from probe.analysis.statistics import MIN_PAIRS, rate
from probe.common.vocabulary import STAGE1_CONDITION

CORRELATION_COLUMNS = ["condition", "across", "x", "y", "method", "r", "p_value", "n", "ci_low", "ci_high"]
# occupation_preference's columns (the table, the report's rows; a contrast's occupation lists rename them)
PREFERENCE_COLUMNS = (
    "condition",
    "occupation",
    "n",
    "pairs",
    "pairs_female",
    "pairs_male",
    "share_female",
    "lean_female",
    "ci_low",
    "ci_high",
    "ci_level",
    "p_value",
    "q_value",
    "preferred",
)


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
    prefs = (
        lean.groupby(level=["condition", "occupation"])
        .sum()
        .rename(columns={"female": "pairs_female", "male": "pairs_male"})
    )
    prefs["share_female"] = pair_share.groupby(level=["condition", "occupation"]).mean()
    prefs["n"] = cells.groupby(["condition", "occupation"])["n"].sum()
    prefs = prefs.reset_index()
    prefs["pairs"] = prefs["pairs_female"] + prefs["pairs_male"]
    prefs["lean_female"] = rate(prefs["pairs_female"], prefs["pairs"])
    prefs["p_value"] = [
        stats.binomtest(int(f), int(f + m), 0.5).pvalue if f + m else np.nan
        for f, m in zip(prefs["pairs_female"], prefs["pairs_male"], strict=True)
    ]
    prefs["q_value"] = np.nan
    prefs["ci_low"] = prefs["ci_high"] = np.nan
    prefs["ci_level"] = np.nan
    for _, group in prefs[prefs["pairs"] > 0].groupby("condition"):
        rejected, q_values = multipletests(group["p_value"], alpha=SIGNIFICANCE, method="fdr_bh")[:2]
        level = 1 - max(int(rejected.sum()), 1) * SIGNIFICANCE / len(group)
        prefs.loc[group.index, "q_value"] = q_values
        prefs.loc[group.index, "ci_level"] = level
        bounds = [
            clopper_pearson(int(f), int(f + m), level)
            for f, m in zip(group["pairs_female"], group["pairs_male"], strict=True)
        ]
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
    fewer than 3 pairs or a constant variable; the interval and test need MIN_PAIRS pairs. A run over name sets
    (its metrics have set rows) is correlated across its sets, its unit: its contests share their sets' people.
    """
    across = "set" if (metrics["scope"] == "set").any() else "pair"
    scoped = metrics[(metrics["scope"] == across) & (metrics["condition"] != STAGE1_CONDITION)]
    tested: list[tuple[str, pd.DataFrame]] = []
    for condition, group in scoped.groupby("condition", sort=True):
        wide = group.pivot(index="key", columns="metric", values="value")
        if CONSISTENCY in wide and BIAS in wide:
            tested.append((condition, wide[[CONSISTENCY, BIAS]].dropna()))
    testable = sum(len(both) >= MIN_PAIRS and both.nunique().min() > 1 for _, both in tested)
    rows = [
        {
            "condition": condition,
            "across": across,
            "x": CONSISTENCY,
            "y": BIAS,
            "method": "pearson",
            "n": len(both),
            **correlation_test(both[CONSISTENCY], both[BIAS], testable),
        }
        for condition, both in tested
    ]
    return pd.DataFrame(rows, columns=[*CORRELATION_COLUMNS, "p_adjusted"]).astype(
        {"r": float, "p_value": float, "p_adjusted": float, "ci_low": float, "ci_high": float}
    )
