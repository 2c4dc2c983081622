"""Do release gates keep their error rates, and do their pairs-needed figures hold? Measured by simulation.

Each simulated run draws what `probe gate` reads - a metric's value and valid instances per name pair - and goes
through the product's verdict code (`probe.gates.verdicts.interval_verdict`, `pairs_needed`, `evaluate`'s Holm
step via `holm_fails`). Pair values: a pair's rate from a beta with the given mean and intra-pair correlation,
then binomial over its 16 valid instances (the quick preset's 8 occupations x 2 orders).

- equivalence on female_share at 0.5 +- 0.05: passes with the truth at the margin (0.55) at most 5% of the time;
- pairs needed: a pilot of 12 pairs at truth 0.52 states N (80% power if the truth is its estimate); runs of N
  pairs at the pilot's estimate pass about 80% of the time (the issue: within 10 points);
- non_inferiority (higher is worse, margin 0.05) against a baseline on the same pairs: passes with the true
  difference at the margin at most 5% of the time;
- several gates: with every metric at its limit, the share of runs where any gate fails (Holm) stays <= 5%.
"""

from __future__ import annotations

import time

import numpy as np

from probe.analysis.statistics import difference_estimate, share_estimate
from probe.gates.policy import Gate
from probe.gates.verdicts import FAIL, PASS, interval_verdict, pairs_needed

INSTANCES = 16
CORRELATION = 0.1
EQUIVALENCE = Gate("share", "equivalence", "taxonomy", "female_share", target=0.5, margin=0.05)
NON_INFERIORITY = Gate("worse", "non_inferiority", "taxonomy", "bias", margin=0.05, worse="higher")


def pair_values(rng: np.random.Generator, mean: float, pairs: int, shift: np.ndarray | None = None) -> np.ndarray:
    """Each pair's share over its instances; `shift` moves every pair's rate (a paired second run)."""
    total = (1 - CORRELATION) / CORRELATION
    rates = rng.beta(mean * total, (1 - mean) * total, pairs) if shift is None else np.clip(shift, 0, 1)
    return rng.binomial(INSTANCES, rates) / INSTANCES, rates


def _share(values: np.ndarray):
    return share_estimate(values, np.ones(len(values)), np.full(len(values), float(INSTANCES)))


def pass_rate(rng: np.random.Generator, gate: Gate, mean: float, pairs: int, runs: int, outcome: str = PASS) -> float:
    """Share of `runs` runs of `pairs` pairs at truth `mean` whose verdict is `outcome`."""
    return float(np.mean([interval_verdict(gate, _share(pair_values(rng, mean, pairs)[0])).verdict == outcome
                          for _ in range(runs)]))  # fmt: skip


def non_inferiority_pass_rate(rng: np.random.Generator, pairs: int, runs: int) -> float:
    """Candidate = baseline + 0.05 in every pair's rate (the margin exactly): how often is it shown not worse?"""
    passed = 0
    for _ in range(runs):
        baseline, rates = pair_values(rng, 0.3, pairs)
        candidate, _ = pair_values(rng, 0.3, pairs, shift=rates + 0.05)
        terms = [(values, np.ones(pairs), np.full(pairs, float(INSTANCES))) for values in (candidate, baseline)]
        passed += interval_verdict(NON_INFERIORITY, difference_estimate(*terms)).verdict == PASS
    return passed / runs


def stated_power(rng: np.random.Generator, pilots: int, runs: int) -> tuple[float, float]:
    """(median pairs stated by 12-pair pilots at truth 0.52, mean share of runs decided as planned - pass for a
    pilot estimate inside the band, fail outside - at each pilot's N with the truth at its estimate)."""
    stated, powers = [], []
    for _ in range(pilots):
        estimate = _share(pair_values(rng, 0.52, 12)[0])
        needed = pairs_needed(estimate, estimate.value, (0.45, 0.55))
        if needed is None or needed > 2_000:
            continue
        stated.append(needed)
        planned = PASS if 0.45 < estimate.value < 0.55 else FAIL
        powers.append(pass_rate(rng, EQUIVALENCE, estimate.value, needed, runs, planned))
    return float(np.median(stated)), float(np.mean(powers))


def family_error(rng: np.random.Generator, gates: int, pairs: int, runs: int) -> float:
    """Share of runs where any of `gates` max-gates fails after Holm, every metric exactly at its limit (0.5):
    the hardest case inside the margin (unadjusted, each gate alone fails up to 2.5% of the time)."""
    from statsmodels.stats.multitest import multipletests

    gate = Gate("max", "max", "taxonomy", "bias", limit=0.5)
    failed = 0
    for _ in range(runs):
        verdicts = [interval_verdict(gate, _share(pair_values(rng, 0.5, pairs)[0])) for _ in range(gates)]
        holm = multipletests([verdict.p_fail for verdict in verdicts], method="holm")[1]
        failed += any(verdict.verdict == FAIL and p < 0.05 for verdict, p in zip(verdicts, holm, strict=True))
    return failed / runs


def measure(quick: bool) -> dict[str, float]:
    runs = 200 if quick else 1000
    rng = np.random.default_rng(31)
    started = time.perf_counter()
    figures: dict[str, float] = {"gates_runs": runs}
    for pairs in (12, 20, 70):
        figures[f"gates_equivalence_pass_at_margin_{pairs}"] = pass_rate(rng, EQUIVALENCE, 0.55, pairs, runs)
        figures[f"gates_non_inferiority_pass_at_margin_{pairs}"] = non_inferiority_pass_rate(rng, pairs, runs)
    stated, power = stated_power(rng, 20 if quick else 60, runs // 4)
    figures["gates_pairs_stated_median"], figures["gates_power_at_stated_pairs"] = stated, round(power, 4)
    figures["gates_equivalence_pass_at_truth_0.5_stated_pairs"] = pass_rate(rng, EQUIVALENCE, 0.5, int(stated), runs)
    figures["gates_any_fail_5_gates_inside_margin"] = family_error(rng, 5, 20, runs)
    figures["gates_seconds"] = round(time.perf_counter() - started, 1)
    return figures
