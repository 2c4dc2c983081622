"""Answers a recorded run: builds its two stages, asks the backend, stores answers; cache, resume, progress.

Answers are written in small transactions (after each backend batch, at most every SAVE_INTERVAL_S), so
a SIGKILL loses at most the batch in flight (with a fast backend, the last half second of answers); running
again with the same --run-id answers only what has no answer yet or failed (a timeout, a server error).
Answers are cached by content (backend identity, prompt format and the backend's cache key parts of the
query: prompt, options, for extractive QA the asked subject), so identical prompts are answered once across
runs. Every reply is checked against the answers contract (backends/base.py) before it is stored.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Iterator, Sequence
from datetime import datetime

import duckdb
import pandas as pd
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from probe.answering.answer_checks import check_failed_share, check_some_option_named
from probe.backends.base import Backend, Reply, contract_error
from probe.common import stopping
from probe.common.escape import valid_unicode
from probe.common.redact import scrub
from probe.common.vocabulary import UNKNOWN
from probe.dataset.items import Item, item_from_row, items_frame
from probe.dataset.kway import rebuilt_keys
from probe.dataset.wordings import stage1_items, stage2_items
from probe.store import db
from probe.taxonomy.selection import Selection

ANSWER_COLUMNS = (
    "run_id",
    "item_id",
    "raw",
    "label",
    "scores_json",
    "decided_by",
    "error",
    "cached",
    "answered_at",
)
CACHE_COLUMNS = ("cache_key", "raw", "label", "scores_json", "decided_by", "created_at")
# Answers are saved after every backend batch, but no more often than this: a commit's fixed cost would
# dominate fast backends (cache, replay; BENCHMARKS.md); slow ones (seconds a batch) save every batch.
SAVE_INTERVAL_S = 0.5


def answer(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    backend: Backend,
    identity: str,
    selection: Selection,
    *,
    conditions: Sequence[str],
    use_cache: bool,
    max_failed_share: float,
    quiet: bool,
) -> None:
    """Build and answer both stages of a recorded run, resuming where its stored answers stop.

    `identity` is the backend's (runs.identity_json), hashed into cache keys. Raises RunFailed when more
    than `max_failed_share` of a stage's answers are failures.
    """
    with _progress(quiet) as progress:
        answerer = _Answerer(con, run_id, backend, identity, use_cache=use_cache)
        granted_before = None
        for stage in (1, 2):
            ensure_stage(con, run_id, stage, selection, conditions, backend.prompt_format, granted_before)
            if stage == 1 and _has_items(con, run_id, stage=2):
                granted_before = _granted_attributes(con, run_id)  # stage 2 is rebuilt where these answers change
            answerer.answer_stage(stage, progress, retry_failed=True)
            if stage == 2:
                backend.finish()
            # Stage 2 is built from stage 1's answers: after stage 1 only they count (a resume asks failed stage-2
            # items next); after stage 2 all of them.
            check_failed_share(con, run_id, max_failed_share, again=_again(run_id), stage=1 if stage == 1 else None)
            if not backend.labels_are_data:
                check_some_option_named(con, run_id, stage=stage)


def ensure_stage(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    stage: int,
    selection: Selection,
    conditions: Sequence[str],
    prompt_format: str,
    granted_before: set[tuple[int, str, str, str, str, str]] | None = None,
) -> None:
    """Build and store the items of `stage` unless they exist (stage 2 from stage 1's stored answers), in one
    transaction: a stage is either fully built or not at all.

    `granted_before`: what stage 1 granted when the stored stage 2 was built. A failed stage-1 item answered yes on
    resume changes what stage 2 states for its pair and name order: those stage-2 items (and the K-way items of
    their sets) are built again, replacing the stored ones and their answers (deleted in the same transaction).
    """
    built = _has_items(con, run_id, stage=stage)
    if built and granted_before is None:
        return
    granted = set() if stage == 1 else _granted_attributes(con, run_id)
    if built and granted == granted_before:
        return
    items = (
        stage1_items(selection, prompt_format)
        if stage == 1
        else stage2_items(selection, prompt_format, granted, conditions)
    )
    rebuilt = None
    if built:
        rebuilt = {(pair_id, name_order) for pair_id, name_order, *_ in granted ^ granted_before}
        rebuilt |= rebuilt_keys(selection.set_members, {pair_id for pair_id, _ in rebuilt})
        items = [item for item in items if (item.pair_id, item.name_order) in rebuilt]
    first_seq = con.execute("SELECT coalesce(max(seq) + 1, 0) FROM items WHERE run_id = ?", [run_id]).fetchone()[0]
    frame = items_frame(items, run_id, first_seq)
    with db.transaction(con):
        if rebuilt:
            con.register("_rebuilt", pd.DataFrame(sorted(rebuilt), columns=["pair_id", "name_order"]))
            try:
                chosen = (
                    "SELECT item_id FROM items JOIN _rebuilt USING (pair_id, name_order) "
                    "WHERE run_id = $run AND stage = 2"
                )
                con.execute(f"DELETE FROM answers WHERE run_id = $run AND item_id IN ({chosen})", {"run": run_id})
                con.execute(f"DELETE FROM items WHERE run_id = $run AND item_id IN ({chosen})", {"run": run_id})
            finally:
                con.unregister("_rebuilt")
        db.insert_frame(con, "items", frame)


def pending_items(con: duckdb.DuckDBPyConnection, run_id: str, stage: int) -> list[Item]:
    """The items of `stage` without an answer or whose answer is a stored failure, in build order."""
    return _pending_items(con, run_id, stage, retry_failed=True)


def store_replies(con: duckdb.DuckDBPyConnection, run_id: str, answered: Sequence[tuple[Item, Reply]]) -> None:
    """Store replies that came from outside a live backend (batch results), checked as the runner checks its
    own (answers contract, no secret), in one transaction."""
    rows = [_answer_row(run_id, item, _checked(item, _scrubbed(reply)), cached=False) for item, reply in answered]
    if rows:
        _store(con, rows)


def _again(run_id: str) -> str:
    return f"`probe run --run-id {run_id}` with the same settings"


# --- items ---------------------------------------------------------------------------------------------


def _has_items(con: duckdb.DuckDBPyConnection, run_id: str, *, stage: int) -> bool:
    query = "SELECT count(*) FROM items WHERE run_id = ? AND stage = ?"
    return con.execute(query, [run_id, stage]).fetchone()[0] > 0


def _granted_attributes(con: duckdb.DuckDBPyConnection, run_id: str) -> set[tuple[int, str, str, str, str, str]]:
    """(pair_id, name_order, subject, category, attribute, wording) that stage 1 answered yes."""
    rows = con.execute(
        "SELECT i.pair_id, i.name_order, i.subject, i.category, i.attribute, i.wording FROM items i "
        "JOIN answers a ON a.run_id = i.run_id AND a.item_id = i.item_id "
        "WHERE i.run_id = ? AND i.stage = 1 AND a.label = 'yes'",
        [run_id],
    ).fetchall()
    return set(rows)


def _pending_items(con: duckdb.DuckDBPyConnection, run_id: str, stage: int, *, retry_failed: bool) -> list[Item]:
    """Items without an answer, and with `retry_failed` also those whose answer is a stored failure."""
    frame = con.execute(
        "SELECT i.* FROM items i WHERE i.run_id = ? AND i.stage = ? AND NOT EXISTS "
        "(SELECT 1 FROM answers a WHERE a.run_id = i.run_id AND a.item_id = i.item_id "
        "AND NOT (? AND a.error IS NOT NULL)) ORDER BY i.seq",
        [run_id, stage, retry_failed],
    ).df()
    return [item_from_row(row) for row in frame.to_dict("records")]


# --- answering -----------------------------------------------------------------------------------------


class _Answerer:
    """Answers a stage's pending items: cache hits first, then unique prompts in backend batches."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, run_id: str, backend: Backend, identity: str, *, use_cache: bool
    ):
        self.con = con
        self.run_id = run_id
        self.backend = backend
        self.identity = identity
        self.use_cache = use_cache
        self._answer_rows: list[tuple[object, ...]] = []
        self._cache_rows: list[tuple[object, ...]] = []
        self._saved_at = time.monotonic()

    def cache_key(self, item: Item) -> str:
        """Content address: the same question to the same model and settings has the same key."""
        content = [self.identity, self.backend.prompt_format, *self.backend.cache_key_parts(item.query())]
        return hashlib.sha256(json.dumps(content).encode()).hexdigest()

    def answer_stage(self, stage: int, progress: Progress, *, retry_failed: bool) -> None:
        stopping.raise_if_requested()
        pending = _pending_items(self.con, self.run_id, stage, retry_failed=retry_failed)
        task = progress.add_task(f"stage {stage}", total=len(pending), hits=0)
        if not pending:
            return
        by_key: dict[str, list[Item]] = {}
        for item in pending:
            by_key.setdefault(self.cache_key(item) if self.use_cache else item.item_id, []).append(item)
        try:
            for keys, replies, cached in self._replies(by_key):
                for key, reply in zip(keys, replies, strict=True):
                    self._answer_rows.extend(
                        _answer_row(self.run_id, item, reply, cached=cached) for item in by_key[key]
                    )
                    if self.use_cache and not cached and reply.error is None:  # a failed item is asked again next time
                        self._cache_rows.append(
                            (key, reply.raw, reply.label, _scores_json(reply), reply.decided_by, datetime.now())
                        )
                answered = sum(len(by_key[key]) for key in keys)
                if cached or time.monotonic() - self._saved_at >= SAVE_INTERVAL_S:  # the cache's replies: at once
                    self._save()
                if cached:
                    progress.update(task, advance=answered, hits=answered)
                else:
                    progress.advance(task, answered)
                    stopping.raise_if_requested()  # SIGTERM/SIGHUP: this batch is saved (finally), then stop
        finally:
            self._save()  # on errors too: what was answered stays answered

    def _replies(self, by_key: dict[str, list[Item]]) -> Iterator[tuple[list[str], list[Reply], bool]]:
        """(keys, their replies, from the cache?): with the cache on, its replies first in one batch; then the
        backend's for the keys the cache lacks, batch by batch (one query per key: identical prompts asked once)."""
        keys = list(by_key)
        if self.use_cache:
            hits = self._cached_replies(keys)
            yield list(hits), list(hits.values()), True
            keys = [key for key in keys if key not in hits]
        for start in range(0, len(keys), self.backend.batch_size):
            batch = keys[start : start + self.backend.batch_size]
            yield batch, self._ask([by_key[key][0] for key in batch]), False

    def _save(self) -> None:
        """Write the answers (and cache entries) gathered since the last save in one transaction."""
        if self._answer_rows:
            _store(self.con, self._answer_rows, self._cache_rows)
        self._answer_rows, self._cache_rows = [], []
        self._saved_at = time.monotonic()

    def _ask(self, items: Sequence[Item]) -> list[Reply]:
        replies = self.backend.answer([item.query() for item in items])
        if len(replies) != len(items):
            raise RuntimeError(f"backend returned {len(replies)} replies for {len(items)} queries")
        return [_checked(item, _scrubbed(reply)) for item, reply in zip(items, replies, strict=True)]

    def _cached_replies(self, keys: list[str]) -> dict[str, Reply]:
        self.con.register("_keys", pd.DataFrame({"cache_key": keys}))
        try:
            rows = self.con.execute(
                "SELECT c.cache_key, c.label, c.raw, c.scores_json, c.decided_by "
                "FROM answer_cache c JOIN _keys USING (cache_key)"
            ).fetchall()
        finally:
            self.con.unregister("_keys")
        return {
            key: Reply(label=label, raw=raw or "", scores=json.loads(scores) if scores else None, decided_by=decided_by)
            for key, label, raw, scores, decided_by in rows
        }


