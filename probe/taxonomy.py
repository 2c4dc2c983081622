"""O*NET occupation-attribute store: release import, shipped snapshot, top-k attributes, search, name pairs.

Every later step reads the tables filled here (DESIGN.md section 4): `attribute_ratings` (one row per
O*NET-SOC code, category and element, with importance IM 1-5 and level LV 0-7), `occupations` (the
curated occupations of taxonomy/occupations.csv), `occupation_attributes` (their top-k per category)
and `name_pairs`. `onet_occupations` and `onet_alternate_titles` hold all 1,016 O*NET titles for search.

A new database is seeded from the snapshot in taxonomy/ (the tables of one imported release, written by
`write_snapshot`), so nothing needs an O*NET download; `import_release` replaces them with another release.
"""

from __future__ import annotations

import csv
import re
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

import duckdb
import pandas as pd

from probe import db
from probe.errors import UserError
from probe.resources import resource_dir

DEFAULT_TOP_K = 5

# Category -> release file, in the order categories are listed everywhere (skill, knowledge, ability).
RATING_FILES = {"skill": "Skills.txt", "knowledge": "Knowledge.txt", "ability": "Abilities.txt"}
CATEGORIES = tuple(RATING_FILES)
OCCUPATION_FILE = "Occupation Data.txt"
ALTERNATE_TITLES_FILE = "Alternate Titles.txt"
README_FILE = "Read Me.txt"
RELEASE_FILES = (OCCUPATION_FILE, ALTERNATE_TITLES_FILE, *RATING_FILES.values())

# Release file column -> staging column. Other columns of the files are ignored.
_RATING_COLUMNS = {
    "O*NET-SOC Code": "soc_code",
    "Element ID": "element_id",
    "Element Name": "element_name",
    "Scale ID": "scale_id",
    "Data Value": "data_value",
}
_OCCUPATION_COLUMNS = {"O*NET-SOC Code": "soc_code", "Title": "title", "Description": "description"}
_ALTERNATE_TITLE_COLUMNS = {"O*NET-SOC Code": "soc_code", "Alternate Title": "alternate_title"}
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
_SOC_CODE = re.compile(r"^\d{2}-\d{4}\.\d{2}$")

# Top-k per category: importance first, then level (higher first), then element name. `{occupations}` is
# a relation with columns occupation, soc_code (the `occupations` table or a registered DataFrame).
_TOP_ATTRIBUTES_SQL = """
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


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _read_header(path: Path, delimiter: str, label: str) -> list[str]:
    """The column names of a delimited text file; empty files are refused here, naming the file."""
    if not path.is_file():
        raise UserError(f"{label}: no such file")
    with path.open(encoding="utf-8-sig", errors="replace", newline="") as handle:
        quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
        header = next(csv.reader(handle, delimiter=delimiter, quoting=quoting), None)
    if not header or not any(name.strip() for name in header):
        raise UserError(f"{label}: empty file, expected a header row")
    return [name.strip() for name in header]


def _stage_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    table: str,
    wanted: dict[str, str],
    *,
    delimiter: str,
    label: str,
    extra_columns: str = "",
) -> None:
    """Load the `wanted` columns of a delimited file into temp table `table` as text, with its line number.

    Columns are read as VARCHAR so that a bad value becomes a validation error naming its line and column
    rather than a parse failure; `line` is the 1-based line in the file (the header is line 1). Errors
    start with `label` (the file as the user knows it).
    """
    header = _read_header(path, delimiter, label)
    missing = [name for name in wanted if name not in header]
    if missing:
        raise UserError(f"{label}: missing column {missing[0]!r} (the header has {', '.join(header)})")
    columns = "{" + ", ".join(f"{_sql_string(name)}: 'VARCHAR'" for name in header) + "}"
    quote = "''" if delimiter == "\t" else "'\"'"
    select = ", ".join(f'"{source}" AS {target}' for source, target in wanted.items())
    try:
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE {table} AS
            SELECT {extra_columns} {select}
            FROM read_csv({_sql_string(str(path))}, delim={_sql_string(delimiter)}, header=true,
                          quote={quote}, escape={quote}, columns={columns}, strict_mode=true)"""
        )
    except duckdb.Error as exc:
        first_line = str(exc).strip().splitlines()[0]
        kind = "tab" if delimiter == "\t" else "comma"
        raise UserError(f"{label}: cannot read it as a {kind}-separated file ({first_line})") from exc
    # CREATE TABLE AS keeps the file order, so rowid + 2 is the line number (line 1 is the header).
    con.execute(f"ALTER TABLE {table} ADD COLUMN line BIGINT")
    con.execute(f"UPDATE {table} SET line = rowid + 2")
    if con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0] == 0:
        raise UserError(f"{label}: no data rows, only a header")


