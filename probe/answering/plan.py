"""What a run will cost before it starts: items per stage and condition, model calls, an estimated time.

`probe run --dry-run` prints the plan and writes nothing; a run estimated over CONFIRM_OVER_S asks first.
Items come from the real dataset builder. Stage 2 depends on stage 1's answers (a taxonomy prompt states
only the granted attributes), so it is built with a fixed, hash-drawn half of the attributes granted: all
granted would make taxonomy prompts equal control ones, none granted equal baseline ones.
Model calls count distinct prompts (the runner asks an identical prompt once per run) less the items a
resumed run has already answered; answers cached by earlier runs are not subtracted (their key needs the
loaded model's identity), so the count is an upper bound when the cache holds some.

The time estimate uses, in order: the speed of this backend and model in this database (the newest run with
at least MIN_MEASURED_CALLS answers that were not cached after its first batch: calls per second, per stage), else
the rates measured for BENCHMARKS.md that the backend's registry line declares (`documented_rates`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from probe.backends import backend_info
from probe.common.vocabulary import KWAY
from probe.dataset.items import Item
from probe.dataset.wordings import stage1_items, stage2_items
from probe.store import db
from probe.store.spec import RunSpec
from probe.taxonomy.selection import select

CONFIRM_OVER_S = 30 * 60
# One K-way call (8 names: a longer prompt, 8 options scored) took as long as about 7 two-person stage-2 calls on
# the bundled SmolLM2 (BENCHMARKS.md "The K-way choice"): the time estimate counts it so.
KWAY_CALL_COST = 7
MIN_MEASURED_CALLS = 20
SAME_BATCH_MS = 50  # answers stamped this close to a stage's first one came back in its first batch


@dataclass(frozen=True)
class Plan:
    stage1_items: int
    stage2_items: dict[str, int]  # condition -> items
    stage1_calls: int
    stage2_calls: int
    kway_calls: int  # of stage2_calls: the K-way choice's (--questions kway)
    already_answered: int  # items a resumed run has answered (not asked again)
    seconds: float
    rates: tuple[float, float]  # calls per second, stage 1 and stage 2
    rate_source: str
    found: tuple[str, ...] = ()  # a run over name sets: what its file holds (Selection.found), then its warnings
    warnings: tuple[str, ...] = ()

    @property
    def calls(self) -> int:
        return self.stage1_calls + self.stage2_calls

    @property
    def calls_left(self) -> int:
        return max(self.calls - self.already_answered, 0)


def half_granted(stage1: Sequence[Item]) -> set[tuple[int, str, str, str, str, str]]:
    """A fixed half of the stage-1 attributes, drawn by item id: a stand-in for stage 1's answers."""
    return {
        (item.pair_id, item.name_order, item.subject, item.category, item.attribute, item.wording)
        for item in stage1
        if hashlib.sha256(item.item_id.encode()).digest()[0] % 2 == 0
    }


def distinct_calls(items: Sequence[Item]) -> int:
    """Items the runner sends to a model: one per distinct cache content (prompt, options, asked subject)."""
    return len({(item.prompt, item.options, item.subject_name) for item in items})


def plan(config: RunSpec) -> Plan:
    """The plan of `config` (a new run, or what a resumed one has left); reads the database, writes nothing."""
    existing = Path(config.options.db).exists()
    con = db.connect(config.options.db, read_only=True) if existing else db.connect(":memory:")  # seeded, in memory
    try:
        selection = select(con, config.design)
        prompt_format = backend_info(config.backend.kind).preview_format
        stage1 = stage1_items(selection, prompt_format)
        stage2 = stage2_items(selection, prompt_format, half_granted(stage1), config.design.conditions)
        answered = _answered(con, config.options.run_id) if existing and config.options.run_id else 0
        stage1_calls, stage2_calls = distinct_calls(stage1), distinct_calls(stage2)
        kway_calls = distinct_calls([item for item in stage2 if item.qtype == KWAY])
        rates, source = _rates(con, config) if existing else (None, "")
    finally:
        con.close()
    if rates is None:
        rates = backend_info(config.backend.kind).documented_rates
        source = "as measured for BENCHMARKS.md: 2 cores, the bundled SmolLM2 for local backends"
    left1 = max(stage1_calls - answered, 0)
    left2 = stage2_calls - max(answered - stage1_calls, 0)
    conditions = config.design.conditions
    by_condition = {condition: sum(item.condition == condition for item in stage2) for condition in conditions}
    return Plan(
        stage1_items=len(stage1),
        stage2_items=by_condition,
        stage1_calls=stage1_calls,
        stage2_calls=stage2_calls,
        kway_calls=kway_calls,
        already_answered=answered,
        # a K-way call left costs KWAY_CALL_COST two-person calls' time (a resumed run: taken as still to ask)
        seconds=left1 / rates[0] + (left2 + (KWAY_CALL_COST - 1) * min(kway_calls, left2)) / rates[1],
        rates=rates,
        rate_source=source,
        found=selection.found,
        warnings=selection.warnings,
    )


