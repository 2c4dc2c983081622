"""Name sets (DESIGN.md section 11): the file format and its one-line errors, the balanced rotation of contests over
sets, a run over sets (calls as --dry-run said) and its adverse-impact rows per attribute."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import duckdb
import pandas as pd
import pytest

import probe
from probe import pipeline
from probe.analysis.statistics import MIN_PAIRS
from probe.answering.plan import plan
from probe.common.errors import UserError
from probe.report.export import export_run
from probe.store.config import RunConfig
from probe.taxonomy.name_sets import MIN_NAMES, contests, read_name_sets, rotation
from tests.interval_checks import interval_problems
from tests.support import FakeBackend, query, unknown_answers

GROUPS = [("female", "Black"), ("female", "White"), ("male", "Black"), ("male", "White")]


def sets_file(path: Path, sets: int = 6, groups=GROUPS) -> Path:
    """`sets` sets of one made-up name per (sex, race_ethnicity) group."""
    rows = [
        (s, f"{sex[0].upper()}{race[0].lower()}name{s}", sex, race) for s in range(1, sets + 1) for sex, race in groups
    ]
    pd.DataFrame(rows, columns=["set_id", "name", "sex", "race_ethnicity"]).to_csv(path, index=False)
    return path


def test_a_category_needs_as_many_names_as_an_interval_needs_sets() -> None:
    assert MIN_NAMES == MIN_PAIRS


@pytest.mark.parametrize("size", [2, 3, 4, 5, 8])
def test_every_pair_of_categories_meets_once_per_cycle_of_rounds(size: int) -> None:
    categories = [f"c{index}" for index in range(size)]
    rounds = size - 1 if size % 2 == 0 else size
    met = Counter(contest for index in range(rounds) for contest in rotation(categories, index))
    assert met == Counter(itertools.combinations(categories, 2))  # each pair exactly once
    assert all(len(rotation(categories, index)) == size // 2 for index in range(rounds))  # K/2 contests per set


def test_contests_map_each_slot_to_its_categories(tmp_path: Path) -> None:
    con = duckdb.connect()
    sets = read_name_sets(con, sets_file(tmp_path / "sets.csv"))
    pairs, mapping = contests(sets)
    assert len(pairs) == 6 * 2  # 4 categories: 2 contests per set, 3 rounds
    assert pairs.iloc[0].tolist() == [1, "Fbname1", "Mwname1"]  # round 0: female x Black vs male x White
    first = mapping[mapping["pair_id"] == 1].drop(columns=["pair_id", "set_id", "person_id"])
    assert mapping[mapping["pair_id"] == 1]["person_id"].tolist() == [1, 1, 1, 4, 4, 4]  # set 1's people in order
    assert first.values.tolist() == [
        ["female", "sex", "female"],
        ["female", "race_ethnicity", "Black"],
        ["female", "sex x race_ethnicity", "female x Black"],
        ["male", "sex", "male"],
        ["male", "race_ethnicity", "White"],
        ["male", "sex x race_ethnicity", "male x White"],
    ]
    joint = mapping[mapping["attribute"] == "sex x race_ethnicity"].pivot(
        index="pair_id", columns="slot", values="category"
    )
    groups = ["female x Black", "female x White", "male x Black", "male x White"]
    met = Counter(map(tuple, joint[["female", "male"]].values))
    assert met == Counter({pair: 2 for pair in itertools.combinations(groups, 2)})  # every pair twice in 6 sets


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("1,Ann,female\n1,Bea,female\n", r"sets\.csv line 3: set 1 already has a name for 'female' \(line 2\)"),
        ("x,Ann,female\n", r"sets\.csv line 2: set_id 'x' is not a positive whole number"),
        ("1,,female\n", r"sets\.csv line 2: empty name"),
        ("1,Ann,female\n2,ann,male\n", r"sets\.csv line 3: the name 'ann' is already on line 2"),
        ("1,Yes,female\n", r"sets\.csv line 2: the name 'Yes' is an answer option"),
        ("1,Ann,female\n1,Bob,male\n2,Cat,female\n", r"sets\.csv: set 2 has no name for 'male'"),
        (
            "".join(f"{s},F{s},female\n{s},M{s},male\n" for s in range(1, 6)),
            r"sets\.csv: category 'female' has 5 names; every category needs at least 6",
        ),
    ],
)
def test_bad_name_sets_are_one_line_errors(tmp_path: Path, rows: str, message: str) -> None:
    path = tmp_path / "sets.csv"
    path.write_text("set_id,name,sex\n" + rows)
    with pytest.raises(UserError, match=message) as raised:
        read_name_sets(duckdb.connect(), path)
    assert "\n" not in str(raised.value)


def test_an_attribute_column_with_an_invisible_character_is_refused(tmp_path: Path) -> None:
    """An attribute's name is printed in every report table: a bidi override in it would reorder the page."""
    path = tmp_path / "sets.csv"
    path.write_text("set_id,name,se\u202ex\n1,Ann,female\n", encoding="utf-8")
    message = r"sets\.csv header: 'se\\u202ex' contains an invisible format character, U\+202E RIGHT-TO-LEFT OVERRIDE"
    with pytest.raises(UserError, match=message + "; remove it$") as raised:
        read_name_sets(duckdb.connect(), path)
    assert "\n" not in str(raised.value)


