"""Command outputs frozen as they were before the settings were split into design, backend and options
(tests/data/golden_cli/): a dry run, a study's dry run and a dataset preview print the same lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from probe.cli import app
from tests.support import DATA

GOLDEN = DATA / "golden_cli"
CASES = {
    "run_dry_run": [
        "run",
        "--pairs",
        "2",
        "--occupations",
        "nurse,pilot",
        "--top-k",
        "2",
        "--conditions",
        "taxonomy,control",
        "--dry-run",
    ],
    "run_study_dry_run": [
        "run",
        "--pairs",
        "1",
        "--occupations",
        "nurse",
        "--top-k",
        "1",
        "--backend",
        "replay",
        "--answers",
        "a.csv",
        "--model",
        "m1",
        "--model",
        "m2",
        "--study",
        "s1",
        "--dry-run",
    ],
    "dataset_preview": [
        "dataset",
        "preview",
        "--pairs",
        "1",
        "--occupations",
        "nurse",
        "--top-k",
        "1",
        "--conditions",
        "taxonomy",
        "--limit",
        "1",
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_command_prints_what_it_printed_before(name: str, tmp_path: Path) -> None:
    db = tmp_path / f"{name}.duckdb"
    result = CliRunner().invoke(app, [*CASES[name], "--db", str(db)])
    printed = f"exit {result.exit_code}\n" + result.output.replace(str(db), "DB")
    assert printed == (GOLDEN / f"{name}.txt").read_text()
