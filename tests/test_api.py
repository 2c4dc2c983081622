"""The Python API (probe.run / open_run / Run) and --names: the tour example, stored pairs, name validation."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import probe
from probe.cli import app
from probe.common.errors import UserError
from tests.support import assert_one_line_error, fingerprint, query, unknown_answers

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "api_tour.py"


def _tour_module():
    spec = importlib.util.spec_from_file_location("api_tour", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_api_tour_runs_and_its_run_has_metrics_answers_and_a_report(tmp_path: Path) -> None:
    tour = _tour_module()
    run = tour.tour(tmp_path)
    metrics = run.metrics()
    assert {"metric", "value", "ci_low", "ci_high"} <= set(metrics.columns)
    overall = metrics[(metrics["scope"] == "overall") & (metrics["condition"] == "taxonomy")]
    # The replayed model picks the favoured gender every time: every single question is "biased".
    assert overall.set_index("metric").loc["bias", "value"] == 1.0

    answers = run.answers()
    assert {"qtype", "label", "prompt", "options_json"} <= set(answers.columns)
    stage2 = answers[answers["stage"] == 2]
    # 8 pairs x 2 orders x 2 occupations x 2 conditions x 4 questions, all answered from the file
    assert (len(stage2), stage2["label"].isna().sum()) == (256, 0)
    names = set(tour.NAMES["female"]) | set(tour.NAMES["male"])
    assert stage2["prompt"].map(lambda prompt: sum(name in prompt for name in names)).eq(2).all()
    assert not answers["prompt"].str.contains("Mary|James").any()  # no shipped name slipped in
    nurse_single = stage2[(stage2["qtype"] == "single") & (stage2["occupation"] == "nurse")]
    assert set(nurse_single["label"]) == {"female"}

    pd.testing.assert_frame_equal(probe.open_run(run.run_id, db=run.db).answers(), answers)
    assert (tmp_path / "report.html").stat().st_size > 0
    markdown = run.report(tmp_path / "again" / "report.md")
    assert markdown == tmp_path / "again" / "report.md"
    assert markdown.read_text().startswith("# ")


def test_the_pairs_used_are_stored_and_a_resume_needs_no_names_file(tmp_path: Path) -> None:
    names = tmp_path / "names.csv"
    names.write_text("female,male\nAmara,Tomasz\nIngrid,Kwame\n")
    database = str(tmp_path / "names.duckdb")
    selection = {"names": str(names), "occupations": ("nurse",), "top_k": 1, "conditions": ("baseline",)}
    answers = unknown_answers(tmp_path / "answers.csv", **selection, db=database)
    settings = dict(backend="replay", answers=answers, names=names, occupations=["nurse"], top_k=1)  # Paths
    run = probe.run(**settings, conditions=["baseline"], db=Path(database), run_id="custom")
    stored = query(Path(database), "SELECT pair_id, female, male FROM run_name_pairs WHERE run_id = 'custom'")
    assert stored.values.tolist() == [[1, "Amara", "Tomasz"], [2, "Ingrid", "Kwame"]]

    names.write_text("female,male\nZoe,Liam\n")  # the file changes: the stored run keeps its pairs
    again = probe.run(run_id="custom", db=database)
    assert again.run_id == run.run_id
    assert set(again.answers()["first_name"]) == {"Amara", "Tomasz", "Ingrid", "Kwame"}


def test_open_run_of_an_unknown_id_is_one_error(db_file: Path) -> None:
    with pytest.raises(UserError, match=r"^nobody: no such run in "):
        probe.open_run("nobody", db=db_file)
    with pytest.raises(UserError, match=r"^run_id: expected a run id \(a string\), got 123$"):
        probe.open_run(123, db=db_file)  # type: ignore[arg-type]
    for read in (probe.Run("bogus", str(db_file)).answers, probe.Run("bogus", str(db_file)).metrics):
        with pytest.raises(UserError, match=r"^bogus: no such run in "):
            read()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("female,male\nAmara,Tomasz\nIn\u200bgrid,Kwame\n", r" line 3: 'In\u200bgrid' contains an invisible format"),
        ("female,male\nAmara,Tomasz\nAmara,\n", " line 3: empty male name"),
        ("female,male\nAlex,alex\n", " line 2: the female and male names are the same ('Alex')"),
        ("female,male\nAmara,Tomasz\nAmara,Tomasz\n", " line 3: the pair Amara/Tomasz is already on line 2"),
        ("woman,man\nAmara,Tomasz\n", ": missing column 'female' (the header has woman, man)"),
    ],
)
def test_a_bad_names_file_is_one_line_naming_the_row_and_writes_nothing(
    db_file: Path, tmp_path: Path, content: str, message: str
) -> None:
    names = tmp_path / "names.csv"
    names.write_text(content)
    before = fingerprint(db_file)
    args = ["run", "--names", str(names), "--occupations", "nurse", "--top-k", "1", "--db", str(db_file), "--quiet"]
    result = CliRunner().invoke(app, args)
    assert_one_line_error(result.exit_code, result.output, f"{names}{message}")
    assert fingerprint(db_file) == before


def test_names_nfc_normalised(tmp_path: Path, db_file: Path) -> None:
    names = tmp_path / "names.csv"
    names.write_text("female,male\nZoe\u0308,Rene\u0301\n")  # combining marks: stored composed
    from probe.store import db
    from probe.taxonomy import taxonomy

    con = db.connect(db_file)
    try:
        pairs = taxonomy.select_name_pairs(con, None, names)
    finally:
        con.close()
    assert pairs.values.tolist() == [[1, "Zo\u00eb", "Ren\u00e9"]]
