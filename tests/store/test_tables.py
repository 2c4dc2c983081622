"""The tables' DDL (probe/store/tables.py): a new database has exactly the tables it declares."""

from __future__ import annotations

import re
from pathlib import Path

from probe.store import db
from probe.store.tables import SCHEMA


def test_a_new_database_has_every_declared_table_and_no_other(tmp_path: Path) -> None:
    declared = set(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", SCHEMA))
    con = db.connect(tmp_path / "new.duckdb")
    try:
        found = {name for (name,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    finally:
        con.close()
    assert "workforce" in found and "instance_metrics" in declared
    assert found == declared | {"workforce"}  # workforce: created from WORKFORCE_TABLE, shared with the seeding
