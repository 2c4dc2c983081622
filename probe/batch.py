"""Batch engines: a run's questions as an OpenAI Batch file, answered elsewhere, the answers imported.

The OpenAI Batch API and vLLM's offline `run_batch` read the same JSONL: one request a line, {custom_id,
method, url, body}, and write one result a line, {custom_id, response: {status_code, body}, error}. A
batch run is an openai-backend run (model, api_mode, decoding from its settings or RUN.toml) whose
questions go out in files instead of live requests:

1. `probe batch export RUN -o requests.jsonl` records the run (first time) and writes the questions of
   the stage in progress that have no answer yet (stage 1; once it is answered, stage 2, built from its
   answers as a live run builds it). custom_id = the item id.
2. `probe batch import RUN results.jsonl` stores each result as a live reply would be stored (the same
   parsing, the answers contract, no secret). A line that is not JSON, has no custom_id, names an item of
   no stage of this run, repeats an earlier custom_id or carries an error is reported with its line
   number and not imported; the rest is. Items still without an answer are counted (export again to ask
   them). An item already answered is left as it is, so importing a file again changes nothing. When stage
   2 is answered the run is complete and analysed.

Requests: decoding `generate` - the live openai backend's request body (openai_request.generation_request),
the reply text parsed into an option; decoding `score` (completion-format runs only: a batch file cannot
apply a chat template) - one /v1/completions request per item whose prompt lists context + option for
every option with `echo` and `logprobs`, the option's score the sum of the log-probabilities of the
echoed tokens from the option's first character on (a token across the boundary fails the item).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from probe import pipeline
from probe.answering import runs
from probe.backends.base import Query, Reply, score_reply
from probe.backends.model_input import completion_pair
from probe.backends.openai_api import ApiSettings, resolve_api_mode
from probe.backends.openai_request import COMPLETIONS_PATH, generated_reply, generation_request
from probe.common.errors import UserError
from probe.common.vocabulary import BATCH, COMPLETE
from probe.dataset.dataset import Item, check_templates
from probe.store.config import RunConfig, load_config
from probe.store.db import connect
from probe.taxonomy.selection import select


class BatchTarget:
    """What a batch run is recorded with: the request settings and their identity (no live backend)."""

    cacheable = False

    def __init__(self, config: RunConfig) -> None:
        if config.backend != "openai" or not config.model:
            raise UserError("batch: a batch run is an openai-backend run: give backend = \"openai\" and a model "
                            "(--config RUN.toml)")  # fmt: skip
        api_mode = resolve_api_mode(config.api_mode, config.model)
        constrain = config.constrain if config.constrain != "auto" else "none"
        self.settings = ApiSettings(model=config.model, api_mode=api_mode, constrain=constrain,
                                    max_tokens=config.max_tokens, decoding=config.decoding)  # fmt: skip
        self.prompt_format = "chat" if api_mode == "chat" else "completion"
        if config.decoding == "score" and self.prompt_format == "chat":
            raise UserError("--decoding score: a batch file cannot apply the model's chat template, so scoring "
                            "requests need api_mode = \"completions\"; or give decoding = \"generate\"")  # fmt: skip

    def identity(self) -> dict[str, object]:
        settings = self.settings
        identity = {"backend": "openai", "engine": "batch", "model": settings.model, "api_mode": settings.api_mode,
                    "temperature": 0.0, "decoding": settings.decoding, "decided_by": settings.decoding}  # fmt: skip
        if settings.decoding == "generate":
            return {**identity, "constrain": settings.constrain, "max_tokens": settings.max_tokens}
        return {**identity, "scores": "echoed prompt log-probabilities of the option's characters"}

    def request(self, query: Query) -> tuple[str, dict[str, Any]]:
        if self.settings.decoding == "generate":
            settings = self.settings
            return generation_request(query, model=settings.model, max_tokens=settings.max_tokens,
                                      constrain=settings.constrain, api_mode=settings.api_mode)  # fmt: skip
        prompts = ["".join(completion_pair(query, option.text)) for option in query.options]
        return COMPLETIONS_PATH, {"model": self.settings.model, "prompt": prompts, "max_tokens": 1,
                                  "temperature": 0.0, "echo": True, "logprobs": 0}  # fmt: skip

    def reply(self, query: Query, body: dict[str, Any]) -> Reply:
        """The stored reply for a result body (ValueError, KeyError, ... when it is not one)."""
        choices = sorted(body["choices"], key=lambda choice: choice["index"])
        if self.settings.decoding == "generate":
            choice = choices[0]
            text = choice["message"]["content"] if "message" in choice else choice["text"]
            if not isinstance(text, str):
                raise ValueError("the reply has no text")
            return generated_reply(text, query)
        if len(choices) != len(query.options):
            raise ValueError(f"{len(choices)} choices for {len(query.options)} options")
        context = completion_pair(query, "")[0]
        scores = {}
        for option, choice in zip(query.options, choices, strict=True):
            scores[option.label] = _continuation_logprob(choice["logprobs"], len(context),
                                                         len("".join(completion_pair(query, option.text))))  # fmt: skip
        return score_reply(scores, query.options)


def _continuation_logprob(logprobs: dict[str, Any], start: int, end: int) -> float:
    """Sum of the echoed token log-probabilities of the characters [start, end) of the prompt."""
    offsets, values = logprobs["text_offset"], logprobs["token_logprobs"]
    inside = [i for i, offset in enumerate(offsets) if start <= offset < end]
    if not inside or offsets[inside[0]] != start:
        raise ValueError("no echoed token starts where the option starts (a token spans context and option)")
    total = sum(float(values[i]) for i in inside)
    if not math.isfinite(total):
        raise ValueError("an option log-probability that is not a finite number")
    return total


@dataclass
class ImportReport:
    imported: int = 0
    already: int = 0  # results for items answered before: left as they were
    problems: list[str] = field(default_factory=list)  # "line N: why", in line order
    pending: int = 0  # items of the stage in progress still without an answer
    stage: int = 1
    complete: bool = False


def _open_run(con: duckdb.DuckDBPyConnection, db: Path, run_id: str) -> tuple[RunConfig, BatchTarget]:
    stored = runs.stored_run(con, run_id)
    if stored is None:
        raise UserError(f"run {run_id!r}: no such run; `probe batch export {run_id} -o FILE --config RUN.toml` "
                        "starts it")  # fmt: skip
    config = load_config({"run_id": run_id, "db": str(db)}, stored=runs.stored_settings(con, run_id))
    target = BatchTarget(config)
    runs.check_same_backend(run_id, json.loads(str(stored["backend_json"])), target.identity())
    return config, target


def export_requests(db: Path, run_id: str, output: Path, config_file: Path | None = None) -> tuple[int, int]:
    """Write the requests of the stage in progress; returns (stage, requests). Records the run the first time."""
    con = connect(db)
    try:
        if runs.stored_run(con, run_id) is None:
            config = load_config({"run_id": run_id, "db": str(db)}, config_file)
            target = BatchTarget(config)
            selection = select(con, config)
            check_templates(selection.pairs, selection.attributes, config.conditions, target.prompt_format)
            identity = json.dumps(target.identity(), sort_keys=True)
            runs.record_run(con, run_id, config, target, identity, selection)
            runs.set_status(con, run_id, BATCH)
        config, target = _open_run(con, db, run_id)
        stage, items = pipeline.batch_stage(con, config, target.prompt_format)
        lines = []
        for item in items:
            url, body = target.request(item.query())
            lines.append(json.dumps({"custom_id": item.item_id, "method": "POST", "url": url, "body": body}))
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return stage, len(lines)
    finally:
        con.close()


def import_results(db: Path, run_id: str, results: Path) -> ImportReport:
    """Store the answers of a results file (module docstring); the report says what was and was not imported."""
    if not results.is_file():
        raise UserError(f"{results}: no such file")
    con = connect(db)
    try:
        config, target = _open_run(con, db, run_id)
        report = ImportReport()
        items = {item.item_id: item for stage in (1, 2) for item in _items(con, run_id, stage)}
        pending = pipeline.unanswered_item_ids(con, run_id)
        answered, seen = [], {}
        for number, line in _lines(results):
            custom_id, why = _check_line(line, items, seen)
            if why is None:
                seen[custom_id] = number
                if custom_id not in pending:
                    report.already += 1
                    continue
                try:
                    answered.append((items[custom_id], target.reply(items[custom_id].query(),
                                                                    line["response"]["body"])))  # fmt: skip
                    continue
                except (KeyError, IndexError, TypeError, ValueError) as error:
                    why = f"custom_id {custom_id}: unreadable result ({type(error).__name__}: {str(error)[:200]})"
            report.problems.append(f"line {number}: {why}")
        pipeline.store_batch_replies(con, run_id, answered)
        report.imported = len(answered)
        report.stage, left = pipeline.batch_stage(con, config, target.prompt_format)
        report.pending = len(left)
        report.complete = report.stage == 2 and not left
        runs.set_status(con, run_id, COMPLETE if report.complete else BATCH)
        return report
    finally:
        con.close()


def _items(con: duckdb.DuckDBPyConnection, run_id: str, stage: int) -> list[Item]:
    from probe.dataset.dataset import item_from_row

    frame = con.execute("SELECT * FROM items WHERE run_id = ? AND stage = ?", [run_id, stage]).df()
    return [item_from_row(row) for row in frame.to_dict("records")]


def _lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON or the exception) for every non-blank line."""
    with path.open(encoding="utf-8", errors="replace") as file:
        for number, text in enumerate(file, start=1):
            if text.strip():
                try:
                    yield number, json.loads(text)
                except json.JSONDecodeError as error:
                    yield number, error


def _check_line(line: Any, items: dict[str, Item], seen: dict[str, int]) -> tuple[str | None, str | None]:
    """(custom_id, None) for a result line to import, else (custom_id or None, why not)."""
    if isinstance(line, json.JSONDecodeError):
        return None, f"not JSON ({line.msg})"
    custom_id = line.get("custom_id") if isinstance(line, dict) else None
    if not isinstance(custom_id, str):
        return None, "no custom_id"
    if custom_id not in items:
        return custom_id, f"custom_id {custom_id} is no item of this run (a result of another run?)"
    if custom_id in seen:
        return custom_id, f"custom_id {custom_id} repeats line {seen[custom_id]}"
    response = line.get("response") or {}
    if line.get("error") or response.get("status_code") != 200:
        detail = line.get("error") or f"status {response.get('status_code')}"
        return custom_id, f"custom_id {custom_id}: the engine reported an error ({str(detail)[:200]})"
    return custom_id, None

