"""What a run over name sets can test, per attribute, in one unit, sets (probe/analysis/sets_needed.py): the rows the
report's "what this run can test" (report.json `testability`) adds for the adverse-impact intervals, the
impact_ratio gate and the pairwise contrasts. A run over the default name pairs adds none."""

from __future__ import annotations

from typing import Any

import duckdb

from probe.analysis.binomial import binomial_min_p
from probe.analysis.sets_needed import contrast_sets, fail_sets, interval_sets
from probe.analysis.statistics import MIN_PAIRS
from probe.report.findings import NOT_TESTABLE
from probe.taxonomy.name_sets import rounds


def set_testability(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    """Per attribute of the run's name sets: the impact-ratio interval and gate, then the pairwise contrasts (each
    pair of categories over the sets that ask it)."""
    sets = con.execute("SELECT count(DISTINCT set_id) FROM run_contests WHERE run_id = ?", [run_id]).fetchone()[0]
    if not sets:
        return []
    met = con.execute(
        """SELECT a.attribute, a.category, b.category, count(DISTINCT a.set_id)
           FROM run_contests a JOIN run_contests b ON a.run_id = b.run_id AND a.pair_id = b.pair_id
                AND a.attribute = b.attribute AND a.category < b.category
           WHERE a.run_id = ? GROUP BY ALL""",
        [run_id],
    ).fetchall()
    categories = dict(
        con.execute(
            "SELECT attribute, count(DISTINCT category) FROM run_contests WHERE run_id = ? "
            "GROUP BY attribute ORDER BY attribute",
            [run_id],
        ).fetchall()
    )
    rotated = max(categories.values())  # the rotation runs over the intersection's categories (or the only ones)
    tests = []
    for attribute, count in categories.items():
        if count < 2:  # one category: no ratio to another, no contrast
            continue
        needed = interval_sets(count)
        ratio_sentence = (
            f"each of the {count} categories' impact ratio needs {needed} name sets for an interval "
            f"(Bonferroni over its {count - 1} ratios), an impact_ratio gate {fail_sets(count)} to fail "
            f"and {MIN_PAIRS} to pass"
        )
        tests.append(
            {
                "test": f"adverse-impact ratio ({attribute}): intervals over name sets",
                "units": sets,
                "min_p_value": binomial_min_p(sets),
                "mde": None,
                "testable": sets >= needed,
                "sentence": (
                    f"Testable with {sets} name sets: {ratio_sentence}."
                    if sets >= needed
                    else f"{NOT_TESTABLE.capitalize()}: {sets} name sets; {ratio_sentence}."
                ),
            }
        )
        asked = {(a, b): n for attr, a, b, n in met if attr == attribute}
        pairs = count * (count - 1) // 2
        fewest = min(asked.values()) if len(asked) == pairs else 0
        most = max(asked.values(), default=0)
        spread = f"{fewest}" if fewest == most else f"{fewest} to {most}"
        which = "the pair of categories is" if pairs == 1 else f"each of the {pairs} pairs of categories is"
        sentence = (
            f"{which} asked in {spread} of the {sets} name sets' contests; a contrast needs {MIN_PAIRS} sets "
            "for an interval"
        )
        if count == rotated and count > 2:
            sentence += (
                f", which the rotation gives every pair from {contrast_sets(count)} sets (it asks each pair "
                f"once every {rounds(count)} sets)"
            )
        tests.append(
            {
                "test": f"pairwise contrasts ({attribute}): each pair of categories over the name sets whose "
                "contests ask it",
                "units": fewest,
                "min_p_value": binomial_min_p(fewest),
                "mde": None,
                "testable": fewest >= MIN_PAIRS,
                "sentence": (
                    f"Testable: {sentence}." if fewest >= MIN_PAIRS else f"{NOT_TESTABLE.capitalize()}: {sentence}."
                ),
            }
        )
    return tests
