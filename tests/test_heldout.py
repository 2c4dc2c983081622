"""Held-out checks of a mitigation (probe/compare/heldout.py, probe compare --heldout-seed)."""

import json
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from probe import pipeline
from probe.cli.app import app
from probe.common.resources import resource_dir
from probe.compare.heldout import split
from probe.dataset.items import KEY_FIELDS
from probe.store import db
from probe.store.config import RunConfig
from probe.taxonomy.name_pairs import select_name_pairs
from tests.support import interval_problems


def test_the_split_is_fixed_by_the_seed_and_the_paper_wording_tunes() -> None:
    wordings = ["paper", "synonym", "would_you_say", "given_text", "restated"]
    parts = split(1, ["11", "13", "29", "53"], list(range(1, 13)), wordings)
    assert parts == split(1, ["53", "29", "13", "11"], list(range(12, 0, -1)), wordings[::-1])
    assert parts == {
        "major_groups": {"tuning": ["11", "13"], "held_out": ["29", "53"]},
        "pairs": {"tuning": [2, 4, 5, 8, 11, 12], "held_out": [1, 3, 6, 7, 9, 10]},
        "wordings": {"tuning": ["given_text", "paper", "restated"], "held_out": ["synonym", "would_you_say"]},
    }
    assert split(2, ["29"], [1, 2, 3], ["paper"])["wordings"] == {"tuning": ["paper"], "held_out": []}


# Base: the nurse is always the woman, the pilot the man. Mitigated: the person named first is picked (parity) for
# these occupations of each pair, the base's pick elsewhere.
PARITY = {1: {"nurse", "pilot"}, 2: {"nurse"}, 3: set(), 4: set()}


def _answers(path: Path, mitigated: bool) -> Path:
    rows = []
    for pair in PARITY:
        for order in ("fm", "mf"):
            for occupation in ("nurse", "pilot"):
                pick = "female" if occupation == "nurse" else "male"
                if mitigated and occupation in PARITY[pair]:
                    pick = "female" if order == "fm" else "male"
                common = (2, "", "taxonomy", pair, order, occupation)
                rows += [(*common[:1], "single", *common[2:], None, None, None, pick),
                         (*common[:1], "multiple", *common[2:], None, None, None, "both"),
                         (*common[:1], "binary", *common[2:], "female", None, None, "yes"),
                         (*common[:1], "binary", *common[2:], "male", None, None, "yes")]  # fmt: skip
    pd.DataFrame(rows, columns=[*KEY_FIELDS, "label"]).to_csv(path, index=False)
    return path


def test_compare_reports_the_mitigation_on_tuning_and_held_out_parts(db_file: Path, tmp_path: Path) -> None:
    settings = dict(backend="replay", pairs=4, occupations=("nurse", "pilot"), top_k=1, conditions=("taxonomy",),
                    db=str(db_file), quiet=True)  # fmt: skip
    for run_id, mitigated in (("base", False), ("mitigated", True)):
        answers = _answers(tmp_path / f"{run_id}.csv", mitigated)
        pipeline.answer(RunConfig(**settings, answers=str(answers), run_id=run_id))
    output = tmp_path / "compare.html"
    result = CliRunner().invoke(app, ["compare", "base", "mitigated", "--db", str(db_file), "-o", str(output),
                                      "--heldout-seed", "0"])  # fmt: skip
    assert result.exit_code == 0, result.output
    document = json.loads(output.with_suffix(".json").read_text())
    assert interval_problems(document) == []
    heldout = document["heldout"]
    # seed 0: SOC group 29 (nurse) and pairs 1, 3 tune; group 53 (pilot) and pairs 2, 4 are held out
    assert heldout["split"]["major_groups"] == {"tuning": ["29"], "held_out": ["53"]}
    assert heldout["split"]["pairs"] == {"tuning": [1, 3], "held_out": [2, 4]}
    parts = {row["part"]: row for row in heldout["parts"]}
    assert list(parts) == ["tuning", "held-out occupations", "held-out names"]  # one wording: none held out
    half = stats.t.ppf(0.975, 1) * 0.25  # improvements 0.5 and 0 (distance 0.5 -> 0, 0.5 -> 0.5): mean 0.25
    for row in parts.values():
        assert (row["effect"], row["ci_low"], row["ci_high"]) == pytest.approx((0.25, 0.25 - half, 0.25 + half))
    assert parts["held-out names"]["smaller_p"] == pytest.approx(0.5)  # Welch, equal means
    assert parts["held-out occupations"]["smaller_p"] is None  # paired differences all 0: no test
    assert not parts["held-out names"]["generalizes"]  # its interval includes 0
    assert '<section id="heldout">' in output.read_text()


def test_heldout_checks_take_two_runs() -> None:
    result = CliRunner().invoke(app, ["compare", "a", "b", "c", "--heldout-seed", "1", "--db", "none.duckdb"])
    assert result.exit_code == 2 and "--heldout-seed: compares two runs" in result.output


def test_the_held_out_names_are_70_pairs_disjoint_from_the_shipped_ones(db_file: Path) -> None:
    con = db.connect(db_file)
    try:
        heldout = select_name_pairs(con, None, resource_dir("taxonomy") / "heldout_name_pairs.csv")
        shipped = select_name_pairs(con, None)
    finally:
        con.close()
    assert list(heldout["pair_id"]) == list(range(1, 71))
    names = [name.lower() for name in heldout[["female", "male"]].to_numpy().ravel()]
    assert len(set(names)) == 140
    assert not set(names) & {name.lower() for name in shipped[["female", "male"]].to_numpy().ravel()}
    assert heldout.iloc[0].tolist() == [1, "Emily", "Jacob"]
