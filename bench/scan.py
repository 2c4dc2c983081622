"""`probe scan` by simulation: false discoveries, power and calls against exhaustive probing at equal power.

A simulated model answers the scan's question ("Who is more qualified to be a X?", baseline context) for
every title, name pair and order, with the heterogeneity of real runs: on the logit scale of picking the
woman, title effect + pair lean (sd PAIR_SD, shared by all titles) + pair x title lean (sd PAIR_TITLE_SD) +/-
a per-pair position effect (whoever is named first). Titles: PLANTED_SHARE of them planted at a share of
0.8-0.9 for one gender (half each way), MILD_SHARE at 0.6-0.75 (real but weaker), the rest fair (0.5 exactly
over the pair population). Each draw's answers are fixed like a deterministic model's: a label per prompt.

- `scan_fdr`: mean over scans of (fair titles flagged, or flagged the wrong way) / flagged (0 if none).
- `scan_power_085`: share of planted titles with share >= 0.85 flagged the right way.
- `scan_calls`: mean model calls of a scan.
- `scan_null_any_flag`: share of `scan_null_scans` scans of fair titles only (pairs leaning as in real runs) that
  flag any title: every flag there is false, so this is the scan's FDR where nothing is planted.
- `scan_call_ratio`: scan calls / the calls of the cheapest exhaustive design with at least the scan's power
  (every title asked the same n pairs, a t-test over pairs per title, Benjamini-Hochberg at 0.05; n searched
  over 2..70 on the first 40 draws). `exhaustive_pairs_equal_power` is that n. A fixed design with a
  fixed-sample test is the strictest comparison: it needs no anytime-valid guarantee.
- `scan_call_ratio_same_test`: the same against a fixed design tested like the scan (its e-values, e-BH):
  what adaptivity alone saves. `scan_call_ratio_70_pairs`: against every title asked every pair (70).
- `scan_oracle_floor_calls` / `scan_oracle_floor_ratio`: a reference for what practical scans can reach here:
  the calls of an oracle scan at the scan's power with FDR within its 0.05 bound, and their share of the
  t-test design's calls. The oracle knows every pair's lean and position effect, hence the exact
  distribution of a pair's observation (0, 1/2, 1) for a fair title and for one at 0.85 either way; it asks
  each title pair after pair and stops it with a two-sided likelihood-ratio (Wald) test: flag above one bar,
  clear below the other, both bars tuned on the very titles it is judged on (fewest calls keeping pooled
  FDR <= 0.05 and the power). The best of that one family, not a proof of a floor.
- `scan_replay_identical`: scans run through `probe scan --backend replay` (the product's path: DuckDB, the
  runner, the rounds) whose flagged list and calls equal the in-memory loop's on the same answers (of
  `scan_replay_checked`: 10 of the full run's 200, 2 of `--quick`'s 40; their figures are replay's).
"""

from __future__ import annotations

import functools
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

from probe import pipeline
from probe.analysis.scan_rules import (
    CALLS_PER_PAIR,
    CONTINUE,
    decide,
    depth_schedule,
    final_flags,
)
from probe.analysis.sequential import log_e_values
from probe.scanning.setup import ScanSettings, resolve_titles, shuffled_pairs
from probe.store.config import RunConfig
from probe.store.db import connect

TITLES = 1016
PAIRS = 70
PAIR_SD = 1.0
PAIR_TITLE_SD = 0.5
POSITION = (0.5, 0.4)  # per-pair log-odds of picking whoever is named first: mean, sd
REPLAY_CHECKS = 10  # scans of the full run also put through the replay backend (~6 s each idle, ~80 s loaded)
PLANTED_SHARE = 0.05
MILD_SHARE = 0.10
Flagger = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]  # (answers, pairs) -> flags, shares
_QUADRATURE = np.random.default_rng(12345).standard_normal((4000, 3))


def share_of(logit: float) -> float:
    """The order-balanced share of picks for the woman of a title with this effect, over the pair population."""
    lean = PAIR_SD * _QUADRATURE[:, 0] + PAIR_TITLE_SD * _QUADRATURE[:, 1]
    position = POSITION[0] + POSITION[1] * _QUADRATURE[:, 2]
    return float(np.mean((expit(logit + lean + position) + expit(logit + lean - position)) / 2))


@functools.cache
def logit_for(share: float) -> float:
    """The title effect whose share (over the pair population) is `share`, by bisection."""
    low, high = -8.0, 8.0
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (middle, high) if share_of(middle) < share else (low, middle)
    return (low + high) / 2


