"""Checks over a run's or a scan's stored answers that only the whole set can show (the runner and the scan)."""

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


def check_failed_share(
    con: duckdb.DuckDBPyConnection, run_id: str, max_share: float, *, again: str, stage: int | None = None
) -> None:
    """More than `max_share` of the answers (of `stage`, or of all) failed, or all of them: not complete.
    `again` is the command that asks the failed ones again (a run's or a scan's)."""
    failed, total, example = con.execute(
        "SELECT count(*) FILTER (WHERE a.error IS NOT NULL), count(*), min(a.error) FROM answers a "
        "LEFT JOIN items i USING (run_id, item_id) WHERE a.run_id = ? AND (? IS NULL OR i.stage = ?)",
        [run_id, stage, stage],
    ).fetchone()
    if failed and (failed > max_share * total or failed == total):
        raise RunFailed(
            f"{failed} of {total} answers of {run_id} failed ({failed / total:.0%}, more than --max-failed-share "
            f"{max_share:.0%}), e.g. {example}; it is marked failed: {again} asks the failed ones again"
        )
