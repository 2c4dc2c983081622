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

import probe
from probe import pipeline
from probe.common.resources import resource_dir
from probe.store.config import load_config
from probe.taxonomy.census_names import KEPT_SETS, MIN_BEARERS, RACE_SHARE, SETS, soundex
from probe.taxonomy.group_names import SEX_SHARE
from probe.taxonomy.name_sets import contests, read_name_sets
from tests.support import interval_problems, query, unknown_answers

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


@pytest.mark.parametrize(("name", "code"), [("Robert", "R163"), ("Rupert", "R163"), ("Ashcraft", "A261"),
                                            ("Tymczak", "T522"), ("Pfister", "P236"), ("Lee", "L000")])
def test_soundex_codes_are_the_standard_ones(name: str, code: str) -> None:
    assert soundex(name) == code


def test_a_quick_run_on_the_shipped_sets_fails_four_fifths_for_race_and_the_intersection(
    db_file: Path, tmp_path: Path
) -> None:
    """Replay answers: every binary question about a Hispanic name is answered yes in 9 of its 16 per set (2 orders x
    8 occupations), every other in 15 of 16: selection rates 0.5625 and 0.9375, an impact ratio of exactly 0.6."""
    settings = {"preset": "quick", "names": str(SHIPPED), "backend": "replay", "db": str(db_file), "quiet": True}
    config = load_config(settings)
    answers = unknown_answers(tmp_path / "answers.csv", **{key: value for key, value in config.settings().items()
                                                           if key != "preset"})
    mapping = contests(read_name_sets(duckdb.connect(), SHIPPED))[1]
    race = mapping[mapping["attribute"] == "race_ethnicity"].set_index(["pair_id", "slot"])["category"]
    rows = pd.read_csv(answers, dtype={"label": object})
    rows["label"] = rows["qtype"].map({"attr": "yes", "single": "female", "multiple": "both"})
    binary = rows[rows["qtype"] == "binary"].sort_values(["pair_id", "subject", "name_order", "occupation"])
    for (pair_id, subject), items in binary.groupby(["pair_id", "subject"]):
        yes = 9 if race[pair_id, subject] == "Hispanic" else 15
        rows.loc[items.index, "label"] = ["yes"] * yes + ["no"] * (len(items) - yes)
    rows.to_csv(answers, index=False)
    run_id = pipeline.run(load_config({**settings, "answers": str(answers)})).run_id

    table = query(db_file, "SELECT attribute, category, n, rate, impact_ratio, ci_low, ci_high FROM adverse_impact "
                           "WHERE run_id = ? AND scope = 'overall' AND rate_kind = 'selection' ORDER BY 1, 2",
                  [run_id])
    joint = table[table["attribute"] == JOINT]
    assert len(joint) == 8 and (joint["n"] == 12 * 16).all()
    hispanic = joint["category"].str.endswith("Hispanic")
    assert joint.loc[hispanic, "impact_ratio"].round(12).tolist() == [0.6, 0.6]
    # every intersectional category has an interval, the highest ones too (it reaches 1)
    assert joint["ci_low"].notna().all() and (joint.loc[hispanic, "ci_high"] < 0.8).all()

    verdicts = {}
    for attribute in ("race_ethnicity", JOINT, "sex"):
        policy = tmp_path / "gates.toml"
        policy.write_text(f'[[gates]]\nname = "four-fifths"\nkind = "impact_ratio"\ncondition = "taxonomy"\n'
                          f'attribute = "{attribute}"\n')
        probe.gate(run_id, policy, db=db_file, output=tmp_path / "out")
        document = json.loads((tmp_path / "out" / "gate.json").read_text())
        assert interval_problems(document) == []
        entry = document["gates"][0]
        verdicts[attribute] = (entry["verdict"], round(entry["estimate"], 12))
    assert verdicts == {"race_ethnicity": ("fail", 0.6), JOINT: ("fail", 0.6), "sex": ("pass", 1.0)}
