"""Findings under a change of wording: the estimate per wording, the spread between wordings, and an interval that
treats name pairs and wordings as two crossed samples (a run asked with `--wordings`, prompts/wordings/).

A run's wordings are a sample of the meaning-preserving ways to ask its questions, as its name pairs are a sample
of names; a finding about the model, not the sentence, must hold over both. The crossed interval takes its
variance from both: the two-way cluster-robust variance of Cameron, Gelbach & Miller (2011), V = V_pair +
V_wording - V_pair∩wording (each with its G / (G - 1) factor; a negative V falls back to the larger one-way term),
with t on min(pairs, wordings) - 1 degrees of freedom (the few wordings are the scarce dimension), on the logit
scale of the metric's range, where a rate near an end and a heavy-tailed wording keep their coverage. A pair-only
interval over the same cells ignores the wordings' spread and undercovers when wording matters (bench/wordings.py).

Each wording's own estimate is the one a run asked in that wording alone reports (probe/analysis/statistics.py: at
an estimate of 0 or 1 the no-event bound over pairs, never a t interval of zero spread left without one).

Per metric and condition, the verdict says what each wording's own test shows (one procedure per claim, DESIGN.md
section 10: a direction is stated under a wording only where that wording's test rejects at 0.05):
- `holds`: every wording's own test rejects, all in the same direction (an intersection-union test: valid at 0.05
  without correction);
- `depends`: not `holds`, and the wording test (two-way ANOVA's F of the pair x wording values, pairs as blocks,
  against the wordings permuted within each pair) rejects: the estimate moves with the wording;
- `some`: not `holds`, some wording's own test rejects, and the wording test does not reject;
- `not_shown`: no wording's own test rejects and the wording test does not reject;
- metrics without a null: `stable` where the wording test does not reject, else `depends`;
- `not_testable`: fewer than MIN_PAIRS pairs under every wording (no interval over pairs is given below it, the
  crossed one included).
The crossed interval carries the claim over all wordings together (probe/report/robustness.py reads it beside the
run's own test): it does not enter the verdict on the wordings one by one.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd
from scipy import special, stats

from probe.analysis.binomial import CONFIDENCE, SIGNIFICANCE
from probe.analysis.differences import DifferenceEstimate, difference_estimate
from probe.analysis.metric_registry import ATTR_YES_DIFF, FEMALE_SHARE, METRICS, WORDING_METRICS
from probe.analysis.resampling import PERMUTATIONS, SEED
from probe.analysis.statistics import MIN_PAIRS, ShareEstimate, pair_terms, share_estimate

WORDING_DIFFERENCES = (ATTR_YES_DIFF,)  # the stage-1 metric each wording reports: a difference of two rates
ALL = "all"  # the key of the crossed row (the per-wording rows are keyed by wording id)


def robustness_methods(unit: str = "pair") -> dict[str, str]:
    """The methods in words, over name pairs or (`unit` "set") the name sets of a run over sets."""
    return {
        "crossed": f"two-way cluster-robust interval over name {unit}s and wordings (Cameron-Gelbach-Miller: V = "
        f"V_{unit} + V_wording - V_{unit} x wording), t with min({unit}s, wordings) - 1 degrees of freedom on the "
        "logit scale of the metric's range (delta method); the p-value is the same test",
        "pairs": f"t interval over name {unit}s of each {unit}'s mean over the wordings: the wordings' spread left out",
        "wording": f"as a run asked in this wording alone reports the metric: its interval over name {unit}s, the "
        f"method chosen by what the {unit}s show (score interval, no-event bound, betting interval; paired cluster t "
        "for a difference); the p-value is the same test",
        "wording_test": f"two-way ANOVA F of the wording effect over {unit} x wording values, {unit}s as blocks, "
        f"tested against the wordings permuted within each {unit}",
    }


METHODS = robustness_methods()
COLUMNS = [
    "condition",
    "metric",
    "scope",
    "key",
    "value",
    "ci_low",
    "ci_high",
    "p_value",
    "pairs",
    "wordings",
    "method",
    "spread",
    "wording_p",
    "pair_ci_low",
    "pair_ci_high",
    "verdict",
]


@dataclass(frozen=True)
class Interval:
    """An estimate with its two-sided interval at CONFIDENCE and its test against the metric's null (NaN: none)."""

    value: float
    ci_low: float
    ci_high: float
    p_value: float


