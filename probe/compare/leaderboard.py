"""The N-model part of `probe compare`: a leaderboard of every run's headline metrics with intervals, paired
differences to a reference run, and each run's rank with its uncertainty.

The name pair is the unit of every interval. Leaderboard values and intervals are each run's own
(metrics table: all of its instances, the analyzers' interval). Differences and ranks use only the
instances every run shares: a difference is the paired cluster t over the pairs both runs have
(`difference_estimate`, the one procedure for every difference of rates, its p-value from the same test); a
rank's interval is the spread of the run's rank under one set of name-pair resamples shared by all runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from probe.analysis.metric_registry import COMPARED_METRICS, LEADERBOARD_METRICS, POOLED_OVERALL_METRICS
from probe.analysis.resampling import PERCENTILE_METHOD, bootstrap_weights, expanded_tail
from probe.analysis.statistics import METHODS, difference_estimate
from probe.common.vocabulary import CONDITIONS, STAGE1_CONDITION
from probe.report.data import clean, order_index

STAGE1_LEADERBOARD_METRICS = ("attr_yes_diff",)  # the stage-1 headline: grant rate of women minus men
NO_INTERVAL = "no interval: fewer than 6 name pairs with instances in both runs"
TIE_TOLERANCE = 1e-9
RANK_ORDER = "1 = the highest value among the runs (ties share the better rank)"
RANK_METHOD = f"each run's rank under one {PERCENTILE_METHOD} shared by all runs"


def leaderboard_rows(
    runs: Sequence[Mapping[str, Any]],
    overall: Mapping[str, Mapping[str, Mapping[str, Any]]],
    preferred: Mapping[str, Mapping[str, Any]],
    lead: str,
) -> list[dict[str, Any]]:
    """One row per run: its headline metrics in the `lead` condition (and stage 1) with their intervals."""
    rows = []
    for run in runs:
        own = overall[run["run_id"]]
        metrics = {metric: own.get(lead, {}).get(metric) for metric in LEADERBOARD_METRICS}
        metrics |= {metric: own.get(STAGE1_CONDITION, {}).get(metric) for metric in STAGE1_LEADERBOARD_METRICS}
        lists = preferred[run["run_id"]].get(lead, {"female": [], "male": []})
        rows.append({"run_id": run["run_id"], "model": run["model"], "condition": lead,
                     "metrics": {metric: entry for metric, entry in metrics.items() if entry is not None},
                     "preferred_female": len(lists["female"]), "preferred_male": len(lists["male"])})  # fmt: skip
    return rows


def ratio_terms(
    counts: pd.DataFrame, pairs: Sequence[str], metrics: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Numerator, denominator and valid instances (pairs x metrics); the column sums of the first two give each
    overall value.

    The same aggregation as the analyzers' overall rows: pooled metrics sum hits over instances, the
    others average the pair values over pairs with a valid instance.
    """
    hits = counts.pivot(index="key", columns="metric", values="hits").reindex(index=pairs, columns=metrics)
    n = counts.pivot(index="key", columns="metric", values="n").reindex(index=pairs, columns=metrics)
    hits, n = hits.fillna(0).to_numpy(float), n.fillna(0).to_numpy(float)
    pooled = np.array([metric in POOLED_OVERALL_METRICS for metric in metrics])
    with np.errstate(invalid="ignore", divide="ignore"):
        pair_values = np.where(n > 0, hits / n, 0.0)
    return np.where(pooled, hits, pair_values), np.where(pooled, n, (n > 0).astype(float)), n


