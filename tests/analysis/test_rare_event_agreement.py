"""Issue 48: in every run of the rare-event bench (bench/rare_events.py) the p-value of the truth reads across 0.05
exactly where the interval excludes it, for the product's choice and every interval it chooses between."""

from __future__ import annotations

import pytest

from bench.rare_events import CELLS, cell_table


@pytest.mark.parametrize("cell", list(CELLS))
def test_every_methods_p_value_agrees_with_its_interval(cell: str) -> None:
    draw, truth = CELLS[cell]
    table = cell_table(draw, truth, runs=15, seed=48, only_chosen=False)
    assert {method: row["disagree"] for method, row in table.items()} == dict.fromkeys(table, 0)
