"""The report's documents written once for the report tests that read them (test_report, test_report_pages)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probe import report
from probe.cli import app


@pytest.fixture(scope="module")
def written(runs_db: Path, tmp_path_factory: pytest.TempPathFactory) -> report.ReportFiles:
    """The steady run's report, written once through the CLI into a copy of the database."""
    folder = tmp_path_factory.mktemp("written")
    db_copy = Path(shutil.copy(runs_db, folder / "probe.duckdb"))
    result = CliRunner().invoke(app, ["report", "steady", "--db", str(db_copy), "-o", str(folder / "r.html")])
    assert result.exit_code == 0, result.output
    return report.ReportFiles(folder / "r.html", folder / "r.md", folder / "r.json")


@pytest.fixture(scope="module")
def compared(runs_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The comparison of steady (reference) and first, written once through the CLI."""
    folder = tmp_path_factory.mktemp("compared")
    db_copy = Path(shutil.copy(runs_db, folder / "probe.duckdb"))
    out = folder / "cmp.html"
    result = CliRunner().invoke(app, ["compare", "steady", "first", "--db", str(db_copy), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out
