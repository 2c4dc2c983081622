"""Importing an O*NET release (folder and zip) into the store, all or nothing, and the shipped snapshot."""

import zipfile
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from probe.common.resources import resource_dir
from probe.store import db, snapshot
from probe.taxonomy import onet_import
from tests.support import ONET_RELEASE, assert_one_line_error, invoke

STORE_TABLES = (
    "onet_occupations",
    "onet_alternate_titles",
    "attribute_ratings",
    "occupations",
    "occupation_attributes",
)
RELEASE_SUMMARY = {
    "release": "O*NET 29.0 Database, August 2024 Release",
    "occupations": 1016,
    "rated_occupations": 894,
    "alternate_titles": 55120,
    "attribute_ratings": 107280,
    "occupation_attributes": 930,
    "curated_occupations": 62,
}

needs_release = pytest.mark.skipif(not ONET_RELEASE.is_dir(), reason=f"O*NET release not found at {ONET_RELEASE}")


def tables(path: Path) -> dict[str, pd.DataFrame]:
    """Every store table of a database, sorted, for exact comparisons."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {name: con.execute(f"SELECT * FROM {name} ORDER BY ALL").df() for name in STORE_TABLES}
    finally:
        con.close()


def assert_same_tables(left: dict[str, pd.DataFrame], right: dict[str, pd.DataFrame]) -> None:
    for name in STORE_TABLES:
        pd.testing.assert_frame_equal(left[name], right[name], obj=name)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A database with the shared release imported, and the import's summary (shared by this module)."""
    if not ONET_RELEASE.is_dir():
        pytest.skip(f"O*NET release not found at {ONET_RELEASE}")
    path = tmp_path_factory.mktemp("imported") / "probe.duckdb"
    con = db.connect(path)
    try:
        return path, onet_import.import_release(con, ONET_RELEASE)
    finally:
        con.close()


@pytest.fixture(scope="module")
def imported_db(imported: tuple[Path, dict]) -> Path:
    return imported[0]


@pytest.fixture(scope="module")
def imported_tables(imported_db: Path) -> dict[str, pd.DataFrame]:
    return tables(imported_db)


def _occupations_with(replace: str, by: str) -> str:
    """The release's Occupation Data.txt with one text replaced (tests may read ../shared)."""
    return (ONET_RELEASE / "Occupation Data.txt").read_text(encoding="utf-8").replace(replace, by, 1)


def broken_release(tmp_path: Path, name: str, text: str | None) -> Path:
    """The shared release with file `name` replaced by `text` (None: the file is left out)."""
    folder = tmp_path / "release"
    folder.mkdir()
    for source in ONET_RELEASE.iterdir():
        if source.name != name:
            (folder / source.name).symlink_to(source)
    if text is not None:
        (folder / name).write_text(text)
    return folder


def test_import_loads_the_release_and_records_it(imported: tuple[Path, dict]) -> None:
    path, summary = imported
    assert summary == RELEASE_SUMMARY
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT release, source FROM onet_release").fetchall() == [
        ("O*NET 29.0 Database, August 2024 Release", str(ONET_RELEASE))
    ]
    assert con.execute(
        "SELECT category, count(DISTINCT element_id) FROM attribute_ratings GROUP BY ALL ORDER BY ALL"
    ).fetchall() == [("ability", 52), ("knowledge", 33), ("skill", 35)]
    assert con.execute(
        "SELECT importance, level FROM attribute_ratings "
        "WHERE soc_code = '11-1011.00' AND element_name = 'Oral Comprehension'"
    ).fetchall() == [(4.62, 4.88)]
    con.close()


@needs_release
def test_zip_import_gives_identical_tables(tmp_path: Path, imported_tables: dict[str, pd.DataFrame]) -> None:
    archive = tmp_path / "db_30_0_text.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as writer:
        for source in sorted(ONET_RELEASE.iterdir()):
            writer.write(source, f"db_30_0_text/{source.name}")
    zipped_db = tmp_path / "zipped.duckdb"
    code, output = invoke("taxonomy", "import", str(archive), "--db", str(zipped_db))
    assert code == 0, output
    assert "1,016 occupations (894 rated), 55,120 alternate titles, 107,280 attribute ratings" in " ".join(
        output.split()
    )
    assert_same_tables(tables(zipped_db), imported_tables)


@needs_release
def test_shipped_snapshot_is_the_release(tmp_path: Path, imported_tables: dict[str, pd.DataFrame]) -> None:
    """A new database (seeded from taxonomy/) holds exactly what importing the release gives."""
    seeded = tmp_path / "seeded.duckdb"
    db.connect(seeded).close()
    assert_same_tables(tables(seeded), imported_tables)


