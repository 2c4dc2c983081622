"""The DuckDB store: every hand-off of the pipeline (taxonomy -> dataset -> answers -> metrics) is a table here.

Column sets of the contract tables follow DESIGN.md section 4; extra columns are additions.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pandas as pd

from probe.common.errors import UserError
from probe.common.staging import sql_identifier
from probe.store.snapshot import seed_if_empty  # imports nothing that imports db
from probe.store.tables import SCHEMA

DEFAULT_DB = Path("runs/probe.duckdb")


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Everything inside commits together or not at all (a killed or failed step leaves no half-write)."""
    con.begin()
    try:
        yield
    except BaseException:
        con.rollback()
        raise
    con.commit()


def insert_frame(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame, *, verb: str = "INSERT") -> None:
    """Insert a DataFrame's columns into `table` (verb: INSERT, INSERT OR REPLACE, INSERT OR IGNORE)."""
    columns = ", ".join(frame.columns)
    con.register("_rows", frame)
    try:
        con.execute(f"{verb} INTO {table} ({columns}) SELECT {columns} FROM _rows")
    finally:
        con.unregister("_rows")


# DuckDB would otherwise download and load extensions on its own (opening a SQLite file fetches sqlite_scanner):
# a probe database needs none, and nothing here may reach the network.
_NO_EXTENSIONS = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
_ADDED_LATER = re.compile(r"ALTER TABLE (\w+) ADD COLUMN IF NOT EXISTS (\w+)")
SNAPSHOT_TRIES = 5
SNAPSHOT_WAIT_S = 0.2  # between copies, for the writer to finish its checkpoint
_HEADERS_SIZE = 3 * 4096  # a DuckDB file's main header and its two database headers, one per checkpoint
_WRITE_FAILED = re.compile(r'Could not write (?:all bytes to )?file "(?P<file>[^"]+)": (?P<cause>[^\n]+)')
_SQLITE_MAGIC = b"SQLite format 3\x00"