def names_found(config: RunSpec) -> list[str]:
    """What a run over name sets found in its file and the spellings it warns about, one line each (nothing for a
    run over name pairs): `probe run` prints them before any model call. Reads, writes nothing."""
    if config.design.names is None or not config.design.names.sets:
        return []
    existing = Path(config.options.db).exists()
    con = db.connect(config.options.db, read_only=True) if existing else db.connect(":memory:")
    try:
        selection = select(con, config.design)
    finally:
        con.close()
    return [*selection.found, *(f"warning: {warning}" for warning in selection.warnings)]


def _answered(con: duckdb.DuckDBPyConnection, run_id: str) -> int:
    query = "SELECT count(*) FROM answers WHERE run_id = ? AND error IS NULL"
    return con.execute(query, [run_id]).fetchone()[0]


def _rates(con: duckdb.DuckDBPyConnection, config: RunSpec) -> tuple[tuple[float, float] | None, str]:
    """Calls per second per stage of the newest run here with this backend and model, from answer times.

    Answers are stamped when their batch returns, so the first batch's time is not in the span from the
    first stamp to the last: its calls are left out (counted, they made a 3-batch run look 1.5x faster).
    """
    rows = con.execute(
        f"""WITH asked AS (
               SELECT r.run_id, r.created_at, i.stage, a.answered_at FROM runs r
               JOIN answers a USING (run_id) JOIN items i USING (run_id, item_id)
               WHERE r.backend = ? AND (? IS NULL OR r.model = ?) AND NOT a.cached AND a.error IS NULL
           ), first_batch AS (
               SELECT run_id, stage, min(answered_at) AS first_at FROM asked GROUP BY run_id, stage
           ), speed AS (
               SELECT run_id, any_value(created_at) AS created_at, stage,
                      count(*) FILTER (WHERE answered_at > first_at + INTERVAL {SAME_BATCH_MS} MILLISECOND) AS calls,
                      epoch(max(answered_at) - first_at) AS seconds
               FROM asked JOIN first_batch USING (run_id, stage) GROUP BY run_id, stage, first_at
               HAVING calls >= ? AND seconds > 0
           )
           SELECT run_id, stage, calls / seconds FROM speed
           WHERE run_id = (SELECT run_id FROM speed ORDER BY created_at DESC LIMIT 1)""",
        [config.backend.kind, config.backend.model, config.backend.model, MIN_MEASURED_CALLS],
    ).fetchall()
    if not rows:
        return None, ""
    by_stage = {stage: rate for _, stage, rate in rows}
    rate1 = by_stage.get(1, by_stage.get(2))
    rate2 = by_stage.get(2, rate1)
    return (rate1, rate2), f"measured in this database (run {rows[0][0]})"


def duration(seconds: float) -> str:
    """3 h 05 min, 12 min, 40 s."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def describe(plan_: Plan, config: RunSpec) -> list[str]:
    """The dry-run report, one statement a line."""
    conditions = ", ".join(f"{condition} {count:,}" for condition, count in plan_.stage2_items.items())
    lines = [
        *plan_.found,
        *(f"warning: {warning}" for warning in plan_.warnings),
        f"stage 1: {plan_.stage1_items:,} items (yes/no: is this person skilled in ...)",
        f"stage 2: {sum(plan_.stage2_items.values()):,} items ({conditions}); taxonomy prompts depend on "
        "stage 1's answers: counted with half the attributes granted",
        f"model calls after reuse (an identical prompt is asked once): {plan_.calls:,} "
        f"(stage 1 {plan_.stage1_calls:,}, stage 2 {plan_.stage2_calls:,}"
        + (
            f", of them {plan_.kway_calls:,} K-way choices, each timed as {KWAY_CALL_COST} two-person calls)"
            if plan_.kway_calls
            else ")"
        ),
    ]
    if plan_.already_answered:
        answered = plan_.already_answered
        lines.append(f"already answered in run {config.options.run_id}: {answered:,}; left: {plan_.calls_left:,}")
    rate1, rate2 = plan_.rates
    lines.append(
        f"estimated time with {config.backend.kind}: {duration(plan_.seconds)} at {rate1:.3g} calls/s in stage 1 and "
        f"{rate2:.3g} in stage 2 ({plan_.rate_source}); answers cached by earlier runs are not subtracted"
    )
    return lines