def test_a_run_over_sets_makes_the_calls_dry_run_counts(db_file: Path, tmp_path: Path, use_backend) -> None:
    names = sets_file(tmp_path / "sets.csv")
    config = RunConfig(
        names=str(names), occupations=("nurse",), top_k=1, conditions=("taxonomy",), db=str(db_file), quiet=True
    )
    expected = plan(config).calls
    backend = use_backend(FakeBackend())
    run_id = pipeline.run(config).run_id
    assert backend.asked == expected
    stored = query(
        db_file,
        "SELECT count(DISTINCT pair_id) AS contests, count(DISTINCT set_id) AS sets FROM run_contests WHERE run_id = ?",
        [run_id],
    )
    assert stored.to_dict("records") == [{"contests": 12, "sets": 6}]
    attributes = query(db_file, "SELECT DISTINCT attribute FROM adverse_impact WHERE run_id = ? ORDER BY 1", [run_id])
    assert attributes["attribute"].tolist() == ["race_ethnicity", "sex", "sex x race_ethnicity"]
    probe.open_run(run_id, db=db_file).report(tmp_path / "report.html")
    section = json.loads((tmp_path / "report.json").read_text())["adverse_impact"]
    assert section["contests_note"].startswith("This run asked name sets")
    assert (tmp_path / "report.md").read_text().count(section["contests_note"]) == 2  # at the top and in the section
    assert {row["category"] for row in section["rows"] if row["attribute"] == "sex x race_ethnicity"} == {
        "female x Black",
        "female x White",
        "male x Black",
        "male x White",
    }
    assert interval_problems(json.loads((tmp_path / "report.json").read_text())) == []
    written = export_run(db_file, run_id, "csv", tmp_path / "export")
    assert [path.name for path in written] == [
        "items.csv",
        "answers.csv",
        "adverse_impact.csv",
        "run_contests.csv",
        "run_people.csv",
        "run_person_categories.csv",
        "contrast_metrics.csv",
        "category_metrics.csv",
        "contrast_occupations.csv",
    ]
    assert len(pd.read_csv(tmp_path / "export" / "run_contests.csv")) == 12 * 2 * 3  # contests x slots x attributes


def test_planted_rates_per_group_are_recovered(db_file: Path, tmp_path: Path) -> None:
    """The binary question says yes to every White person, to Black women in 1 of 2 name orders and to Black men
    always: selection rates White 1, Black men 1, Black women 0.5."""
    names = sets_file(tmp_path / "sets.csv")
    settings = dict(
        backend="replay",
        names=str(names),
        occupations=("nurse",),
        top_k=1,
        conditions=("taxonomy",),
        db=str(db_file),
        quiet=True,
    )
    answers = unknown_answers(tmp_path / "answers.csv", **settings)
    con = duckdb.connect()
    mapping = contests(read_name_sets(con, names))[1]
    joint = mapping[mapping["attribute"] == "sex x race_ethnicity"].set_index(["pair_id", "slot"])["category"]
    rows = pd.read_csv(answers, dtype={"label": object})
    binary = rows["qtype"] == "binary"
    group = [joint.get((pair, subject)) for pair, subject in zip(rows["pair_id"], rows["subject"], strict=True)]
    rows.loc[binary, "label"] = "yes"
    rows.loc[binary & (pd.Series(group) == "female x Black") & (rows["name_order"] == "mf"), "label"] = "no"
    rows.loc[rows["qtype"] == "single", "label"] = "female"  # the first contestant (slot female) always wins
    rows.loc[rows["qtype"] == "multiple", "label"] = "both"
    rows.loc[rows["stage"] == 1, "label"] = "yes"
    rows.to_csv(answers, index=False)
    run_id = pipeline.run(RunConfig(**settings, answers=str(answers))).run_id
    selection = query(
        db_file,
        "SELECT attribute, category, n, rate, impact_ratio FROM adverse_impact WHERE run_id = ? "
        "AND rate_kind = 'selection' AND scope = 'overall' ORDER BY attribute, category",
        [run_id],
    )
    assert selection.values.tolist() == [
        ["race_ethnicity", "Black", 24, 0.75, 0.75],
        ["race_ethnicity", "White", 24, 1.0, 1.0],
        ["sex", "female", 24, 0.75, 0.75],
        ["sex", "male", 24, 1.0, 1.0],
        ["sex x race_ethnicity", "female x Black", 12, 0.5, 0.5],
        ["sex x race_ethnicity", "female x White", 12, 1.0, 1.0],
        ["sex x race_ethnicity", "male x Black", 12, 1.0, 1.0],
        ["sex x race_ethnicity", "male x White", 12, 1.0, 1.0],
    ]


@pytest.mark.parametrize(
    ("attribute", "category", "noun"),
    [
        ("sex", "female", "women"),
        ("race_ethnicity", "Black", "Black names"),
        ("sex x race_ethnicity", "male x White", "White men"),
    ],
)
def test_a_finding_names_each_groups_people(attribute: str, category: str, noun: str) -> None:
    from probe.report.impact import category_noun

    assert category_noun(attribute, category) == noun


def test_the_shipped_sets_are_read_once_however_many_runs_select(
    db_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """select() checks a names file's spellings against the shipped list: read once per process, not once a run."""
    from probe.taxonomy import selection

    read = []

    def counted(con: duckdb.DuckDBPyConnection, path: Path) -> pd.DataFrame:
        read.append(path.name)
        return read_name_sets(con, path)

    monkeypatch.setattr(selection, "read_name_sets", counted)
    selection.shipped_name_sets.cache_clear()
    config = RunConfig(names=str(sets_file(tmp_path / "sets.csv")), occupations=("nurse",), top_k=1, db=str(db_file))
    con = duckdb.connect(str(db_file), read_only=True)
    try:
        first, second = (selection.select(con, config.design) for _ in range(2))
    finally:
        con.close()
        selection.shipped_name_sets.cache_clear()
    assert read == ["sets.csv", "name_sets.csv", "sets.csv"]  # the user's file each time, the shipped one once
    assert first.warnings == second.warnings == ()
