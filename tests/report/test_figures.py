"""The report's and the comparison's figures, read from the drawn matplotlib figure (the data URI's source): which
bars, points and colours each value becomes; an empty input draws nothing; the same input gives the same bytes."""

from __future__ import annotations

import base64

import numpy as np
import pytest
from matplotlib.collections import PathCollection

from probe.analysis.metric_registry import FIGURE1_METRICS
from probe.report import compare_figures, figures

ENTRY = {"value": 0.6, "ci_low": 0.5, "ci_high": 0.75}


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list:
    """The figures the functions draw, kept instead of encoded."""
    kept: list = []

    def keep(fig: object) -> str:
        kept.append(fig)
        return "uri"

    monkeypatch.setattr(figures, "_figure_uri", keep)
    monkeypatch.setattr(compare_figures, "_figure_uri", keep)
    return kept


def test_error_bars_reach_each_bound_and_a_missing_bound_draws_none() -> None:
    bars = figures._error_bars([0.6, 0.5], [0.5, np.nan], [0.75, 0.5])
    assert bars.ravel().tolist() == pytest.approx([0.1, 0.0, 0.15, 0.0])


def test_the_headline_draws_one_bar_per_metric_and_condition(drawn: list) -> None:
    overall = {"control": {FIGURE1_METRICS[0]: ENTRY}, "taxonomy": {}}
    assert figures.figure_headline(overall) == "uri"
    ax = drawn[0].axes[0]
    heights = [round(bar.get_height(), 6) for bar in ax.patches]
    # taxonomy first (the conditions' order), every metric missing there (a zero bar); control's first metric 0.6
    assert heights == [0.0] * len(FIGURE1_METRICS) + [0.6] + [0.0] * (len(FIGURE1_METRICS) - 1)
    assert [label.get_text() for label in ax.get_xticklabels()] == list(FIGURE1_METRICS)
    assert figures.figure_headline({}) is None


def test_impact_ratios_below_four_fifths_are_marked(drawn: list) -> None:
    row = {"condition": "taxonomy", "attribute": "race", "rate_kind": "selection", "reference": "White"}
    rows = [
        {**row, "category": "Black", "impact_ratio": 0.6, "ci_low": 0.5, "ci_high": 0.7},
        {**row, "category": "Asian", "impact_ratio": 0.9, "ci_low": 0.7, "ci_high": 1.0},
        {**row, "category": "White", "impact_ratio": 1.0, "ci_low": None, "ci_high": None},
    ]
    assert figures.figure_impact_ratios(rows) == "uri"
    ax = drawn[0].axes[0]
    colours = [tuple(points.get_facecolor()[0][:3]) for points in ax.collections if isinstance(points, PathCollection)]
    assert [label.get_text() for label in ax.get_yticklabels()] == [
        "race: Black (selection)",
        "race: Asian (selection)",
    ]
    assert [tuple(round(c * 255) for c in colour) for colour in colours] == [(213, 94, 0), (0, 114, 178)]
    assert figures.figure_impact_ratios(rows[2:]) is None  # the reference alone: no ratio to draw


def test_the_leaderboard_has_a_panel_per_metric_and_a_row_per_run(drawn: list) -> None:
    data = {
        "leaderboard": [
            {"run_id": "a", "metrics": {"female_share": ENTRY, "bias": ENTRY}},
            {"run_id": "b", "metrics": {"female_share": {"value": None}}},
        ]
    }
    assert compare_figures.figure_leaderboard(data) == "uri"
    axes = drawn[0].axes
    assert [ax.get_title() for ax in axes] == ["female_share", "bias"]
    assert [label.get_text() for label in axes[0].get_yticklabels()] == ["a", "b"]
    assert [line.get_xdata()[0] for line in axes[0].get_lines()[-1:]] == [0.5]  # female_share's null
    assert compare_figures.figure_leaderboard({"leaderboard": [{"run_id": "a", "metrics": {}}]}) is None
    assert compare_figures.figure_differences({"paired_differences": []}) is None


def test_the_same_figure_gives_the_same_svg_bytes() -> None:
    first, second = (figures.figure_headline({"taxonomy": {FIGURE1_METRICS[0]: ENTRY}}) for _ in range(2))
    assert first == second
    assert base64.b64decode(first.removeprefix("data:image/svg+xml;base64,")).startswith(b"<?xml")