def test_snapshot_regenerates_from_the_release(tmp_path: Path, imported_db: Path) -> None:
    con = duckdb.connect(str(imported_db), read_only=True)
    snapshot.write_snapshot(con, tmp_path)
    con.close()
    shipped = resource_dir("taxonomy")
    for table in snapshot.SNAPSHOT_TABLES:
        rebuilt, original = (
            duckdb.execute(f"SELECT * FROM read_parquet('{folder / table}.parquet')").df()
            for folder in (tmp_path, shipped)
        )
        pd.testing.assert_frame_equal(rebuilt, original, obj=table)


@needs_release
@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "Skills.txt",
            "O*NET-SOC Code\tElement ID\tElement Name\tScale ID\tN\n11-1011.00\t2.A.1.a\tReading\tIM\t8\n",
            "Skills.txt: missing column 'Data Value'",
        ),
        (
            "Knowledge.txt",
            "O*NET-SOC Code\tElement ID\tElement Name\tScale ID\tData Value\n"
            "11-1011.00\t2.C.1.a\tAdministration and Management\tIM\t4.78\n"
            "11-1011.00\t2.C.1.a\tAdministration and Management\tLV\tmuch\n",
            "Knowledge.txt line 3: column 'Data Value' is 'much', expected a number from 0 to 7 (LV)",
        ),
        ("Abilities.txt", "", "Abilities.txt: empty file, expected a header row"),
        (
            "Occupation Data.txt",
            _occupations_with("\tChief Sustainability Officers\t", "\tchief executives\t"),
            "Occupation Data.txt line 2: the title 'Chief Executives' twice (questions and answers are keyed by title)",
        ),
        (
            "Occupation Data.txt",
            _occupations_with("\tChief Executives\t", "\tChief\x1b]0;x\x07 Executives\t"),
            "Occupation Data.txt line 2: 'Chief\\x1b]0;x\\x07 Executives' contains a control character, U+001B",
        ),
        (
            "Occupation Data.txt",
            _occupations_with("11-1011.00\tChief Executives", "11-1011.00 | x\tChief Executives"),
            "Occupation Data.txt line 2: '11-1011.00 | x' is not an O*NET-SOC code (like 29-1141.00)",
        ),
        (
            "Alternate Titles.txt",
            None,
            "{release}/Alternate Titles.txt: missing from the O*NET release folder",
        ),
    ],
)
def test_bad_release_is_refused_and_tables_stay(
    tmp_path: Path, imported_db: Path, imported_tables: dict, name: str, text: str | None, message: str
) -> None:
    release = broken_release(tmp_path, name, text)
    code, output = invoke("taxonomy", "import", str(release), "--db", str(imported_db))
    assert_one_line_error(code, output, message.format(release=release))
    assert_same_tables(tables(imported_db), imported_tables)


def test_import_refuses_a_missing_path_and_a_non_zip(tmp_path: Path) -> None:
    target = str(tmp_path / "probe.duckdb")
    code, output = invoke("taxonomy", "import", str(tmp_path / "nowhere"), "--db", target)
    assert_one_line_error(code, output, f"{tmp_path / 'nowhere'}: no such file or folder")
    not_zip = tmp_path / "release.zip"
    not_zip.write_text("not a zip")
    code, output = invoke("taxonomy", "import", str(not_zip), "--db", target)
    assert_one_line_error(code, output, f"{not_zip}: neither a folder nor a .zip of an O*NET text release")
    partial = tmp_path / "partial.zip"
    with zipfile.ZipFile(partial, "w") as writer:
        writer.writestr("db/Occupation Data.txt", "O*NET-SOC Code\tTitle\tDescription\n")
    code, output = invoke("taxonomy", "import", str(partial), "--db", target)
    assert_one_line_error(code, output, f"{partial}: Alternate Titles.txt is missing from the archive")


@needs_release
def test_every_mapped_code_exists_and_has_ratings_in_the_release() -> None:
    curated = pd.read_csv(resource_dir("taxonomy") / "occupations.csv")
    occupation_data = pd.read_csv(ONET_RELEASE / "Occupation Data.txt", sep="\t")
    titles = dict(zip(occupation_data["O*NET-SOC Code"], occupation_data["Title"], strict=True))
    for file_name in onet_import.RATING_FILES.values():
        rated = set(pd.read_csv(ONET_RELEASE / file_name, sep="\t", usecols=["O*NET-SOC Code"])["O*NET-SOC Code"])
        assert set(curated["soc_code"]) <= rated, file_name
    assert [titles[code] for code in curated["soc_code"]] == list(curated["onet_title"])