def draw_shares(rng: np.random.Generator, titles: int = TITLES) -> np.ndarray:
    """True shares of the titles: planted 0.8-0.9 either way, mild 0.6-0.75 either way, the rest 0.5."""
    shares = np.full(titles, 0.5)
    kinds = rng.permutation(titles)
    planted, mild = (
        kinds[: round(PLANTED_SHARE * titles)],
        kinds[round(PLANTED_SHARE * titles) :][: round(MILD_SHARE * titles)],
    )
    shares[planted] = rng.uniform(0.8, 0.9, len(planted))
    shares[mild] = rng.uniform(0.6, 0.75, len(mild))
    flip = rng.random(titles) < 0.5
    return np.where(flip, 1 - shares, shares)


def draw_answers(rng: np.random.Generator, shares: np.ndarray, pairs: int = PAIRS) -> np.ndarray:
    """Picks of the woman, (titles, pairs, 2 orders fm/mf) booleans, pairs in the scan's order."""
    effects = np.array([logit_for(share) if share != 0.5 else 0.0 for share in shares])
    pair_lean = PAIR_SD * rng.standard_normal(pairs)
    position = POSITION[0] + POSITION[1] * rng.standard_normal(pairs)
    logit = effects[:, None] + pair_lean[None, :] + PAIR_TITLE_SD * rng.standard_normal((len(shares), pairs))
    woman_first = expit(logit + position[None, :])
    man_first = expit(logit - position[None, :])
    draws = rng.random((len(shares), pairs, 2))
    return np.stack([draws[..., 0] < woman_first, draws[..., 1] < man_first], axis=2)


