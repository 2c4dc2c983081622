"""O*NET occupation-attribute store: import, snapshot seeding, top-k attributes, search, name pairs."""

import duckdb


def seed_if_empty(con: duckdb.DuckDBPyConnection) -> None:
    """Load the shipped taxonomy snapshot into a new database (being built in issue #2)."""
