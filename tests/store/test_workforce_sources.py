"""Labour statistics as data (issue 47, item 4; DESIGN.md section 12): the workforce table is keyed by (source,
soc_code), each source has a descriptor row the reports quote, and a database is reseeded when the shipped source
changes (one seeded before sources existed too), leaving other sources' rows alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from probe.report.workforce import citation
from probe.store import db, snapshot
from tests.support import ROOT, assert_one_line_error, fingerprint, invoke, query

TAXONOMY = ROOT / "taxonomy"
SHIPPED = "bls-cps-2022"
CITATION = "US BLS Current Population Survey 2022, Table 11 (% women), by O*NET-SOC code (taxonomy/workforce.csv)"
NURSE = "29-1141.00"


def _nurse(db_file: Path) -> list[tuple[str, float]]:
    frame = query(db_file, "SELECT source, pct_women FROM workforce WHERE soc_code = ? ORDER BY source", [NURSE])
    return list(frame.itertuples(index=False, name=None))


def test_a_new_database_holds_the_shipped_source_and_its_descriptor(db_file: Path) -> None:
    assert query(db_file, "SELECT source, count(*) AS n FROM workforce GROUP BY source").values.tolist() == [
        [SHIPPED, 997]
    ]
    descriptor = query(db_file, "SELECT source, citation, year, licence, join_key FROM workforce_sources")
    assert descriptor.values.tolist() == [
        [SHIPPED, CITATION, 2022, "public domain (a work of the US government)", "soc_code"]
    ]
    con = db.connect(db_file)
    try:
        assert citation(con, SHIPPED) == CITATION
        con.execute("UPDATE workforce_sources SET citation = 'as stored' WHERE source = ?", [SHIPPED])
        assert citation(con, SHIPPED) == "as stored"  # the report quotes the data, not a constant
    finally:
        con.close()


def test_a_database_seeded_before_sources_is_rekeyed_and_reseeded(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    db.connect(path).close()
    con = duckdb.connect(str(path))
    con.execute("DROP TABLE workforce")
    con.execute("DROP TABLE workforce_sources")
    con.execute(
        "CREATE TABLE workforce (soc_code VARCHAR PRIMARY KEY, census_code VARCHAR, source_title VARCHAR, "
        "year INTEGER, employed_thousands DOUBLE, pct_women DOUBLE, pct_white DOUBLE, pct_black DOUBLE, "
        "pct_asian DOUBLE, pct_hispanic DOUBLE)"
    )
    con.execute("INSERT INTO workforce (soc_code, pct_women) VALUES (?, 50.0)", [NURSE])
    con.close()
    db.connect(path).close()
    assert _nurse(path) == [(SHIPPED, 87.9)]
    key = query(
        path,
        "SELECT constraint_column_names AS key FROM duckdb_constraints() "
        "WHERE table_name = 'workforce' AND constraint_type = 'PRIMARY KEY'",
    )
    assert [list(columns) for columns in key["key"]] == [["source", "soc_code"]]


def test_a_changed_shipped_source_reseeds_an_existing_database_and_keeps_other_sources(
    db_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    con = db.connect(db_file)
    con.execute("INSERT INTO workforce (source, soc_code, pct_women) VALUES ('mine', ?, 12.5)", [NURSE])
    con.close()
    shipped = tmp_path / "taxonomy"
    shutil.copytree(TAXONOMY, shipped)
    csv = shipped / "workforce.csv"
    csv.write_text(
        csv.read_text().replace(
            f"{NURSE},3255,Registered nurses,2022,3363,87.9,", f"{NURSE},3255,Registered nurses,2022,3363,88.4,"
        )
    )
    monkeypatch.setattr(snapshot, "resource_dir", lambda name: shipped)
    snapshot.shipped_workforce.cache_clear()
    try:
        db.connect(db_file).close()
        assert _nurse(db_file) == [(SHIPPED, 88.4), ("mine", 12.5)]
        stored = query(db_file, "SELECT file_sha256 FROM workforce_sources")["file_sha256"].tolist()
        assert stored == [snapshot.shipped_workforce()["file_sha256"]]
    finally:
        monkeypatch.undo()
        snapshot.shipped_workforce.cache_clear()
    db.connect(db_file).close()  # the file as shipped again: reseeded back
    assert _nurse(db_file) == [(SHIPPED, 87.9), ("mine", 12.5)]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A replayed run over 6 occupations (nurse, secretary and dancer always the woman, pilot and butcher the man)."""
    from tests.report.test_report import replay_run, steady_choice

    tmp = tmp_path_factory.mktemp("workforce_sources")
    db_file = tmp / "probe.duckdb"
    db.connect(db_file).close()
    replay_run(db_file, tmp, "steady", steady_choice)
    return db_file


