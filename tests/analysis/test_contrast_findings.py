"""The gender run's occupation lists (Benjamini-Hochberg over occupations) and robustness verdicts across wordings,
per contrast of a run over name sets (issue 45 item 2): a replay world in two wordings with a planted occupation
effect recovers exactly the planted occupations for the contrasts that hold it, and the planted findings hold in
every wording."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

import probe
from probe import pipeline
from probe.analysis.contrast_findings import contrast_occupation_rows
from probe.analysis.preference import occupation_preference_rows
from probe.store.config import RunConfig
from probe.taxonomy.name_sets import contests, read_name_sets
from tests.support import query, unknown_answers
from tests.taxonomy.test_name_sets import sets_file

OCCUPATIONS = ("nurse", "engineer", "accountant", "pilot", "architect", "teacher")
PLANTED = ("engineer", "pilot")  # the White man picked in both name orders against the Black man
SETS = 24  # 4 categories, 3 rounds: each intersectional contrast in 8 sets
WORDINGS = ("paper", "synonym")


def planted_run(tmp_path: Path, db_file: Path) -> str:
    """Contests between the Black and the White man: the White man picked in PLANTED occupations, in both name orders
    and every wording; every other single answer names the first-named person (each set's order-balanced share
    0.5: no lean). Stage 1 grants women the first 60% of the attributes (sorted) and men the first 40%, in every
    wording."""
    names = sets_file(tmp_path / "sets.csv", sets=SETS)
    settings = dict(
        backend="replay",
        names=str(names),
        occupations=OCCUPATIONS,
        top_k=1,
        conditions=("taxonomy",),
        wordings=WORDINGS,
        db=str(db_file),
        quiet=True,
    )
    answers = unknown_answers(tmp_path / "answers.csv", **settings)
    mapping = contests(read_name_sets(duckdb.connect(), names))[1]
    joint = mapping[mapping["attribute"] == "sex x race_ethnicity"].set_index(["pair_id", "slot"])["category"]
    sex = mapping[mapping["attribute"] == "sex"].set_index(["pair_id", "slot"])["category"]
    rows = pd.read_csv(answers, dtype={"label": object})
    rows.loc[rows["qtype"] == "binary", "label"] = "yes"
    rows.loc[rows["qtype"] == "multiple", "label"] = "both"
    single = rows["qtype"] == "single"
    rows.loc[single, "label"] = rows.loc[single, "name_order"].map({"fm": "female", "mf": "male"})  # first named
    white_man = [
        {joint[pair, slot]: slot for slot in ("female", "male")}.get("male x White")
        if {joint[pair, "female"], joint[pair, "male"]} == {"male x Black", "male x White"}
        else None
        for pair in rows["pair_id"]
    ]
    planted = single & rows["occupation"].isin(PLANTED) & pd.Series(white_man, index=rows.index).notna()
    rows.loc[planted, "label"] = pd.Series(white_man, index=rows.index)[planted]
    stage1 = rows["stage"] == 1
    attributes = sorted(set(rows.loc[stage1, "attribute"]))
    rank = rows.loc[stage1, "attribute"].map({attribute: index for index, attribute in enumerate(attributes)})
    person_sex = [sex[pair, subject] for pair, subject in zip(rows["pair_id"][stage1], rows["subject"][stage1])]
    limit = pd.Series(person_sex, index=rank.index).map(
        {"female": round(0.6 * len(attributes)), "male": round(0.4 * len(attributes))}
    )
    rows.loc[stage1, "label"] = (rank < limit).map({True: "yes", False: "no"})
    rows = rows.drop_duplicates()  # the preview lists each item once per wording, without its wording
    pd.concat([rows.assign(wording=wording) for wording in WORDINGS]).to_csv(answers, index=False)
    return pipeline.run(RunConfig(**settings, answers=str(answers))).run_id


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory, seeded_db: Path) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("occupations")
    db_file = folder / "probe.duckdb"
    db_file.write_bytes(seeded_db.read_bytes())
    return db_file, planted_run(folder, db_file)


def test_probe(planted) -> None:
    db_file, run_id = planted
    print(query(db_file, "SELECT * EXCLUDE (run_id) FROM contrast_occupations WHERE preferred IS NOT NULL", []).to_string())
    print(query(db_file, "SELECT * EXCLUDE (run_id, method) FROM contrast_robustness WHERE scope = 'crossed'", []).to_string())
    assert False
