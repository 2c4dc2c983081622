"""The ranking of a name-set run's categories (DESIGN.md section 11): a Luce choice model fitted by maximum likelihood
over every pick, with intervals from its cluster-robust (sandwich) covariance, the name set as the cluster.

Why a fit and not the win share alone: the win share orders the categories as Bradley-Terry does only when every two
categories meet equally often (a run whose sets are not whole cycles of the rotation is not balanced), and it has no
reading for the K-way choice, where a pick beats K - 1 people at once. One model covers both questions:

- a pick chooses one person among the people shown: the two of a contest (Bradley-Terry) or the K of a set (the
  K-way choice: Luce's choice axiom, the first stage of Plackett-Luce); P(category c) = m_c e^b_c / sum_j m_j e^b_j,
  m_j the people of category j shown (1 or 0 in a contest; in the K-way choice a marginal category such as `female`
  has several people in the set);
- a category's **strength** is e^b_k / sum_j e^b_j: the share of picks its person would win in a choice among one
  person of each category (1 / K = no group difference; with two categories it is the pooled preference share);
- the interval is logit(strength) +- t(G - 1) x its standard error (delta method from the sandwich covariance, with
  the small-sample factor G / (G - 1), G sets), and p the same t test of strength = 1 / K. Answers of one set share
  its names: the sandwich lets them be correlated as they like. No interval under MIN_PAIRS sets or under K sets
  (the sets' scores, summing to zero, span at most G - 1 directions of the K - 1 strengths), and no estimate
  where the likelihood has no maximum (a category that won none or all of its picks).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit, logsumexp

from probe.analysis.binomial import CONFIDENCE
from probe.analysis.statistics import MIN_PAIRS

BRADLEY_TERRY = "bradley-terry sandwich"  # the fit over the contests' picks
LUCE = "luce sandwich"  # the fit over the K-way choice's top picks
_LARGEST_LOG_STRENGTH = 25.0  # beyond this a category won (nearly) all or none of its picks: no finite maximum


@dataclass(frozen=True)
class Picks:
    """Picks of one condition and attribute: per row, the people of each category shown (rows x K), the category
    picked (its column), how many answers made that pick, and the name set they were asked in."""

    shown: np.ndarray
    picked: np.ndarray
    weight: np.ndarray
    cluster: np.ndarray


@dataclass(frozen=True)
class Strengths:
    """A fit's strength per category (columns of Picks) with its interval, p-value (strength = 1 / K), the name
    sets that showed the category and the answers that showed it."""

    strength: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    p_value: np.ndarray
    sets: np.ndarray
    n: np.ndarray


def strength_rows(contests: pd.DataFrame, kway: pd.DataFrame | None) -> list[dict]:
    """category_metrics rows (probe/analysis/contrasts.py): `strength` (Bradley-Terry over metrics.sql
    `contrast_counts`' picks) and `kway_strength` (Luce over contrasts.kway_counts' top picks) per category."""
    fits = [
        (key, "strength", BRADLEY_TERRY, contest_picks(group))
        for key, group in contests.groupby(["condition", "attribute"])
    ]
    if kway is not None:
        fits += [
            (key, "kway_strength", LUCE, kway_picks(group)) for key, group in kway.groupby(["condition", "attribute"])
        ]
    rows = []
    for (condition, attribute), metric, method, (categories, picks) in fits:
        fit = luce_strengths(picks)
        rows += [
            {
                "condition": condition,
                "attribute": attribute,
                "category": category,
                "metric": metric,
                "estimate": fit.strength[k],
                "ci_low": fit.ci_low[k],
                "ci_high": fit.ci_high[k],
                "p_value": fit.p_value[k],
                "sets": int(fit.sets[k]),
                "n": int(fit.n[k]),
                "rank": None,
                "method": method if np.isfinite(fit.ci_low[k]) else None,
            }
            for k, category in enumerate(categories)
        ]
    return rows


def contest_picks(contests: pd.DataFrame) -> tuple[list[str], Picks]:
    """The categories and picks of one condition and attribute's contests (contrast_counts rows): per contest row
    the picks of category_a and those of category_b, each shown beside the other."""
    categories = sorted(set(contests["category_a"]) | set(contests["category_b"]))
    column = {category: index for index, category in enumerate(categories)}
    a, b = contests["category_a"].map(column).to_numpy(), contests["category_b"].map(column).to_numpy()
    shown = np.zeros((len(contests), len(categories)))
    shown[np.arange(len(contests)), a] = shown[np.arange(len(contests)), b] = 1
    hits, n = contests["hits"].to_numpy(float), contests["n"].to_numpy(float)
    sets = contests["set_id"].to_numpy()
    return categories, Picks(
        np.vstack([shown, shown]),
        np.concatenate([a, b]),
        np.concatenate([hits, n - hits]),
        np.concatenate([sets, sets]),
    )


def kway_picks(kway: pd.DataFrame) -> tuple[list[str], Picks]:
    """The categories and picks of one condition and attribute's K-way choice (kway_counts rows): per set and
    category the top picks of its people, each answer showing every person of the set."""
    categories = sorted(set(kway["category"]))
    shown = kway.pivot_table(index="set_id", columns="category", values="shown", aggfunc="sum", fill_value=0)
    shown = shown.reindex(columns=categories, fill_value=0).loc[kway["set_id"]].to_numpy(float)
    picked = kway["category"].map({category: index for index, category in enumerate(categories)}).to_numpy()
    return categories, Picks(shown, picked, kway["hits"].to_numpy(float), kway["set_id"].to_numpy())


def luce_strengths(picks: Picks) -> Strengths:
    """The fit of the module docstring over `picks` (NaN strengths where it has no maximum, NaN intervals and
    p-values where the sets are too few)."""
    count = picks.shown.shape[1]
    shown = picks.shown > 0
    sets = np.array([len(np.unique(picks.cluster[shown[:, k] & (picks.weight > 0)])) for k in range(count)])
    n = np.array([picks.weight[shown[:, k]].sum() for k in range(count)])
    missing = np.full(count, np.nan)
    logits = _fit(picks)
    if logits is None:
        return Strengths(missing, missing, missing, missing, sets, n)
    strength = np.exp(logits - logsumexp(logits))
    clusters = np.unique(picks.cluster[picks.weight > 0])
    # the set scores sum to 0 at the maximum: their covariance has rank G - 1 at most, K - 1 strengths need G >= K
    covariance = _sandwich(picks, logits, clusters) if len(clusters) >= max(MIN_PAIRS, count) else None
    if covariance is None:
        return Strengths(strength, missing, missing, missing, sets, n)
    low, high, p_value = (np.empty(count) for _ in range(3))
    quantile = stats.t.ppf(0.5 + CONFIDENCE / 2, len(clusters) - 1)
    for k in range(count):
        others = np.delete(logits, k)
        log_odds = logits[k] - logsumexp(others)
        gradient = -np.exp(logits - logsumexp(others))
        gradient[k] = 1.0
        error = float(np.sqrt(max(gradient @ covariance @ gradient, 0.0)))
        low[k], high[k] = expit(log_odds - quantile * error), expit(log_odds + quantile * error)
        distance = log_odds + np.log(count - 1)  # from logit(1 / K)
        if error > 0:
            p_value[k] = 2 * stats.t.sf(abs(distance) / error, len(clusters) - 1)
        else:  # every set alike
            p_value[k] = float(distance == 0)
    return Strengths(strength, low, high, p_value, sets, n)


def _probabilities(picks: Picks, logits: np.ndarray) -> np.ndarray:
    """Each row's probability of picking each category."""
    weights = picks.shown * np.exp(logits - logits.max())
    return weights / weights.sum(axis=1, keepdims=True)