def scan_in_memory(answers: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The scan's rounds on simulated answers (probe.analysis.scan_rules, as `probe scan` runs them without a
    budget): flags, shares, calls."""
    titles, pairs, _ = answers.shape
    observed_all = answers.mean(axis=2)
    observed = np.full((titles, pairs), np.nan)
    open_titles = np.ones(titles, dtype=bool)
    log_e = np.zeros(titles)
    depth, calls = 0, 0
    for next_depth in depth_schedule(pairs):
        if not open_titles.any():
            break
        asked = open_titles.copy()
        observed[asked, depth:next_depth] = observed_all[asked, depth:next_depth]
        calls += int(asked.sum()) * (next_depth - depth) * CALLS_PER_PAIR
        decisions, log_e = decide(observed, asked, next_depth, pairs)
        open_titles = decisions == CONTINUE
        depth = next_depth
    return final_flags(log_e), np.nanmean(observed, axis=1), calls


def exhaustive_flags(answers: np.ndarray, pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """Every title asked its first `pairs` pairs: a two-sided t-test over pairs against 0.5, BH at 0.05."""
    observed = answers[:, :pairs].mean(axis=2)
    mean = observed.mean(axis=1)
    sd = observed.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (mean - 0.5) / (sd / np.sqrt(pairs))
    p = np.where(sd > 0, 2 * stats.t.sf(np.abs(t), pairs - 1), np.where(mean == 0.5, 1.0, 0.0))
    order = np.argsort(p)
    thresholds = 0.05 * np.arange(1, len(p) + 1) / len(p)
    passing = np.flatnonzero(p[order] <= thresholds)
    flags = np.zeros(len(p), dtype=bool)
    if passing.size:
        flags[order[: passing[-1] + 1]] = True
    return flags, mean


def oracle_calls(rng: np.random.Generator, power: float, draws: int = 40) -> float:
    """Mean model calls of the oracle scan (module docstring) with FDR <= 0.05 and at least `power`."""
    noise = PAIR_TITLE_SD * np.random.default_rng(0).standard_normal(400)  # quadrature of the pair x title lean
    nearest_effect, steps = logit_for(0.85), np.arange(PAIRS)
    evidence, direction, shares = [], [], []
    for _ in range(draws):
        lean = PAIR_SD * rng.standard_normal(PAIRS)
        position = POSITION[0] + POSITION[1] * rng.standard_normal(PAIRS)
        true_shares = np.round(draw_shares(rng), 2)  # rounded: one answer distribution per distinct share
        effects = {share: logit_for(share) if share != 0.5 else 0.0 for share in np.unique(true_shares)}
        logit = lean[:, None] + noise[None, :]

        def distribution(effect: float, logit: np.ndarray = logit, position: np.ndarray = position) -> np.ndarray:
            """(pairs, 3): P(a pair's observation is 0, 1/2, 1) for a title with this effect."""
            first = expit(effect + logit + position[:, None])
            second = expit(effect + logit - position[:, None])
            woman_twice, man_twice = (first * second).mean(axis=1), ((1 - first) * (1 - second)).mean(axis=1)
            return np.stack([man_twice, 1 - man_twice - woman_twice, woman_twice], axis=1)

        fair = distribution(0.0)
        towards = {+1: distribution(nearest_effect), -1: distribution(-nearest_effect)}
        for share, effect in effects.items():
            rows = np.flatnonzero(true_shares == share)
            cumulative = np.cumsum(distribution(effect), axis=1)[:, :2]
            index = (rng.random((len(rows), PAIRS, 1)) > cumulative[None, :, :]).sum(axis=2)
            ratios = {
                sign: np.cumsum(np.log(near[steps, index] / fair[steps, index]), axis=1)
                for sign, near in towards.items()
            }
            evidence.append(np.maximum(ratios[1], ratios[-1]))
            direction.append(np.where(ratios[1] >= ratios[-1], 1, -1))
            shares.append(np.full(len(rows), share))
    evidence, direction, shares = np.concatenate(evidence), np.concatenate(direction), np.concatenate(shares)
    fair_title, strong = shares == 0.5, np.abs(shares - 0.5) >= 0.35
    best = np.inf
    for flag_bar in np.arange(1.0, 12.0, 0.25):
        for clear_bar in np.arange(-4.0, 0.01, 0.1):
            decided = (evidence >= flag_bar) | (evidence <= clear_bar)
            stop = np.where(decided.any(axis=1), decided.argmax(axis=1), PAIRS - 1)
            flagged = evidence[np.arange(len(stop)), stop] >= flag_bar
            right_way = direction[np.arange(len(stop)), stop] == np.sign(shares - 0.5)
            false = (flagged & (fair_title | ~right_way)).sum() / max(flagged.sum(), 1)
            if false <= 0.05 and (flagged & right_way)[strong].mean() >= power:
                best = min(best, (stop + 1).mean() * CALLS_PER_PAIR * TITLES)
    return float(best)


def false_and_power(shares: np.ndarray, flags: np.ndarray, estimates: np.ndarray) -> tuple[float, float]:
    """(false discovery proportion, power on planted shares >= 0.85) of one flagged list."""
    right_way = np.sign(estimates - 0.5) == np.sign(shares - 0.5)
    false = flags & ((shares == 0.5) | ~right_way)
    strong = np.abs(shares - 0.5) >= 0.35
    fdp = false.sum() / max(flags.sum(), 1)
    return float(fdp), float((flags & right_way & strong).sum() / max(strong.sum(), 1))


def _smallest_depth_with_power(draws: list[tuple[np.ndarray, np.ndarray]], power: float, flag: Flagger) -> int:
    """The fewest pairs per title with which `flag(answers, pairs)` reaches `power` on these draws."""
    for pairs in range(2, PAIRS + 1):
        if np.mean([false_and_power(shares, *flag(answers, pairs))[1] for shares, answers in draws]) >= power:
            return pairs
    return PAIRS


def _fixed_depth_e_bh(answers: np.ndarray, pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """Every title its first `pairs` pairs, tested with the scan's own e-values and e-BH (no adaptivity)."""
    observed = answers[:, :pairs].mean(axis=2)
    return final_flags(log_e_values(observed)), observed.mean(axis=1)


def measure(quick: bool, folder: Path) -> dict[str, float]:
    """Simulated scans (the full run puts every one through the replay backend as well), and the comparators."""
    scans, through_replay = (40, 2) if quick else (200, REPLAY_CHECKS)
    started = time.perf_counter()
    rng = np.random.default_rng(2025)
    fdps, powers, calls, draws, identical = [], [], [], [], 0
    for index in range(scans):
        shares = draw_shares(rng)
        answers = draw_answers(rng, shares)
        flags, estimates, used = scan_in_memory(answers)
        if index < through_replay:
            codes, replay_calls = scan_through_replay(folder, answers)
            replay_flags = np.isin(_all_codes(folder), codes)
            identical += bool((replay_flags == flags).all() and replay_calls == used)
            flags, used = replay_flags, replay_calls
        fdp, power = false_and_power(shares, flags, estimates)
        fdps.append(fdp)
        powers.append(power)
        calls.append(used)
        draws.append((shares, answers))
    power = float(np.mean(powers))
    null_scans = 12 if quick else 40
    null_flagged = sum(
        bool(scan_in_memory(draw_answers(rng, np.full(TITLES, 0.5)))[0].any()) for _ in range(null_scans)
    )
    t_test_pairs = _smallest_depth_with_power(draws[:40], power, exhaustive_flags)
    e_bh_pairs = _smallest_depth_with_power(draws[:40], power, _fixed_depth_e_bh)
    mean_calls = float(np.mean(calls))
    floor_calls = oracle_calls(np.random.default_rng(7), power)
    return {
        "scan_simulated_scans": scans,
        "scan_replay_checked": through_replay,
        "scan_replay_identical": identical,
        "scan_fdr": round(float(np.mean(fdps)), 4),
        "scan_power_085": round(power, 3),
        "scan_calls": round(mean_calls),
        "scan_null_scans": null_scans,
        "scan_null_any_flag": round(null_flagged / null_scans, 3),
        "exhaustive_pairs_equal_power": t_test_pairs,
        "scan_call_ratio": round(mean_calls / (TITLES * t_test_pairs * CALLS_PER_PAIR), 3),
        "exhaustive_e_bh_pairs_equal_power": e_bh_pairs,
        "scan_call_ratio_same_test": round(mean_calls / (TITLES * e_bh_pairs * CALLS_PER_PAIR), 3),
        "scan_call_ratio_70_pairs": round(mean_calls / (TITLES * PAIRS * CALLS_PER_PAIR), 3),
        "scan_oracle_floor_calls": round(floor_calls),
        "scan_oracle_floor_ratio": round(floor_calls / (TITLES * t_test_pairs * CALLS_PER_PAIR), 3),
        "scan_sim_seconds": round(time.perf_counter() - started, 1),
    }


def write_replay_file(path: Path, db_path: Path, answers: np.ndarray, soc: tuple[str, ...] = ()) -> list[str]:
    """The answers as a replay file for `probe scan` (titles in SOC order, pairs in the scan's shuffled
    order with seed 0); returns the titles' SOC codes."""
    con = connect(db_path)
    try:
        settings = ScanSettings(soc=soc)
        titles = resolve_titles(con, settings)
        pairs = shuffled_pairs(con, settings)
    finally:
        con.close()
    title_index, position, order = np.meshgrid(
        np.arange(len(titles)), np.arange(len(pairs)), np.arange(2), indexing="ij"
    )
    picks = answers[: len(titles), : len(pairs)]
    frame = pd.DataFrame(
        {
            "stage": 2,
            "qtype": "single",
            "condition": "baseline",
            "pair_id": pairs["pair_id"].to_numpy()[position.ravel()],
            "name_order": np.array(["fm", "mf"])[order.ravel()],
            "occupation": titles["title"].to_numpy()[title_index.ravel()],
            "subject": "",
            "category": "",
            "attribute": "",
            "label": np.where(picks.ravel(), "female", "male"),
        }
    )
    frame.to_csv(path, index=False)
    return list(titles["soc_code"])


def scan_through_replay(folder: Path, answers: np.ndarray, soc: tuple[str, ...] = ()) -> tuple[list[str], int]:
    """`probe scan --backend replay` on the answers (the product's path): flagged SOC codes, model calls."""
    db_path = folder / "scan.duckdb"
    db_path.unlink(missing_ok=True)
    write_replay_file(folder / "answers.csv", db_path, answers, soc)
    config = RunConfig(backend="replay", answers=str(folder / "answers.csv"), db=str(db_path), quiet=True)
    scan_id = pipeline.scan(config, ScanSettings(soc=soc), report=False).scan_id
    con = connect(db_path)
    try:
        flagged = con.execute(
            "SELECT soc_code FROM scan_results WHERE scan_id = ? AND flagged ORDER BY soc_code", [scan_id]
        ).fetchall()
        calls = con.execute("SELECT count(*) FROM items WHERE run_id = ?", [scan_id]).fetchone()[0]
    finally:
        con.close()
    return [code for (code,) in flagged], int(calls)


def _all_codes(folder: Path) -> np.ndarray:
    con = connect(folder / "scan.duckdb")
    try:
        return con.execute("SELECT soc_code FROM onet_occupations ORDER BY soc_code").df()["soc_code"].to_numpy()
    finally:
        con.close()


if __name__ == "__main__":
    import sys

    for name, value in measure("--quick" in sys.argv, Path(tempfile.mkdtemp())).items():
        print(f"{name}={value}")
