"""`analyze` builds a run's instances on a worker thread while the statistics stack loads: a Ctrl-C, which reaches
the main thread only, interrupts the build in DuckDB rather than waiting for it, and the database is closed.

The build is a query that calls back into Python for every row (so the test knows it runs) and, uninterrupted,
fails after ten million rows: the test needs no clock."""

from __future__ import annotations

import sys
import threading
import types
from pathlib import Path

import duckdb
import pytest

from probe import pipeline

UNINTERRUPTED_ROWS = 10_000_000


def test_ctrl_c_while_the_instances_build_interrupts_the_build_and_closes_the_database(
    db_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    running = threading.Event()
    builds: list[str] = []
    opened: list[duckdb.DuckDBPyConnection] = []
    connect = pipeline.connect
    monkeypatch.setattr(pipeline, "connect", lambda path: opened.append(connect(path)) or opened[-1])

    def row_seen(row: int) -> int:
        running.set()
        if row >= UNINTERRUPTED_ROWS:
            raise RuntimeError("not interrupted")
        return row

    def build(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
        con.create_function("row_seen", row_seen, ["BIGINT"], "BIGINT")
        try:
            con.execute(f"SELECT sum(row_seen(i)) FROM range({2 * UNINTERRUPTED_ROWS}) r(i)").fetchall()
        except duckdb.InterruptException:
            builds.append("interrupted")
            raise
        builds.append("finished")

    def ctrl_c(name: str) -> None:  # the statistics stack's import, once the build runs
        if name != "analyze":
            raise AttributeError(name)
        running.wait()
        raise KeyboardInterrupt

    statistics = types.ModuleType("probe.analysis.metrics")
    statistics.__getattr__ = ctrl_c  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, "probe.analysis.metrics", statistics)
    monkeypatch.setattr(pipeline, "build_instances", build)
    with pytest.raises(KeyboardInterrupt):
        pipeline.analyze(db_file, "r")
    assert builds == ["interrupted"]
    with pytest.raises(duckdb.ConnectionException, match="closed"):
        opened[0].execute("SELECT 1")
