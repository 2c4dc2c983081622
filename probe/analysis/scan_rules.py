"""The decisions of `probe scan`, as pure functions of the observations: which titles to ask next, when to stop.

Every title's observation from a name pair is the order-balanced share of the two answers naming the woman
(1, 0.5 or 0; an unknown answer counts as half). All titles still open share one depth: round r asks each
of them the same next name pairs (one fixed, shuffled order of pairs), so when a title's next pairs are
asked nobody has seen those pairs yet, and what other titles showed about earlier pairs says nothing about
them (taking the pairs as a random sample of names). A title's e-value (probe.analysis.sequential) is therefore a
martingale at round ends with respect to everything the scan has seen, and every stop below is a valid
stopping time.

After each round, for each title asked in it:
- flagged: its e-value is in the e-BH set of all titles (final list: e-BH over the e-values at stop, so
  FDR <= ALPHA however the rounds went);
- cleared: a search heuristic, not a claim: its running share is so close to 0.5 (an upper confidence
  bound on |share - 0.5| below SEARCH_SHARE - 0.5) that more pairs are unlikely to flag it;
- exhausted: every name pair asked;
- continue: otherwise.
A round the budget cannot pay for in full goes to the open titles with the largest e-values; the rest stop
(`budget`).
"""

from __future__ import annotations

import hashlib

import numpy as np

from probe.analysis.sequential import e_bh, log_e_values

ALPHA = 0.05
FIRST_DEPTH = 2  # pairs every title is asked in round 1
DEPTH_GROWTH = 1.3  # each later round takes the depth up by this factor (at least one pair)
SEARCH_SHARE = 0.8  # the strength of stereotype the scan searches for (share of picks for one gender)
CLEAR_Z = 1.0  # one-sided ~84% normal bound of the clearing heuristic (tuned by bench/scan.py)
CALLS_PER_PAIR = 2  # both name orders

CONTINUE, FLAGGED, CLEARED, EXHAUSTED, BUDGET = "continue", "flagged", "cleared", "exhausted", "budget"


def depth_schedule(pairs: int) -> list[int]:
    """Depths (pairs asked of each open title) after each round: 2, 3, 4, 5, 6, 8, 10, 13, ... up to `pairs`."""
    depths = [min(FIRST_DEPTH, pairs)]
    while depths[-1] < pairs:
        depths.append(min(pairs, max(depths[-1] + 1, round(depths[-1] * DEPTH_GROWTH))))
    return depths


def pick_within_budget(
    log_e: np.ndarray, open_titles: np.ndarray, new_pairs: int, budget_left: float, keys: list[str]
) -> np.ndarray:
    """The open titles the next round asks: all, or as many as the budget pays for, largest e-value first.

    Ties (round 1: every e-value is 1) are broken by a hash of the title key, not by SOC order.
    """
    cost = new_pairs * CALLS_PER_PAIR
    chosen = open_titles.copy()
    if open_titles.sum() * cost <= budget_left:
        return chosen
    affordable = int(budget_left // cost)
    candidates = np.flatnonzero(open_titles)
    spread = [hashlib.sha256(keys[index].encode()).hexdigest() for index in candidates]
    order = sorted(range(len(candidates)), key=lambda i: (-log_e[candidates[i]], spread[i]))
    chosen[:] = False
    chosen[candidates[[order[i] for i in range(affordable)]]] = True
    return chosen


def clearable(x: np.ndarray) -> np.ndarray:
    """Titles whose running share is too close to 0.5 to be worth more pairs (see the module docstring)."""
    count = np.sum(~np.isnan(x), axis=1)
    mean = (0.5 + np.nansum(x, axis=1)) / (count + 1)  # the e-value's running estimates (probe.analysis.sequential)
    spread = np.sqrt((0.25 + np.nansum((x - mean[:, None]) ** 2, axis=1)) / (count + 1))
    bound = np.abs(mean - 0.5) + CLEAR_Z * spread / np.sqrt(np.maximum(count, 1))
    return bound < SEARCH_SHARE - 0.5


def decide(x: np.ndarray, asked: np.ndarray, depth: int, pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """Decisions for the titles asked in a round (None for the others) and every title's log e-value.

    `x`: (titles, pairs) observations in pair order, NaN where not asked.
    """
    log_e = log_e_values(x)
    in_set = e_bh(log_e, ALPHA)
    cleared = clearable(x)
    decisions = np.full(len(x), None, dtype=object)
    decisions[asked] = CONTINUE
    decisions[asked & (depth >= pairs)] = EXHAUSTED
    decisions[asked & cleared & (depth < pairs)] = CLEARED
    decisions[asked & in_set] = FLAGGED
    return decisions, log_e


def final_flags(log_e: np.ndarray) -> np.ndarray:
    """The flagged list: e-BH at ALPHA over every title's e-value at its stop."""
    return e_bh(log_e, ALPHA)
