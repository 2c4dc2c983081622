"""The Python API (probe.run / open_run / Run) and --names: the tour example, stored pairs, name validation."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import probe
from probe.cli import app
from probe.common.errors import UserError
from tests.support import ROOT, assert_one_line_error, fingerprint, query, unknown_answers

EXAMPLE = ROOT / "examples" / "api_tour.py"


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
    assert set(answers["wording"]) == {"paper"}  # the tour asks in the paper's wording alone
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
    from probe.taxonomy import name_pairs

    con = db.connect(db_file)
    try:
        pairs = name_pairs.select_name_pairs(con, None, names)
    finally:
        con.close()
    assert pairs.values.tolist() == [[1, "Zo\u00eb", "Ren\u00e9"]]


def test_the_api_scans_carries_a_scan_on_without_a_budget_and_writes_the_clis_report(
    db_file: Path, tmp_path: Path
) -> None:
    """probe.scan as `probe scan`: SOC 29-203 (6 titles, 29-2034.00 answered for the man 9 times in 10)."""
    from bench.scan import draw_answers, write_replay_file

    answers = tmp_path / "answers.csv"
    shares = np.array([0.1 if index == 3 else 0.5 for index in range(6)])
    write_replay_file(answers, db_file, draw_answers(np.random.default_rng(5), shares), ("29-203",))
    first = probe.scan(soc="29-203", backend="replay", answers=answers, budget=30, scan_id="s", db=db_file)
    assert first == probe.Scan("s", str(db_file))
    assert first.rounds()[["round", "depth", "titles", "calls", "status"]].values.tolist() == [
        [1, 2, 6, 24, "decided"],
        [2, 3, 3, 6, "decided"],
        [3, 4, 0, 0, "decided"],
    ]
    assert first.results()[["soc_code", "pairs", "stopped"]].values.tolist() == [
        ["29-2031.00", 3, "budget"],
        ["29-2032.00", 2, "budget"],
        ["29-2033.00", 3, "budget"],
        ["29-2034.00", 3, "budget"],
        ["29-2035.00", 2, "cleared"],
        ["29-2036.00", 2, "budget"],
    ]

    carried = probe.scan(scan_id="s", db=db_file, budget=None)  # no limit: the budget-stopped titles go on
    assert carried.rounds()[["round", "depth", "titles", "calls"]].values.tolist() == [
        [1, 2, 6, 24],
        [2, 3, 3, 6],
        [3, 4, 0, 0],
        [4, 3, 5, 0],
        [5, 4, 5, 10],
        [6, 5, 1, 2],
        [7, 6, 1, 2],
        [8, 8, 1, 4],
        [9, 10, 1, 4],
        [10, 13, 1, 6],
    ]
    results = carried.results()
    assert results[["soc_code", "pairs", "flagged", "preferred", "stopped"]].values.tolist() == [
        ["29-2031.00", 4, False, "none", "cleared"],
        ["29-2032.00", 3, False, "none", "cleared"],
        ["29-2033.00", 4, False, "none", "cleared"],
        ["29-2034.00", 13, True, "male", "flagged"],
        ["29-2035.00", 2, False, "none", "cleared"],
        ["29-2036.00", 3, False, "none", "cleared"],
    ]
    pd.testing.assert_frame_equal(probe.open_scan("s", db=db_file).results(), results)

    assert carried.report(tmp_path / "api") == tmp_path / "api" / "scan.md"
    cli = CliRunner().invoke(app, ["scan", "--scan-id", "s", "--db", str(db_file), "-o", str(tmp_path / "cli")])
    assert cli.exit_code == 0, cli.output
    files = sorted(path.name for path in (tmp_path / "api").iterdir())
    assert files == ["flagged_occupations.csv", "scan.json", "scan.md", "scan_groups.svg"]
    for name in files:
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    assert (tmp_path / "api" / "scan_groups.svg").read_text().startswith("<?xml")


def test_open_scan_of_an_unknown_id_and_a_setting_no_scan_has_are_one_line_errors(db_file: Path) -> None:
    with pytest.raises(UserError, match=r"^nobody: no such scan in "):
        probe.open_scan("nobody", db=db_file)
    with pytest.raises(UserError, match=r"^nobody: no such scan in "):
        probe.Scan("nobody", str(db_file)).results()
    with pytest.raises(UserError, match=r"^top_k: not a setting of a scan \(the backend's: backend, model, "):
        probe.scan(top_k=3, db=db_file)
    with pytest.raises(UserError, match=r"^--soc 'nurses': a SOC code prefix is digits"):
        probe.scan(soc=["nurses"], backend="replay", db=db_file)