def _fit(picks: Picks) -> np.ndarray | None:
    """The maximum-likelihood log strengths (the first category's fixed at 0) by Newton's method with step halving;
    None where the maximum lies at infinity."""
    count = picks.shown.shape[1]
    chosen = np.eye(count)[picks.picked]
    logits = np.zeros(count)
    for _ in range(100):
        probabilities = _probabilities(picks, logits)
        gradient = (picks.weight[:, None] * (chosen - probabilities)).sum(axis=0)[1:]
        hessian = _information(picks, probabilities)[1:, 1:]
        try:
            step = np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            return None
        before = _log_likelihood(picks, logits)
        scale = 1.0
        while scale > 1e-8:
            trial = logits + scale * np.concatenate([[0.0], step])
            if _log_likelihood(picks, trial) >= before - 1e-12:
                break
            scale /= 2
        logits = trial
        if np.abs(logits).max() > _LARGEST_LOG_STRENGTH:
            return None
        if np.abs(scale * step).max() < 1e-12:
            return logits
    return logits if np.abs(gradient).max() < 1e-8 * max(picks.weight.sum(), 1.0) else None


def _log_likelihood(picks: Picks, logits: np.ndarray) -> float:
    shown = np.where(picks.shown > 0, np.log(np.where(picks.shown > 0, picks.shown, 1)) + logits, -np.inf)
    return float((picks.weight * (logits[picks.picked] - logsumexp(shown, axis=1))).sum())


def _information(picks: Picks, probabilities: np.ndarray) -> np.ndarray:
    """Minus the Hessian of the log-likelihood: sum of weight x (diag(p) - p p')."""
    weighted = picks.weight[:, None] * probabilities
    return np.diag(weighted.sum(axis=0)) - weighted.T @ probabilities


def _sandwich(picks: Picks, logits: np.ndarray, clusters: np.ndarray) -> np.ndarray | None:
    """The cluster-robust covariance of the log strengths (the first fixed at 0, its row and column zero), with the
    factor G / (G - 1); None where the information is singular."""
    count = picks.shown.shape[1]
    probabilities = _probabilities(picks, logits)
    scores = picks.weight[:, None] * (np.eye(count)[picks.picked] - probabilities)
    per_set = np.array([scores[picks.cluster == cluster].sum(axis=0) for cluster in clusters])[:, 1:]
    try:
        bread = np.linalg.inv(_information(picks, probabilities)[1:, 1:])
    except np.linalg.LinAlgError:
        return None
    covariance = np.zeros((count, count))
    covariance[1:, 1:] = len(clusters) / (len(clusters) - 1) * bread @ per_set.T @ per_set @ bread
    return covariance
