"""The DuckDB store: every hand-off of the pipeline (taxonomy -> dataset -> answers -> metrics) is a table here.

Column sets of the contract tables follow DESIGN.md section 4; extra columns are additions.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pandas as pd

from probe.errors import UserError
from probe.snapshot import seed_if_empty  # imports nothing that imports db

DEFAULT_DB = Path("runs/probe.duckdb")

SCHEMA = """
CREATE TABLE IF NOT EXISTS onet_release (
    release VARCHAR, source VARCHAR, imported_at TIMESTAMP
);
CREATE TABLE IF NOT EXISTS onet_occupations (
    soc_code VARCHAR PRIMARY KEY, title VARCHAR, description VARCHAR
);
CREATE TABLE IF NOT EXISTS onet_alternate_titles (
    soc_code VARCHAR, alternate_title VARCHAR
);
CREATE TABLE IF NOT EXISTS attribute_ratings (
    soc_code VARCHAR, category VARCHAR, element_id VARCHAR, element_name VARCHAR,
    importance DOUBLE, level DOUBLE
);
CREATE TABLE IF NOT EXISTS occupations (
    occupation VARCHAR PRIMARY KEY, soc_code VARCHAR, onet_title VARCHAR, note VARCHAR
);
CREATE TABLE IF NOT EXISTS occupation_attributes (
    occupation VARCHAR, soc_code VARCHAR, category VARCHAR, rank INTEGER,
    element_name VARCHAR, importance DOUBLE, level DOUBLE
);
CREATE TABLE IF NOT EXISTS name_pairs (
    pair_id INTEGER PRIMARY KEY, female VARCHAR, male VARCHAR
);
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY, created_at TIMESTAMP, model VARCHAR, backend VARCHAR,
    config_json VARCHAR, status VARCHAR, template_hash VARCHAR, package_version VARCHAR,
    finished_at TIMESTAMP, backend_json VARCHAR, versions_json VARCHAR
);
-- The O*NET release the run's attributes came from (added later: older databases gain the column here).
ALTER TABLE runs ADD COLUMN IF NOT EXISTS onet_release VARCHAR;
-- The attributes each run used, frozen at run time so a later O*NET import cannot change a stored run.
CREATE TABLE IF NOT EXISTS run_attributes (
    run_id VARCHAR, occupation VARCHAR, soc_code VARCHAR, category VARCHAR, rank INTEGER,
    element_name VARCHAR, importance DOUBLE, level DOUBLE
);
-- The name pairs each run used (the shipped ones or a --names file), frozen with it like its attributes.
CREATE TABLE IF NOT EXISTS run_name_pairs (
    run_id VARCHAR, pair_id INTEGER, female VARCHAR, male VARCHAR
);
CREATE TABLE IF NOT EXISTS items (
    run_id VARCHAR, item_id VARCHAR, stage INTEGER, qtype VARCHAR, condition VARCHAR,
    pair_id INTEGER, name_order VARCHAR, occupation VARCHAR, subject VARCHAR,
    attribute VARCHAR, category VARCHAR, prompt VARCHAR,
    context VARCHAR, question VARCHAR, options_json VARCHAR,
    first_name VARCHAR, second_name VARCHAR, seq INTEGER,
    PRIMARY KEY (run_id, item_id)
);
-- scores_json: canonical label -> option log-likelihood, every option of the answer space, only where
-- decided_by = 'score' (label = argmax); decided_by: score | generate | span | replay.
CREATE TABLE IF NOT EXISTS answers (
    run_id VARCHAR, item_id VARCHAR, raw VARCHAR, label VARCHAR, scores_json VARCHAR,
    error VARCHAR, cached BOOLEAN, answered_at TIMESTAMP, decided_by VARCHAR,
    PRIMARY KEY (run_id, item_id)
);
-- Content-addressed: key = hash(model identity, decoding settings, prompt, options).
CREATE TABLE IF NOT EXISTS answer_cache (
    cache_key VARCHAR PRIMARY KEY, raw VARCHAR, label VARCHAR, scores_json VARCHAR, created_at TIMESTAMP,
    decided_by VARCHAR
);
-- Databases written before decided_by existed.
ALTER TABLE answers ADD COLUMN IF NOT EXISTS decided_by VARCHAR;
ALTER TABLE answer_cache ADD COLUMN IF NOT EXISTS decided_by VARCHAR;
CREATE TABLE IF NOT EXISTS metrics (
    run_id VARCHAR, condition VARCHAR, scope VARCHAR, key VARCHAR, metric VARCHAR,
    value DOUBLE, ci_low DOUBLE, ci_high DOUBLE, n BIGINT
);
CREATE TABLE IF NOT EXISTS occupation_preference (
    run_id VARCHAR, condition VARCHAR, occupation VARCHAR, n BIGINT, share_female DOUBLE,
    ci_low DOUBLE, ci_high DOUBLE, p_value DOUBLE, q_value DOUBLE, preferred VARCHAR
);
CREATE TABLE IF NOT EXISTS correlations (
    run_id VARCHAR, condition VARCHAR, across VARCHAR, x VARCHAR, y VARCHAR, method VARCHAR,
    r DOUBLE, p_value DOUBLE, n BIGINT
);
CREATE TABLE IF NOT EXISTS regression (
    run_id VARCHAR, condition VARCHAR, term VARCHAR, coef DOUBLE, std_err DOUBLE,
    ci_low DOUBLE, ci_high DOUBLE, p_value DOUBLE, odds_ratio DOUBLE, n BIGINT, n_clusters BIGINT,
    note VARCHAR  -- why a term has no estimate (separation, a single name pair), else NULL
);
-- probe scan (probe/scan.py): adaptive rounds over O*NET titles. Its items and answers live in `items` and
-- `answers` under run_id = scan_id (stage 2, qtype single, condition baseline).
CREATE TABLE IF NOT EXISTS scans (
    scan_id VARCHAR PRIMARY KEY, created_at TIMESTAMP, model VARCHAR, backend VARCHAR, config_json VARCHAR,
    backend_json VARCHAR, template_hash VARCHAR, package_version VARCHAR, status VARCHAR, finished_at TIMESTAMP
);
CREATE TABLE IF NOT EXISTS scan_titles (
    scan_id VARCHAR, soc_code VARCHAR, title VARCHAR, PRIMARY KEY (scan_id, soc_code)
);
-- The name pairs in the order every title is asked them (a seeded shuffle): position 1 first.
CREATE TABLE IF NOT EXISTS scan_pairs (
    scan_id VARCHAR, position INTEGER, pair_id INTEGER, female VARCHAR, male VARCHAR,
    PRIMARY KEY (scan_id, position)
);
-- status: asked (items stored, answers may be missing) | decided.
CREATE TABLE IF NOT EXISTS scan_rounds (
    scan_id VARCHAR, round INTEGER, depth INTEGER, titles INTEGER, calls BIGINT, status VARCHAR,
    started_at TIMESTAMP, decided_at TIMESTAMP, PRIMARY KEY (scan_id, round)
);
-- decision: continue | flagged | cleared | exhausted | budget (probe/scan_rules.py).
CREATE TABLE IF NOT EXISTS scan_decisions (
    scan_id VARCHAR, round INTEGER, soc_code VARCHAR, pairs INTEGER, share DOUBLE, e_value DOUBLE,
    decision VARCHAR, PRIMARY KEY (scan_id, round, soc_code)
);
CREATE TABLE IF NOT EXISTS scan_results (
    scan_id VARCHAR, soc_code VARCHAR, title VARCHAR, pairs INTEGER, share DOUBLE, ci_low DOUBLE,
    ci_high DOUBLE, ci_level DOUBLE, e_value DOUBLE, flagged BOOLEAN, preferred VARCHAR, stopped VARCHAR,
    stopped_round INTEGER, PRIMARY KEY (scan_id, soc_code)
);
"""


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Everything inside commits together or not at all (a killed or failed step leaves no half-write)."""
    con.begin()
    try:
        yield
    except BaseException:
        con.rollback()
        raise
    con.commit()


def insert_frame(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame, *, verb: str = "INSERT") -> None:
    """Insert a DataFrame's columns into `table` (verb: INSERT, INSERT OR REPLACE, INSERT OR IGNORE)."""
    columns = ", ".join(frame.columns)
    con.register("_rows", frame)
    try:
        con.execute(f"{verb} INTO {table} ({columns}) SELECT {columns} FROM _rows")
    finally:
        con.unregister("_rows")


def connect(db_path: Path | str = DEFAULT_DB, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) the probe database, with the schema in place and the taxonomy seeded.

    A new database is seeded from the taxonomy snapshot that ships with the package, so `probe run`
    works without an O*NET import.
    """
    path = Path(db_path)
    if read_only and not path.exists():
        raise UserError(f"{path}: no such database")
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        con = duckdb.connect(str(path), read_only=read_only)
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise UserError(f"{path}: the database is in use by another probe process; wait for it to finish") from exc
        raise UserError(f"{path}: cannot open database ({exc})") from exc
    if not read_only:
        con.execute(SCHEMA)
        with transaction(con):
            seed_if_empty(con)
    return con
