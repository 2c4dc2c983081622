"""The N-model part of `probe compare`: a leaderboard of every run's headline metrics with intervals, paired
differences to a reference run, and each run's rank with its uncertainty.

The name pair is the unit of every interval (runs over name sets: the set, its contests summed). Leaderboard
values and intervals are each run's own (metrics table: all of its instances, the analyzers' interval).
Differences and ranks use only the instances every run shares: a difference is the paired cluster t over the
pairs both runs have (`difference_estimate`, the one procedure for every difference of rates, its p-value from the
same test; the stage-1 grant gap, itself a difference, by the same t over its four rates: `contrast_estimate`); a
rank's interval is the spread of the run's rank under one set of name-pair resamples shared by all runs. Rank 1 is
the best run where the metric has a better direction, the closest to no effect where it measures a lean
(`rank_direction`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from probe.analysis.differences import contrast_estimate
from probe.analysis.metric_registry import (
    ATTR_YES_DIFF,
    ATTR_YES_F,
    ATTR_YES_M,
    COMPARED_METRICS,
    LEADERBOARD_METRICS,
    METRICS,
    POOLED_OVERALL_METRICS,
)
from probe.analysis.resampling import PERCENTILE_METHOD, bootstrap_weights, expanded_tail
from probe.analysis.statistics import METHODS
from probe.common.vocabulary import CONDITIONS, STAGE1_CONDITION
from probe.report.data import clean, order_index
from probe.report.formatting import set_words

STAGE1_LEADERBOARD_METRICS = (ATTR_YES_DIFF,)  # the stage-1 headline: grant rate of women minus men
# Compared metrics that are a signed sum of stored pair metrics: the stage-1 grant gap, as analyze builds it.
CONTRASTS = {ATTR_YES_DIFF: ((1, ATTR_YES_F), (-1, ATTR_YES_M))}
STAGE1_PARTS = tuple(name for _, name in CONTRASTS[ATTR_YES_DIFF])
NO_INTERVAL = "no interval: fewer than 6 name pairs with instances in both runs"
TIE_TOLERANCE = 1e-9
RANK_ORDER = (
    "1 = the best run on the metric: the lowest where lower is better (bias, prefer, switch, unknown), the highest "
    "where higher is better (consistency), the closest to no effect where the metric measures a lean (woman picked "
    "at 50%, first-named picked at 50%, the grant gap at 0), else the highest; each column says which; ties share "
    "the better rank"
)
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
        rows.append(
            {
                "run_id": run["run_id"],
                "model": run["model"],
                "condition": lead,
                "metrics": {metric: entry for metric, entry in metrics.items() if entry is not None},
                "preferred_female": len(lists["female"]),
                "preferred_male": len(lists["male"]),
            }
        )
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


def rank_direction(metric: str) -> str:
    """What rank 1 is on a metric, from its registry entry: the lowest where lower is better (bias), the highest
    where higher is better (consistency), the closest to no effect where the metric has a null and no better
    direction (female_share at 50%, attr_yes_diff at 0), else the highest."""
    entry = METRICS[metric]
    if entry.better == "lower":
        return "lowest"
    if entry.null is not None and entry.better is None:
        return f"closest to {entry.null:.0%}" if entry.kind == "share" else "closest to 0"
    return "highest"


def rank_keys(values: np.ndarray, metrics: Sequence[str]) -> np.ndarray:
    """Values (last axis: `metrics`) turned so that a higher key is the better rank (`rank_direction`)."""
    keys = values.copy()
    for column, metric in enumerate(metrics):
        direction, null = rank_direction(metric), METRICS[metric].null
        if direction == "lowest":
            keys[..., column] = -values[..., column]
        elif direction.startswith("closest"):
            keys[..., column] = -np.abs(values[..., column] - null)
    return keys


def paired_analysis(
    counts: Mapping[str, pd.DataFrame], reference: str, over_sets: bool = False
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Paired differences (each run - `reference`) and rank intervals per shared condition and metric.

    `counts`: per run, its pair-scope metric counts on the shared instances (compare.shared_pair_counts); a metric
    of CONTRASTS (the stage-1 grant gap) is built from its parts' counts. `over_sets`: runs over name sets, their
    counts per set (compare.contrasts.set_counts), whose methods and notes name sets.
    """
    run_ids = list(counts)
    conditions = set.intersection(*(set(frame["condition"]) for frame in counts.values()))
    differences, rank_rows = [], []
    for condition in sorted(conditions, key=lambda c: order_index(CONDITIONS, c)):
        parts = {run_id: frame[frame["condition"] == condition] for run_id, frame in counts.items()}
        present = set.intersection(*(set(part["metric"].tolist()) for part in parts.values()))
        metrics = [
            metric
            for metric in (*COMPARED_METRICS, *CONTRASTS)
            if all(stored in present for _, stored in _parts(metric))
        ]
        if not metrics:
            continue
        stored = list(dict.fromkeys(name for metric in metrics for _, name in _parts(metric)))
        pairs = sorted(set().union(*(set(part["key"].tolist()) for part in parts.values())), key=int)
        terms = [ratio_terms(parts[run_id], pairs, stored) for run_id in run_ids]
        values, replicates = resampled_values(terms)
        common = dict(condition=condition, n_pairs=len(pairs))
        ref = run_ids.index(reference)
        for index, run_id in enumerate(run_ids):
            if index != ref:
                differences += [
                    {
                        **common,
                        "run_a": reference,
                        "run_b": run_id,
                        **paired_difference(
                            terms[index],
                            terms[ref],
                            [(sign, stored.index(name)) for sign, name in _parts(metric)],
                            metric,
                            over_sets,
                        ),
                    }
                    for metric in metrics
                ]
        combined = [_signed_sums(array, stored, metrics) for array in (values, replicates)]
        rank_rows += _rank_rows(run_ids, metrics, *combined, common)
    return differences, rank_rows


