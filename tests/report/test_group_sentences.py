"""A run over name sets in words (probe/report/contrasts.py): each contrast's verdict, its matrix cell and shade,
and the bottom line that claims no direction where no contrast of an attribute is shown."""

from __future__ import annotations

import math

from probe.report import contrasts

ROW = {
    "condition": "taxonomy",
    "attribute": "race_ethnicity",
    "category_a": "Black",
    "category_b": "White",
    "metric": "preference",
    "estimate": 0.6,
    "ci_low": 0.55,
    "ci_high": 0.65,
    "p_value": 0.001,
    "sets": 12,
    "n": 240,
    "comparisons": 6,
    "method": "m",
    "flagged": True,
}


def test_a_contrast_verdict_names_the_winner_only_where_flagged() -> None:
    shown = contrasts._verdict(ROW)
    assert shown["sentence"] == (
        "Black names are picked over White names (taxonomy): 60.0% [55.0%, 65.0%], p = 0.001 (Bonferroni), over 12 "
        "name sets."
    )
    assert (shown["shown"], shown["direction"]) == (True, "Black")
    gap = {**ROW, "metric": "grant_gap", "condition": "stage1", "estimate": -0.1, "ci_low": math.nan}
    untestable = contrasts._verdict({**gap, "flagged": False, "comparisons": 1})
    assert untestable["sentence"] == (
        "The grant gap between Black names and White names (stage1) is not testable at this size: -10.0 points, "
        "p = 0.001, over 12 name sets."
    )
    assert (untestable["shown"], untestable["direction"]) == (False, None)


def test_a_matrix_cell_is_shaded_by_its_distance_from_half() -> None:
    assert contrasts._cell(ROW) == {"text": "60.0% [55.0, 65.0] *", "share": 0.6, "shade": "rgba(49, 130, 189, 0.20)"}
    assert contrasts._cell({**ROW, "estimate": 0.25, "ci_low": math.nan}) == {
        "text": "25.0% (12 sets, no interval)",
        "share": 0.25,
        "shade": "rgba(230, 85, 13, 0.50)",
    }
    assert contrasts._cell(None) is None
    assert contrasts._further_text(
        {**ROW, "metric": "bias_gap", "estimate": 0.05, "ci_low": -0.01, "ci_high": 0.11}
    ) == ("+5.0 pts [-1.0, +11.0] *")


def test_the_bottom_line_of_an_attribute_with_no_contrast_shown() -> None:
    quiet = [{**ROW, "flagged": False, "p_value": 0.4}, {**ROW, "category_a": "Asian", "flagged": False}]
    document = {"contrasts": quiet, "adverse_impact": None}
    bottom = contrasts.group_bottom_line(document)
    assert [verdict["sentence"] for verdict in bottom["verdicts"]] == [
        "No preference between any two race_ethnicity categories is shown (taxonomy; 2 contrasts, Bonferroni over "
        "them)."
    ]
    assert bottom["cannot_test"] == [] and bottom["pairs"] is None