def _answer_row(run_id: str, item: Item, reply: Reply, *, cached: bool) -> tuple[object, ...]:
    """An answers row (ANSWER_COLUMNS) of a checked reply."""
    return (
        run_id,
        item.item_id,
        reply.raw,
        reply.label,
        _scores_json(reply),
        reply.decided_by,
        reply.error,
        cached,
        datetime.now(),
    )


def _store(
    con: duckdb.DuckDBPyConnection, answer_rows: Sequence[tuple[object, ...]], cache_rows: Sequence[tuple] = ()
) -> None:
    """Answers (replacing retried failures) and cache entries (CACHE_COLUMNS) in one transaction."""
    with db.transaction(con):
        answers = pd.DataFrame(answer_rows, columns=list(ANSWER_COLUMNS))
        db.insert_frame(con, "answers", answers, verb="INSERT OR REPLACE")
        if cache_rows:
            cache = pd.DataFrame(cache_rows, columns=list(CACHE_COLUMNS))
            db.insert_frame(con, "answer_cache", cache, verb="INSERT OR IGNORE")


def _checked(item: Item, reply: Reply) -> Reply:
    """A reply that breaks the answers contract (a label outside the item's canonical set, scores that miss
    an option or disagree with the label, ...) is the backend's bug: store unknown, no scores, and say why."""
    error = contract_error(item.options, reply)
    if error is None:
        return reply
    return Reply(
        label=UNKNOWN, raw=reply.raw, error=f"backend broke the answers contract: {error}", decided_by=reply.decided_by
    )


