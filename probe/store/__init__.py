"""The store and the settings: what every pipeline step reads from and writes to.

Enters: a database path; the shipped `taxonomy/` snapshot; presets, RUN.toml and flags.
Leaves: an open, seeded DuckDB store (db.py; a new database is seeded by snapshot.py); one `RunSpec`
(spec.py: design, backend, options; parsed by config.py), of which every step takes its part.
"""
