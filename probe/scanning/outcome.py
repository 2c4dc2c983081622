"""What a finished scan leaves the user: the flagged titles, the calls made, the titles a budget stopped, the report
files and the two-stage run that confirms the flags. `probe scan` prints it; `probe.scan()` returns it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from probe.analysis.scan_rules import BUDGET
from probe.common.redact import safe_url
from probe.scanning.report import confirmation_csv
from probe.scanning.rounds import load_state
from probe.store.db import DEFAULT_DB
from probe.store.spec import RunSpec

# The backend settings a confirmation run is given as flags (the others travel in the report's backend.toml).
CONFIRM_FLAGS = ("model", "base_url", "answers", "decoding", "device", "dtype")


@dataclass(frozen=True)
class FlaggedTitle:
    title: str
    share: float
    ci_low: float
    ci_high: float
    e_value: float
    preferred: str


@dataclass(frozen=True)
class ScanOutcome:
    """A scan's result in brief. `report` names the files written (empty where none was asked for);
    `confirm_command` is the `probe run` that re-tests the flagged titles with O*NET ratings (None where none)."""

    scan_id: str
    db: str
    flagged: list[FlaggedTitle]
    calls: int
    budget_stopped: int  # titles stopped undecided at the budget, which a larger budget asks further
    report: dict[str, Path] = field(default_factory=dict)
    confirm_command: list[str] | None = None


def scan_outcome(con: duckdb.DuckDBPyConnection, scan_id: str, config: RunSpec, report: dict[str, Path]) -> ScanOutcome:
    """Read a finished scan's outcome (its report, if written, given as `report`)."""
    flagged = [
        FlaggedTitle(*row)
        for row in con.execute(
            "SELECT title, share, ci_low, ci_high, e_value, preferred FROM scan_results WHERE scan_id = ? AND flagged "
            "ORDER BY abs(share - 0.5) DESC, soc_code",
            [scan_id],
        ).fetchall()
    ]
    calls = con.execute("SELECT count(*) FROM items WHERE run_id = ?", [scan_id]).fetchone()[0]
    budget_stopped = con.execute(
        "SELECT count(*) FROM scan_results WHERE scan_id = ? AND stopped = ?", [scan_id, BUDGET]
    ).fetchone()[0]
    if load_state(con, scan_id).next_depth() is None:  # every pair asked: no budget asks them further
        budget_stopped = 0
    # flagged titles with O*NET ratings (scan.md names the others)
    confirmable = "flagged_occupations.csv" in report and len(confirmation_csv(con, scan_id)) > 0
    command = _confirm_command(config, report) if confirmable else None
    return ScanOutcome(scan_id, str(config.options.db), flagged, int(calls), int(budget_stopped), report, command)


def _confirm_command(config: RunSpec, report: dict[str, Path]) -> list[str]:
    """`probe run` over the flagged titles with the scan's model: its settings as flags, the rest from backend.toml,
    and the scan's database (its answers are the run's cache) where that is not the default."""
    flagged = str(report["flagged_occupations.csv"])
    command = ["probe", "run", "--occupations", flagged, "--backend", config.backend.kind]
    for name in CONFIRM_FLAGS:
        value = config.flat()[name]
        if name == "base_url" and value:
            value = safe_url(value)
        if value:
            command += [f"--{name.replace('_', '-')}", str(value)]
    if "backend.toml" in report:  # the scan's settings the flags above do not carry (api_mode, timeout, ...)
        command += ["--config", str(report["backend.toml"])]
    if str(config.options.db) != str(DEFAULT_DB):
        command += ["--db", str(config.options.db)]
    return command
