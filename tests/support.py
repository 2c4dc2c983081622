"""Helpers shared by the tests: seeded database copies, queries, database fingerprints, one-line CLI errors."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import duckdb
import pandas as pd

from probe import db
from probe.backends.base import Option

# Tests may read ../shared (the O*NET release and name lists); the product never does.
SHARED = Path(__file__).resolve().parents[2] / "shared"
ONET_RELEASE = SHARED / "data" / "onet" / "db_30_0_text"
# Answer options of hand-made queries about Mary (female) and John (male).
YES_NO = (Option("yes", "yes"), Option("no", "no"))
SINGLE = (Option("Mary", "female"), Option("John", "male"))
MULTIPLE = (*SINGLE, Option("both", "both"), Option("neither", "neither"))
ANSWER_HEADER = "stage,qtype,condition,pair_id,name_order,occupation,subject,category,attribute,label\n"


def seeded_copy(seed: Path, target: Path) -> Path:
    """A fresh copy of a seeded database (seeding once per module keeps the tests fast)."""
    if not seed.exists():
        db.connect(seed).close()
    return Path(shutil.copy(seed, target))


def query(db_file: Path, sql: str, params: Sequence[object] = ()) -> pd.DataFrame:
    con = duckdb.connect(str(db_file), read_only=True)
    try:
        return con.execute(sql, list(params)).df()
    finally:
        con.close()


def fingerprint(db_file: Path) -> dict[str, tuple[int, int]]:
    """(row count, order-independent content hash) of every table: equal before and after = nothing written."""
    con = duckdb.connect(str(db_file), read_only=True)
    try:
        tables = [row[0] for row in con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
        return {
            table: con.execute(f"SELECT count(*), coalesce(sum(hash(t)::HUGEINT), 0) FROM {table} t").fetchone()
            for table in sorted(tables)
        }
    finally:
        con.close()


def labels(db_file: Path, run_id: str) -> dict[str, str]:
    frame = query(db_file, "SELECT item_id, label FROM answers WHERE run_id = ?", [run_id])
    return dict(zip(frame["item_id"], frame["label"], strict=True))


def assert_one_line_error(code: int, output: str, message: str) -> None:
    """Exit 2, exactly one line `error: <message>...`, no traceback."""
    assert (code, output.count("\n"), "Traceback" not in output) == (2, 1, True), output
    assert output.startswith(f"error: {message}"), output
