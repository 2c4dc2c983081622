"""`probe export RUN --format ll144` (DESIGN.md section 11): the CSV carries no live formula, the Markdown and HTML
escape every user string, a category under 2% keeps its count and rate but no ratio, and a probed run's summary
states the probe's definitions with its names as applicants."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from probe import pipeline
from probe.cli import app
from probe.store.config import RunConfig
from tests.analysis.test_adverse_impact import planted_run
from tests.support import unknown_answers
from tests.taxonomy.test_name_sets import sets_file

HOSTILE = '=HYPERLINK("http://x")<script>alert(1)</script>'


def export(db_file: Path, run_id: str, out: Path) -> dict[str, str]:
    result = CliRunner().invoke(app, ["export", run_id, "--format", "ll144", "-o", str(out), "--db", str(db_file)])
    assert result.exit_code == 0, result.output
    return {suffix: (out / f"ll144.{suffix}").read_text() for suffix in ("csv", "md", "html")}


def test_no_live_formula_and_every_user_string_escaped(db_file: Path, tmp_path: Path) -> None:
    rows = [
        f"{set_id},p{set_id}{sex},{sex},{category},{int(sex == 'male')},-src"
        for set_id in range(1, 7)
        for sex, category in (("female", HOSTILE), ("male", "plain"))
    ]
    path = tmp_path / "hostile.csv"
    path.write_text("set_id,name,sex,team,selected,source\n" + "\n".join(rows) + "\n")
    result = CliRunner().invoke(
        app, ["import", "decisions", str(path), "--run-id", "h", "--db", str(db_file), "--period", "@SUM(1)"]
    )
    assert result.exit_code == 0, result.output
    files = export(db_file, "h", tmp_path / "out")
    table = pd.read_csv(tmp_path / "out" / "ll144.csv", keep_default_na=False)
    cells = [str(cell) for cell in table.to_numpy().ravel()]
    assert not [cell for cell in cells if cell.startswith(("=", "+", "-", "@"))]
    assert "'" + HOSTILE in cells and "'@SUM(1)" in cells
    assert "<script>" not in files["html"] and "&lt;script&gt;" in files["html"]
    assert re.search(r"(?<!\\)<script>", files["md"]) is None and "\\<script>" in files["md"]


def test_a_category_under_2pct_keeps_its_count_and_rate_but_no_ratio(db_file: Path, tmp_path: Path) -> None:
    """60 sets of 5: 1 person of the rare category (1 of 300 < 2%), selected; 'common' at 0.5 and 'other' at 29 of
    59: the rare one (rate 1) would otherwise be the highest rate and set every ratio."""
    lines = ["set_id,name,group,selected"]
    for set_id in range(1, 61):
        lines += [f"{set_id},a{set_id}-{i},common,{int((set_id + i) % 2 == 0)}" for i in range(4)]
        lines.append(f"{set_id},b{set_id},{'rare' if set_id == 1 else 'other'},{set_id % 2}")
    path = tmp_path / "rare.csv"
    path.write_text("\n".join(lines) + "\n")
    assert (
        CliRunner().invoke(app, ["import", "decisions", str(path), "--run-id", "r", "--db", str(db_file)]).exit_code
        == 0
    )
    export(db_file, "r", tmp_path / "out")
    table = pd.read_csv(tmp_path / "out" / "ll144.csv").set_index("category")
    assert table.loc["rare", ["applicants", "rate", "excluded_under_2pct"]].tolist() == [1, 1.0, True]
    assert pd.isna(table.loc["rare", "impact_ratio"]) and pd.isna(table.loc["rare", "p_value"])
    assert table.loc["common", ["applicants", "rate", "impact_ratio"]].tolist() == [240, 0.5, 1.0]
    assert table.loc["other", ["applicants", "impact_ratio"]].tolist() == [59, (29 / 59) / 0.5]


def test_a_probed_run_states_the_probes_definitions_and_counts_names(db_file: Path, tmp_path: Path) -> None:
    run_id = planted_run(db_file, tmp_path, male_yes=(10, 10))
    files = export(db_file, run_id, tmp_path / "out")
    table = pd.read_csv(tmp_path / "out" / "ll144.csv")
    selection = table[table["rate_kind"] == "selection"].set_index("category")
    assert selection.loc[["female", "male"], ["applicants", "rate", "impact_ratio"]].to_numpy().tolist() == [
        [10, 0.6, 0.6],
        [10, 1.0, 1.0],
    ]
    assert "This summary is of a probe of a language model, not of hiring decisions." in files["md"]
    assert "names the probe showed" in files["html"] and "Condition: taxonomy." in files["md"]
    assert set(table["source"]) == {f"probe of {tmp_path / 'answers.csv'} (replay backend, run {run_id})"}


def test_a_run_over_name_sets_counts_each_name_once_per_category(db_file: Path, tmp_path: Path) -> None:
    """6 sets of 4 names (sex x race): every binary answer yes; each name is asked in several contests but is one
    applicant."""
    settings = dict(
        backend="replay",
        names=str(sets_file(tmp_path / "sets.csv")),
        occupations=("nurse",),
        top_k=1,
        conditions=("taxonomy",),
        db=str(db_file),
        quiet=True,
    )
    answers = unknown_answers(tmp_path / "answers.csv", **settings)
    rows = pd.read_csv(answers, dtype={"label": object})
    rows.loc[rows["qtype"].isin(["binary", "attr"]), "label"] = "yes"
    rows.to_csv(answers, index=False)
    run_id = pipeline.run(RunConfig(**settings, answers=str(answers))).run_id
    export(db_file, run_id, tmp_path / "out")
    table = pd.read_csv(tmp_path / "out" / "ll144.csv")
    selection = table[table["rate_kind"] == "selection"]
    assert selection[["attribute", "category", "applicants", "rate"]].values.tolist() == [
        ["race_ethnicity", "Black", 12, 1.0],
        ["race_ethnicity", "White", 12, 1.0],
        ["sex", "female", 12, 1.0],
        ["sex", "male", 12, 1.0],
        ["sex x race_ethnicity", "female x Black", 6, 1.0],
        ["sex x race_ethnicity", "female x White", 6, 1.0],
        ["sex x race_ethnicity", "male x Black", 6, 1.0],
        ["sex x race_ethnicity", "male x White", 6, 1.0],
    ]
