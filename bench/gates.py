"""Do release gates keep their error rates, and do their pairs-needed figures hold? Measured by simulation.

Each simulated run draws what `probe gate` reads - a metric's value and valid instances per name pair - and goes
through the product's verdict code (`probe.gates.verdicts.interval_verdict`, `pairs_needed`, and the family's
Holm step `confirm_fails`). Pair values: a pair's rate from a beta with the given mean and intra-pair correlation,
then binomial over its 16 valid instances (the quick preset's 8 occupations x 2 orders).

- equivalence on female_share at 0.5 +- 0.05: passes with the truth at the margin (0.55) at most 5% of the time;
- pairs needed: a pilot at truth 0.52 states N (80% power if the truth is its estimate and the spread its
  spread); runs of N pairs at the pilot's estimate are decided as planned about 80% of the time (the issue: within
  10 points). Pilots of 12, 20 and 70 pairs (the pilot's noise), and one of 4,000 (the formula alone);
- the claim as a user meets it: a pilot of 70 pairs at truth 0.5 whose plan promises a pass states N; runs of N
  pairs at truth 0.5 pass at least 80% of the time;
- non_inferiority (higher is worse, margin 0.05) against a baseline on the same pairs: passes with the true
  difference at the margin at most 5% of the time;
- several gates: with every metric at its limit (and, beside four of them, an occupations gate over 8 occupations
  none of which is preferred), the share of runs where any gate fails (after Holm) stays <= 5%; each gate decided
  on its own (a policy without gate_family), the same share, which grows with the gates.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from probe.analysis.differences import difference_estimate
from probe.analysis.preference import occupation_preference_rows
from probe.analysis.statistics import ShareEstimate, share_estimate
from probe.gates.gate import FAIL, PASS, Gate, Verdict
from probe.gates.kinds import KINDS
from probe.gates.verdicts import confirm_fails, interval_verdict, pairs_needed

INSTANCES = 16
CORRELATION = 0.1
EQUIVALENCE = Gate("share", KINDS["equivalence"], "taxonomy", "female_share", {"target": 0.5, "margin": 0.05})
BAND = (0.45, 0.55)
NON_INFERIORITY = Gate("worse", KINDS["non_inferiority"], "taxonomy", "bias", {"margin": 0.05, "worse": "higher"})
OCCUPATIONS = Gate("occupations", KINDS["occupations"], "taxonomy", settings={"occupations": ()})
LARGEST_PLAN = 3_000  # plans above this many pairs are counted, not run


def pair_values(rng: np.random.Generator, mean: float, pairs: int, shift: np.ndarray | None = None) -> np.ndarray:
    """Each pair's share over its instances; `shift` moves every pair's rate (a paired second run)."""
    total = (1 - CORRELATION) / CORRELATION
    rates = rng.beta(mean * total, (1 - mean) * total, pairs) if shift is None else np.clip(shift, 0, 1)
    return rng.binomial(INSTANCES, rates) / INSTANCES, rates


def _share(values: np.ndarray) -> ShareEstimate:
    return share_estimate(values, np.ones(len(values)), np.full(len(values), float(INSTANCES)))


def pass_rate(rng: np.random.Generator, gate: Gate, mean: float, pairs: int, runs: int, outcome: str = PASS) -> float:
    """Share of `runs` runs of `pairs` pairs at truth `mean` whose verdict is `outcome`."""
    return float(
        np.mean(
            [interval_verdict(gate, _share(pair_values(rng, mean, pairs)[0])).verdict == outcome for _ in range(runs)]
        )
    )


def non_inferiority_pass_rate(rng: np.random.Generator, pairs: int, runs: int) -> float:
    """Candidate = baseline + 0.05 in every pair's rate (the margin exactly): how often is it shown not worse?"""
    passed = 0
    for _ in range(runs):
        baseline, rates = pair_values(rng, 0.3, pairs)
        candidate, _ = pair_values(rng, 0.3, pairs, shift=rates + 0.05)
        terms = [(values, np.ones(pairs), np.full(pairs, float(INSTANCES))) for values in (candidate, baseline)]
        passed += interval_verdict(NON_INFERIORITY, difference_estimate(*terms)).verdict == PASS
    return passed / runs


def stated_power(rng: np.random.Generator, pilot_pairs: int, pilots: int, runs: int) -> tuple[float, float, float]:
    """Pilots of `pilot_pairs` at truth 0.52: (median pairs stated, mean share of runs decided as planned - pass
    for an estimate inside the band, fail outside - at each pilot's N with the truth at its estimate, share of
    pilots whose plan was above LARGEST_PLAN and not run)."""
    stated, powers, skipped = [], [], 0
    for _ in range(pilots):
        estimate = _share(pair_values(rng, 0.52, pilot_pairs)[0])
        needed = pairs_needed(estimate, estimate.value, BAND).pairs
        if needed is None or needed > LARGEST_PLAN:
            skipped += 1
            continue
        stated.append(needed)
        planned = PASS if BAND[0] < estimate.value < BAND[1] else FAIL
        powers.append(pass_rate(rng, EQUIVALENCE, estimate.value, needed, runs, planned))
    return float(np.median(stated)), float(np.mean(powers)), skipped / pilots


