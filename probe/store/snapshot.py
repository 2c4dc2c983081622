"""The taxonomy a new database starts with: the shipped O*NET snapshot, the curated occupations, the name pairs.

`probe.store.db.connect` seeds every new database from taxonomy/ (the tables of one imported release, written by
`write_snapshot`), so nothing needs an O*NET download. The curated occupations (taxonomy/occupations.csv)
are read like a user's occupations CSV and their top-k attributes derived with the one ranking query here.
This module does not import probe.store.db, so the store can seed itself without an import cycle.
"""

from __future__ import annotations

import hashlib
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from probe.common.errors import UserError
from probe.common.resources import resource_dir
from probe.common.staging import first_row, sql_string, stage_file
from probe.common.user_text import checked_text
from probe.common.vocabulary import CATEGORIES

DEFAULT_TOP_K = 5
OCCUPATIONS_CSV_COLUMNS = ("occupation", "soc_code", "onet_title", "note")

# The snapshot: one Parquet file per O*NET table, named after the table: (columns, sort order). Parquet
# keeps the types and loads several times faster than compressed CSV (seeding runs for every new database).
SNAPSHOT_TABLES = {
    "onet_release": ("release", "release"),
    "onet_occupations": ("soc_code, title, description", "soc_code"),
    "onet_alternate_titles": ("soc_code, alternate_title", "soc_code, alternate_title"),
    "attribute_ratings": (
        "soc_code, category, element_id, element_name, importance, level",
        "soc_code, category, element_id",
    ),
}

# taxonomy/workforce.csv (probe/taxonomy/workforce_build.py writes it): its columns and their types, in file order.
WORKFORCE_COLUMNS = {
    "soc_code": "VARCHAR",
    "census_code": "VARCHAR",
    "source_title": "VARCHAR",
    "year": "INTEGER",
    "employed_thousands": "DOUBLE",
    "pct_women": "DOUBLE",
    "pct_white": "DOUBLE",
    "pct_black": "DOUBLE",
    "pct_asian": "DOUBLE",
    "pct_hispanic": "DOUBLE",
}
WORKFORCE_KEY = ["source", "soc_code"]
WORKFORCE_TYPES = ", ".join(f"{column} {kind}" for column, kind in WORKFORCE_COLUMNS.items())
WORKFORCE_TABLE = (
    f"CREATE TABLE IF NOT EXISTS workforce (source VARCHAR, {WORKFORCE_TYPES}, "
    f"PRIMARY KEY ({', '.join(WORKFORCE_KEY)}))"
)
WORKFORCE_DESCRIPTOR = "workforce.toml"  # the shipped source's name, citation, year, licence and join key

# Top-k per category: importance first, then level (higher first), then element name. `{occupations}` is
# a relation with columns occupation, soc_code (the `occupations` table or a registered DataFrame).
TOP_ATTRIBUTES_SQL = """
WITH ranked AS (
    SELECT o.occupation, o.soc_code, r.category, r.element_name, r.importance, r.level,
           row_number() OVER (
               PARTITION BY o.occupation, r.category
               ORDER BY r.importance DESC NULLS LAST, r.level DESC NULLS LAST, r.element_name
           ) AS rank
    FROM {occupations} AS o JOIN attribute_ratings AS r ON r.soc_code = o.soc_code
)
SELECT occupation, soc_code, category, rank, element_name, importance, level
FROM ranked
WHERE rank <= $k
ORDER BY occupation, list_position($categories, category), rank
"""


