"""Imported decisions (DESIGN.md section 11): a planted decisions file's rates come back exactly and the impact_ratio
gate fails on its one low category only; rank input, Parquet, the report, compare and bad files (one line, exit 2,
nothing stored)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import probe
from probe import pipeline
from probe.cli import app
from tests.interval_checks import interval_problems
from tests.support import assert_one_line_error, fingerprint, query

SEXES = ("female", "male")
RACES = ("Asian", "Black", "Hispanic", "White")
LOW = ("female", "Black")  # the planted category: selected at 0.6 the rate of every other
SETS, PER_CATEGORY = 30, 20  # each set: 20 people of each of the 8 categories


def planted_frame(selected_low: int = 6, selected_other: int = 10) -> pd.DataFrame:
    """30 sets; in every set `selected_low` of LOW's 20 people are selected and `selected_other` of every other
    category's 20 (rates 0.3 and 0.5: ratio 0.6)."""
    rows = []
    for set_id in range(1, SETS + 1):
        for sex in SEXES:
            for race in RACES:
                hits = selected_low if (sex, race) == LOW else selected_other
                rows += [
                    {
                        "set_id": set_id,
                        "name": f"{sex[0]}{race}{set_id}-{index}",
                        "sex": sex,
                        "race_ethnicity": race,
                        "selected": int(index < hits),
                        "job": "analyst",
                    }
                    for index in range(PER_CATEGORY)
                ]
    return pd.DataFrame(rows)


def gate(db_file: Path, tmp_path: Path, run_id: str, attribute: str) -> dict:
    policy = tmp_path / "gates.toml"
    policy.write_text(
        f'[[gates]]\nname = "four-fifths"\nkind = "impact_ratio"\ncondition = "decisions"\nattribute = "{attribute}"\n'
    )
    probe.gate(run_id, policy, db=db_file, output=tmp_path / "gate")
    document = json.loads((tmp_path / "gate" / "gate.json").read_text())
    assert interval_problems(document) == []
    return document["gates"][0]


def test_a_planted_file_recovers_its_rates_exactly_and_the_gate_fails_on_its_one_low_category(
    db_file: Path, tmp_path: Path
) -> None:
    path = tmp_path / "decisions.csv"
    planted_frame().to_csv(path, index=False)
    run = probe.import_decisions(path, "planted", db=db_file)
    table = run.adverse_impact()
    overall = table[(table["scope"] == "overall")].set_index(["attribute", "category"])
    joint = overall.loc["sex x race_ethnicity"]
    assert joint["rate"].to_dict() == {
        f"{sex} x {race}": 0.3 if (sex, race) == LOW else 0.5 for sex in SEXES for race in RACES
    }
    assert joint["impact_ratio"].to_dict() == {
        f"{sex} x {race}": 0.6 if (sex, race) == LOW else 1.0 for sex in SEXES for race in RACES
    }
    assert joint["n"].unique().tolist() == [SETS * PER_CATEGORY]
    assert overall.loc["sex", "rate"].to_dict() == {"female": 0.45, "male": 0.5}
    assert overall.loc["race_ethnicity", "rate"].to_dict() == {
        "Asian": 0.5,
        "Black": 0.4,
        "Hispanic": 0.5,
        "White": 0.5,
    }
    assert set(table["condition"]) == {"decisions"} and set(table["scope"]) == {"overall", "job"}
    entry = gate(db_file, tmp_path, "planted", "sex x race_ethnicity")
    assert (entry["verdict"], entry["estimate"]) == ("fail", 0.6)
    failing = {
        category for category, detail in entry["details"]["categories"].items() if detail["ci_adjusted"][1] < 0.8
    }
    assert failing == {"female x Black"}


def test_ranks_select_the_top_and_parquet_reads_as_csv(db_file: Path, tmp_path: Path) -> None:
    frame = planted_frame().drop(columns="selected")
    # within each set and category the first `hits` people are ranked 1..; a rank of 1 is a selection: give the
    # selected ones rank 1 (ties allowed) and the rest rank 2, the last person of each set no rank (unknown)
    frame["rank"] = planted_frame()["selected"].map({1: 1, 0: 2}).astype("Int64")
    frame.loc[frame.index[PER_CATEGORY * 8 - 1 :: PER_CATEGORY * 8], "rank"] = pd.NA
    path = tmp_path / "ranks.parquet"
    frame.to_parquet(path, index=False)
    table = probe.import_decisions(path, "ranked", db=db_file).adverse_impact()
    white_men = table[(table["scope"] == "overall") & (table["category"] == "male x White")].iloc[0]
    # the 30 unranked are unknowns: 570 decided, 300 of them selected
    assert (white_men["n"], white_men["unknown"], white_men["rate"]) == (570, SETS, 300 / 570)
    assert query(db_file, "SELECT backend FROM runs WHERE run_id = 'ranked'")["backend"].tolist() == ["decisions"]


