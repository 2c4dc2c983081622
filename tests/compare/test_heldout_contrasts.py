"""The held-out check of a mitigation per contrast of two runs over name sets (`probe compare BASE MITIGATED
--heldout-seed N --heldout-metric preference --heldout-contrast A,B`): the gender run's check with the contrast's
cells, the name set as the unit (issue 45 item 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probe.cli.app import app
from probe.common.errors import UserError
from probe.compare.heldout import SETS, _cells, _generalizes, heldout_section
from probe.store import db
from tests.analysis.test_contrast_findings import OCCUPATIONS, planted_run


def white_over_black(categories: set[str]) -> str | None:
    """The base run's pick: the White person in every contest between a Black and a White person."""
    white = [category for category in categories if category.endswith("White")]
    black = [category for category in categories if category.endswith("Black")]
    return white[0] if white and black else None


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, seeded_db: Path) -> Path:
    folder = tmp_path_factory.mktemp("heldout_contrasts")
    db_file = folder / "probe.duckdb"
    db_file.write_bytes(seeded_db.read_bytes())
    planted_run(folder, db_file, white_over_black, OCCUPATIONS, run_id="base")
    planted_run(folder, db_file, lambda categories: None, OCCUPATIONS, run_id="mitigated")  # first named: parity
    return db_file


def test_the_mitigation_of_a_planted_race_preference_generalizes_to_held_out_sets_occupations_and_wordings(
    runs: Path, tmp_path: Path
) -> None:
    output = tmp_path / "compare.html"
    arguments = ["compare", "base", "mitigated", "--db", str(runs), "--output", str(output), "--heldout-seed", "7"]
    contrast = ["--heldout-metric", "preference", "--heldout-contrast", "White,Black"]
    result = CliRunner().invoke(app, [*arguments, *contrast])
    assert result.exit_code == 0, result.output
    section = json.loads(output.with_name("compare.json").read_text())["heldout"]
    assert section["contrast"] == ["Black", "White"]
    assert section["split"]["wordings"] == {"tuning": ["paper"], "held_out": ["synonym"]}
    assert len(section["split"]["pairs"]["tuning"]) == len(section["split"]["pairs"]["held_out"]) == 8
    # base: the Black person's share 0 in every occupation of the 16 sets with a Black-White contest (distance 0.5);
    # mitigated: the first named, 50% (distance 0): every set improves by 0.5 in every part
    parts = {row["part"]: row for row in section["parts"]}
    assert list(parts) == ["tuning", "held-out occupations", "held-out names", "held-out wordings"]
    assert [row["effect"] for row in parts.values()] == pytest.approx([0.5] * 4, abs=1e-12)
    assert [row["pairs"] for row in parts.values()] == [8, 8, 8, 8]
    assert [row.get("generalizes") for row in parts.values()] == [None, True, True, True]
    page = output.with_suffix(".md").read_text()
    assert "preference of Black vs White distance" in page
    # the split and the table are over name sets, not pairs
    tuning = ", ".join(str(set_id) for set_id in section["split"]["pairs"]["tuning"])
    assert section["unit"] == "name sets" and f"; name sets tuning {tuning} / held out" in page
    heldout_part = page.split("## Held-out checks")[1]
    assert "| Part | Sets | Effect (points) |" in heldout_part and "name pairs" not in heldout_part
    assert '<th>Part</th><th class="num">Sets</th>' in output.read_text()
    assert section["method"] == SETS_METHOD


SETS_METHOD = (
    "distance in the base run - distance in the mitigated run, each set's two runs paired: the paired cluster t over "
    "name sets: the difference's spread between sets (CR2; for two rare rates at least their binomial variance, read "
    "at the rates the tested difference implies), t with Bell-McCaffrey degrees of freedom (Satterthwaite's for "
    "means of sets of unequal size); the p-value is the same test (where every set differs alike, the rates' own "
    "intervals combined); generalizes: the held-out interval lies above 0 and the held-out effect is not "
    "significantly smaller than the tuning one (one-sided 0.05: paired t over the shared sets, Welch for held-out "
    "names); undecided below 6 name sets or where the tuning part shows no improvement"
)