def _first_row(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[object] = ()) -> tuple | None:
    """The first row of a query, or None; fetches everything so the connection is free for the next call."""
    rows = con.execute(sql, list(params)).fetchall()
    return rows[0] if rows else None


def _first_problem(con: duckdb.DuckDBPyConnection, sql: str) -> tuple | None:
    """The first offending row (by line) of a validation query over a staging table."""
    return _first_row(con, sql + " ORDER BY line LIMIT 1")


@contextmanager
def _release_folder(path: Path) -> Iterator[Path]:
    """Yield a folder holding the release files of `path`, an O*NET text release folder or its .zip.

    From a zip only the needed files are read (by base name, wherever they sit in the archive) and written
    to a temporary folder, so the folder and the zip go through the same reader.
    """
    if path.is_dir():
        missing = [name for name in RELEASE_FILES if not (path / name).is_file()]
        if missing:
            raise UserError(f"{path / missing[0]}: missing from the O*NET release folder")
        yield path
        return
    if not path.exists():
        raise UserError(f"{path}: no such file or folder")
    if not zipfile.is_zipfile(path):
        raise UserError(f"{path}: neither a folder nor a .zip of an O*NET text release")
    with zipfile.ZipFile(path) as archive, tempfile.TemporaryDirectory(prefix="onet-") as folder:
        found: dict[str, zipfile.ZipInfo] = {}
        for info in archive.infolist():
            name = PurePosixPath(info.filename).name
            if info.is_dir() or name not in (*RELEASE_FILES, README_FILE):
                continue
            if name in found:
                raise UserError(
                    f"{path}: the archive holds {name} twice ({found[name].filename}, {info.filename})"
                )
            found[name] = info
        missing = [name for name in RELEASE_FILES if name not in found]
        if missing:
            raise UserError(f"{path}: {missing[0]} is missing from the archive")
        for name, info in found.items():
            (Path(folder) / name).write_bytes(archive.read(info))
        yield Path(folder)


def _release_name(folder: Path, fallback: str) -> str:
    """The release named in `Read Me.txt` ("O*NET 29.0 Database, August 2024 Release"), else `fallback`."""
    readme = folder / README_FILE
    if not readme.is_file():
        return fallback
    lines = [line.strip() for line in readme.read_text(encoding="utf-8", errors="replace").splitlines()]
    heading = [line for line in lines[:3] if line and not set(line) <= {"-", "="}]
    return ", ".join(heading) or fallback


def _stage_release(con: duckdb.DuckDBPyConnection, folder: Path) -> None:
    """Read and validate every release file into temp tables; raises UserError naming file and line."""
    _stage_file(
        con,
        folder / OCCUPATION_FILE,
        "_staging_occupations",
        _OCCUPATION_COLUMNS,
        delimiter="\t",
        label=OCCUPATION_FILE,
    )
    problem = _first_problem(
        con,
        """SELECT line, soc_code, title FROM _staging_occupations
           QUALIFY soc_code IS NULL OR title IS NULL OR count(*) OVER (PARTITION BY soc_code) > 1""",
    )
    if problem:
        line, soc_code, title = problem
        what = (
            "an empty O*NET-SOC Code or Title" if soc_code is None or title is None else f"{soc_code} twice"
        )
        raise UserError(f"{OCCUPATION_FILE} line {line}: {what}")

    _stage_file(
        con,
        folder / ALTERNATE_TITLES_FILE,
        "_staging_alternate_titles",
        _ALTERNATE_TITLE_COLUMNS,
        delimiter="\t",
        label=ALTERNATE_TITLES_FILE,
    )
    problem = _first_problem(
        con,
        """SELECT line, soc_code FROM _staging_alternate_titles
           WHERE soc_code NOT IN (SELECT soc_code FROM _staging_occupations)""",
    )
    if problem:
        raise UserError(
            f"{ALTERNATE_TITLES_FILE} line {problem[0]}: O*NET-SOC code {problem[1]!r} is not in "
            f"{OCCUPATION_FILE}"
        )

    con.execute(
        "CREATE OR REPLACE TEMP TABLE _staging_ratings (category VARCHAR, line BIGINT, soc_code VARCHAR, "
        "element_id VARCHAR, element_name VARCHAR, scale_id VARCHAR, value DOUBLE)"
    )
    for category, file_name in RATING_FILES.items():
        _stage_file(
            con, folder / file_name, "_staging_rating_file", _RATING_COLUMNS, delimiter="\t", label=file_name
        )
        _validate_rating_file(con, file_name)
        con.execute(
            """INSERT INTO _staging_ratings
               SELECT $category, line, soc_code, element_id, element_name, scale_id,
                      CAST(data_value AS DOUBLE)
               FROM _staging_rating_file WHERE scale_id IN ('IM', 'LV')""",
            {"category": category},
        )