def _parts(metric: str) -> tuple[tuple[int, str], ...]:
    """The stored pair metrics a compared metric is the signed sum of: itself, or a contrast's parts."""
    return CONTRASTS.get(metric, ((1, metric),))


def _signed_sums(values: np.ndarray, stored: Sequence[str], metrics: Sequence[str]) -> np.ndarray:
    """Each metric's value (last axis: `metrics`) from the stored metrics' values (last axis: `stored`); a metric
    whose part is NaN is NaN, the others keep their values (no product with the other columns' NaN)."""
    return np.stack(
        [sum(sign * values[..., stored.index(name)] for sign, name in _parts(metric)) for metric in metrics], axis=-1
    )


def paired_difference(
    run: tuple[np.ndarray, ...],
    reference: tuple[np.ndarray, ...],
    parts: Sequence[tuple[int, int]],
    metric: str,
    over_sets: bool = False,
) -> dict[str, Any]:
    """run - reference on one metric (the signed sum of the `parts`' columns) over the shared pairs (`over_sets`: the
    shared sets, its method and note worded so): the paired cluster t's estimate, interval and p (`contrast_estimate`;
    for one column, `difference_estimate`)."""
    words = set_words if over_sets else str
    sides = [[term[:, column] for term in side] for side in (run, reference) for _, column in parts]
    signs = [sign for sign, _ in parts] + [-sign for sign, _ in parts]
    estimate = contrast_estimate(sides, signs)
    interval = estimate.interval()
    half = len(parts)
    value_b, value_a = (
        sum(sign * side.value for sign, side in zip(signs[:half], estimates, strict=True))
        for estimates in (estimate.sides[:half], estimate.sides[half:])
    )
    instances = (
        sum(side.instances for side in estimates) for estimates in (estimate.sides[:half], estimate.sides[half:])
    )
    return {
        "metric": metric,
        "value_a": clean(value_a),
        "value_b": clean(value_b),
        "difference": clean(estimate.value),
        "ci_low": clean(interval[0]) if interval else None,
        "ci_high": clean(interval[1]) if interval else None,
        "p_value": clean(estimate.p_value(0.0)),
        "n_instances": int(min(instances)),
        "method": words(METHODS[estimate.method]) if interval else None,
        "note": None if interval else words(NO_INTERVAL),
    }


def _rank_rows(
    run_ids: Sequence[str], metrics: Sequence[str], values: np.ndarray, replicates: np.ndarray, common: dict
) -> list[dict[str, Any]]:
    """Each run's rank per metric (`rank_direction`) with the central 95% of its resampled ranks (tails as the
    differences')."""
    point, resampled = ranks(rank_keys(values, metrics)), ranks(rank_keys(replicates, metrics))
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
            rows.append(
                {
                    **common,
                    "metric": metric,
                    "run_id": run_id,
                    "rank": rank,
                    "rank_low": low,
                    "rank_high": high,
                    "runs": len(run_ids),
                    "rank_by": rank_direction(metric),
                }
            )
    return rows
