"""The one path from settings to findings: taxonomy -> dataset -> backend -> answers -> metrics -> report.

`probe run` and the Python API (`probe.run`) both come here. Each step is its own module and gets the
settings from here directly: selection.py (taxonomy), dataset.py, backends/, runner.py (answers),
metrics.py, report/.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from probe import runner, runs
from probe.config import RunConfig, load_config
from probe.db import connect
from probe.errors import UserError

if TYPE_CHECKING:
    from probe.report import ReportFiles


def settings(flags: Mapping[str, object], config_file: Path | None = None) -> RunConfig:
    """Preset < RUN.toml < flags; a --run-id naming a stored run starts from that run's settings.

    So `probe run --run-id ID` alone resumes a run as it was started; a flag that changes its answers is
    refused by the resume check (runs.check_same_settings).
    """
    config = load_config(flags, config_file)
    if config.run_id is None or not Path(config.db).exists():
        return config
    con = connect(config.db, read_only=True)
    try:
        stored = runs.stored_settings(con, config.run_id)
    finally:
        con.close()
    return config if stored is None else load_config(flags, config_file, stored=stored)


def run(config: RunConfig, on_start: Callable[[str], None] | None = None) -> str:
    """Answer the run's items (resuming a stored run) and analyse them; returns the run id."""
    run_id = runner.run(config, on_start=on_start)
    analyze(config.db, run_id)
    return run_id


def analyze(db: Path | str, run_id: str) -> None:
    """Compute a run's metrics into the database (replacing earlier ones), in one transaction."""
    from probe.metrics import analyze as analyze_run  # statistics stack: load on use

    if not Path(db).exists():
        raise UserError(f"{db}: no such database")
    con = connect(db)
    try:
        analyze_run(con, run_id)
    finally:
        con.close()


def analyze_if_needed(db: Path | str, run_id: str) -> None:
    """Analyse a run if it has no metrics yet (a run stopped before its analysis)."""
    from probe.report import ensure_analysed

    con = connect(db)
    try:
        ensure_analysed(con, run_id)
    finally:
        con.close()


def report(db: Path | str, run_id: str, output: Path | str | None = None) -> tuple[ReportFiles, bool]:
    """Write a run's report: HTML, with its Markdown and JSON summaries beside it (same stem).

    `output`: a .html page or a .md summary (the other files beside it); default
    <db folder>/<run id>/report.html. Analyses the run first if it has no metrics; returns the
    files and whether it did.
    """
    from probe.report import ensure_analysed, write_report  # matplotlib and statistics: load on use

    db = Path(db)
    if not db.exists():
        raise UserError(f"{db}: no such database")
    con = connect(db)
    try:
        analysed_now = ensure_analysed(con, run_id)
        return write_report(con, run_id, Path(output) if output else db.parent / run_id / "report.html"), analysed_now
    finally:
        con.close()
