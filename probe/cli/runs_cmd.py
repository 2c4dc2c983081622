"""`probe runs`: the runs and scans in a database, with how far each got."""

from __future__ import annotations

import sys

import pandas as pd
import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from probe import pipeline
from probe.cli.app import DbOption, app
from probe.common.escape import literal_console, terminal_text
from probe.common.vocabulary import DECISIONS_BACKEND, FAILED, INTERRUPTED, RUNNING, STOPPED
from probe.pipeline.front import DEFAULT_DB


@app.command("runs")
def runs_command(db: DbOption = DEFAULT_DB) -> None:
    """List the runs in a database, newest first (a study's runs together): id, created, model, backend, preset,
    items answered, status, study; then its scans (`probe scan`): id, status, model, backend, titles, model
    calls, titles flagged, started.

    answered: items with an answer / items built; "(stage 1)" while stage 2, built from stage 1's answers,
    does not exist yet; an imported decisions run: people with a decision / people, "decided". flagged: empty
    until the scan has results.
    """
    listing = pipeline.list_runs(db)
    frame, scans, snapshot = listing.runs, listing.scans, listing.snapshot
    if frame.empty and scans.empty:
        typer.echo(f"no runs in {terminal_text(db)}")
        return
    console = literal_console()
    if not sys.stdout.isatty():
        console.width = 200  # piped or redirected: one line per run for scripts, not a folded 80 columns
    if not frame.empty:
        _print_runs(console, frame, db, snapshot)
    if not scans.empty:
        _print_scans(console, scans, db, snapshot)
    if snapshot:
        typer.echo(f"(a probe process is writing {terminal_text(db)}: shown as of now)")


def _status(status: str, snapshot: bool) -> str:
    """Read from a snapshot, a process is writing the database: a run or scan marked running may be that one;
    otherwise it stopped without saying so (killed)."""
    return STOPPED if status == RUNNING and not snapshot else status


def _table(title: str, columns: tuple[str, ...]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD)  # light borders: fits 80 columns
    for column in columns:
        # Long model ids wrap (fold) rather than being cut, and no header is cut below its own width.
        table.add_column(column, overflow="fold", min_width=len(column), no_wrap=column.endswith(" id"))
    return table


def _print_runs(console: Console, frame: pd.DataFrame, db: str, snapshot: bool) -> None:
    rows = []
    for row in frame.itertuples():
        items = f"{row.answered:,}/{row.items:,}" + (" (stage 1)" if row.stage == 1 else "")
        if row.backend == DECISIONS_BACKEND:
            items = f"{row.answered:,}/{row.items:,} decided"
        status = _status(str(row.status), snapshot)
        created = f"{row.created_at:%m-%d %H:%M}"
        rows.append(
            (status, (row.run_id, created, row.model, row.backend, row.preset or "", items, status, row.study or ""))
        )
    columns = ("run id", "created", "model", "backend", "preset", "answered", "status", "study")
    _print_table(
        console, f"runs in {db}", columns, rows, f"a run that stopped with: probe run --run-id RUN_ID --db {db}"
    )


def _print_scans(console: Console, scans: pd.DataFrame, db: str, snapshot: bool) -> None:
    rows = []
    for row in scans.itertuples():
        status = _status(str(row.status), snapshot)
        flagged = "" if pd.isna(row.flagged) else f"{int(row.flagged):,}"
        started = f"{row.created_at:%m-%d %H:%M}"
        cells = (row.scan_id, status, row.model, row.backend, f"{row.titles:,}", f"{row.calls:,}", flagged, started)
        rows.append((status, cells))
    columns = ("scan id", "status", "model", "backend", "titles", "calls", "flagged", "started")
    _print_table(
        console, f"scans in {db}", columns, rows, f"a scan that stopped with: probe scan --scan-id SCAN_ID --db {db}"
    )


def _print_table(
    console: Console, title: str, columns: tuple[str, ...], rows: list[tuple[str, tuple[object, ...]]], resume: str
) -> None:
    """Rows of (status, cells); then how to resume, if any stopped. Every cell, the title and the hint go out
    literally: ids and model ids are the user's or a server's strings, never rich markup nor escape sequences."""
    table = _table(terminal_text(title), columns)
    for _, cells in rows:
        table.add_row(*(Text(terminal_text(cell)) for cell in cells))
    console.print(table)
    if any(status in (STOPPED, INTERRUPTED, FAILED) for status, _ in rows):
        typer.echo(f"resume {terminal_text(resume)}")