def _validate_rating_file(con: duckdb.DuckDBPyConnection, file_name: str) -> None:
    """IM and LV values must be numbers in range, one of each per (code, element), for known codes."""
    problem = _first_problem(
        con,
        """SELECT line, data_value, scale_id FROM _staging_rating_file
           WHERE scale_id IN ('IM', 'LV')
             AND (TRY_CAST(data_value AS DOUBLE) IS NULL
                  OR TRY_CAST(data_value AS DOUBLE)
                     NOT BETWEEN (CASE scale_id WHEN 'IM' THEN 1 ELSE 0 END)
                             AND (CASE scale_id WHEN 'IM' THEN 5 ELSE 7 END))""",
    )
    if problem:
        line, value, scale = problem
        expected = "a number from 1 to 5 (IM)" if scale == "IM" else "a number from 0 to 7 (LV)"
        raise UserError(
            f"{file_name} line {line}: column 'Data Value' is {value or ''!r}, expected {expected}"
        )
    problem = _first_problem(
        con,
        """SELECT min(line) AS line, soc_code, any_value(element_name) FROM _staging_rating_file
           WHERE scale_id IN ('IM', 'LV') GROUP BY soc_code, element_id
           HAVING count(*) FILTER (WHERE scale_id = 'IM') != 1
               OR count(*) FILTER (WHERE scale_id = 'LV') != 1""",
    )
    if problem:
        line, soc_code, element = problem
        raise UserError(
            f"{file_name} line {line}: {soc_code} {element!r} needs exactly one IM and one LV row"
        )
    problem = _first_problem(
        con,
        """SELECT line, soc_code FROM _staging_rating_file
           WHERE soc_code IS NULL OR soc_code NOT IN (SELECT soc_code FROM _staging_occupations)""",
    )
    if problem:
        raise UserError(
            f"{file_name} line {problem[0]}: O*NET-SOC code {problem[1]!r} is not in {OCCUPATION_FILE}"
        )


def _drop_staging(con: duckdb.DuckDBPyConnection) -> None:
    for table in ("occupations", "alternate_titles", "ratings", "rating_file", "occupations_csv"):
        con.execute(f"DROP TABLE IF EXISTS _staging_{table}")


def import_release(con: duckdb.DuckDBPyConnection, path: Path) -> dict:
    """Replace the O*NET tables with the release at `path` (a text release folder or its .zip).

    All files are validated in staging tables first and swapped in with one transaction, so an error
    (UserError naming the file and line) leaves every table as it was. The curated occupations and their
    top-k attributes are re-derived from the new ratings. Returns the counts of what was loaded.
    """
    path = Path(path)
    try:
        with _release_folder(path) as folder:
            release = _release_name(folder, path.stem)
            _stage_release(con, folder)
        with db.transaction(con):
            con.execute("DELETE FROM onet_occupations")
            con.execute(
                "INSERT INTO onet_occupations SELECT soc_code, title, description FROM _staging_occupations"
                " ORDER BY soc_code"
            )
            con.execute("DELETE FROM onet_alternate_titles")
            con.execute(
                "INSERT INTO onet_alternate_titles SELECT soc_code, alternate_title "
                "FROM _staging_alternate_titles WHERE alternate_title IS NOT NULL "
                "ORDER BY soc_code, alternate_title"
            )
            con.execute("DELETE FROM attribute_ratings")
            con.execute(
                """INSERT INTO attribute_ratings
                   SELECT soc_code, category, element_id, any_value(element_name),
                          any_value(value) FILTER (WHERE scale_id = 'IM'),
                          any_value(value) FILTER (WHERE scale_id = 'LV')
                   FROM _staging_ratings GROUP BY soc_code, category, element_id
                   ORDER BY soc_code, category, element_id"""
            )
            con.execute("DELETE FROM onet_release")
            con.execute("INSERT INTO onet_release VALUES (?, ?, current_timestamp)", [release, str(path)])
            curated = _refresh_curated_occupations(con)
    finally:
        _drop_staging(con)
    return {"release": release, **_store_counts(con), "curated_occupations": curated}


