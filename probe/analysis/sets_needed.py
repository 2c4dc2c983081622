"""How many name sets a test over sets needs (DESIGN.md section 11), said in one unit, sets, wherever a run is
planned or read: `probe gate --plan` and the impact_ratio gate, the report's "what this run can test".

Every interval over sets needs MIN_PAIRS of them; a Bonferroni level needs more, as the exact bound 2 x 0.5**sets
of a test over sets must fall below it: the adverse-impact interval of K categories takes each of its K - 1 ratios
at 1 - 0.05 / (K - 1) (9 sets at K = 8), a fail of the impact_ratio gate each of the K (K - 1) ordered pairs at
1 - 0.05 / (K (K - 1)) (12 sets at K = 8). A pairwise contrast is asked in one set of every round-robin cycle of
the rotation (probe/taxonomy/name_sets.py), so MIN_PAIRS sets for every contrast take MIN_PAIRS cycles (42 sets at
K = 8).
"""

from __future__ import annotations

from probe.analysis.binomial import SIGNIFICANCE, units_for_level
from probe.analysis.statistics import MIN_PAIRS
from probe.taxonomy.name_sets import rounds


def interval_sets(categories: int) -> int:
    """The fewest name sets at which each category's impact-ratio interval exists."""
    return max(MIN_PAIRS, units_for_level(SIGNIFICANCE / max(categories - 1, 1)))


def fail_sets(categories: int) -> int:
    """The fewest name sets at which the impact_ratio gate can fail (every ordered pair Bonferroni-adjusted)."""
    return max(MIN_PAIRS, units_for_level(SIGNIFICANCE / max(categories * (categories - 1), 1)))


def contrast_sets(categories: int) -> int:
    """The fewest name sets at which the rotation asks every pair of `categories` in MIN_PAIRS sets."""
    return MIN_PAIRS * rounds(categories)
