"""`probe scan` at its edges: settings numpy or the rounds cannot take, titles that read the same, flagged
titles a confirmation run cannot take."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pytest
from typer.testing import CliRunner, Result

from bench.scan import write_replay_file
from probe.cli import app
from probe.common.errors import UserError
from probe.scan_setup import ScanSettings
from tests.support import assert_one_line_error, fingerprint

SOC = ("29-9",)  # six titles; 29-9021.00 and 29-9099.00 have no O*NET attribute ratings


@pytest.fixture
def every_pick_female(db_file: Path, tmp_path: Path) -> Path:
    """A replay file for SOC 29-9 in which every answer names the woman."""
    path = tmp_path / "answers.csv"
    write_replay_file(path, db_file, np.ones((6, 70, 2), dtype=bool), SOC)
    return path


def scan(db_file: Path, answers: Path, *more: str) -> Result:
    args = ["scan", "--soc", ",".join(SOC), "--backend", "replay", "--answers", str(answers), "--db", str(db_file)]
    return CliRunner().invoke(app, [*args, "--quiet", *more])


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"seed": -1}, "--seed -1: a seed is a whole number from 0 up"),
        ({"seed": "7"}, "--seed '7': a seed is a whole number from 0 up"),
        ({"budget": 0}, "--budget 0: a number of model calls from 1 up"),
        ({"budget": "100"}, "--budget '100': a number of model calls from 1 up"),
    ],
)
def test_settings_numpy_or_the_budget_cannot_take_are_refused(settings: dict[str, object], message: str) -> None:
    with pytest.raises(UserError) as refused:
        ScanSettings(**settings)
    assert str(refused.value) == message


@pytest.mark.parametrize(("soc", "message"), [(",", "--soc ','"), (" , ,", "--soc ' , ,'")])
def test_a_soc_option_of_commas_alone_is_refused(
    db_file: Path, every_pick_female: Path, soc: str, message: str
) -> None:
    """Not read as no prefix at all, which would scan every O*NET title."""
    result = CliRunner().invoke(app, ["scan", "--soc", soc, "--backend", "replay", "--answers", str(every_pick_female),
                                      "--db", str(db_file), "--dry-run"])  # fmt: skip
    assert_one_line_error(result.exit_code, result.output, f"{message}: no SOC code prefix in it (e.g. 29 or 29-1)\n")


@pytest.mark.parametrize("dry_run", [(), ("--dry-run",)])
def test_a_negative_seed_is_a_one_line_error(db_file: Path, every_pick_female: Path, dry_run: tuple[str, ...]) -> None:
    before = fingerprint(db_file)
    result = scan(db_file, every_pick_female, "--seed", "-1", *dry_run)
    assert_one_line_error(result.exit_code, result.output, "--seed -1: a seed is a whole number from 0 up")
    assert fingerprint(db_file) == before


def test_two_codes_with_one_title_are_refused_before_anything_is_stored(db_file: Path, every_pick_female: Path) -> None:
    """An imported release may name two codes alike; the scan's items are keyed by the title's text."""
    con = duckdb.connect(str(db_file))
    try:
        con.execute("UPDATE onet_occupations SET title = 'Athletic Trainers' WHERE soc_code = '29-9092.00'")
    finally:
        con.close()
    before = fingerprint(db_file)
    result = scan(db_file, every_pick_female)
    assert_one_line_error(
        result.exit_code,
        result.output,
        "O*NET-SOC codes 29-9091.00 and 29-9092.00 share the title 'Athletic Trainers': the scan asks by title, "
        "so leave one out (--occupations CSV or --soc)",
    )
    assert fingerprint(db_file) == before


def test_the_report_names_the_flagged_titles_left_out_of_the_confirmation_csv(
    db_file: Path, every_pick_female: Path, tmp_path: Path
) -> None:
    result = scan(db_file, every_pick_female, "-o", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("6 titles flagged after 96 model calls")
    report = (tmp_path / "out" / "scan.md").read_text().splitlines()
    assert [line for line in report if line.startswith("Not in flagged_occupations.csv")] == [
        "Not in flagged_occupations.csv (no O*NET attribute ratings, so `probe run` cannot confirm them): "
        "29-9021.00, 29-9099.00."
    ]
    confirm = (tmp_path / "out" / "flagged_occupations.csv").read_text().splitlines()
    assert [line.split(",")[1] for line in confirm[1:]] == ["29-9091.00", "29-9092.00", "29-9093.00", "29-9099.01"]