def _t_interval(value: float, variance: float, df: float, null: float | None) -> Interval:
    """t interval and test; no interval (NaN) where the variance is 0 or undefined: never a zero-width one."""
    if not np.isfinite(variance) or variance <= 0 or df < 1:
        return Interval(value, np.nan, np.nan, np.nan)
    std_err = float(np.sqrt(variance))
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, df)) * std_err
    p_value = np.nan if null is None else float(2 * stats.t.sf(abs(value - null) / std_err, df))
    return Interval(value, value - half, value + half, p_value)


def crossed_interval(values: np.ndarray, null: float | None = None, low: float = 0.0) -> Interval:
    """The mean of a complete pairs x wordings matrix with its two-way cluster-robust interval, on the logit scale of
    the metric's range [low, 1] (low -1 for a difference)."""
    pairs, wordings = values.shape
    residual = values - values.mean()
    cells = residual.size
    v_pair = pairs / (pairs - 1) * np.sum(residual.sum(axis=1) ** 2) / cells**2 if pairs > 1 else np.nan
    v_wording = wordings / (wordings - 1) * np.sum(residual.sum(axis=0) ** 2) / cells**2 if wordings > 1 else np.nan
    v_cell = cells / (cells - 1) * np.sum(residual**2) / cells**2
    variance = v_pair + v_wording - v_cell
    if variance <= 0:
        variance = max(v_pair, v_wording)
    return _logit_interval(float(values.mean()), variance, min(pairs, wordings) - 1, null, low)


def _logit_interval(value: float, variance: float, df: float, null: float | None, low: float) -> Interval:
    """The t interval and test on the logit scale of the metric's range [low, 1] (delta method): the interval stays
    in the range and reaches further toward the far end for a rate near one end, where a heavy-tailed wording pulls
    the mean (issue 40: truth 0.1 with t3 wording effects, 12 pairs: the truth above the raw t interval in 8.5% of
    runs, 3.9% on this scale, at 4% more width). No interval (NaN) where the variance is 0 or the mean at an end."""
    scale = 1 - low
    share = (value - low) / scale
    if not np.isfinite(variance) or variance <= 0 or df < 1 or not 0 < share < 1:
        return Interval(value, np.nan, np.nan, np.nan)
    std_err = float(np.sqrt(variance)) / scale / (share * (1 - share))
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, df)) * std_err
    centre = float(special.logit(share))
    bounds = (low + scale * float(special.expit(centre - half)), low + scale * float(special.expit(centre + half)))
    if null is None:
        return Interval(value, *bounds, np.nan)
    null_share = (null - low) / scale
    if not 0 < null_share < 1:  # the interval never reaches an end of the range: rejected
        return Interval(value, *bounds, 0.0)
    statistic = abs(centre - float(special.logit(null_share))) / std_err
    return Interval(value, *bounds, float(2 * stats.t.sf(statistic, df)))


def pair_interval(values: np.ndarray, null: float | None = None) -> Interval:
    """The mean of a pairs x wordings matrix (or one wording's column) with the interval over pairs alone."""
    per_pair = values.mean(axis=1) if values.ndim == 2 else values
    pairs = len(per_pair)
    variance = float(np.var(per_pair, ddof=1)) / pairs if pairs > 1 else np.nan
    return _t_interval(float(per_pair.mean()), variance, pairs - 1, null)


def wording_test(values: np.ndarray) -> float:
    """p-value of "no wording effect": the two-way ANOVA's F, its reference distribution the wordings permuted within
    each pair (every arrangement where there are at most PERMUTATIONS + 1, else PERMUTATIONS seeded ones and the
    observed). Under no wording effect a pair's values are exchangeable over its wordings, so the test keeps its
    size whatever the pairs' spread; the F distribution's did not with binomial cells (6.0% at 12 pairs x 5
    wordings; issue 40). Within a pair the total is fixed, so F grows with the wording sum of squares alone."""
    pairs, wordings = values.shape
    if pairs < 2 or wordings < 2:
        return np.nan
    observed = _wording_square(values)
    arrangements = list(itertools.permutations(range(wordings)))
    if len(arrangements) ** pairs <= PERMUTATIONS + 1:
        orders = np.array(list(itertools.product(arrangements, repeat=pairs)))  # (arrangements, pairs, wordings)
    else:
        rng = np.random.default_rng(SEED)
        shuffled = rng.permuted(np.broadcast_to(np.arange(wordings), (PERMUTATIONS, pairs, wordings)), axis=2)
        orders = np.concatenate([np.broadcast_to(np.arange(wordings), (1, pairs, wordings)), shuffled])
    reference = _wording_square(np.take_along_axis(values[None, :, :], orders, axis=2))
    return float(np.mean(reference >= observed - 1e-12 * max(observed, 1.0)))


