"""Two runs' agreement on occupations (probe/compare/agreement.py), and a run over name sets compared with a run over
name pairs: nothing is paired (a contest's pair_id is no name pair)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from probe.compare.agreement import cohens_kappa
from probe.compare.heldout import heldout_section
from probe.store import db
from tests.support import assert_one_line_error, invoke, name_set_run


def test_cohens_kappa_is_agreement_beyond_chance() -> None:
    # observed 3/4; chance: female 1/2 x 1/4 + male 1/2 x 3/4 = 1/2; kappa = (3/4 - 1/2) / (1 - 1/2)
    assert cohens_kappa(["female", "female", "male", "male"], ["female", "male", "male", "male"]) == 0.5
    assert cohens_kappa(["none", "none"], ["none", "none"]) is None  # chance agreement is already 1
    assert cohens_kappa([], []) is None


def test_a_set_run_beside_a_pair_run_is_shown_side_by_side_unpaired(runs_db_file: Path, tmp_path: Path) -> None:
    def first_named(rows: pd.DataFrame, category: object) -> None:
        labels = {"binary": "yes", "multiple": "both", "attr": "yes"}
        rows["label"] = rows["qtype"].map(labels).fillna(rows["name_order"].map({"fm": "female", "mf": "male"}))

    sets = name_set_run(tmp_path, runs_db_file, first_named, sets=8, occupations=("nurse", "pilot"), run_id="grouped")
    code, output = invoke("compare", "steady", sets, "--db", str(runs_db_file), "-o", str(tmp_path / "c.md"))
    assert code == 0, output
    document = json.loads((tmp_path / "c.json").read_text())
    sentence = (
        "The runs grouped asked name sets and steady name pairs: their contests and pairs are different people, so "
        "each run is shown on its own, side by side; no paired differences or ranks are computed."
    )
    assert (document["paired"], document["paired_differences"]) == (False, [])
    assert sentence in document["differences_in_settings"]
    con = db.connect(runs_db_file)
    try:
        with pytest.raises(Exception, match="run grouped asked name sets and run steady name pairs"):
            heldout_section(con, "steady", "grouped", 7, "position_first")
    finally:
        con.close()
    code, output = invoke("compare", "steady", sets, "--db", str(runs_db_file), "--heldout-seed", "7")
    assert_one_line_error(code, output, "--heldout-seed: run grouped asked name sets and run steady name pairs")
