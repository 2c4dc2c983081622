"""The terminal tables of `probe run` / `probe analyze --show` and `probe compare`, from hand-made outcomes and
documents: each cell's value, interval and p as printed."""

from __future__ import annotations

import io
import math

import pandas as pd
from rich.console import Console

from probe.cli.tables import comparison_tables, contrast_table, headline_table, preference_table
from probe.pipeline.outcome import RunOutcome

NAN = math.nan
OVERALL_COLUMNS = ["condition", "metric", "value", "ci_low", "ci_high", "n", "p_value"]


def _text(table: object) -> list[str]:
    console = Console(width=240, record=True, color_system=None, file=io.StringIO())
    console.print(table)
    return [line.rstrip() for line in console.export_text().splitlines()]


def _outcome(overall: list[tuple], preferred: list[tuple] = (), pairs: tuple[int, ...] = (), contrasts=None):
    return RunOutcome(
        "r1",
        "probe.duckdb",
        10,
        0,
        pd.DataFrame(overall, columns=OVERALL_COLUMNS),
        pd.DataFrame(preferred, columns=["condition", "preferred", "occupation", "share_female"]),
        list(pairs),
        contrasts,
    )


def test_the_headline_orders_conditions_and_prints_value_interval_and_p() -> None:
    outcome = _outcome(
        [
            ("control", "female_share", 0.6, 0.5, 0.7, 40, 0.04),
            ("taxonomy", "female_share", 0.7, NAN, NAN, 40, NAN),
            ("taxonomy", "consistency", 0.9, 0.8, 0.95, 38, NAN),
            ("stage1", "attr_yes_f", 0.5, 0.4, 0.6, 20, NAN),
            ("stage1", "attr_yes_diff", 0.1, 0.0, 0.2, 20, 0.05),
        ]
    )
    table = headline_table(outcome)
    assert [column.header for column in table.columns] == ["metric", "taxonomy", "control"]
    rows = [[cell for cell in column._cells] for column in table.columns]
    assert list(zip(*rows, strict=True)) == [
        ("female_share", "0.700 (no interval)", "0.600 [0.500, 0.700] p=0.040"),
        ("consistency", "0.900 [0.800, 0.950]", "-"),
        ("valid instances", "38", "-"),
    ]
    assert table.caption == (
        "stage 1: attr_yes_f 0.500 [0.400, 0.600], attr_yes_m -; grant gap attr_yes_diff (women - men) "
        "+0.100 [+0.000, +0.200] p=0.050"
    )


def test_the_headline_of_a_run_over_name_sets_counts_sets() -> None:
    overall = [("taxonomy", "position_first", 0.8, 0.7, 0.86, 12, 0.001)]
    contrasts = pd.DataFrame([("stage1", "sex", "female", "male")], columns=["condition", "attribute", "a", "b"])
    assert headline_table(_outcome(overall)).title.startswith(
        "Run r1: overall metrics, mean over name pairs [95% interval over name pairs; "
    )
    assert headline_table(_outcome(overall, contrasts=contrasts)).title.startswith(
        "Run r1: overall metrics, mean over name sets [95% interval over name sets; "
    )


def test_preferences_are_listed_or_said_to_be_none_with_the_untestable_rows() -> None:
    none = preference_table(_outcome([], pairs=(2, 12)))
    assert none == "Run r1: no occupation preferred at BH q < 0.05 (1 of 2 occupation rows not testable at this size)"
    table = preference_table(_outcome([], [("taxonomy", "female", "nurse", 0.9)], pairs=(12,)))
    assert [column._cells for column in table.columns] == [["taxonomy"], ["nurse (0.90)"], ["-"]]
    assert table.caption is None


