"""The N-model part of `probe compare`: a leaderboard of every run's headline metrics with intervals, paired
differences to a reference run, and each run's rank with its uncertainty.

The name pair is the unit of every interval. Leaderboard values and intervals are each run's own
(metrics table: all of its instances, the analyzers' interval). Differences and ranks use only the
instances every run shares, and one set of name-pair resamples for all runs at once (`resampled_values`,
the one statistical step here, built on probe.analysis.statistics): a difference's interval is the spread of
run - reference under the same resamples, a rank's interval the spread of the run's rank among all runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from probe.analysis.metric_registry import COMPARED_METRICS, LEADERBOARD_METRICS, POOLED_OVERALL_METRICS
from probe.analysis.statistics import PERCENTILE_METHOD, bootstrap_interval, bootstrap_weights, expanded_tail
from probe.common.vocabulary import CONDITIONS, STAGE1_CONDITION
from probe.report.data import clean, order_index

STAGE1_LEADERBOARD_METRICS = ("attr_yes_diff",)  # the stage-1 headline: grant rate of women minus men
NO_INTERVAL = "no interval: fewer than 2 name pairs, or the difference is the same in every pair"
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


def ratio_terms(counts: pd.DataFrame, pairs: Sequence[str], metrics: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Numerator and denominator (pairs x metrics) whose column sums give each overall value.

    The same aggregation as the analyzers' overall rows: pooled metrics sum hits over instances, the
    others average the pair values over pairs with a valid instance.
    """
    hits = counts.pivot(index="key", columns="metric", values="hits").reindex(index=pairs, columns=metrics)
    n = counts.pivot(index="key", columns="metric", values="n").reindex(index=pairs, columns=metrics)
    hits, n = hits.fillna(0).to_numpy(float), n.fillna(0).to_numpy(float)
    pooled = np.array([metric in POOLED_OVERALL_METRICS for metric in metrics])
    with np.errstate(invalid="ignore", divide="ignore"):
        pair_values = np.where(n > 0, hits / n, 0.0)
    return np.where(pooled, hits, pair_values), np.where(pooled, n, (n > 0).astype(float))


def resampled_values(terms: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Each run's value (runs x metrics) and its values under one shared set of name-pair resamples
    (resamples x runs x metrics), from each run's ratio terms over the same pairs."""
    weights = bootstrap_weights(terms[0][0].shape[0]).astype(float)
    numerators = np.stack([numerator for numerator, _ in terms], axis=1)  # pairs x runs x metrics
    denominators = np.stack([denominator for _, denominator in terms], axis=1)
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
        instances = np.stack([part.pivot(index="key", columns="metric", values="n").reindex(columns=metrics)
                              .fillna(0).to_numpy(float).sum(axis=0) for part in parts.values()])  # fmt: skip
        common = dict(condition=condition, n_pairs=len(pairs))
        ref = run_ids.index(reference)
        for index, run_id in enumerate(run_ids):
            if index == ref:
                continue
            lows, highs = bootstrap_interval(replicates[:, index] - replicates[:, ref], len(pairs))
            for column, metric in enumerate(metrics):
                low = clean(lows[column])
                differences.append(
                    {**common, "metric": metric, "run_a": reference, "run_b": run_id,
                     "value_a": clean(values[ref, column]), "value_b": clean(values[index, column]),
                     "difference": clean(values[index, column] - values[ref, column]),
                     "ci_low": low, "ci_high": clean(highs[column]),
                     "n_instances": int(min(instances[ref, column], instances[index, column])),
                     "method": f"paired {PERCENTILE_METHOD}", "note": None if low is not None else NO_INTERVAL}
                )  # fmt: skip
        rank_rows += _rank_rows(run_ids, metrics, values, replicates, common)
    return differences, rank_rows


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