def _store_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    row = _first_row(
        con,
        """SELECT (SELECT count(*) FROM onet_occupations),
                  (SELECT count(DISTINCT soc_code) FROM attribute_ratings),
                  (SELECT count(*) FROM onet_alternate_titles),
                  (SELECT count(*) FROM attribute_ratings),
                  (SELECT count(*) FROM occupation_attributes)""",
    )
    keys = (
        "occupations",
        "rated_occupations",
        "alternate_titles",
        "attribute_ratings",
        "occupation_attributes",
    )
    return dict(zip(keys, row, strict=True))


def _refresh_curated_occupations(con: duckdb.DuckDBPyConnection) -> int:
    """Reload taxonomy/occupations.csv against the current ratings and re-derive their top-k attributes."""
    curated = read_occupations_csv(con, resource_dir("taxonomy") / "occupations.csv")
    con.execute("DELETE FROM occupations")
    con.execute("INSERT INTO occupations SELECT occupation, soc_code, onet_title, note FROM curated")
    con.execute("DELETE FROM occupation_attributes")
    con.execute(
        "INSERT INTO occupation_attributes " + _TOP_ATTRIBUTES_SQL.format(occupations="occupations"),
        {"k": DEFAULT_TOP_K, "categories": list(CATEGORIES)},
    )
    return len(curated)


def seed_if_empty(con: duckdb.DuckDBPyConnection) -> None:
    """Fill a new database from the shipped snapshot and curated lists (a no-op once they are there).

    Runs on every writable open (probe.db.connect), so the check is one cheap query per table group.
    """
    onet_empty = con.execute("SELECT count(*) = 0 FROM attribute_ratings").fetchall()[0][0]
    pairs_empty = con.execute("SELECT count(*) = 0 FROM name_pairs").fetchall()[0][0]
    if not (onet_empty or pairs_empty):
        return
    folder = resource_dir("taxonomy")
    with db.transaction(con):
        if onet_empty:
            for table, (columns, _) in SNAPSHOT_TABLES.items():
                con.execute(f"DELETE FROM {table}")
                con.execute(
                    f"INSERT INTO {table} ({columns}) SELECT {columns} FROM read_parquet(?)",
                    [str(folder / f"{table}.parquet")],
                )
            con.execute(
                "UPDATE onet_release SET source = 'shipped snapshot', imported_at = current_timestamp"
            )
            _refresh_curated_occupations(con)
        if pairs_empty:
            con.execute(
                "INSERT INTO name_pairs SELECT * FROM read_csv(?, header=true, "
                "columns={'pair_id': 'INTEGER', 'female': 'VARCHAR', 'male': 'VARCHAR'}) ORDER BY pair_id",
                [str(folder / "name_pairs.csv")],
            )


def write_snapshot(con: duckdb.DuckDBPyConnection, out_dir: Path) -> list[Path]:
    """Write the O*NET tables of `con` as the shipped snapshot (sorted rows, zstd Parquet)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for table, (columns, order) in SNAPSHOT_TABLES.items():
        target = out_dir / f"{table}.parquet"
        con.execute(
            f"COPY (SELECT {columns} FROM {table} ORDER BY {order}) "
            f"TO {_sql_string(str(target))} (FORMAT parquet, COMPRESSION zstd)"
        )
        written.append(target)
    return written


def build_snapshot(release: Path, out_dir: Path) -> dict:
    """Import `release` into a scratch database and write its snapshot to `out_dir` (taxonomy/README.md)."""
    con = duckdb.connect()
    con.execute(db.SCHEMA)
    summary = import_release(con, release)
    write_snapshot(con, out_dir)
    con.close()
    return summary


def top_attributes(
    con: duckdb.DuckDBPyConnection, occupations: pd.DataFrame, k: int = DEFAULT_TOP_K
) -> pd.DataFrame:
    """Top-k skills, knowledge areas and abilities of each occupation (columns occupation, soc_code).

    Ranked by importance, ties by level (higher first), then element name. Rows are ordered by occupation,
    category (skill, knowledge, ability) and rank.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise UserError(f"top-k must be a positive whole number, got {k!r}")
    con.register("_requested_occupations", occupations[["occupation", "soc_code"]])
    try:
        sql = _TOP_ATTRIBUTES_SQL.format(occupations="_requested_occupations")
        return con.execute(sql, {"k": k, "categories": list(CATEGORIES)}).df()
    finally:
        con.unregister("_requested_occupations")