def _wording_square(values: np.ndarray) -> np.ndarray:
    """The wording sum of squares over the last two axes (pairs, wordings): pairs x sum of (wording mean - grand)^2."""
    means = values.mean(axis=-2)
    return values.shape[-2] * np.sum((means - means.mean(axis=-1, keepdims=True)) ** 2, axis=-1)


def verdict(per_wording: list[Interval], wording_p: float, null: float | None, pairs: int) -> str:
    """holds / depends / some / not_shown (metrics with a null), stable / depends (without), not_testable below
    MIN_PAIRS pairs; see the module's docstring."""
    if pairs < MIN_PAIRS:
        return "not_testable"
    wording_matters = wording_p < SIGNIFICANCE
    if null is None:
        return "depends" if wording_matters else "stable"
    shown = {np.sign(interval.value - null) for interval in per_wording if interval.p_value < SIGNIFICANCE}
    if len(shown) == 1 and all(interval.p_value < SIGNIFICANCE for interval in per_wording):
        return "holds"
    if wording_matters:
        return "depends"
    return "some" if shown else "not_shown"


def cell_values(cells: pd.DataFrame, grants: pd.DataFrame, metrics: Sequence[str] = WORDING_METRICS) -> pd.DataFrame:
    """One value per (condition, metric, pair, wording) with the counts behind it: female_share balanced over name
    order, the other stage-2 metrics pooled over the pair's valid instances (hits of n), attr_yes_diff = the pair's
    grant rate to women (hits of n) minus men (other_hits of other_n). `metrics`: the count columns of `cells` (a
    contrast's cells count only category_a's picks, in female_share's place: probe/analysis/contrast_findings.py)."""
    frames = []
    if not cells.empty:
        keys = ["condition", "wording", "pair_id"]
        cells = cells.groupby([*keys, "name_order"], as_index=False)[["n", *metrics]].sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            by_order = cells.assign(**{FEMALE_SHARE: cells[FEMALE_SHARE] / cells["n"].where(cells["n"] > 0)})
        female = by_order.groupby(keys)[FEMALE_SHARE].mean()
        sums = cells.groupby(keys)[["n", *metrics]].sum()
        for metric in metrics:
            value = female if metric == FEMALE_SHARE else sums[metric] / sums["n"].where(sums["n"] > 0)
            hits = np.nan if metric == FEMALE_SHARE else sums[metric]  # a balanced share has no count of its own
            frame = pd.DataFrame({"metric": metric, "value": value, "hits": hits, "n": sums["n"]})
            frames.append(frame.reset_index())
    if not grants.empty:
        sides = grants.pivot_table(index=["condition", "wording", "pair_id"], columns="subject", values=["yes", "n"])
        if {"female", "male"} <= set(sides.columns.get_level_values(1)):
            with np.errstate(invalid="ignore", divide="ignore"):
                rates = sides["yes"] / sides["n"].where(sides["n"] > 0)
            frames.append(
                pd.DataFrame(
                    {
                        "metric": WORDING_DIFFERENCES[0],
                        "value": rates["female"] - rates["male"],
                        "hits": sides["yes", "female"],
                        "n": sides["n", "female"],
                        "other_hits": sides["yes", "male"],
                        "other_n": sides["n", "male"],
                    }
                ).reset_index()
            )
    columns = ["condition", "wording", "pair_id", "metric", "value", "hits", "n", "other_hits", "other_n"]
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True).reindex(columns=columns).dropna(subset=["value"])


def wording_estimate(metric: str, pairs: pd.DataFrame) -> ShareEstimate | DifferenceEstimate:
    """The metric under one wording as a run asked in that wording alone reports it, from its pairs' cell_values:
    pooled or a mean of pair values as the metric is, the paired difference for attr_yes_diff."""
    if metric in WORDING_DIFFERENCES:
        return difference_estimate(
            pair_terms(pairs["hits"], pairs["n"], True), pair_terms(pairs["other_hits"], pairs["other_n"], True)
        )
    if metric == FEMALE_SHARE:  # each pair's order-balanced value, a mean of pair values; NaN: no valid answer
        return share_estimate(pairs["value"], pairs["value"].notna().astype(float), pairs["n"])
    return share_estimate(*pair_terms(pairs["hits"], pairs["n"], METRICS[metric].pooled))