def planned_pass_at_truth(rng: np.random.Generator, pilot_pairs: int, pilots: int, runs: int) -> tuple[float, float]:
    """Pilots of `pilot_pairs` at truth 0.5; where the plan promises a pass (estimate inside the band, N <=
    LARGEST_PLAN), runs of N pairs at truth 0.5: (share of pilots planning a pass, mean pass share)."""
    passes = []
    for _ in range(pilots):
        estimate = _share(pair_values(rng, 0.5, pilot_pairs)[0])
        needed = pairs_needed(estimate, estimate.value, BAND).pairs
        if BAND[0] < estimate.value < BAND[1] and needed is not None and needed <= LARGEST_PLAN:
            passes.append(pass_rate(rng, EQUIVALENCE, 0.5, needed, runs))
    return len(passes) / pilots, float(np.mean(passes))


def occupations_verdict_of(rng: np.random.Generator, occupations: int, pairs: int) -> Verdict:
    """An occupations gate over `occupations` occupations none of which is preferred: each pair answers each name
    order once, picking the woman half the time; the product's occupation_preference_rows decides (sign tests,
    BH), and the gate fails where one is preferred, entering Holm with the smallest q (as the occupations kind's
    verdict does; only its fails are counted here, so its margin / detectable pass rule does not enter)."""
    keys = pd.MultiIndex.from_product(
        [["taxonomy"], range(occupations), range(pairs), ["fm", "mf"]],
        names=["condition", "occupation", "pair_id", "name_order"],
    )
    cells = pd.DataFrame({"n": 1, "n_female": rng.integers(0, 2, len(keys))}, index=keys).reset_index()
    rows = occupation_preference_rows(cells)
    verdict = FAIL if (rows["preferred"] != "none").any() else PASS
    return Verdict(OCCUPATIONS, verdict, "", p_fail=float(rows["q_value"].min(skipna=True)))


def family_error(
    rng: np.random.Generator, gates: int, pairs: int, runs: int, occupations: int = 0, holm: bool = True
) -> float:
    """Share of runs where any of `gates` max-gates (and an occupations gate over `occupations` occupations, if
    any) fails - after Holm (a policy's gate_family = "holm"), or each gate on its own (`holm` False, the default
    policy) - every metric exactly at its limit (0.5) and no occupation preferred: the hardest case inside the
    margin (each max gate alone fails up to 2.5% of the time)."""
    gate = Gate("max", KINDS["max"], "taxonomy", "bias", {"limit": 0.5})
    failed = 0
    for _ in range(runs):
        verdicts = [interval_verdict(gate, _share(pair_values(rng, 0.5, pairs)[0])) for _ in range(gates)]
        if occupations:
            verdicts.append(occupations_verdict_of(rng, occupations, pairs))
        if holm:
            confirm_fails(verdicts)
        failed += any(verdict.verdict == FAIL for verdict in verdicts)
    return failed / runs


def measure(quick: bool) -> dict[str, float]:
    runs = 200 if quick else 1000
    rng = np.random.default_rng(31)
    started = time.perf_counter()
    figures: dict[str, float] = {"gates_runs": runs}
    for pairs in (12, 20, 70):
        figures[f"gates_equivalence_pass_at_margin_{pairs}"] = pass_rate(rng, EQUIVALENCE, 0.55, pairs, runs)
        figures[f"gates_non_inferiority_pass_at_margin_{pairs}"] = non_inferiority_pass_rate(rng, pairs, runs)
    pilots, pilot_runs = (20, 50) if quick else (40, 100)
    for pilot_pairs, count in ((12, pilots), (20, pilots), (70, pilots), (4000, pilots // 4)):
        stated, power, skipped = stated_power(rng, pilot_pairs, count, pilot_runs)
        figures[f"gates_pilot_{pilot_pairs}_pairs_stated_median"] = stated
        figures[f"gates_pilot_{pilot_pairs}_power_at_stated_pairs"] = round(power, 4)
        figures[f"gates_pilot_{pilot_pairs}_plans_over_{LARGEST_PLAN}"] = round(skipped, 4)
    planning, passed = planned_pass_at_truth(rng, 70, pilots, pilot_runs)
    figures["gates_pilot_70_at_0.5_plans_a_pass"] = round(planning, 4)
    figures["gates_equivalence_pass_at_truth_0.5_planned_pairs"] = round(passed, 4)
    figures["gates_any_fail_5_gates_inside_margin"] = family_error(rng, 5, 20, runs)
    figures["gates_any_fail_5_gates_inside_margin_each_alone"] = family_error(rng, 5, 20, runs, holm=False)
    figures["gates_any_fail_4_gates_and_8_occupations_none_preferred"] = family_error(rng, 4, 20, runs // 4, 8)
    figures["gates_seconds"] = round(time.perf_counter() - started, 1)
    return figures
