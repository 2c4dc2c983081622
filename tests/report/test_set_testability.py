"""What a run over name sets can test (probe/report/set_testability.py), on hand-made contests: one row for the
impact ratio's intervals and one for the pairwise contrasts per attribute, testable from the sets each needs; a run
over the default name pairs (no contests) adds none. On the shipped sets: test_shipped_sets.py."""

from __future__ import annotations

import duckdb

from probe.analysis.binomial import binomial_min_p
from probe.report.set_testability import set_testability


def contests(con: duckdb.DuckDBPyConnection, sets: int) -> None:
    """`sets` name sets of a woman and a man: one contest each (pair = set), slot = the person's sex."""
    rows = [("r", s, s, slot, "sex", slot) for s in range(1, sets + 1) for slot in ("female", "male")]
    con.executemany(
        "INSERT INTO run_contests (run_id, pair_id, set_id, slot, attribute, category) VALUES (?, ?, ?, ?, ?, ?)", rows
    )


def test_a_run_over_name_pairs_adds_no_row(con: duckdb.DuckDBPyConnection) -> None:
    assert set_testability(con, "r") == []


def test_six_sets_of_two_categories_test_the_ratio_and_the_contrast(con: duckdb.DuckDBPyConnection) -> None:
    contests(con, 6)
    ratio, contrast = set_testability(con, "r")
    assert ratio == {
        "test": "adverse-impact ratio (sex): intervals over name sets",
        "units": 6,
        "min_p_value": binomial_min_p(6),
        "mde": None,
        "testable": True,
        "sentence": "Testable with 6 name sets: each of the 2 categories' impact ratio needs 6 name sets for an "
        "interval (Bonferroni over its 1 ratios), an impact_ratio gate 7 to fail and 6 to pass.",
    }
    assert (contrast["units"], contrast["testable"], contrast["sentence"]) == (
        6,
        True,
        "Testable: the pair of categories is asked in 6 of the 6 name sets' contests; a contrast needs 6 sets for "
        "an interval.",
    )


def test_five_sets_say_what_they_cannot_test(con: duckdb.DuckDBPyConnection) -> None:
    contests(con, 5)
    ratio, contrast = set_testability(con, "r")
    assert (ratio["testable"], contrast["testable"]) == (False, False)
    assert ratio["sentence"].startswith("Not testable at this size: 5 name sets; each of the 2 categories' ")
    assert contrast["sentence"] == (
        "Not testable at this size: the pair of categories is asked in 5 of the 5 name sets' contests; a contrast "
        "needs 6 sets for an interval."
    )