def _own_interval(estimate: ShareEstimate | DifferenceEstimate, null: float | None) -> Interval:
    """The estimate's interval and its test of `null` (NaN where it has none: fewer than 6 pairs, no null)."""
    bounds = estimate.interval() or (np.nan, np.nan)
    p_value = estimate.p_value(null) if null is not None else None
    return Interval(estimate.value, *bounds, np.nan if p_value is None else p_value)


def robustness_rows(values: pd.DataFrame, wordings: list[str], unit: str = "pair") -> pd.DataFrame:
    """Per condition and metric: a row per wording (its own estimate, wording_estimate) and the crossed row with the
    spread between wordings, the wording test, the pair-only interval over the same cells and the verdict. Pairs
    without a value under every wording are left out (the two-way design needs each pair under each wording).
    `unit`: what pair_id holds, named in the methods ("set": a run over name sets)."""
    methods = robustness_methods(unit)
    rows = []
    for (condition, metric), group in values.groupby(["condition", "metric"], sort=True):
        table = group.pivot_table(index="pair_id", columns="wording", values="value").reindex(columns=wordings)
        complete = table.dropna()
        matrix = complete.to_numpy(float)
        pairs = matrix.shape[0]
        if pairs < 2:
            continue
        null = METRICS[metric].null
        kept = group[group["pair_id"].isin(complete.index)].sort_values("pair_id")
        per_wording = [
            _own_interval(wording_estimate(metric, kept[kept["wording"] == wording]), null) for wording in wordings
        ]
        for wording, interval in zip(wordings, per_wording, strict=True):
            rows.append(
                {
                    "condition": condition,
                    "metric": metric,
                    "scope": "wording",
                    "key": wording,
                    **_interval_columns(interval),
                    "pairs": pairs,
                    "wordings": 1,
                    "method": methods["wording"],
                }
            )
        none = Interval(float(matrix.mean()), np.nan, np.nan, np.nan)  # below MIN_PAIRS: no interval, no test
        lowest = -1.0 if METRICS[metric].kind == "difference" else 0.0
        crossed = crossed_interval(matrix, null, lowest) if pairs >= MIN_PAIRS else none
        pair_only = _in_range(pair_interval(matrix, null), metric) if pairs >= MIN_PAIRS else none
        wording_p = wording_test(matrix) if pairs >= MIN_PAIRS else np.nan
        spread = max(interval.value for interval in per_wording) - min(interval.value for interval in per_wording)
        rows.append(
            {
                "condition": condition,
                "metric": metric,
                "scope": "crossed",
                "key": ALL,
                **_interval_columns(crossed),
                "pairs": pairs,
                "wordings": len(wordings),
                "method": methods["crossed"],
                "spread": spread,
                "wording_p": wording_p,
                "pair_ci_low": pair_only.ci_low,
                "pair_ci_high": pair_only.ci_high,
                "verdict": verdict(per_wording, wording_p, null, pairs),
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def _in_range(interval: Interval, metric: str) -> Interval:
    """A t interval cut to the metric's range (0 to 1, -1 to 1 for a difference): the values outside are no
    candidates, and the test of every value inside is unchanged."""
    low = -1.0 if METRICS[metric].kind == "difference" else 0.0
    return Interval(interval.value, max(interval.ci_low, low), min(interval.ci_high, 1.0), interval.p_value)


def _interval_columns(interval: Interval) -> dict[str, float]:
    return {
        "value": interval.value,
        "ci_low": interval.ci_low,
        "ci_high": interval.ci_high,
        "p_value": interval.p_value,
    }


def asked_wordings(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    """The run's wordings in the order asked (the first is the one its single-wording findings read)."""
    query = "SELECT wording FROM items WHERE run_id = ? GROUP BY wording ORDER BY min(seq)"
    return [row[0] for row in con.execute(query, [run_id]).fetchall()]


def wording_rows(
    cells: pd.DataFrame, grants: pd.DataFrame | None, wordings: list[str], sets: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The run's `robustness` rows from metrics.sql's `wording_cells` and `wording_grants` (read by
    probe/analysis/run_counts.py): computed when it asked more than one wording, else none. `sets` (a run over name
    sets: each contest's pair_id and set_id): each set's contests summed, the set the unit; its grants by slot are
    no finding (analysis/contrasts.py `without_slots`) and are left out."""
    if len(wordings) < 2:
        return pd.DataFrame(columns=COLUMNS)
    if sets is None:
        return robustness_rows(cell_values(cells, grants), wordings)
    per_set = cells.assign(pair_id=cells["pair_id"].map(sets.set_index("pair_id")["set_id"]))
    return robustness_rows(cell_values(per_set, grants.iloc[0:0]), wordings, unit="set")
