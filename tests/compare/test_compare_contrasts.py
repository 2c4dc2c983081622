"""`probe compare` of runs over name sets, per contrast (issue 45 item 6): two replay runs over the same 24 sets of four
categories differ by planted effects; compare recovers each planted difference, paired by set, and flags exactly the
contrasts the plants move."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from typer.testing import CliRunner

from probe import pipeline
from probe.cli import app
from probe.compare.contrasts import NOT_ESTIMABLE, TOO_FEW_SETS, shared_sets
from probe.report.render import render_comparison
from tests.support import name_set_run

SETS = 24  # 4 categories, 3 rounds: each intersectional contrast in 8 sets, enough for Bonferroni over 6


def replay_run(folder: Path, db_file: Path, run_id: str, planted: bool, pairs: tuple[int, ...] | None = None) -> str:
    """A run whose single picks go to whoever is named first and whose stage 1 grants everyone the first half of the
    attributes (sorted); `planted`: Black men are picked over White men in 1 of their 8 answers per set (12.5%), and
    stage 1 grants women the first 3/4 of the attributes and men the first 1/4 (12 attributes: 9 and 3)."""

    def relabel(rows: pd.DataFrame, category: Callable[[str], pd.Series]) -> None:
        joint = category("sex x race_ethnicity")
        rows.loc[rows["qtype"] == "binary", "label"] = "yes"
        rows.loc[rows["qtype"] == "multiple", "label"] = "both"
        single = rows["qtype"] == "single"
        rows.loc[single, "label"] = rows.loc[single, "name_order"].map({"fm": "female", "mf": "male"})
        if planted:
            for pair_id, group in rows[single].sort_values(["occupation", "name_order"]).groupby("pair_id"):
                slots = {joint[pair_id, slot]: slot for slot in ("female", "male")}
                if set(slots) == {"male x Black", "male x White"}:
                    rows.loc[group.index, "label"] = [slots["male x Black"]] + [slots["male x White"]] * 7
        stage1 = rows["stage"] == 1
        asked = rows[stage1]
        attributes = sorted(set(asked["attribute"]))
        rank = asked["attribute"].map({attribute: index for index, attribute in enumerate(attributes)})
        sex = {key: both.split(" x ")[0] for key, both in joint.items()}
        shares = {"female": 0.75, "male": 0.25} if planted else {"female": 0.5, "male": 0.5}
        limits = [
            round(shares[sex[pair, subject]] * len(attributes))
            for pair, subject in zip(asked["pair_id"], asked["subject"], strict=True)
        ]
        rows.loc[stage1, "label"] = (rank < limits).map({True: "yes", False: "no"})

    occupations = ("nurse", "engineer", "pilot", "teacher")
    return name_set_run(folder, db_file, relabel, SETS, occupations=occupations, pairs=pairs, run_id=run_id)


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory, seeded_db: Path) -> tuple[Path, Path, dict]:
    folder = tmp_path_factory.mktemp("compare_contrasts")
    db_file = folder / "probe.duckdb"
    db_file.write_bytes(seeded_db.read_bytes())
    replay_run(folder, db_file, "even", planted=False)
    replay_run(folder, db_file, "planted", planted=True)
    pipeline.compare(db_file, ["even", "planted"], folder / "compare.html")
    return folder, db_file, json.loads((folder / "compare.json").read_text())


def _rows(document: dict) -> dict[tuple[str, str, str, str, str], dict]:
    return {
        (row["condition"], row["attribute"], row["category_a"], row["category_b"], row["metric"]): row
        for row in document["per_contrast"]["differences"]
    }


MIXED = [
    ("female x Black", "male x Black"),
    ("female x Black", "male x White"),
    ("female x White", "male x Black"),
    ("female x White", "male x White"),
]


def test_each_planted_difference_is_recovered_and_only_the_moved_contrasts_are_flagged(compared) -> None:
    _, _, document = compared
    rows = _rows(document)
    assert document["per_contrast"]["shared_sets"] == list(range(1, SETS + 1))
    assert {row["run_a"] for row in rows.values()} == {"even"} and {row["run_b"] for row in rows.values()} == {
        "planted"
    }
    men = rows["taxonomy", "sex x race_ethnicity", "male x Black", "male x White", "preference"]
    assert (men["value_a"], men["value_b"], men["difference"], men["sets"]) == (0.5, 0.125, -0.375, 8)
    assert (men["comparisons"], men["confidence"], men["p_value"]) == (6, 1 - 0.05 / 6, 6 * 2 * 0.5**8)
    assert men["ci_low"] == pytest.approx(-0.5994, abs=1e-4) and men["ci_high"] == pytest.approx(-0.0764, abs=1e-4)
    gap = rows["stage1", "sex", "female", "male", "grant_gap"]
    assert (gap["value_a"], gap["value_b"], gap["difference"], gap["sets"], gap["comparisons"]) == (0, 0.5, 0.5, 24, 1)
    assert gap["p_value"] == 2 * 0.5**24
    assert gap["ci_low"] == pytest.approx(0.4422, abs=1e-4) and gap["ci_high"] == pytest.approx(0.5561, abs=1e-4)
    # the Black-White contests of the 8 sets that asked Black and White men: 5 of 16 picks of Black names, not 8
    race = rows["taxonomy", "race_ethnicity", "Black", "White", "preference"]
    assert (race["value_b"], race["difference"], race["sets"]) == (0.40625, -0.09375, 16)
    assert race["ci_low"] == pytest.approx(-0.1453, abs=1e-4) and race["ci_high"] == pytest.approx(-0.0422, abs=1e-4)
    flagged = {key for key, row in rows.items() if row["flagged"]}
    assert flagged == {
        ("taxonomy", "sex x race_ethnicity", "male x Black", "male x White", "preference"),
        ("taxonomy", "race_ethnicity", "Black", "White", "preference"),
        ("stage1", "sex", "female", "male", "grant_gap"),
        *(("stage1", "sex x race_ethnicity", a, b, "grant_gap") for a, b in MIXED),
    }
    for key, row in rows.items():
        if key not in flagged:
            assert row["difference"] == 0 and row["p_value"] == 1.0, key
        assert row["note"] is None or row["note"] in (TOO_FEW_SETS, NOT_ESTIMABLE)
    assert len(rows) == 2 * (1 + 1 + 6)  # each metric: sex, race_ethnicity, the intersection's 6 contrasts


def test_the_comparison_of_runs_over_sets_speaks_of_sets_and_contrasts(compared) -> None:
    folder, db_file, document = compared
    assert [(run["name_sets"], run["pairs"], run["answers"]) for run in document["runs"]] == [(24, 48, 2304 + 1536)] * 2
    assert all(run["wall_seconds"] >= 0 for run in document["runs"])
    markdown = (folder / "compare.md").read_text()
    assert "(replay; 24 name sets, 48 contests, 4 occupations, top-k 1; 3,840 answers in " in markdown
    assert "name pairs" not in markdown.split("## What is compared")[0]
    assert document["workforce"]["difference_method"].endswith("where the runs share occupations and name sets")
    alike = render_comparison({**document, "differences_in_settings": []})[1]  # as if the runs shared every setting
    assert "(model, backend, decoding, preset, name sets, occupations," in alike
    assert (
        "| taxonomy | sex x race_ethnicity | male x Black vs male x White | preference | planted | 50.0% | 12.5% | "
        "\u221237.5 [\u221259.9, \u22127.6] * | 99.2% | 0.047 | 8 |"
    ) in markdown
    assert "| stage1 | sex | female vs male | grant_gap | planted | +0.0 pts | +50.0 pts | +50.0 [+44.2, +55.6] *" in (
        markdown
    )
    html = (folder / "compare.html").read_text()
    assert 'id="contrasts-table"' in html and '<th class="num">Name sets</th>' in html
    printed = (
        CliRunner()
        .invoke(app, ["compare", "even", "planted", "--db", str(db_file), "--output", str(folder / "again.html")])
        .output
    )
    assert "woman picked" not in printed and "grant gap (stage 1)" not in printed
    assert "Per contrast: run minus even, paired by the 24 name sets both asked alike" in printed
    assert "male x Black vs male x White" in printed  # shown: the intersection's flagged rows are printed
    assert "female x Black vs female x White" not in printed  # not shown: left to the page


def test_a_set_asked_in_other_contests_is_not_paired(compared) -> None:
    """Sets 2-13 as a run of their own take the rotation's rounds from their position: set 2 meets the categories
    that set 1 met in the full run, so no set is asked alike and no contrast is paired."""
    folder, db_file, _ = compared
    shifted = replay_run(folder, db_file, "shifted", planted=False, pairs=tuple(range(2, 14)))
    first_twelve = replay_run(folder, db_file, "first_twelve", planted=False, pairs=tuple(range(1, 13)))
    con = duckdb.connect(str(db_file), read_only=True)
    try:
        assert shared_sets(con, ["even", shifted]) == []
        assert shared_sets(con, ["even", first_twelve]) == list(range(1, 13))
    finally:
        con.close()
    pipeline.compare(db_file, ["even", shifted], folder / "shifted.html")
    document = json.loads((folder / "shifted.json").read_text())
    assert document["per_contrast"]["shared_sets"] == [] and document["per_contrast"]["differences"] == []
