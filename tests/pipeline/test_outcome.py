"""A finished run's outcome, read once after analysis: its size, the items that failed, the overall rows and the
occupations preferred."""

from __future__ import annotations

import itertools

import pytest

from probe.analysis.metric_registry import FEMALE_SHARE
from probe.analysis.metrics import analyze
from probe.pipeline.outcome import read_outcome
from tests.support import RunBuilder


def test_the_outcome_counts_items_and_failures_and_reads_the_overall_rows(con) -> None:
    run = RunBuilder(con)
    for pair_id, order in itertools.product(range(1, 7), ("fm", "mf")):  # the woman picked every time
        run.instance("taxonomy", pair_id, order, "nurse", "yes", "no", "female", "female")
    con.execute("UPDATE answers SET error = 'timeout' WHERE item_id IN ('item-0', 'item-1')")
    analyze(con, "r1")
    outcome = read_outcome(con, "r1", "probe.duckdb")
    assert (outcome.run_id, outcome.db, outcome.items, outcome.failed_items) == ("r1", "probe.duckdb", 48, 2)
    share = outcome.overall.set_index(["condition", "metric"]).loc[("taxonomy", FEMALE_SHARE)]
    assert (share["value"], share["n"]) == (pytest.approx(1.0), 12)
    assert outcome.preferred[["condition", "preferred", "occupation", "share_female"]].values.tolist() == [
        ["taxonomy", "female", "nurse", 1.0]
    ]
    assert outcome.occupation_pairs == [6]
    assert outcome.contrasts.empty  # a run over name pairs has no contrasts
