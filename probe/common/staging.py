"""Delimited text files into DuckDB staging tables, with errors that name the file and line.

Shared by the O*NET release import (tab-separated) and occupations CSVs (the curated list, a user's file).
"""

from __future__ import annotations

import codecs
import csv
from collections.abc import Sequence
from pathlib import Path

import duckdb

from probe.common.errors import UserError


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def check_utf8(path: Path, label: str) -> None:
    """A file in another encoding is one line naming the file and the encoding it looks like (DuckDB would say
    "Invalid unicode detected" about a buffer)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    with path.open("rb") as handle:
        head = handle.read(4)
        handle.seek(0)
        try:
            for block in iter(lambda: handle.read(1 << 20), b""):
                decoder.decode(block)
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            utf16 = head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) or b"\0" in head
            guess = "UTF-16" if utf16 else "a one-byte encoding such as Latin-1 or Windows-1252"
            raise UserError(f"{label}: not UTF-8 (it looks like {guess}); save it as UTF-8") from None


def read_header(path: Path, delimiter: str, label: str) -> list[str]:
    """The column names of a delimited text file; empty files and other encodings than UTF-8 are refused here,
    naming the file."""
    if not path.is_file():
        raise UserError(f"{label}: no such file")
    check_utf8(path, label)
    with path.open(encoding="utf-8-sig", errors="replace", newline="") as handle:
        quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
        header = next(csv.reader(handle, delimiter=delimiter, quoting=quoting), None)
    if not header or not any(name.strip() for name in header):
        raise UserError(f"{label}: empty file, expected a header row")
    return [name.strip() for name in header]


def ragged_line(path: Path, delimiter: str, label: str) -> None:
    """Refuse the first row with another number of fields than the header, naming its line (DuckDB's reader, whose
    dialect sniffing such a row defeats, names none)."""
    header = read_header(path, delimiter, label)
    with path.open(encoding="utf-8-sig", errors="replace", newline="") as handle:
        quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
        reader = csv.reader(handle, delimiter=delimiter, quoting=quoting)
        next(reader, None)
        for row in reader:
            if row and len(row) != len(header):
                fields = f"{len(row)} field" + ("" if len(row) == 1 else "s")
                raise UserError(
                    f"{label} line {reader.line_num}: {fields}, the header has {len(header)} ({', '.join(header)})"
                )


def sql_identifier(name: str) -> str:
    """`name` as a DuckDB identifier: quoted, every `"` doubled, so that no text can end it and become SQL (the one
    way an identifier that is not a constant of the code enters SQL; tests/test_sql_text.py holds it)."""
    return '"' + name.replace('"', '""') + '"'


def stage_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    table: str,
    wanted: dict[str, str],
    *,
    delimiter: str,
    label: str,
    optional: Sequence[str] = (),
) -> None:
    """Load the `wanted` columns of a delimited file (header name -> the project's own column name) into temp table
    `table` as text, with its line number; an `optional` column the file lacks is NULL.

    The file's header is data, never SQL: its columns are read by position under internal names (c0, c1, ...) and
    picked by the position of each wanted header name. Columns are read as VARCHAR so that a bad value becomes a
    validation error naming its line and column rather than a parse failure; `line` is the 1-based line in the
    file (the header is line 1). Errors start with `label` (the file as the user knows it).
    """
    header = read_header(path, delimiter, label)
    missing = [name for name in wanted if name not in header and name not in optional]
    if missing:
        raise UserError(f"{label}: missing column {missing[0]!r} (the header has {', '.join(header)})")
    columns = "{" + ", ".join(f"'c{index}': 'VARCHAR'" for index in range(len(header))) + "}"
    select = ", ".join(
        f"c{header.index(source)} AS {sql_identifier(target)}"
        if source in header
        else f"NULL::VARCHAR AS {sql_identifier(target)}"
        for source, target in wanted.items()
    )
    quote = "" if delimiter == "\t" else '"'
    try:
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE {sql_identifier(table)} AS SELECT {select}
            FROM read_csv($path, delim=$delimiter, header=true, quote=$quote, escape=$quote, columns={columns},
                          strict_mode=true)""",
            {"path": str(path), "delimiter": delimiter, "quote": quote},
        )
    except duckdb.Error as exc:
        first_line = str(exc).strip().splitlines()[0]
        kind = "tab" if delimiter == "\t" else "comma"
        raise UserError(f"{label}: cannot read it as a {kind}-separated file ({first_line})") from exc
    # CREATE TABLE AS keeps the file order, so rowid + 2 is the line number (line 1 is the header).
    con.execute(f"ALTER TABLE {sql_identifier(table)} ADD COLUMN line BIGINT")
    con.execute(f"UPDATE {sql_identifier(table)} SET line = rowid + 2")
    if con.execute(f"SELECT count(*) FROM {sql_identifier(table)}").fetchall()[0][0] == 0:
        raise UserError(f"{label}: no data rows, only a header")


def first_row(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[object] = ()) -> tuple | None:
    """The first row of a query, or None; fetches everything so the connection is free for the next call."""
    rows = con.execute(sql, list(params)).fetchall()
    return rows[0] if rows else None


def first_problem(con: duckdb.DuckDBPyConnection, sql: str) -> tuple | None:
    """The first offending row (by line) of a validation query over a staging table."""
    return first_row(con, sql + " ORDER BY line LIMIT 1")