def _scrubbed(reply: Reply) -> Reply:
    """No key in what is stored or cached, even if a server echoes it in its reply or error body; text DuckDB can
    store (a lone surrogate from a server's JSON replaced)."""
    return dataclasses.replace(
        reply,
        raw=valid_unicode(scrub(reply.raw)) if reply.raw else reply.raw,
        error=valid_unicode(scrub(reply.error)) if reply.error else None,
    )


def _scores_json(reply: Reply) -> str | None:
    return json.dumps(dict(reply.scores)) if reply.scores is not None else None


# --- progress ------------------------------------------------------------------------------------------


class _ItemsPerSecond(ProgressColumn):
    def render(self, task: Task) -> Text:
        return Text(f"{task.speed or 0:.1f} items/s")


def _progress(quiet: bool) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _ItemsPerSecond(),
        TimeRemainingColumn(),
        TextColumn("cache hits: {task.fields[hits]}"),
        disable=quiet,
    )


def answer_pending(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    backend: Backend,
    identity: str,
    *,
    use_cache: bool,
    quiet: bool,
    retry_failed: bool,
) -> None:
    """Answer the stage-2 items of `run_id` that have no answer yet (and, if `retry_failed`, those whose answer
    failed): `probe scan`'s rounds."""
    with _progress(quiet) as progress:
        answerer = _Answerer(con, run_id, backend, identity, use_cache=use_cache)
        answerer.answer_stage(2, progress, retry_failed=retry_failed)