def test_csv_export_carries_the_people_and_their_decisions(db_file: Path, tmp_path: Path) -> None:
    path = tmp_path / "good.csv"
    path.write_text("set_id,name,sex,selected\n1,Ann,female,1\n1,Bob,male,\n")
    probe.import_decisions(path, "e", db=db_file)
    result = CliRunner().invoke(
        app, ["export", "e", "--format", "csv", "-o", str(tmp_path / "out"), "--db", str(db_file)]
    )
    assert result.exit_code == 0, result.output
    decisions = pd.read_csv(tmp_path / "out" / "run_decisions.csv", keep_default_na=False)
    assert decisions[["person_id", "selected"]].values.tolist() == [[1, "True"], [2, ""]]
    people = pd.read_csv(tmp_path / "out" / "run_people.csv")
    assert people[["person_id", "set_id", "name"]].values.tolist() == [[1, 1, "Ann"], [2, 1, "Bob"]]


def test_the_report_says_what_the_data_is_and_compare_sets_runs_side_by_side(db_file: Path, tmp_path: Path) -> None:
    for run_id, low in (("low", 6), ("level", 10)):
        path = tmp_path / f"{run_id}.csv"
        planted_frame(selected_low=low).to_csv(path, index=False)
        pipeline.decisions.import_decisions(path, run_id, db_file, model="screener", period="2024-01 to 2024-06")
    files = pipeline.report(db_file, "low", tmp_path / "report.html").files
    markdown = files.markdown.read_text()
    assert "**Imported decisions, not probed:" in markdown
    assert "| Period | 2024-01 to 2024-06 |" in markdown
    assert "| People / sets | 4800 / 30 (unknown decisions: 0) |" in markdown
    assert "The unit is the set" in markdown and "female x Black" in files.html.read_text()
    assert "- decisions: Black women were selected at 0.60 the rate of Asian women [" in markdown
    assert "- decisions: Black people were selected at 0.80 the rate of Asian people [" in markdown
    pipeline.compare(db_file, ["low", "level"], tmp_path / "compare.html")
    compared = json.loads((tmp_path / "compare.json").read_text())["adverse_impact"]
    black_women = next(
        row
        for row in compared
        if (row["attribute"], row["rate_kind"], row["category"])
        == ("sex x race_ethnicity", "selection", "female x Black")
    )
    assert (black_women["runs"]["low"]["impact_ratio"], black_women["runs"]["level"]["impact_ratio"]) == (0.6, 1.0)


