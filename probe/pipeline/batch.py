"""`probe batch`: a run answered through files, for OpenAI-compatible batch endpoints (the request and result codec
is probe/backends/openai_batch.py). The stage in progress goes out as requests; results come back and are stored as
the runner stores a live reply; stage 2 is built from stage 1's answers as a live run builds it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from probe.answering import runner, runs
from probe.common.errors import UserError
from probe.common.vocabulary import BATCH, COMPLETE
from probe.dataset.items import item_from_row
from probe.dataset.wordings import check_templates
from probe.store.config import load_config
from probe.store.db import connect
from probe.store.spec import RunSpec
from probe.taxonomy.selection import select, stored_selection

if TYPE_CHECKING:
    import duckdb

    from probe.backends.openai_batch import BatchTarget
    from probe.dataset.items import Item


@dataclass
class BatchImport:
    """What `probe batch import` stored, and what it did not."""

    imported: int = 0
    already: int = 0  # results for items answered before: left as they were
    problems: list[str] = field(default_factory=list)  # "line N: why", in line order
    pending: int = 0  # items of the stage in progress still without an answer
    stage: int = 1
    complete: bool = False


def export_requests(db: Path, run_id: str, output: Path, config_file: Path | None = None) -> tuple[int, int]:
    """`probe batch export`: write the requests of a batch run's stage in progress (probe/backends/openai_batch.py);
    returns (stage, requests). Records the run the first time."""
    from probe.backends.openai_batch import BatchTarget, request_line  # the openai client: load on use

    con = connect(db)
    try:
        if runs.stored_run(con, run_id) is None:
            runs.check_id_free(con, run_id, "RUN_ID", other="scans")
            config = load_config({"run_id": run_id, "db": str(db)}, config_file)
            target = BatchTarget(config.backend)
            selection = select(con, config.design)
            check_templates(selection, config.design.conditions, target.prompt_format)
            runs.record_run(
                con, run_id, config.settings(), target, json.dumps(target.identity(), sort_keys=True), selection
            )
            runs.set_status(con, run_id, BATCH)
        config, target = _batch_run(con, db, run_id)
        stage, items = _batch_stage(con, config, target.prompt_format)
        lines = [request_line(item.item_id, *target.request(item.query())) for item in items]
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return stage, len(lines)
    finally:
        con.close()


def import_results(db: Path, run_id: str, results: Path) -> BatchImport:
    """`probe batch import`: store each result as the runner stores a live reply (answers contract checked, secrets
    scrubbed); a bad line is reported by its number, an item answered before is left as it is."""
    from probe.backends.openai_batch import check_result_line, result_lines

    if not results.is_file():
        raise UserError(f"{results}: no such file")
    con = connect(db)
    try:
        config, target = _batch_run(con, db, run_id)
        report = BatchImport()
        frame = con.execute("SELECT * FROM items WHERE run_id = ?", [run_id]).df()
        items = {item.item_id: item for item in map(item_from_row, frame.to_dict("records"))}
        pending = {item.item_id for stage in (1, 2) for item in runner.pending_items(con, run_id, stage)}
        answered, seen = [], {}
        for number, line in result_lines(results):
            custom_id, why = check_result_line(line, items, seen)
            if why is None:
                seen[custom_id] = number
                if custom_id not in pending:
                    report.already += 1
                    continue
                try:
                    answered.append(
                        (items[custom_id], target.reply(items[custom_id].query(), line["response"]["body"]))
                    )
                    continue
                except (KeyError, IndexError, TypeError, ValueError) as error:
                    why = f"custom_id {custom_id}: unreadable result ({type(error).__name__}: {str(error)[:200]})"
            report.problems.append(f"line {number}: {why}")
        runner.store_replies(con, run_id, answered)
        report.imported = len(answered)
        report.stage, left = _batch_stage(con, config, target.prompt_format)
        report.pending = len(left)
        report.complete = report.stage == 2 and not left
        runs.set_status(con, run_id, COMPLETE if report.complete else BATCH)
        return report
    finally:
        con.close()


def _batch_run(con: duckdb.DuckDBPyConnection, db: Path, run_id: str) -> tuple[RunSpec, BatchTarget]:
    """A stored batch run's settings and request target; a run of another backend is refused."""
    from probe.backends.openai_batch import BatchTarget

    stored = runs.stored_run(con, run_id)
    if stored is None:
        raise UserError(
            f"run {run_id!r}: no such run; `probe batch export {run_id} -o FILE --config RUN.toml` starts it"
        )
    config = load_config({"run_id": run_id, "db": str(db)}, stored=runs.stored_settings(con, run_id))
    target = BatchTarget(config.backend)
    runs.check_same_backend(run_id, json.loads(str(stored["backend_json"])), target.identity())
    return config, target


def _batch_stage(con: duckdb.DuckDBPyConnection, config: RunSpec, prompt_format: str) -> tuple[int, list[Item]]:
    """A batch run's stage in progress and its unanswered items: stage 1's while it has any, then stage 2's
    (built from stage 1's answers as a live run builds it)."""
    run_id = str(config.options.run_id)
    selection = stored_selection(con, config.design, run_id)
    for stage in (1, 2):
        runner.ensure_stage(con, run_id, stage, selection, config.design.conditions, prompt_format)
        items = runner.pending_items(con, run_id, stage)
        if items or stage == 2:
            return stage, items
    raise AssertionError("unreachable")