def resampled_values(terms: Sequence[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """Each run's value (runs x metrics) and its values under one shared set of name-pair resamples
    (resamples x runs x metrics), from each run's ratio terms over the same pairs."""
    weights = bootstrap_weights(terms[0][0].shape[0]).astype(float)
    numerators = np.stack([term[0] for term in terms], axis=1)  # pairs x runs x metrics
    denominators = np.stack([term[1] for term in terms], axis=1)
    shape = numerators.shape
    with np.errstate(invalid="ignore", divide="ignore"):
        values = numerators.sum(axis=0) / denominators.sum(axis=0)
        replicates = (weights @ numerators.reshape(shape[0], -1)) / (weights @ denominators.reshape(shape[0], -1))
    return values, replicates.reshape(len(weights), *shape[1:])


def ranks(values: np.ndarray) -> np.ndarray:
    """Rank of each run (axis -2) per metric: 1 + the number of runs with a higher value; NaN where NaN.

    Values within TIE_TOLERANCE are equal: shares computed by two summation orders differ in the last bits.
    """
    higher = (values[..., None, :, :] - values[..., :, None, :] > TIE_TOLERANCE).sum(axis=-2)
    return np.where(np.isnan(values), np.nan, 1.0 + higher)


def paired_analysis(
    counts: Mapping[str, pd.DataFrame], reference: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Paired differences (each run - `reference`) and rank intervals per shared condition and metric.

    `counts`: per run, its pair-scope metric counts on the shared instances (compare.shared_pair_counts).
    """
    run_ids = list(counts)
    conditions = set.intersection(*(set(frame["condition"]) for frame in counts.values()))
    differences, rank_rows = [], []
    for condition in sorted(conditions, key=lambda c: order_index(CONDITIONS, c)):
        parts = {run_id: frame[frame["condition"] == condition] for run_id, frame in counts.items()}
        present = set.intersection(*(set(part["metric"].tolist()) for part in parts.values()))
        metrics = [metric for metric in COMPARED_METRICS if metric in present]
        pairs = sorted(set().union(*(set(part["key"].tolist()) for part in parts.values())), key=int)
        terms = [ratio_terms(parts[run_id], pairs, metrics) for run_id in run_ids]
        values, replicates = resampled_values(terms)
        common = dict(condition=condition, n_pairs=len(pairs))
        ref = run_ids.index(reference)
        for index, run_id in enumerate(run_ids):
            if index != ref:
                differences += [
                    {**common, "run_a": reference, "run_b": run_id, **paired_difference(terms[index], terms[ref],
                                                                                       column, metric)}
                    for column, metric in enumerate(metrics)
                ]  # fmt: skip
        rank_rows += _rank_rows(run_ids, metrics, values, replicates, common)
    return differences, rank_rows


def paired_difference(
    run: tuple[np.ndarray, ...], reference: tuple[np.ndarray, ...], column: int, metric: str
) -> dict[str, Any]:
    """run - reference on one metric over the shared pairs: the paired cluster t's estimate, interval and p."""
    estimate = difference_estimate(*([term[:, column] for term in side] for side in (run, reference)))
    interval = estimate.interval()
    value_b, value_a = (side.value for side in estimate.sides)
    return {"metric": metric, "value_a": clean(value_a), "value_b": clean(value_b),
            "difference": clean(estimate.value), "ci_low": clean(interval[0]) if interval else None,
            "ci_high": clean(interval[1]) if interval else None, "p_value": clean(estimate.p_value(0.0)),
            "n_instances": int(min(side.instances for side in estimate.sides)),
            "method": METHODS["paired_t"] if interval else None,
            "note": None if interval else NO_INTERVAL}  # fmt: skip


def _rank_rows(
    run_ids: Sequence[str], metrics: Sequence[str], values: np.ndarray, replicates: np.ndarray, common: dict
) -> list[dict[str, Any]]:
    """Each run's rank per metric with the central 95% of its resampled ranks (tails as the differences')."""
    point, resampled = ranks(values), ranks(replicates)
    tail = expanded_tail(common["n_pairs"]) if common["n_pairs"] >= 2 else None
    rows = []
    for index, run_id in enumerate(run_ids):
        for column, metric in enumerate(metrics):
            usable = resampled[:, index, column][~np.isnan(resampled[:, index, column])]
            low = high = None
            if tail is not None and len(usable) and not np.isnan(point[index, column]):
                low = int(np.percentile(usable, tail, method="lower"))
                high = int(np.percentile(usable, 100 - tail, method="higher"))
            rank = None if np.isnan(point[index, column]) else int(point[index, column])
            rows.append({**common, "metric": metric, "run_id": run_id, "rank": rank, "rank_low": low,
                         "rank_high": high, "runs": len(run_ids)})  # fmt: skip
    return rows