def read_occupations_csv(con: duckdb.DuckDBPyConnection, path: Path) -> pd.DataFrame:
    """A user's (or the curated) occupations CSV, validated against the O*NET tables of `con`.

    Needs columns occupation and soc_code (onet_title is always taken from O*NET; note is optional). Each
    code must exist and have ratings. Errors name the file and line.
    """
    path = Path(path)
    wanted = {"occupation": "occupation", "soc_code": "soc_code"}
    has_note = "note" in _read_header(path, ",", str(path))
    if has_note:
        wanted["note"] = "note"
    try:
        _stage_file(
            con,
            path,
            "_staging_occupations_csv",
            wanted,
            delimiter=",",
            label=str(path),
            extra_columns="" if has_note else "NULL AS note,",
        )
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


def resolve_occupations(
    con: duckdb.DuckDBPyConnection, spec: str | Path | Sequence[str] | None
) -> pd.DataFrame:
    """The occupations to probe (columns occupation, soc_code, onet_title, note).

    None: the curated occupations. A Path, or a string ending in .csv or naming a file: a user's occupations
    CSV. A sequence of names (or a comma-separated string): those curated occupations; an O*NET-SOC code or
    an exact O*NET title with ratings is accepted too and keeps its O*NET title as the occupation name.
    """
    if spec is None:
        return con.execute(
            "SELECT occupation, soc_code, onet_title, note FROM occupations ORDER BY occupation"
        ).df()
    if isinstance(spec, Path) or (
        isinstance(spec, str) and (spec.lower().endswith(".csv") or Path(spec).is_file())
    ):
        return read_occupations_csv(con, Path(spec))
    names = [name.strip() for name in (spec.split(",") if isinstance(spec, str) else spec) if name.strip()]
    if not names:
        raise UserError("no occupations given")
    rows = [_lookup_occupation(con, name) for name in dict.fromkeys(names)]
    return pd.DataFrame(rows, columns=list(OCCUPATIONS_CSV_COLUMNS))


def _lookup_occupation(con: duckdb.DuckDBPyConnection, name: str) -> tuple:
    curated = _first_row(
        con,
        "SELECT occupation, soc_code, onet_title, note FROM occupations WHERE lower(occupation) = lower(?)",
        [name],
    )
    if curated:
        return curated
    onet = _first_row(
        con,
        """SELECT title, soc_code, title, 'O*NET occupation given directly',
                  EXISTS (SELECT 1 FROM attribute_ratings r WHERE r.soc_code = o.soc_code)
           FROM onet_occupations o WHERE soc_code = ? OR lower(title) = lower(?)""",
        [name, name],
    )
    if onet and onet[4]:
        return onet[:4]
    if onet:
        raise UserError(
            f"occupation {name!r}: {onet[1]} ({onet[2]}) has no skill, knowledge or ability ratings "
            f"in O*NET; `probe taxonomy search` shows related codes that have them"
        )
    kind = "O*NET-SOC code" if _SOC_CODE.match(name) else "occupation"
    raise UserError(
        f"unknown {kind} {name!r}: not a curated occupation or O*NET title; "
        f"try `probe taxonomy search {name.split()[0]}` and pass a code or an occupations CSV"
    )


