"""`probe runs`: the runs in a database, with how far each got."""

from __future__ import annotations

import sys

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from probe.answering import runs
from probe.cli.app import DbOption, app
from probe.common.escape import literal_console, terminal_text
from probe.common.vocabulary import FAILED, INTERRUPTED, RUNNING, STOPPED
from probe.store.db import DEFAULT_DB, connect_or_snapshot


@app.command("runs")
def runs_command(db: DbOption = DEFAULT_DB) -> None:
    """List the runs in a database, newest first (a study's runs together): id, created, model, backend, preset,
    items answered, status, study.

    answered: items with an answer / items built; "(stage 1)" while stage 2, built from stage 1's answers,
    does not exist yet.
    """
    con, snapshot = connect_or_snapshot(db)  # a run writing it: its progress as of now, from a copy
    try:
        frame = runs.list_runs(con)
    finally:
        con.close()
    if frame.empty:
        typer.echo(f"no runs in {terminal_text(db)}")
        return
    table = Table(title=f"runs in {terminal_text(db)}", box=box.SIMPLE_HEAD)  # light borders: fits 80 columns
    for column in ("run id", "created", "model", "backend", "preset", "answered", "status", "study"):
        # Long model ids wrap (fold) rather than being cut, and no header is cut below its own width.
        table.add_column(column, overflow="fold", min_width=len(column), no_wrap=column == "run id")
    stopped = False
    for row in frame.itertuples():
        # Read from a snapshot, a process is writing the database: a run marked running may be that one.
        status = STOPPED if row.status == RUNNING and not snapshot else str(row.status)
        stopped = stopped or status in (STOPPED, INTERRUPTED, FAILED)
        items = f"{row.answered:,}/{row.items:,}" + (" (stage 1)" if row.stage == 1 else "")
        cells = (row.run_id, f"{row.created_at:%m-%d %H:%M}", row.model, row.backend, row.preset or "")
        # Text(): model ids and run ids are the user's strings, never rich markup nor raw escape sequences.
        table.add_row(*(Text(terminal_text(cell)) for cell in (*cells, items, status, row.study or "")))
    console = literal_console()
    if not sys.stdout.isatty():
        console.width = 200  # piped or redirected: one line per run for scripts, not a folded 80 columns
    console.print(table)
    if snapshot:
        typer.echo(f"(a probe process is writing {terminal_text(db)}: shown as of now)")
    if stopped:
        typer.echo(f"resume a run that stopped with: probe run --run-id RUN_ID --db {terminal_text(db)}")