def _report(db_file: Path, tmp_path: Path) -> dict:
    code, output = invoke("report", "steady", "--db", str(db_file), "-o", str(tmp_path / "r.html"))
    assert code == 0, output
    return json.loads((tmp_path / "r.json").read_text())


def test_your_own_labour_statistics_replace_the_shipped_in_the_comparison(replayed: Path, tmp_path: Path) -> None:
    db_file = Path(shutil.copy(replayed, tmp_path / "probe.duckdb"))
    mine = tmp_path / "mine.csv"
    mine.write_text("soc_code,pct_women,year\n29-1141.00,10,2030\n53-2011.00,90,2030\n43-6014.00,55.5,2030\n")
    code, output = invoke("analyze", "steady", "--db", str(db_file), "--workforce", str(mine))
    assert code == 0, output
    workforce = _report(db_file, tmp_path)["workforce"]
    assert workforce["source"] == "mine (mine.csv)"
    shares = {row["occupation"]: row["workforce_share"] for row in workforce["occupations"]}
    assert shares == {"nurse": 0.10, "pilot": 0.90, "secretary": 0.555}
    descriptor = query(db_file, "SELECT source, year, join_key FROM workforce_sources WHERE source = 'mine'")
    assert descriptor.values.tolist() == [["mine", 2030, "soc_code"]]
    code, output = invoke("analyze", "steady", "--db", str(db_file))  # without it: the shipped source again
    assert code == 0, output
    workforce = _report(db_file, tmp_path)["workforce"]
    assert (workforce["source"], workforce["n_occupations"]) == (CITATION, 5)  # dancer: BLS gives no share


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("soc_code,pct_men\n29-1141.00,10\n", "missing column 'pct_women' (the header has soc_code, pct_men)"),
        ("soc_code,pct_women\n29-1141.00,10\n29-1141,20\n", "line 3: soc_code '29-1141' is not an O*NET-SOC code"),
        ("soc_code,pct_women\n29-1141.00,10\n29-1141.00,20\n", "line 3: soc_code 29-1141.00 given twice"),
        ("soc_code,pct_women\n29-1141.00,ten\n", "line 2: pct_women 'ten' is not a number"),
        ("soc_code,pct_women\n29-1141.00,120\n", "line 2: pct_women 120 is not a percentage (0-100)"),
        ("source,soc_code,pct_women\na,29-1141.00,10\nb,53-2011.00,9\n", "column source must hold one name"),
        ("source,soc_code,pct_women\nbls-cps-2022,29-1141.00,10\n", "source 'bls-cps-2022' is the shipped source"),
        ("source,soc_code,pct_women\nmi\u200bne,29-1141.00,10\n", "source: 'mi\\u200bne' contains an invisible format"),
    ],
)
def test_a_bad_labour_statistics_file_is_one_line_and_stores_nothing(
    replayed: Path, tmp_path: Path, text: str, message: str
) -> None:
    db_file = Path(shutil.copy(replayed, tmp_path / "probe.duckdb"))
    bad = tmp_path / "stats.csv"
    bad.write_text(text)
    before = fingerprint(db_file)
    code, output = invoke("analyze", "steady", "--db", str(db_file), "--workforce", str(bad))
    assert_one_line_error(code, output, f"--workforce {bad}")
    assert message in output
    assert fingerprint(db_file) == before