def connect(db_path: Path | str = DEFAULT_DB, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) the probe database, with the schema in place and the taxonomy seeded.

    A new database is seeded from the taxonomy snapshot that ships with the package, so `probe run`
    works without an O*NET import. A file that is not a probe database (SQLite, another DuckDB schema) is
    refused before anything is written to it.
    """
    path = Path(db_path)
    if read_only and not path.exists():
        raise UserError(f"{path}: no such database")
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    _check_not_sqlite(path)
    try:
        con = duckdb.connect(str(path), read_only=read_only, config=_NO_EXTENSIONS)
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            busy = f"{path}: the database is in use by another probe process; wait for it to finish"
            raise DatabaseBusy(busy) from exc
        raise UserError(f"{path}: cannot open database ({_first_line(exc)})") from exc
    except duckdb.Error as exc:  # a CSV or Parquet file opened read-only: DuckDB's catalog refuses it
        raise UserError(f"{path}: cannot open database ({_first_line(exc)})") from exc
    try:
        _check_schema(con, path)
        if not read_only:
            con.execute(SCHEMA)
            with transaction(con):
                seed_if_empty(con)
    except BaseException:
        con.close()
        raise
    return con


def write_failure(error: BaseException) -> str | None:
    """One line naming the file and the cause, if `error` (or one it arose from) is DuckDB failing to write a file
    (disk full, file size limit, read-only file system); None otherwise."""
    while error is not None:
        found = _WRITE_FAILED.search(str(error)) if isinstance(error, duckdb.Error) else None
        if found:
            return (
                f"{found['file']}: cannot write the database ({found['cause']}); what was answered before is "
                "saved: make room, then run the same command again to resume"
            )
        error = error.__cause__ or error.__context__
    return None


class DatabaseBusy(UserError):
    """Another process writes the database (DuckDB allows one writer and, meanwhile, no reader)."""


def connect_or_snapshot(db_path: Path | str, *, read_only: bool = True) -> tuple[duckdb.DuckDBPyConnection, bool]:
    """`connect`, or while another process writes the database, a private copy of it (and its WAL) as of now.

    DuckDB lets no other process open a database that one writes, not even to read, so `probe runs` and
    `probe report` read a copy: a running run's progress is shown without waiting for it, and nothing is
    written to the real file. Returns the connection and whether it is a snapshot. A snapshot's copy is deleted
    with its connection: a cursor must not outlive the connection it came from.
    """
    try:
        return connect(db_path, read_only=read_only), False
    except DatabaseBusy:
        return _snapshot(Path(db_path), read_only=read_only), True


def _snapshot(path: Path, *, read_only: bool) -> duckdb.DuckDBPyConnection:
    """A connection to a consistent copy of `path`, which another process is writing.

    The WAL is copied before the database file, and the file changes only when the writer checkpoints. A checkpoint
    between the two copies leaves a file that holds all the copied WAL had: that file alone is the snapshot (the
    pair would replay the WAL twice, duplicating rows, which DuckDB before 1.4 did not refuse). A checkpoint while
    the file was copied may have torn it: that copy is taken again, as is one that will not open or read every
    table, a few times; then one line says why and what to do.
    """
    folder = Path(tempfile.mkdtemp(prefix="probe-snapshot-"))
    copy = folder / path.name
    wal, copied_wal = path.with_name(path.name + ".wal"), copy.with_name(copy.name + ".wal")
    try:
        for attempt in range(SNAPSHOT_TRIES):
            if attempt:
                time.sleep(SNAPSHOT_WAIT_S)
            before = _checkpoint_state(path)
            copied_wal.unlink(missing_ok=True)
            _copy_wal(wal, copied_wal)
            between = _checkpoint_state(path)
            shutil.copyfile(path, copy)
            if _checkpoint_state(path) != between:
                failure = "the file changed while it was copied"
                continue
            if between[2] != before[2]:  # a checkpoint's headers written between the copies: the file holds it all
                copied_wal.unlink(missing_ok=True)
            elif between != before:  # its blocks written, its headers not yet: the WAL still counts, copy again
                failure = "a checkpoint was under way"
                continue
            try:
                con = _read_through(copy, read_only=read_only)
            except (UserError, duckdb.Error) as refused:
                failure = _first_line(refused.__cause__ or refused).replace(str(folder), "<copy>")
            else:
                weakref.finalize(con, shutil.rmtree, folder, ignore_errors=True)  # the copy goes with its connection
                return con
    except BaseException:  # a full disk, Ctrl-C: no copy left behind
        shutil.rmtree(folder, ignore_errors=True)
        raise
    shutil.rmtree(folder, ignore_errors=True)
    raise UserError(
        f"{path}: a probe process is writing the database, and none of {SNAPSHOT_TRIES} copies of it taken "
        f"meanwhile would open (the last: {failure}); run the command again, or when that process has finished"
    )


def _read_through(copy: Path, *, read_only: bool) -> duckdb.DuckDBPyConnection:
    """`copy` opened, every row of every table read first: a torn copy can open and fail only when a query reads
    the torn part (hashing every column reads each row; about 12-14 ms per 100,000 rows)."""
    con = connect(copy, read_only=read_only)
    try:
        tables = con.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE NOT temporary").fetchall()
        for schema, table in tables:
            con.execute(
                f"SELECT max(hash(COLUMNS(*))) FROM {sql_identifier(schema)}.{sql_identifier(table)}"
            ).fetchall()
    except BaseException:
        con.close()
        raise
    return con


def _checkpoint_state(path: Path) -> tuple[int, int, bytes]:
    """What a checkpoint changes in a DuckDB file: its size, time and headers (the first 12 KiB)."""
    with path.open("rb") as handle:
        status = os.fstat(handle.fileno())
        return status.st_size, status.st_mtime_ns, handle.read(_HEADERS_SIZE)


def _copy_wal(wal: Path, target: Path) -> None:
    """Copy the WAL if there is one (a checkpoint may remove it at any moment)."""
    try:
        shutil.copyfile(wal, target)
    except FileNotFoundError:
        target.unlink(missing_ok=True)


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _check_not_sqlite(path: Path) -> None:
    if path.is_file():
        with path.open("rb") as handle:
            if handle.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC:
                raise UserError(f"{path}: a SQLite database, not a probe (DuckDB) database; give another --db")


@functools.cache
def _expected_columns() -> dict[str, set[str]]:
    """The columns each table has in a new database, less those older databases gain by ALTER (may be missing)."""
    con = duckdb.connect(":memory:", config=_NO_EXTENSIONS)
    try:
        con.execute(SCHEMA)
        rows = con.execute("SELECT table_name, column_name FROM information_schema.columns").fetchall()
    finally:
        con.close()
    added_later = set(_ADDED_LATER.findall(SCHEMA))
    columns: dict[str, set[str]] = {}
    for table, column in rows:
        if (table, column) not in added_later:
            columns.setdefault(table, set()).add(column)
    return columns


def _check_schema(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """A database with tables must be a probe database: `runs` among them, and every probe table it has must
    have the columns this version reads (extra columns are fine)."""
    found: dict[str, set[str]] = {}
    for table, column in con.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'main'"
    ).fetchall():
        found.setdefault(table, set()).add(column)
    if found and "runs" not in found:
        tables = ", ".join(sorted(found)[:5])
        raise UserError(f"{path}: not a probe database (its tables: {tables}); give another --db")
    for table, columns in _expected_columns().items():
        missing = sorted(columns - found.get(table, columns))
        if missing:
            lacking = ", ".join(missing[:3])
            raise UserError(f"{path}: not a probe database (table {table} has no column {lacking}); give another --db")
