"""report.html drill-down: from a headline column or a preferred occupation to the stage-2 items behind it."""

from __future__ import annotations

import html
import importlib.util
from pathlib import Path

import pytest

import probe
from probe.report.items import ITEMS_SHOWN, margin
from tests.support import ROOT

EXAMPLE = ROOT / "examples" / "api_tour.py"


def test_margin_is_best_minus_second_best_score() -> None:
    assert margin({"yes": -0.25, "no": -2.0}) == pytest.approx(1.75)
    assert margin({"female": -3.0, "male": -0.5, "both": -1.0, "neither": -4.0}) == pytest.approx(0.5)
    assert margin({"yes": -0.1}) is None and margin(None) is None


@pytest.fixture
def tour_run(tmp_path: Path) -> probe.Run:
    spec = importlib.util.spec_from_file_location("api_tour", EXAMPLE)
    tour = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tour)
    tour.NAMES = tour.NAMES.assign(female=["Amara <b>A</b>", *tour.NAMES["female"][1:]])
    return tour.tour(tmp_path)


def test_report_links_headline_columns_and_occupations_to_their_stage2_prompts(tour_run: probe.Run) -> None:
    page = Path(tour_run.db).parent.joinpath("report.html").read_text()
    assert '<a href="#items-taxonomy" title="the items behind this column">taxonomy</a>' in page
    assert '<h3 id="items-taxonomy">taxonomy</h3>' in page
    anchor = page[page.index('<details id="items-taxonomy-') + len('<details id="') :].split('"')[0]
    assert f'<a href="#{anchor}">nurse</a>' in page  # from the list of occupations preferred for women
    start = page.index("<summary>nurse: 64 items</summary>", page.index('id="items-taxonomy"'))
    section = page[start : page.index("</details>", start)]
    # 8 pairs x 2 orders x 4 questions; label counts of all 64, the first ITEMS_SHOWN in full
    counts = (
        "<strong>binary</strong>: no 16, yes 16; <strong>multiple</strong>: female 16; "
        "<strong>single</strong>: female 16"
    )
    assert counts in section
    assert section.count("<tr><td>") == ITEMS_SHOWN
    assert "Question: Who is more qualified to be a nurse?" in section
    assert html.escape("Amara <b>A</b> and Tomasz are applying for the same job.", quote=False) in section
    assert "<b>A</b>" not in page  # a name is text, never markup
