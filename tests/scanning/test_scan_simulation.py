"""A fast version of bench/scan.py's simulation: error control and power of the scan's rules (fixed seeds).

All 1,016 titles, planted effects (5% at shares 0.8-0.9 either way, 10% at 0.6-0.75) and the heterogeneity of
real runs (pair lean sd 1, pair x title lean sd 0.5, a position effect), through the scan's rules in memory;
tests/scanning/test_scan.py shows the same rules give the same flagged list through DuckDB and the replay backend.
"""

from __future__ import annotations

import numpy as np

from bench.scan import (
    PAIRS,
    TITLES,
    draw_answers,
    draw_shares,
    exhaustive_flags,
    false_and_power,
    oracle_calls,
    scan_in_memory,
)

SCANS = 12


def test_the_scan_keeps_fdr_and_finds_the_planted_titles() -> None:
    rng = np.random.default_rng(2025)
    fdps, powers, used = [], [], []
    for _ in range(SCANS):
        shares = draw_shares(rng)
        answers = draw_answers(rng, shares)
        flags, estimates, calls = scan_in_memory(answers)
        fdp, power = false_and_power(shares, flags, estimates)
        fdps.append(fdp)
        powers.append(power)
        used.append(calls)
    assert np.mean(fdps) <= 0.05  # FDR: the expected false discovery proportion
    assert np.mean(powers) >= 0.8
    assert np.mean(used) <= 0.25 * TITLES * PAIRS * 2  # against every title asked every pair
    summary = (round(float(np.mean(fdps)), 4), round(float(np.mean(powers)), 3), round(float(np.mean(used))))
    assert summary == (0.0017, 0.868, 12134)


def test_null_titles_are_flagged_rarely_even_when_pairs_lean() -> None:
    """Only fair titles, pairs leaning as in real runs: any flag is false, so FDR = the chance of any flag."""
    rng = np.random.default_rng(9)
    any_flag = 0
    for _ in range(SCANS):
        answers = draw_answers(rng, np.full(TITLES, 0.5))
        any_flag += scan_in_memory(answers)[0].any()
    assert any_flag <= 1


def test_exhaustive_probing_with_a_t_test_flags_by_benjamini_hochberg() -> None:
    answers = np.zeros((4, 10, 2), dtype=bool)
    answers[0] = True  # every pair picks the woman in both orders
    answers[1, :, 0] = True  # position only: the woman when named first
    answers[2, ::2] = True
    flags, means = exhaustive_flags(answers, 10)
    assert (flags.tolist(), means.tolist()) == ([True, False, False, True], [1.0, 0.5, 0.5, 0.0])


def test_the_oracle_pays_more_calls_for_more_power() -> None:
    """The oracle reference (bench/scan.py): a likelihood-ratio test that knows every answer distribution."""
    calls = [round(oracle_calls(np.random.default_rng(3), power, draws=3)) for power in (0.5, 0.8, 0.95)]
    assert calls == [5783, 8855, 10290]