def select_name_pairs(con: duckdb.DuckDBPyConnection, spec: int | Sequence[int] | str | None) -> pd.DataFrame:
    """Name pairs (pair_id, female, male): N -> the first N, a list (or "1,4,9") -> those ids, None -> all."""
    total = con.execute("SELECT count(*) FROM name_pairs").fetchall()[0][0]
    if spec is None:
        return con.execute("SELECT pair_id, female, male FROM name_pairs ORDER BY pair_id").df()
    if isinstance(spec, str):
        spec = _parse_pairs(spec)
    if isinstance(spec, int) and not isinstance(spec, bool):
        if not 1 <= spec <= total:
            raise UserError(f"pairs: {spec} is not a number of pairs from 1 to {total}")
        return con.execute(
            "SELECT pair_id, female, male FROM name_pairs ORDER BY pair_id LIMIT ?", [spec]
        ).df()
    ids = list(dict.fromkeys(spec))
    if not ids:
        raise UserError("pairs: no pair ids given")
    pairs = con.execute(
        "SELECT pair_id, female, male FROM name_pairs WHERE list_contains(?, pair_id) ORDER BY pair_id", [ids]
    ).df()
    unknown = sorted(set(ids) - set(pairs["pair_id"]))
    if unknown:
        raise UserError(f"pairs: no name pair with id {unknown[0]} (ids run from 1 to {total})")
    return pairs


def _parse_pairs(text: str) -> int | list[int]:
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts or not all(part.isdigit() for part in parts):
        raise UserError(f"pairs: {text!r} is neither a number N nor a comma list of pair ids like 1,4,9")
    numbers = [int(part) for part in parts]
    return numbers[0] if len(numbers) == 1 and "," not in text else numbers


def search(con: duckdb.DuckDBPyConnection, text: str, limit: int = 20) -> pd.DataFrame:
    """O*NET occupations whose title or an alternate title contains every word of `text`.

    One row per code, with the title or alternate title that matched best: exact matches first, then
    prefix matches, then other matches; titles before alternate titles, then curated and rated codes
    first. Columns soc_code, title,
    matched_title, match (exact/prefix/contains/words), has_ratings, curated_as (curated occupations
    mapped to the code).
    """
    words = text.lower().split()
    if not words:
        raise UserError("search text is empty")
    if limit < 1:
        raise UserError(f"search limit must be at least 1, got {limit}")
    query = " ".join(words)
    word_filter = " AND ".join(f"contains(lower(matched_title), $word{i})" for i in range(len(words)))
    return con.execute(
        f"""WITH titles AS (
                SELECT soc_code, title AS matched_title, 0 AS is_alternate FROM onet_occupations
                UNION ALL
                SELECT soc_code, alternate_title, 1 FROM onet_alternate_titles
            ), matches AS (
                SELECT soc_code, matched_title, is_alternate,
                       CASE WHEN lower(matched_title) = $query THEN 0
                            WHEN starts_with(lower(matched_title), $query) THEN 1
                            WHEN contains(lower(matched_title), $query) THEN 2
                            ELSE 3 END AS match_rank
                FROM titles WHERE {word_filter}
                QUALIFY row_number() OVER (
                    PARTITION BY soc_code
                    ORDER BY match_rank, is_alternate, length(matched_title), matched_title
                ) = 1
            )
            , rated AS (SELECT DISTINCT soc_code FROM attribute_ratings)
            , curated AS (
                SELECT soc_code, string_agg(occupation, ', ' ORDER BY occupation) AS curated_as
                FROM occupations GROUP BY soc_code
            )
            SELECT m.soc_code, o.title, m.matched_title,
                   ['exact', 'prefix', 'contains', 'words'][m.match_rank + 1] AS match,
                   r.soc_code IS NOT NULL AS has_ratings, c.curated_as
            FROM matches m
            JOIN onet_occupations o USING (soc_code)
            LEFT JOIN rated r USING (soc_code)
            LEFT JOIN curated c USING (soc_code)
            ORDER BY m.match_rank, m.is_alternate, c.curated_as IS NULL, r.soc_code IS NULL, o.title
            LIMIT $limit""",
        {**{f"word{i}": word for i, word in enumerate(words)}, "query": query, "limit": limit},
    ).df()


def main(argv: Sequence[str]) -> None:
    """`python -m probe.taxonomy RELEASE [OUT_DIR]`: regenerate the shipped snapshot from an O*NET release."""
    if len(argv) not in (1, 2):
        sys.exit("usage: python -m probe.taxonomy RELEASE_FOLDER_OR_ZIP [OUT_DIR (default: taxonomy/)]")
    out_dir = Path(argv[1]) if len(argv) == 2 else resource_dir("taxonomy")
    summary = build_snapshot(Path(argv[0]), out_dir)
    print(f"wrote the snapshot of {summary['release']} to {out_dir}: {summary}")


if __name__ == "__main__":
    main(sys.argv[1:])
