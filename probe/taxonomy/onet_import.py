"""Import an O*NET text release (folder or .zip) into the store, all or nothing; rebuild the shipped snapshot.

Every file is read into staging tables and validated (errors name the file and line) before one
transaction swaps the tables; the curated occupations and their top-k attributes are then re-derived.
`python -m probe.taxonomy.onet_import RELEASE [OUT_DIR]` regenerates the snapshot in taxonomy/.
"""

from __future__ import annotations

import sys
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

import duckdb

from probe.common.errors import UserError
from probe.common.resources import resource_dir
from probe.common.staging import first_problem, first_row, stage_file
from probe.common.user_text import checked_text
from probe.common.vocabulary import CATEGORIES
from probe.store import db
from probe.store.snapshot import refresh_curated_occupations, write_snapshot
from probe.taxonomy.occupations import SOC_CODE

# Category -> release file, in the order of CATEGORIES.
RATING_FILES = dict(zip(CATEGORIES, ("Skills.txt", "Knowledge.txt", "Abilities.txt"), strict=True))
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
                raise UserError(f"{path}: the archive holds {name} twice ({found[name].filename}, {info.filename})")
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
    stage_file(
        con,
        folder / OCCUPATION_FILE,
        "_staging_occupations",
        _OCCUPATION_COLUMNS,
        delimiter="\t",
        label=OCCUPATION_FILE,
    )
    problem = first_problem(
        con,
        """SELECT line, soc_code, title, count(*) OVER (PARTITION BY soc_code) > 1 FROM _staging_occupations
           QUALIFY soc_code IS NULL OR title IS NULL OR count(*) OVER (PARTITION BY soc_code) > 1
                OR count(*) OVER (PARTITION BY lower(trim(title))) > 1""",
    )
    if problem:
        line, soc_code, title, code_twice = problem
        what = (
            "an empty O*NET-SOC Code or Title"
            if soc_code is None or title is None
            else f"{soc_code} twice"
            if code_twice
            else f"the title {title!r} twice (questions and answers are keyed by title)"
        )
        raise UserError(f"{OCCUPATION_FILE} line {line}: {what}")
    for line, code, title in con.execute(
        "SELECT line, soc_code, title FROM _staging_occupations ORDER BY line"
    ).fetchall():
        if not SOC_CODE.match(code):  # codes are printed and written as they are: only digits, '-' and '.'
            raise UserError(f"{OCCUPATION_FILE} line {line}: {code!r} is not an O*NET-SOC code (like 29-1141.00)")
        checked_text(title, f"{OCCUPATION_FILE} line {line}")  # no control or bidi characters reach prompts

    stage_file(
        con,
        folder / ALTERNATE_TITLES_FILE,
        "_staging_alternate_titles",
        _ALTERNATE_TITLE_COLUMNS,
        delimiter="\t",
        label=ALTERNATE_TITLES_FILE,
    )
    problem = first_problem(
        con,
        """SELECT line, soc_code FROM _staging_alternate_titles
           WHERE soc_code NOT IN (SELECT soc_code FROM _staging_occupations)""",
    )
    if problem:
        raise UserError(
            f"{ALTERNATE_TITLES_FILE} line {problem[0]}: O*NET-SOC code {problem[1]!r} is not in {OCCUPATION_FILE}"
        )

    con.execute(
        "CREATE OR REPLACE TEMP TABLE _staging_ratings (category VARCHAR, line BIGINT, soc_code VARCHAR, "
        "element_id VARCHAR, element_name VARCHAR, scale_id VARCHAR, value DOUBLE)"
    )
    for category, file_name in RATING_FILES.items():
        stage_file(con, folder / file_name, "_staging_rating_file", _RATING_COLUMNS, delimiter="\t", label=file_name)
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
    problem = first_problem(
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
        raise UserError(f"{file_name} line {line}: column 'Data Value' is {value or ''!r}, expected {expected}")
    problem = first_problem(
        con,
        """SELECT min(line) AS line, soc_code, any_value(element_name) FROM _staging_rating_file
           WHERE scale_id IN ('IM', 'LV') GROUP BY soc_code, element_id
           HAVING count(*) FILTER (WHERE scale_id = 'IM') != 1
               OR count(*) FILTER (WHERE scale_id = 'LV') != 1""",
    )
    if problem:
        line, soc_code, element = problem
        raise UserError(f"{file_name} line {line}: {soc_code} {element!r} needs exactly one IM and one LV row")
    problem = first_problem(
        con,
        """SELECT line, soc_code FROM _staging_rating_file
           WHERE soc_code IS NULL OR soc_code NOT IN (SELECT soc_code FROM _staging_occupations)""",
    )
    if problem:
        raise UserError(f"{file_name} line {problem[0]}: O*NET-SOC code {problem[1]!r} is not in {OCCUPATION_FILE}")


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
            curated = refresh_curated_occupations(con)
    finally:
        _drop_staging(con)
    return {"release": release, **_store_counts(con), "curated_occupations": curated}


def _store_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    row = first_row(
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


def build_snapshot(release: Path, out_dir: Path) -> dict:
    """Import `release` into a scratch database and write its snapshot to `out_dir` (taxonomy/README.md)."""
    con = duckdb.connect()
    con.execute(db.SCHEMA)
    summary = import_release(con, release)
    write_snapshot(con, out_dir)
    con.close()
    return summary


def main(argv: Sequence[str]) -> None:
    """`python -m probe.taxonomy.onet_import RELEASE [OUT_DIR]`: regenerate the shipped snapshot from a release."""
    if len(argv) not in (1, 2):
        sys.exit("usage: python -m probe.taxonomy.onet_import RELEASE_FOLDER_OR_ZIP [OUT_DIR (default: taxonomy/)]")
    out_dir = Path(argv[1]) if len(argv) == 2 else resource_dir("taxonomy")
    summary = build_snapshot(Path(argv[0]), out_dir)
    print(f"wrote the snapshot of {summary['release']} to {out_dir}: {summary}")


if __name__ == "__main__":
    main(sys.argv[1:])