def read_occupations_csv(con: duckdb.DuckDBPyConnection, path: Path) -> pd.DataFrame:
    """A user's (or the curated) occupations CSV, validated against the O*NET tables of `con`.

    Needs columns occupation and soc_code (onet_title is always taken from O*NET; note is optional). Each
    code must exist and have ratings. Errors name the file and line.
    """
    path = Path(path)
    wanted = {"occupation": "occupation", "soc_code": "soc_code", "note": "note"}
    try:
        stage_file(con, path, "_staging_occupations_csv", wanted, delimiter=",", label=str(path), optional=["note"])
        rows = con.execute(
            """SELECT s.line, trim(s.occupation) AS occupation, trim(s.soc_code) AS soc_code,
                       o.title AS onet_title, s.note,
                       o.soc_code IS NOT NULL AS known,
                       trim(s.soc_code) IN (SELECT soc_code FROM attribute_ratings) AS rated,
                       count(*) OVER (PARTITION BY lower(trim(s.occupation))) AS copies
                FROM _staging_occupations_csv s LEFT JOIN onet_occupations o ON o.soc_code = trim(s.soc_code)
                ORDER BY s.line"""
        ).df()
    finally:
        con.execute("DROP TABLE IF EXISTS _staging_occupations_csv")
    for row in rows.itertuples():
        where = f"{path} line {row.line}"
        if pd.isna(row.occupation) or not row.occupation:
            raise UserError(f"{where}: empty occupation")
        rows.loc[row.Index, "occupation"] = checked_text(row.occupation, where)
        if pd.isna(row.soc_code) or not row.soc_code:
            raise UserError(f"{where}: empty soc_code for {row.occupation!r}")
        if row.copies > 1:
            raise UserError(f"{where}: occupation {row.occupation!r} appears more than once")
        if not row.known:
            raise UserError(
                f"{where}: {row.soc_code!r} is not an O*NET-SOC code of this database "
                f"(find codes with `probe taxonomy search`)"
            )
        if not row.rated:
            raise UserError(
                f"{where}: {row.soc_code} ({row.onet_title}) has no skill, knowledge or ability "
                f"ratings in O*NET; `probe taxonomy search` shows which codes have them"
            )
    result = rows[["occupation", "soc_code", "onet_title", "note"]].reset_index(drop=True)
    return result.astype({"note": object}).where(result.notna(), None)


def refresh_curated_occupations(con: duckdb.DuckDBPyConnection) -> int:
    """Reload taxonomy/occupations.csv against the current ratings and re-derive their top-k attributes."""
    curated = read_occupations_csv(con, resource_dir("taxonomy") / "occupations.csv")
    con.execute("DELETE FROM occupations")
    con.execute("INSERT INTO occupations SELECT occupation, soc_code, onet_title, note FROM curated")
    con.execute("DELETE FROM occupation_attributes")
    con.execute(
        "INSERT INTO occupation_attributes " + TOP_ATTRIBUTES_SQL.format(occupations="occupations"),
        {"k": DEFAULT_TOP_K, "categories": list(CATEGORIES)},
    )
    return len(curated)


def seed_if_empty(con: duckdb.DuckDBPyConnection) -> None:
    """Fill a new database from the shipped snapshot and curated lists (a no-op once they are there).

    Runs on every writable open, inside probe.store.db.connect's transaction (so a seed is all or nothing); the
    check is one cheap query per table group.
    """
    onet_empty = con.execute("SELECT count(*) = 0 FROM attribute_ratings").fetchall()[0][0]
    pairs_empty = con.execute("SELECT count(*) = 0 FROM name_pairs").fetchall()[0][0]
    folder = resource_dir("taxonomy")
    if onet_empty:
        for table, (columns, _) in SNAPSHOT_TABLES.items():
            con.execute(f"DELETE FROM {table}")
            con.execute(
                f"INSERT INTO {table} ({columns}) SELECT {columns} FROM read_parquet(?)",
                [str(folder / f"{table}.parquet")],
            )
        con.execute("UPDATE onet_release SET source = 'shipped snapshot', imported_at = current_timestamp")
        refresh_curated_occupations(con)
    if pairs_empty:
        con.execute(
            "INSERT INTO name_pairs SELECT * FROM read_csv(?, header=true, "
            "columns={'pair_id': 'INTEGER', 'female': 'VARCHAR', 'male': 'VARCHAR'}) ORDER BY pair_id",
            [str(folder / "name_pairs.csv")],
        )
    seed_workforce(con)


