"""A user's own labour statistics (`probe analyze RUN --workforce FILE`): a CSV with the columns of the shipped
taxonomy/workforce.csv (at least `soc_code` and `pct_women`), checked like every input and stored as one more
source in `workforce` and `workforce_sources` (DESIGN.md section 12).

The source is named by the file's `source` column (one value for every row) or else by the file's name; its
citation is that name and the file's name. Loading a source again replaces its rows; the shipped source's name is
refused (it is reseeded from the package, probe/store/snapshot.py).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb

from probe.common.errors import UserError
from probe.common.staging import first_problem, ragged_line, read_header, stage_file
from probe.common.user_text import checked_text
from probe.store.db import transaction
from probe.store.snapshot import WORKFORCE_COLUMNS, shipped_workforce

REQUIRED = ("soc_code", "pct_women")
PERCENT_COLUMNS = tuple(column for column in WORKFORCE_COLUMNS if column.startswith("pct_"))
NUMERIC_COLUMNS = {"year": "INTEGER", "employed_thousands": "DOUBLE", **dict.fromkeys(PERCENT_COLUMNS, "DOUBLE")}
SOC_CODE = r"^\d{2}-\d{4}\.\d{2}$"  # an O*NET-SOC code, as in taxonomy/workforce.csv


def load_workforce_file(con: duckdb.DuckDBPyConnection, path: Path) -> str:
    """Check `path` and store it as a labour-statistics source (replacing an earlier load of it); returns its name.
    Any problem is a UserError naming the file, line and column, with nothing stored."""
    label = f"--workforce {path}"
    header = read_header(path, ",", label)
    ragged_line(path, ",", label)
    present = [column for column in ("source", *WORKFORCE_COLUMNS) if column in header]
    missing = [column for column in REQUIRED if column not in present]
    if missing:
        raise UserError(f"{label}: missing column {missing[0]!r} (the header has {', '.join(header)})")
    stage_file(con, path, "workforce_file", {column: column for column in present}, delimiter=",", label=label)
    _check_rows(con, label, present)
    source = _source_name(con, path, label, present)
    columns = [column for column in WORKFORCE_COLUMNS if column in present]
    values = ", ".join(f"TRY_CAST(nullif(trim({c}), '') AS {NUMERIC_COLUMNS.get(c, 'VARCHAR')})" for c in columns)
    year = _year(con, present)
    try:
        with transaction(con):
            con.execute("DELETE FROM workforce WHERE source = ?", [source])
            con.execute(
                f"INSERT INTO workforce (source, {', '.join(columns)}) SELECT ?, {values} FROM workforce_file", [source]
            )
            con.execute(
                "INSERT OR REPLACE INTO workforce_sources VALUES (?, ?, ?, NULL, 'soc_code', ?, current_timestamp)",
                [source, f"{source} ({path.name})", year, hashlib.sha256(path.read_bytes()).hexdigest()],
            )
    finally:
        con.execute("DROP TABLE IF EXISTS workforce_file")
    return source


def _check_rows(con: duckdb.DuckDBPyConnection, label: str, present: list[str]) -> None:
    """The first bad row, by line: a code that is no O*NET-SOC code, a code given twice, a value that is not a
    number, a percentage outside 0-100."""
    bad_code = first_problem(
        con,
        f"SELECT line, soc_code FROM workforce_file WHERE NOT regexp_matches("
        f"coalesce(trim(soc_code), ''), '{SOC_CODE}')",
    )
    if bad_code:
        raise UserError(f"{label} line {bad_code[0]}: soc_code {bad_code[1]!r} is not an O*NET-SOC code (NN-NNNN.NN)")
    repeated = first_problem(
        con,
        "SELECT line, soc_code FROM (SELECT line, soc_code, row_number() OVER (PARTITION "
        "BY trim(soc_code) ORDER BY line) AS nth FROM workforce_file) WHERE nth > 1",
    )
    if repeated:
        raise UserError(f"{label} line {repeated[0]}: soc_code {repeated[1]} given twice")
    for column in (c for c in NUMERIC_COLUMNS if c in present):
        kind = NUMERIC_COLUMNS[column]
        value = f"nullif(trim({column}), '')"
        bad = first_problem(
            con,
            f"SELECT line, {column} FROM workforce_file WHERE {value} IS NOT NULL AND "
            f"TRY_CAST({value} AS {kind}) IS NULL",
        )
        if bad:
            raise UserError(f"{label} line {bad[0]}: {column} {bad[1]!r} is not a number")
        if column in PERCENT_COLUMNS:
            outside = first_problem(
                con,
                f"SELECT line, {column} FROM workforce_file WHERE TRY_CAST({value} AS DOUBLE) NOT BETWEEN 0 AND 100",
            )
            if outside:
                raise UserError(f"{label} line {outside[0]}: {column} {outside[1]} is not a percentage (0-100)")


def _source_name(con: duckdb.DuckDBPyConnection, path: Path, label: str, present: list[str]) -> str:
    """The file's one `source` value, or else its name without the suffix."""
    if "source" in present:
        names = con.execute("SELECT DISTINCT trim(source) FROM workforce_file ORDER BY 1").fetchall()
        if len(names) != 1 or not names[0][0]:
            raise UserError(f"{label}: column source must hold one name in every row (found {len(names)} values)")
        name = names[0][0]
    else:
        name = path.stem
    name = checked_text(name, f"{label}: source")
    if name == shipped_workforce()["source"]:
        raise UserError(f"{label}: source {name!r} is the shipped source's name; give your file another")
    return name


def _year(con: duckdb.DuckDBPyConnection, present: list[str]) -> int | None:
    """The year every row gives, where they agree (the descriptor's year); None otherwise."""
    if "year" not in present:
        return None
    years = con.execute("SELECT DISTINCT TRY_CAST(nullif(trim(year), '') AS INTEGER) FROM workforce_file").fetchall()
    return years[0][0] if len(years) == 1 else None