def test_too_few_sets_for_an_interval_says_sets() -> None:
    assert _generalizes({"ci_low": None}, {"ci_low": 0.1}, None, SETS) == {
        "generalizes": None,
        "verdict": "too few sets",
    }


def test_the_slot_free_metrics_are_measured_per_set_of_a_run_over_name_sets(runs: Path) -> None:
    """position_first, bias and consistency count each set's valid instances from position_first's n (a run over
    name sets stores no female_share rows), the set as the unit: its two contests summed, 12 sets in every part."""
    con = db.connect(runs)
    try:
        position = heldout_section(con, "base", "mitigated", 7, "position_first")
        bias = heldout_section(con, "base", "mitigated", 7, "bias")
    finally:
        con.close()
    assert position["unit"] == bias["unit"] == "name sets"
    assert position["split"]["pairs"]["tuning"] == [1, 4, 5, 10, 13, 14, 15, 18, 19, 20, 22, 23]  # set ids
    assert [row["pairs"] for row in position["parts"]] == [12, 12, 12, 12]
    # mitigated: the first named everywhere (share 1, distance 0.5); base: the 16 sets whose two contests are
    # between a Black and a White person pick the White person in both orders (share 0.5, distance 0: -0.5 worse),
    # the other 8 the first named (no change): 10 of the 12 tuning sets are such sets, 6 of the 12 held-out ones
    assert [row["effect"] for row in position["parts"]] == pytest.approx([-10 / 24, -10 / 24, -6 / 24, -10 / 24])
    assert [row.get("verdict") for row in position["parts"]] == [None] + ["no tuning effect to generalize"] * 3
    # neither run picks the same person in S and M: no effect, an interval around 0
    assert [row["effect"] for row in bias["parts"]] == [0.0, 0.0, 0.0, 0.0]
    assert all(row["ci_low"] < 0 < row["ci_high"] for row in bias["parts"])


def test_a_contrast_needs_the_preference_and_two_categories_the_runs_have(runs: Path) -> None:
    con = db.connect(runs)
    try:
        with pytest.raises(UserError, match="goes with --heldout-metric preference"):
            heldout_section(con, "base", "mitigated", 7, "preference")
        with pytest.raises(UserError, match="no contests between these two categories"):
            heldout_section(con, "base", "mitigated", 7, "preference", ("Black", "Asian"))
        with pytest.raises(UserError, match="female_share: run base asked name sets"):
            heldout_section(con, "base", "mitigated", 7)
    finally:
        con.close()


def test_one_reader_gives_a_runs_cells_and_a_contrasts_in_the_same_keys(runs: Path) -> None:
    """_cells: instance_metrics' cells, or with a contrast the contests between its two categories, each with the
    occupation's SOC major group."""
    con = db.connect(runs)
    try:
        every, contrast = _cells(con, "base"), _cells(con, "base", ("White", "Black"))
    finally:
        con.close()
    keys = ["condition", "wording", "pair_id", "occupation", "name_order"]
    assert list(every) == [*keys, "bias", "consistency", "position_first", "n", "major_group"]
    assert list(contrast) == [*keys, "n", "female_share", "major_group"]
    # one instance per contest and cell: 48 contests in 24 sets (pair_id: the set, its two contests summed) x 6
    # occupations x 2 orders x 2 wordings; the base picks the first named outside the Black-White contests (768 of
    # the 1,152), never the same person in S and M
    assert (len(every), every["pair_id"].nunique()) == (576, 24)
    assert every[["n", "position_first", "bias", "consistency"]].sum().tolist() == [1152, 768, 0, 1152]
    # pair_id: the set; the 16 sets with Black-White contests, two per cell (pooled), the Black person never picked
    assert (len(contrast), contrast["pair_id"].nunique()) == (384, 16)
    assert contrast[["n", "female_share"]].sum().tolist() == [768, 0]
    assert sorted(set(every["major_group"])) == sorted(set(contrast["major_group"])) == ["13", "17", "25", "29", "53"]
