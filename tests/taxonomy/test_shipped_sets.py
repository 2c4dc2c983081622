"""The shipped race/ethnicity x sex name sets (taxonomy/name_sets.csv, probe/taxonomy/census_names.py): enough sets
that every pairwise contrast is asked in 6 or more under the rotation, the maintainers' 7 sets kept, every Census
name passing its documented checks, and a quick run on them deciding the four-fifths gate for race and for the
intersection (a replay world with a planted ratio of 0.6)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from typer.testing import CliRunner

import probe
from probe import pipeline
from probe.analysis.sets_needed import contrast_sets, fail_sets, interval_sets
from probe.cli import app
from probe.common.resources import resource_dir
from probe.store.config import QUICK_OCCUPATIONS, load_config
from probe.taxonomy.census_names import KEPT_SETS, MIN_BEARERS, RACE_SHARE, SETS, soundex
from probe.taxonomy.group_names import SEX_SHARE
from probe.taxonomy.name_sets import contests, read_name_sets
from tests.interval_checks import interval_problems
from tests.support import query, unknown_answers

SHIPPED = resource_dir("taxonomy") / "name_sets.csv"
CHECKS = resource_dir("taxonomy") / "name_sets_checks.csv"
JOINT = "sex x race_ethnicity"


def test_every_pair_of_categories_meets_in_six_sets_or_more() -> None:
    sets = read_name_sets(duckdb.connect(), SHIPPED)
    assert (sets["set_id"].nunique(), sets["category"].nunique(), SETS) == (50, 8, 50)
    category = dict(zip(sets["name"], sets["category"], strict=True))
    met = Counter(map(tuple, contests(sets)[0][["female", "male"]].map(category.get).values))
    # 50 sets = 7 full cycles of the 7 rounds and one more round: 4 pairs meet 8 times, the other 24 7 times
    assert len(met) == 28 and Counter(met.values()) == {7: 24, 8: 4}


def test_the_maintainers_sets_are_kept_and_every_census_name_passes_its_checks() -> None:
    checks = pd.read_csv(CHECKS)
    shipped = pd.read_csv(SHIPPED)
    assert checks[["set_id", "name", "sex", "race_ethnicity"]].equals(shipped)
    kept, census = checks[checks["set_id"] <= KEPT_SETS], checks[checks["set_id"] > KEPT_SETS]
    assert (len(kept), len(census)) == (7 * 8, 43 * 8)
    assert set(kept["source"]) == {"BBQ", "Bloomberg", "BBQ+Bloomberg"} and set(census["source"]) == {"Census2020"}
    assert kept.head(2)[["name", "race_ethnicity"]].values.tolist() == [["Lily", "Asian"], ["Mohammed", "Asian"]]
    assert (census[["race_share", "voter_race_share"]] >= RACE_SHARE).all().all()
    assert (census[["sex_share", "census_sex_share"]] >= SEX_SHARE).all().all()
    assert (census["census_bearers"] >= MIN_BEARERS).all()
    for _, names in checks.groupby(["sex", "race_ethnicity"]):  # a Census name is no second spelling in its category
        codes = names["name"].map(soundex)
        assert not codes[names["set_id"] > KEPT_SETS].duplicated(keep=False).any()
        assert not codes[names["set_id"] > KEPT_SETS].isin(codes[names["set_id"] <= KEPT_SETS]).any()


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("Robert", "R163"),
        ("Rupert", "R163"),
        ("Ashcraft", "A261"),
        ("Tymczak", "T522"),
        ("Pfister", "P236"),
        ("Lee", "L000"),
    ],
)
def test_soundex_codes_are_the_standard_ones(name: str, code: str) -> None:
    assert soundex(name) == code


def planted_quick_run(db_file: Path, tmp_path: Path, **overrides: object) -> str:
    """A quick run on the shipped sets, replayed: every binary question about a Hispanic name is answered yes in 9 of
    its 16 per set (2 orders x 8 occupations), every other in 15 of 16: selection rates 0.5625 and 0.9375, an impact
    ratio of exactly 0.6. (The single-subject answers differ by occupation: with one answer everywhere the report's
    workforce comparison has no rank correlation, and its sentence fails to format None: a bug of
    probe/report/workforce.py, not of this test.)"""
    settings = {
        "preset": "quick",
        "names": str(SHIPPED),
        "backend": "replay",
        "db": str(db_file),
        "quiet": True,
        **overrides,
    }
    config = load_config(settings)
    answers = unknown_answers(
        tmp_path / "answers.csv", **{key: value for key, value in config.settings().items() if key != "preset"}
    )
    mapping = contests(read_name_sets(duckdb.connect(), SHIPPED))[1]
    race = mapping[mapping["attribute"] == "race_ethnicity"].set_index(["pair_id", "slot"])["category"]
    rows = pd.read_csv(answers, dtype={"label": object})
    rows["label"] = rows["qtype"].map({"attr": "yes", "single": "female", "multiple": "both"})
    # the single-subject question picks the first person for half the occupations, the second for the others
    rows.loc[(rows["qtype"] == "single") & rows["occupation"].isin(QUICK_OCCUPATIONS[4:]), "label"] = "male"
    binary = rows[rows["qtype"] == "binary"].sort_values(["pair_id", "subject", "name_order", "occupation"])
    for (pair_id, subject), items in binary.groupby(["pair_id", "subject"]):
        yes = 9 if race[pair_id, subject] == "Hispanic" else 15
        rows.loc[items.index, "label"] = ["yes"] * yes + ["no"] * (len(items) - yes)
    rows.to_csv(answers, index=False)
    return pipeline.run(load_config({**settings, "answers": str(answers)})).run_id


def four_fifths(db_file: Path, tmp_path: Path, run_id: str, attribute: str) -> dict:
    policy = tmp_path / "gates.toml"
    policy.write_text(
        f'[[gates]]\nname = "four-fifths"\nkind = "impact_ratio"\ncondition = "taxonomy"\nattribute = "{attribute}"\n'
    )
    probe.gate(run_id, policy, db=db_file, output=tmp_path / "out")
    document = json.loads((tmp_path / "out" / "gate.json").read_text())
    assert interval_problems(document) == []
    return document["gates"][0]


def report_tests(db_file: Path, tmp_path: Path, run_id: str) -> dict[str, dict]:
    probe.open_run(run_id, db=db_file).report(tmp_path / "report.html")
    document = json.loads((tmp_path / "report.json").read_text())
    assert interval_problems(document) == []
    return {test["test"].split(":")[0]: test for test in document["testability"]}


def test_a_quick_run_on_the_shipped_sets_fails_four_fifths_for_race_and_the_intersection(
    db_file: Path, tmp_path: Path
) -> None:
    run_id = planted_quick_run(db_file, tmp_path)
    table = query(
        db_file,
        "SELECT attribute, category, n, rate, impact_ratio, ci_low, ci_high FROM adverse_impact "
        "WHERE run_id = ? AND scope = 'overall' AND rate_kind = 'selection' ORDER BY 1, 2",
        [run_id],
    )
    joint = table[table["attribute"] == JOINT]
    assert len(joint) == 8 and (joint["n"] == 12 * 16).all()
    hispanic = joint["category"].str.endswith("Hispanic")
    assert joint.loc[hispanic, "impact_ratio"].round(12).tolist() == [0.6, 0.6]
    # every intersectional category has an interval, the highest ones too (it reaches 1)
    assert joint["ci_low"].notna().all() and (joint.loc[hispanic, "ci_high"] < 0.8).all()
    verdicts = {
        attribute: four_fifths(db_file, tmp_path, run_id, attribute) for attribute in ("race_ethnicity", JOINT, "sex")
    }
    assert {attribute: (entry["verdict"], round(entry["estimate"], 12)) for attribute, entry in verdicts.items()} == {
        "race_ethnicity": ("fail", 0.6),
        JOINT: ("fail", 0.6),
        "sex": ("pass", 1.0),
    }
    tests = report_tests(db_file, tmp_path, run_id)
    assert tests[f"adverse-impact ratio ({JOINT})"]["sentence"] == (
        "Testable with 12 name sets: each of the 8 categories' impact ratio needs 9 name sets for an interval "
        "(Bonferroni over its 7 ratios), an impact_ratio gate 12 to fail and 6 to pass."
    )
    contrasts = tests[f"pairwise contrasts ({JOINT})"]
    assert (contrasts["units"], contrasts["testable"], contrasts["sentence"]) == (
        1,
        False,
        (
            "Not testable at this size: each of the 28 pairs of categories is asked in 1 to 2 of the 12 name sets' "
            "contests; a contrast needs 6 sets for an interval, which the rotation gives every pair from 42 sets (it "
            "asks each pair once every 7 sets)."
        ),
    )


def test_seven_sets_cannot_fail_the_intersection_and_the_plan_says_how_many_sets_would(
    db_file: Path, tmp_path: Path
) -> None:
    """The maintainers' 7 sets alone (the shipped list before issue 45): the intersection's gate prints no interval
    it does not have and plans in sets, at least the 12 a fail needs."""
    run_id = planted_quick_run(db_file, tmp_path, pairs=7)
    entry = four_fifths(db_file, tmp_path, run_id, JOINT)
    assert (entry["verdict"], entry["ci95"], entry["n"]["pairs"]) == ("inconclusive", None, 7)
    assert "99.4% CI none" in entry["sentence"]
    assert (
        "; no fail is possible under 12 name sets (its 99.4% interval takes each of the 56 ordered pairs of "
        "categories at 1 - 0.05 / 56)"
    ) in entry["sentence"]
    assert entry["pairs_needed"] >= 12
    policy = tmp_path / "gates.toml"
    planned = CliRunner().invoke(app, ["gate", run_id, "--policy", str(policy), "--plan", "--db", str(db_file)])
    assert planned.exit_code == 0, planned.output
    assert planned.output.splitlines() == [
        f"four-fifths: {entry['pairs_needed']} name sets",
        f"every gate: probe run --names taxonomy/name_sets.csv --pairs {entry['pairs_needed']} ...",
    ]
    tests = report_tests(db_file, tmp_path, run_id)
    assert tests[f"adverse-impact ratio ({JOINT})"]["sentence"] == (
        "Not testable at this size: 7 name sets; each of the 8 categories' impact ratio needs 9 name sets for an "
        "interval (Bonferroni over its 7 ratios), an impact_ratio gate 12 to fail and 6 to pass."
    )
    assert tests["adverse-impact ratio (race_ethnicity)"]["testable"] is True  # 4 categories: 7 sets from 7 on


@pytest.mark.parametrize(
    ("categories", "interval", "fail", "contrast"), [(2, 6, 7, 6), (4, 7, 9, 18), (8, 9, 12, 42), (3, 7, 8, 18)]
)
def test_the_sets_each_test_needs(categories: int, interval: int, fail: int, contrast: int) -> None:
    assert (interval_sets(categories), fail_sets(categories), contrast_sets(categories)) == (interval, fail, contrast)
