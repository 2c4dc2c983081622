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
from probe.compare.heldout import heldout_section
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
    assert "preference of Black vs White distance" in output.with_suffix(".md").read_text()


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
