"""The scan's rules on small exact inputs, in memory as bench/scan.py runs them (its simulation measures the false
discovery rate, power and calls over 1,016 titles: `python -m bench --only scan`, BENCHMARKS.md);
tests/scanning/test_scan.py shows the same rules give the same flagged list through DuckDB and the replay backend.
"""

from __future__ import annotations

import numpy as np

from bench.scan import exhaustive_flags, scan_in_memory


def _answers() -> np.ndarray:
    """Three titles x 70 pairs x both orders: the woman always picked; whoever is named first; the woman in every
    other pair."""
    answers = np.zeros((3, 70, 2), dtype=bool)
    answers[0] = True
    answers[1, :, 0] = True
    answers[2, ::2] = True
    return answers


def test_the_scan_flags_a_one_sided_title_and_clears_the_others_early() -> None:
    flags, shares, calls = scan_in_memory(_answers())
    assert flags.tolist() == [True, False, False]
    assert shares.tolist() == [1.0, 0.5, 0.5]
    # the one-sided title is flagged at depth 10 (20 calls); position only is cleared after 2 pairs (4 calls), the
    # alternating one after 4 (8 calls)
    assert calls == 20 + 4 + 8


def test_exhaustive_probing_with_a_t_test_flags_by_benjamini_hochberg() -> None:
    answers = np.zeros((4, 10, 2), dtype=bool)
    answers[0] = True  # every pair picks the woman in both orders
    answers[1, :, 0] = True  # position only: the woman when named first
    answers[2, ::2] = True
    flags, means = exhaustive_flags(answers, 10)
    assert (flags.tolist(), means.tolist()) == ([True, False, False, True], [1.0, 0.5, 0.5, 0.0])