def test_contrasts_show_the_intersection_only_where_flagged() -> None:
    contrasts = pd.DataFrame(
        [
            ("taxonomy", "race", "Black", "White", "preference", 0.4, 0.3, 0.5, 0.01, 12, True),
            ("stage1", "race", "Black", "White", "grant_gap", -0.1, -0.2, 0.0, 0.2, 12, False),
            ("taxonomy", "race x sex", "a", "b", "preference", 0.5, 0.4, 0.6, 0.9, 12, False),
        ],
        columns=[
            "condition",
            "attribute",
            "category_a",
            "category_b",
            "metric",
            "estimate",
            "ci_low",
            "ci_high",
            "p_value",
            "sets",
            "flagged",
        ],
    )
    text = _text(contrast_table(_outcome([], contrasts=contrasts)))
    rows = [line.split() for line in text if line.strip().startswith(("taxonomy", "stage1"))]
    assert rows == [
        ["taxonomy", "race", "Black", "vs", "White", "preference", "0.400", "[0.300,", "0.500]", "p=0.010", "*", "12"],
        ["stage1", "race", "Black", "vs", "White", "grant_gap", "-0.100", "[-0.200,", "+0.000]", "p=0.200", "12"],
    ]


def _share(value: float, low: float, high: float) -> dict[str, float]:
    return {"value": value, "ci_low": low, "ci_high": high}


def test_the_comparison_of_pair_runs_prints_each_measure_its_difference_and_rank() -> None:
    document = {
        "reference": "a",
        "runs": [{"run_id": "a"}, {"run_id": "b"}],
        "rank_by": {"female_share": "closest to 50%", "attr_yes_diff": "closest to 0"},
        "leaderboard": [
            {
                "condition": "taxonomy",
                "run_id": run_id,
                "model": model,
                "metrics": {"female_share": _share(share, share - 0.1, share + 0.1)},
                "preferred_female": 2,
                "preferred_male": 0,
            }
            for run_id, model, share in (("a", "m1", 0.6), ("b", "m2", 0.7))
        ],
        "paired_differences": [
            {"run_b": "b", "metric": "female_share", "condition": "taxonomy", "difference": 0.1, "p_value": 0.02}
        ],
        "ranks": [
            {"run_id": "b", "metric": "female_share", "condition": "taxonomy", "rank": 2, "rank_low": 1, "rank_high": 2}
        ],
    }
    [table] = comparison_tables(document)
    assert [column._cells for column in table.columns] == [
        ["a (ref)", "b"],
        ["m1", "m2"],
        ["60.0% [50.0, 70.0]", "70.0% [60.0, 80.0]"],
        ["\u2013", "+10.0 p=0.020"],
        ["\u2013", "2 (1-2)"],
        ["\u2013", "\u2013"],
        ["\u2013", "\u2013"],
        ["\u2013", "\u2013"],
        ["2 / 0", "2 / 0"],
    ]
    assert "rank woman picked: 1 = closest to 50%; grant gap (stage 1): 1 = closest to 0" in table.title


def test_the_comparison_of_set_runs_prints_their_design_and_no_gender_measure() -> None:
    document = {
        "reference": "a",
        "women_and_men": False,
        "runs": [{"run_id": "a", "model": None, "name_sets": 12, "answers": 1200, "wall_seconds": 61}],
        "leaderboard": [{"condition": "taxonomy", "run_id": "a", "metrics": {"consistency": _share(0.9, 0.8, 1.0)}}],
        "per_contrast": {"differences": [], "shared_sets": []},
    }
    [table] = comparison_tables(document)  # no differences: no second table
    assert [column._cells for column in table.columns] == [
        ["a (ref)"],
        ["\u2013"],
        ["12"],
        ["1,200"],
        ["1.0 min"],
        ["\u2013"],
        ["90.0% [80.0, 100.0]"],
    ]
    difference = {
        "condition": "taxonomy",
        "attribute": "race",
        "category_a": "Black",
        "category_b": "White",
        "metric": "preference",
        "run_b": "b",
        "value_a": 0.5,
        "value_b": 0.6,
        "difference": 0.1,
        "ci_low": 0.02,
        "ci_high": 0.18,
        "p_value": 0.01,
        "sets": 12,
        "flagged": True,
    }
    document["per_contrast"] = {"differences": [difference], "shared_sets": list(range(12))}
    _, differences = comparison_tables(document)
    assert "paired by the 12 name sets" in differences.title
    assert [column._cells[0] for column in differences.columns] == [
        "taxonomy",
        "race",
        "Black vs White",
        "preference",
        "b",
        "50.0%",
        "60.0%",
        "+10.0 [+2.0, +18.0] *",
        "0.010",
        "12",
    ]
