"""The workforce comparison of a run over name sets (issue 45): per contrast the source has shares for (sex; each
pair of race/ethnicity categories), by the people's own categories, never by the slots a contest is stored in."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import special

import probe
from probe.analysis.workforce import BOUNDS, contrast_shares
from probe.common.resources import resource_dir
from probe.report.workforce import workforce_words
from tests.support import name_set_run, query

# 14 occupations with a BLS share of women, 1.1% (plumber) to 92.5% (secretary)
OCCUPATIONS = (
    "nurse",
    "engineer",
    "accountant",
    "pilot",
    "architect",
    "lawyer",
    "teacher",
    "plumber",
    "cashier",
    "carpenter",
    "dentist",
    "firefighter",
    "janitor",
    "secretary",
)
SETS = 9  # 4 categories (female / male x Black / White), 3 rounds of 2 contests: sex and race each in 6 sets


def planted_world(tmp_path: Path, db_file: Path) -> tuple[str, pd.Series]:
    """In a mixed-sex contest the woman is picked where she is named first and the job's workforce is at least 30%
    women, and where she is named second and it is at least 60% women: her share per occupation is 0, 0.5 or 1 by
    the workforce alone. Every other contest is won by whoever is named first (50% each). The sex column sits last,
    so the first slot of a contest is not the woman's. Returns the run id and the occupations' share of women."""
    codes = pd.read_csv(resource_dir("taxonomy") / "occupations.csv").set_index("occupation")["soc_code"]
    shares = query(db_file, "SELECT soc_code, pct_women / 100 AS share FROM workforce WHERE source = 'bls-cps-2022'")
    women = codes.loc[list(OCCUPATIONS)].map(shares.set_index("soc_code")["share"])

    def relabel(rows: pd.DataFrame, category: Callable[[str], pd.Series]) -> None:
        sex = category("sex")
        rows.loc[rows["qtype"] == "binary", "label"] = "yes"
        rows.loc[rows["qtype"] == "multiple", "label"] = "both"
        single = rows["qtype"] == "single"
        first = rows["name_order"].map({"fm": "female", "mf": "male"})  # the slot named first
        rows.loc[single, "label"] = first[single]
        for index in rows.index[single]:
            pair, order, job = rows.at[index, "pair_id"], rows.at[index, "name_order"], rows.at[index, "occupation"]
            people = {slot: sex[pair, slot] for slot in ("female", "male")}
            if set(people.values()) != {"female", "male"}:
                continue
            woman = next(slot for slot, category in people.items() if category == "female")
            woman_first = (woman == "female") == (order == "fm")
            picked = women[job] >= (0.3 if woman_first else 0.6)
            rows.at[index, "label"] = woman if picked else ({"female", "male"} - {woman}).pop()
        rows.loc[rows["stage"] == 1, "label"] = "yes"

    columns = ("set_id", "name", "race_ethnicity", "sex")
    run_id = name_set_run(tmp_path, db_file, relabel, SETS, columns, occupations=OCCUPATIONS, conditions=("baseline",))
    return run_id, women


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory, seeded_db: Path) -> tuple[Path, str, pd.Series]:
    folder = tmp_path_factory.mktemp("workforce_groups")
    db_file = folder / "probe.duckdb"
    db_file.write_bytes(seeded_db.read_bytes())
    return db_file, *planted_world(folder, db_file)


def test_each_contrast_is_compared_by_the_peoples_categories(planted) -> None:
    db_file, run_id, women = planted
    rows = query(
        db_file,
        "SELECT attribute, category_a, category_b, occupation, model_share, workforce_share FROM "
        "workforce_occupations WHERE run_id = ? ORDER BY ALL",
        [run_id],
    )
    # sex and race only: the intersection has no workforce share; no row reads a slot (attribute NULL)
    assert sorted(set(zip(rows["attribute"], rows["category_a"], rows["category_b"], strict=True))) == [
        ("race_ethnicity", "Black", "White"),
        ("sex", "female", "male"),
    ]
    sex = rows[rows["attribute"] == "sex"].set_index("occupation")
    planted_share = (women >= 0.3).astype(float) / 2 + (women >= 0.6).astype(float) / 2
    assert sex["model_share"].to_dict() == planted_share.loc[sex.index].to_dict()
    assert sex["workforce_share"].to_dict() == pytest.approx(women.loc[sex.index].to_dict(), abs=1e-12)
    race = rows[rows["attribute"] == "race_ethnicity"].set_index("occupation")
    assert race["model_share"].tolist() == [0.5] * len(race)  # whoever is named first: half each
    shares = query(
        db_file,
        "SELECT DISTINCT occupation, pct_black, pct_white FROM run_attributes JOIN workforce "
        "USING (soc_code) WHERE run_id = ? AND source = 'bls-cps-2022'",
        [run_id],
    )
    black = shares.set_index("occupation")
    assert race["workforce_share"].to_dict() == pytest.approx(
        (black["pct_black"] / (black["pct_black"] + black["pct_white"])).loc[race.index].to_dict(), abs=1e-12
    )


def test_the_planted_slope_is_recovered_exactly_and_read(planted, tmp_path: Path) -> None:
    db_file, run_id, _ = planted
    fit = query(
        db_file,
        "SELECT attribute, statistic, estimate, ci_low, ci_high, n_occupations, pairs, verdict FROM "
        "workforce_fit WHERE run_id = ? ORDER BY ALL",
        [run_id],
    ).set_index(["attribute", "statistic"])
    sex = query(
        db_file,
        "SELECT model_share, workforce_share FROM workforce_occupations WHERE run_id = ? AND "
        "attribute = 'sex' ORDER BY occupation",
        [run_id],
    )
    x = special.logit(np.clip(sex["workforce_share"], *BOUNDS))
    glm = sm.GLM(sex["model_share"], sm.add_constant(x), family=sm.families.Binomial()).fit()
    slope = fit.loc[("sex", "slope")]
    assert slope["estimate"] == pytest.approx(glm.params.iloc[1], abs=1e-8)
    assert (slope["n_occupations"], slope["pairs"], slope["verdict"]) == (14, 6, "amplifies")
    assert fit.loc[("race_ethnicity", "slope"), "estimate"] == pytest.approx(0.0, abs=1e-12)
    assert fit.loc[("race_ethnicity", "slope"), "verdict"] == "flattens"
    document_path = probe.open_run(run_id, db=db_file).report(tmp_path / "report.html").with_suffix(".json")
    section = json.loads(document_path.read_text())["workforce"]
    assert (section["attribute"], section["category_a"], section["category_b"]) == ("sex", "female", "male")
    assert [(c["category_a"], c["slope"]["verdict"]) for c in section["contrasts"]] == [
        ("Black", "flattens"),
        ("female", "amplifies"),
    ]
    assert section["finding"].startswith("Over 14 occupations the amplification slope is ")
    assert "Black vs White" in (tmp_path / "report.md").read_text()


def test_a_set_runs_workforce_gate_and_section_count_sets(planted, tmp_path: Path) -> None:
    db_file, run_id, _ = planted
    policy = tmp_path / "gates.toml"
    policy.write_text('[[gates]]\nname = "mirror"\nkind = "workforce_slope"\ncondition = "baseline"\nlimit = 9\n')
    probe.gate(run_id, policy, db=db_file, output=tmp_path / "out")
    [gate] = json.loads((tmp_path / "out" / "gate.json").read_text())["gates"]
    assert gate["unit"] == "name sets" and ", 14 occupations, 6 name sets; " in gate["sentence"]
    assert "name pairs" not in gate["sentence"]
    document_path = probe.open_run(run_id, db=db_file).report(tmp_path / "report.html").with_suffix(".json")
    section = json.loads(document_path.read_text())["workforce"]
    assert section["estimand"].startswith("population-averaged slope: the shares averaged over name sets and both")
    assert "(occupations and name sets)" in section["slope"]["method"]
    html = (tmp_path / "report.html").read_text()
    assert "whiskers: its 95% interval over name sets" in html and "this run's number of name sets" in html


def test_a_race_contrast_is_captioned_by_its_categories_not_women() -> None:
    race = {"attribute": "race_ethnicity", "category_a": "Black", "category_b": "White"}
    assert workforce_words(race) == {
        "unit": "name sets",
        "picked": "the Black person",
        "workers": "the share of Black workers among the job's Black and White workers",
        "exaggerates": "which jobs are Black workers' or White workers'",
        "beyond": "Split between Black and White workers more than the workforce",
    }
    sex = workforce_words({"attribute": "sex", "category_a": "female", "category_b": "male"})
    assert (sex["unit"], sex["picked"]) == ("name sets", "the woman")
    assert (workforce_words({"attribute": None})["unit"], workforce_words(None)["picked"]) == (
        "name pairs",
        "the woman",
    )


def test_a_contrast_is_set_against_the_first_categorys_share_of_the_two() -> None:
    workforce = pd.DataFrame(
        {
            "occupation": ["nurse"],
            "soc_code": ["29-1141.00"],
            "pct_women": [87.9],
            "pct_white": [75.0],
            "pct_black": [15.0],
            "pct_asian": [9.0],
            "pct_hispanic": [8.0],
        }
    )
    assert contrast_shares(workforce, "race_ethnicity", "Black", "White")["share"].tolist() == [15.0 / 90.0]
    assert contrast_shares(workforce, "sex", "female", "male")["share"].tolist() == pytest.approx([0.879])
    assert contrast_shares(workforce, "sex x race_ethnicity", "female x Black", "male x Black") is None
    assert contrast_shares(workforce, "sex", "Man", "Woman") is None  # not the shipped spelling: no share


def test_a_race_contrasts_stored_methods_name_its_sets_and_first_category(planted) -> None:
    db_file, run_id, _ = planted
    methods = query(
        db_file,
        "SELECT DISTINCT method FROM workforce_fit WHERE run_id = ? AND attribute = 'race_ethnicity' "
        "AND statistic = 'adjusted_slope'",
        [run_id],
    )["method"].tolist()
    assert (
        len(methods) == 1
        and "(+1 Black first, -1 second)" in methods[0]
        and "(occupations and name sets)" in methods[0]
    )
    assert "woman" not in methods[0] and "name pairs" not in methods[0]


def test_a_set_run_missing_its_stored_grant_counts_is_analysed_again(planted, tmp_path: Path) -> None:
    from probe.pipeline.analysed import ensure_analysed
    from probe.store import db

    db_file, run_id, _ = planted
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(db_file.read_bytes())
    con = db.connect(copy)
    try:
        assert ensure_analysed(con, run_id) is False
        con.execute("DELETE FROM grant_counts WHERE run_id = ?", [run_id])
        assert ensure_analysed(con, run_id) is True
        assert con.execute("SELECT count(*) FROM grant_counts WHERE run_id = ?", [run_id]).fetchone()[0] > 0
    finally:
        con.close()


def test_a_contrasts_categories_are_text_in_the_markdown_report(planted, tmp_path: Path) -> None:
    from probe.report.render import render_report

    db_file, run_id, _ = planted
    document_path = probe.open_run(run_id, db=db_file).report(tmp_path / "report.html").with_suffix(".json")
    data = json.loads(document_path.read_text())
    hostile = "[x](javascript:alert(1))"
    occupation = {"occupation": "Nurse", "model_share": 0.9, "ci_low": 0.8, "ci_high": 0.95, "workforce_share": 0.5}
    data["workforce"] |= {"attribute": "race_ethnicity", "category_a": hostile, "beyond": [occupation]}
    markdown = render_report(data)[1]
    assert "Split between [x\\](javascript:alert(1)) and male workers more than the workforce: Nurse" in markdown
    assert hostile not in markdown  # a link no more
