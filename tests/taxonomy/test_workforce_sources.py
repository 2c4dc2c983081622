"""A user's labour statistics stored as a source: its rows and descriptor, a second load replacing the first, and
each bad row refused by line and column with nothing stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from probe.common.errors import UserError
from probe.store import db
from probe.taxonomy.workforce_sources import load_workforce_file


@pytest.fixture
def con(db_file: Path):
    connection = db.connect(db_file)
    yield connection
    connection.close()


def test_a_file_is_stored_as_a_source_named_by_its_file_and_reloading_replaces_it(con, tmp_path: Path) -> None:
    path = tmp_path / "my_survey.csv"
    path.write_text("soc_code,pct_women,year\n29-1141.00,87.5,2023\n53-2011.00, ,2023\n")
    assert load_workforce_file(con, path) == "my_survey"
    rows = con.execute(
        "SELECT soc_code, pct_women, year FROM workforce WHERE source = 'my_survey' ORDER BY 1"
    ).fetchall()
    assert rows == [("29-1141.00", 87.5, 2023), ("53-2011.00", None, 2023)]
    assert con.execute("SELECT citation, year FROM workforce_sources WHERE source = 'my_survey'").fetchall() == [
        ("my_survey (my_survey.csv)", 2023)
    ]
    path.write_text("source,soc_code,pct_women\nSurvey B,29-1141.00,90\n")
    path.rename(tmp_path / "b.csv")
    assert load_workforce_file(con, tmp_path / "b.csv") == "Survey B"
    assert con.execute("SELECT count(*) FROM workforce WHERE source = 'Survey B'").fetchone() == (1,)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("soc_code\n29-1141.00\n", ": missing column 'pct_women' (the header has soc_code)"),
        ("soc_code,pct_women\n29-1141,50\n", " line 2: soc_code '29-1141' is not an O*NET-SOC code (NN-NNNN.NN)"),
        ("soc_code,pct_women\n29-1141.00,50\n29-1141.00,40\n", " line 3: soc_code 29-1141.00 given twice"),
        ("soc_code,pct_women\n29-1141.00,half\n", " line 2: pct_women 'half' is not a number"),
        ("soc_code,pct_women\n29-1141.00,101\n", " line 2: pct_women 101 is not a percentage (0-100)"),
    ],
)
def test_a_bad_file_is_refused_by_line_and_nothing_is_stored(con, tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    before = con.execute("SELECT count(*) FROM workforce").fetchone()
    with pytest.raises(UserError) as error:
        load_workforce_file(con, path)
    assert str(error.value) == f"--workforce {path}{problem}"
    assert con.execute("SELECT count(*) FROM workforce").fetchone() == before
