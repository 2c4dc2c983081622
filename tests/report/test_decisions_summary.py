"""The document of an imported decisions run: what the data is, its source and period, its people, sets and jobs
counted from the stored rows, and the adverse-impact section."""

from __future__ import annotations

from pathlib import Path

import duckdb

from probe import api
from probe.report.data import SCHEMA_VERSION
from probe.report.decisions import OUTCOMES, WHAT, decisions_summary


def test_a_decisions_run_is_summarised_from_its_stored_rows(db_file: Path, tmp_path: Path) -> None:
    path = tmp_path / "screen.csv"
    path.write_text(
        "set_id,name,sex,rank,job\n1,Ann,female,1,nurse\n1,Bob,male,2,nurse\n2,Cy,female,,pilot\n2,Dan,male,1,pilot\n"
    )
    run = api.import_decisions(path, "screen", db=db_file, model="vendor", period="2025")
    assert (run.run_id, run.db) == ("screen", str(db_file))
    con = duckdb.connect(str(db_file), read_only=True)
    try:
        document = decisions_summary(con, "screen")
    finally:
        con.close()
    assert document["schema_version"] == SCHEMA_VERSION
    assert document["run"]["run_id"] == "screen"
    assert document["decisions"] == {
        "what": WHAT,
        "source": str(path),
        "period": "2025",
        "outcome": OUTCOMES["rank"],
        "attributes": ["sex"],
        "people": 4,
        "sets": 2,
        "unknown_decisions": 1,
        "jobs": ["nurse", "pilot"],
    }
    rates = {
        row["category"]: (row["rate"], row["n"], row["unknown"])
        for row in document["adverse_impact"]["rows"]
        if row["scope"] == "overall"
    }
    assert rates == {"female": (1.0, 1, 1), "male": (0.5, 2, 0)}