@cache
def shipped_workforce() -> dict[str, Any]:
    """The shipped labour-statistics source's descriptor (taxonomy/workforce.toml), with `file_sha256`: the hash of
    the descriptor and its CSV together, which tells a database whether it holds this version of the source."""
    folder = resource_dir("taxonomy")
    digest = hashlib.sha256()
    for name in (WORKFORCE_DESCRIPTOR, "workforce.csv"):
        digest.update((folder / name).read_bytes())
    descriptor = tomllib.loads((folder / WORKFORCE_DESCRIPTOR).read_text())
    return {**descriptor, "file_sha256": digest.hexdigest()}


def seed_workforce(con: duckdb.DuckDBPyConnection) -> None:
    """Load the shipped source into `workforce` and `workforce_sources` where the database lacks this version of it
    (a new database, one seeded before sources existed, one seeded from an older shipped file, or one whose rows of
    it are gone); other sources' rows stay as they are."""
    source = shipped_workforce()
    key = con.execute(
        "SELECT constraint_column_names FROM duckdb_constraints() "
        "WHERE table_name = 'workforce' AND constraint_type = 'PRIMARY KEY'"
    ).fetchall()
    if [list(row[0]) for row in key] != [WORKFORCE_KEY]:  # seeded before sources: one source's rows, keyed by code
        con.execute("DROP TABLE workforce")
        con.execute(WORKFORCE_TABLE)
    stored = con.execute(
        "SELECT file_sha256, (SELECT count(*) FROM workforce WHERE source = s.source) FROM workforce_sources s "
        "WHERE source = ?",
        [source["source"]],
    ).fetchall()
    if stored and stored[0][0] == source["file_sha256"] and stored[0][1] > 0:  # this version, and its rows
        return
    columns = ", ".join(WORKFORCE_COLUMNS)
    types = ", ".join(f"'{column}': '{kind}'" for column, kind in WORKFORCE_COLUMNS.items())
    con.execute("DELETE FROM workforce WHERE source = ?", [source["source"]])
    con.execute(
        f"INSERT INTO workforce (source, {columns}) "
        f"SELECT ?, {columns} FROM read_csv(?, header=true, columns={{{types}}})",
        [source["source"], str(resource_dir("taxonomy") / "workforce.csv")],
    )
    _check_workforce(con, resource_dir("taxonomy") / "workforce.csv")
    con.execute(
        "INSERT OR REPLACE INTO workforce_sources VALUES (?, ?, ?, ?, ?, ?, current_timestamp)",
        [source[field] for field in ("source", "citation", "year", "licence", "join_key", "file_sha256")],
    )


def _check_workforce(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Every share a percentage from 0 to 100 and every count a finite number: DuckDB reads 'inf' and 'nan' as
    numbers, and an infinite share went on into the fit and report.json. Inside the seeding transaction: nothing
    is kept."""
    share = first_row(
        con,
        """SELECT soc_code, share, percent FROM (UNPIVOT workforce ON COLUMNS('^pct_') INTO NAME share VALUE percent)
           WHERE NOT (isfinite(percent) AND percent BETWEEN 0 AND 100) ORDER BY soc_code, share LIMIT 1""",
    )
    if share is not None:
        raise UserError(f"{path}: {share[0]} {share[1]} is {share[2]}, not a share from 0 to 100 (percent)")
    count = first_row(
        con,
        "SELECT soc_code, employed_thousands FROM workforce WHERE NOT isfinite(employed_thousands) "
        "OR employed_thousands < 0 ORDER BY soc_code LIMIT 1",
    )
    if count is not None:
        raise UserError(f"{path}: {count[0]} employed_thousands is {count[1]}, not a count of people (thousands)")


def write_snapshot(con: duckdb.DuckDBPyConnection, out_dir: Path) -> list[Path]:
    """Write the O*NET tables of `con` as the shipped snapshot (sorted rows, zstd Parquet)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for table, (columns, order) in SNAPSHOT_TABLES.items():
        target = out_dir / f"{table}.parquet"
        con.execute(
            f"COPY (SELECT {columns} FROM {table} ORDER BY {order}) "
            f"TO {sql_string(str(target))} (FORMAT parquet, COMPRESSION zstd)"
        )
        written.append(target)
    return written