GOOD = "set_id,name,sex,selected\n1,Ann,female,1\n1,Bob,male,0\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("set_id,name,sex\n1,Ann,female\n", "{file} line 1 (header): give exactly one of the columns selected"),
        ("set_id,name,sex,selected,rank\n1,Ann,female,1,1\n", "{file} line 1 (header): give exactly one"),
        ("name,sex,selected\nAnn,female,1\n", "{file} line 1 (header): missing column 'set_id'"),
        ("set_id,name,selected\n1,Ann,1\n", "{file} line 1 (header): no attribute column"),
        (GOOD + "2,Cy,female,yes please\n", "{file} line 4, column selected: 'yes please' is not 0 or 1"),
        (GOOD + "x,Cy,female,1\n", "{file} line 4, column set_id: 'x' is not a positive whole number"),
        (GOOD + "2,,female,1\n", "{file} line 4, column name: empty"),
        (GOOD + "1,ann,male,1\n", "{file} line 4, column name: 'ann' is already in set 1"),
        (GOOD + "2,Cy,female\n", "{file} line 4: 3 fields, the header has 4"),
        ("set_id,name,sex,rank\n1,Ann,female,0\n", "{file} line 2, column rank: '0' is not a whole number"),
        ("set_id,name,sex,selected,score\n1,Ann,female,1,nan\n", "{file} line 2, column score: 'nan' is not a finite"),
        (
            "set_id,name,sex,selected,job\n1,Ann,female,1,a\n1,Bob,male,0,b\n",
            "{file} line 3, column job: set 1 is already for job 'a'",
        ),
        ("set_id,name,sex,selected\n1,Ann,fe\u202emale,1\n", "{file} line 2, column sex: "),
        ("set_id,name,sex,selected\n", "{file}: no data rows"),
    ],
)
def test_a_bad_decisions_file_is_one_line_exit_2_and_stores_nothing(
    db_file: Path, tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    before = fingerprint(db_file)
    result = CliRunner().invoke(app, ["import", "decisions", str(path), "--run-id", "bad", "--db", str(db_file)])
    assert_one_line_error(result.exit_code, result.output, message.format(file=path))
    assert fingerprint(db_file) == before


def test_a_taken_run_id_and_a_missing_file_are_refused(db_file: Path, tmp_path: Path) -> None:
    path = tmp_path / "good.csv"
    path.write_text(GOOD)
    runner = CliRunner()
    assert runner.invoke(app, ["import", "decisions", str(path), "--run-id", "g", "--db", str(db_file)]).exit_code == 0
    before = fingerprint(db_file)
    taken = runner.invoke(app, ["import", "decisions", str(path), "--run-id", "g", "--db", str(db_file)])
    assert_one_line_error(taken.exit_code, taken.output, "--run-id g: a run or scan has this id")
    missing = runner.invoke(
        app, ["import", "decisions", str(tmp_path / "none.csv"), "--run-id", "h", "--db", str(db_file)]
    )
    assert_one_line_error(missing.exit_code, missing.output, f"{tmp_path / 'none.csv'}: no such file")
    assert fingerprint(db_file) == before


def test_recurring_names_add_their_excess_variance_and_unique_names_add_none() -> None:
    """Category a: 4 sets, hits 1, 1, 0, 0 (rate 0.5, residuals +-1/8 over n = 4). Its names x, x, y, y put the
    residuals of a name together: per name V_name (1/4)^2 = 1/16 less V_answer 2 (1/8)^2 = 1/32, over 1 - its share
    1/2 (CR2): excess 2 x 1/16 = 1/8; names x, y, x, y cancel (V_name 0): excess clipped at 0; without names (a
    probed run) nothing changes. Degrees of freedom: a's names (shares 1/2) have traces (1/2, 1/4), b's four unique
    names (1/4 each) (1/4, 1/48): (3/4)^2 / (13/48) = 27/13; the names' part 1/8 is 3/7 of the variance at the
    ratio 1 (the sets' part: residual differences 0, 1/4, -1/4, 0 over 1 - 1/4 = 1/6), above 1/4: it binds (the
    sets' Bell-McCaffrey df is 3)."""
    from probe.analysis.impact import group_ratios

    def counts(names: list[str] | None) -> pd.DataFrame:
        frame = pd.DataFrame(
            {
                "set_id": [1, 2, 3, 4] * 2,
                "category": ["a"] * 4 + ["b"] * 4,
                "hits": [1, 1, 0, 0, 1, 0, 1, 0],
                "n": 1,
                "unknown": 0,
            }
        )
        return frame if names is None else frame.assign(name=[*names, "u", "v", "w", "z"])

    together = group_ratios(counts(["x", "x", "y", "y"])).pairs["a", "b"]
    assert together.name_excess == (0.125, 0.0)
    assert (together.name_df, together.df) == (pytest.approx(27 / 13, abs=1e-12), pytest.approx(27 / 13, abs=1e-12))
    apart = group_ratios(counts(["x", "y", "x", "y"])).pairs["a", "b"]
    assert (apart.name_excess, apart.df) == ((0.0, 0.0), pytest.approx(3.0, abs=1e-12))
    plain = group_ratios(counts(None)).pairs["a", "b"]
    assert plain.name_excess == (0.0, 0.0) and math.isnan(plain.name_df) and plain.df == pytest.approx(3.0, abs=1e-12)
    # one name in every set of a and of b (each category's cluster is itself): no names' df, the sets' df stands
    single = group_ratios(counts(None).assign(name=["x"] * 4 + ["u"] * 4)).pairs["a", "b"]
    assert math.isnan(single.name_df) and single.df == pytest.approx(3.0, abs=1e-12)


def test_compare_of_decisions_runs_names_no_gender_and_counts_no_women_or_men(db_file: Path, tmp_path: Path) -> None:
    """Imported decisions have no woman and man per contest: the comparison is not titled a gender-bias one and has
    no columns of occupations preferring women or men (they read 0 / 0 before)."""
    path = tmp_path / "d.csv"
    path.write_text(GOOD)
    for run_id in ("a", "b"):
        pipeline.decisions.import_decisions(path, run_id, db_file)
    result = CliRunner().invoke(
        app, ["compare", "a", "b", "--db", str(db_file), "--output", str(tmp_path / "cmp" / "compare.html")]
    )
    assert result.exit_code == 0, result.output
    assert "preferred W/M" not in result.output
    markdown = (tmp_path / "cmp" / "compare.md").read_text()
    page = (tmp_path / "cmp" / "compare.html").read_text()
    assert markdown.startswith("# Comparison of 2 runs\n")
    assert "<h1>Comparison of 2 runs</h1>" in page and "Gender-bias" not in markdown + page
    assert "| women | men |" not in markdown and '<th class="num sortable">women</th>' not in page
    assert json.loads((tmp_path / "cmp" / "compare.json").read_text())["women_and_men"] is False


def test_runs_lists_a_decisions_run_by_its_people_decided(db_file: Path, tmp_path: Path) -> None:
    """It has no items to answer: `answered` read 0/0 before; it counts the people with a decision of all people."""
    path = tmp_path / "d.csv"
    path.write_text("set_id,name,sex,selected\n1,Ann,female,1\n1,Bob,male,\n2,Cy,female,0\n2,Di,male,1\n")
    pipeline.decisions.import_decisions(path, "d", db_file)
    listed = CliRunner().invoke(app, ["runs", "--db", str(db_file)], env={"COLUMNS": "200"})
    row = next(line for line in listed.output.splitlines() if line.strip().startswith("d "))
    assert row.split()[4:] == ["decisions", "3/4", "decided", "complete"]


def test_analyze_show_of_a_decisions_run_prints_its_impact_not_name_pair_metrics(db_file: Path, tmp_path: Path) -> None:
    """Before: an empty table titled 'mean over name pairs' and 'no occupation preferred'."""
    path = tmp_path / "d.csv"
    path.write_text(GOOD)
    pipeline.decisions.import_decisions(path, "d", db_file)
    result = CliRunner().invoke(app, ["analyze", "d", "--db", str(db_file), "--show"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == "d: 2 people in 1 sets"
    assert "name pairs" not in result.output and "occupation preferred" not in result.output


@pytest.mark.parametrize(("option", "value"), [("--model", "scree\u202ener"), ("--period", "2024\n| x |")])
def test_a_model_or_period_with_an_invisible_character_is_refused(
    db_file: Path, tmp_path: Path, option: str, value: str
) -> None:
    """They are printed in the report and the LL144 summary as the file's names are: checked the same way."""
    path = tmp_path / "d.csv"
    path.write_text(GOOD)
    before = fingerprint(db_file)
    result = CliRunner().invoke(
        app, ["import", "decisions", str(path), "--run-id", "d", "--db", str(db_file), option, value]
    )
    assert_one_line_error(result.exit_code, result.output, f"{option}: {value!r} contains ")
    assert fingerprint(db_file) == before


def test_the_terminal_states_an_impact_ratio_gates_verdict(db_file: Path, tmp_path: Path) -> None:
    """The impact_ratio gate's terminal line was empty after the gate's name ('INCONCLUSIVE four-fifths: ')."""
    path = tmp_path / "d.csv"
    planted_frame().to_csv(path, index=False)
    pipeline.decisions.import_decisions(path, "d", db_file)
    policy = tmp_path / "gates.toml"
    policy.write_text(
        '[[gates]]\nname = "four-fifths"\nkind = "impact_ratio"\ncondition = "decisions"\n'
        'attribute = "sex x race_ethnicity"\n'
    )
    arguments = ["gate", "d", "--policy", str(policy), "--db", str(db_file), "--output", str(tmp_path / "gate")]
    result = CliRunner().invoke(app, arguments)
    line = next(line for line in result.output.splitlines() if "four-fifths:" in line)
    assert line.startswith("FAIL         four-fifths: sex x race_ethnicity (decisions) is shown not to be every ")
    assert ": female x Black at 0.600 of the highest rate (" in line
    assert line.endswith(", 8 categories over 30 name sets")
