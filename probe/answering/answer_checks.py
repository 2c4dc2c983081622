"""Checks over a run's or a scan's stored answers that only the whole set can show (both runner and scan use them)."""

from __future__ import annotations

import duckdb

from probe.common.errors import RunFailed
from probe.common.vocabulary import UNKNOWN


def check_some_option_named(con: duckdb.DuckDBPyConnection, run_id: str, *, stage: int) -> None:
    """A stage in which the model named no option (every answer unknown) measured nothing: the run is failed,
    not complete; after stage 1 it stops there, before the longer stage 2 is asked. Not asked of a backend
    whose labels are data (replay: an unknown is what the file holds; a file that matches nothing is its
    own error, raised by its `finish`).
    """
    decided, total = con.execute(
        "SELECT count(*) FILTER (WHERE a.label <> ?), count(*) "
        "FROM answers a JOIN items i USING (run_id, item_id) WHERE a.run_id = ? AND i.stage = ?",
        [UNKNOWN, run_id, stage],
    ).fetchone()
    if total and not decided:
        raise RunFailed(
            f"all {total} stage-{stage} answers are unknown: no reply named an option, so {run_id} measures "
            "nothing and is marked failed (its replies are in the answers table; a run's also in `probe export`)"
        )
