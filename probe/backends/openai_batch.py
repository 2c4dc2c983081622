"""The OpenAI Batch format of a run's questions: a batch engine answers them elsewhere, the answers come back.

The OpenAI Batch API and vLLM's offline `run_batch` read the same JSONL: one request a line, {custom_id,
method, url, body}, and write one result a line, {custom_id, response: {status_code, body}, error}. A
batch run is an openai-backend run (model, api_mode, decoding from its settings or RUN.toml) whose
questions go out in files instead of live requests; the flow (`probe batch export` and `import`: the stage in
progress, the answers stored as a live run stores them) is probe/pipeline/batch.py (export_requests, import_results).
custom_id = the item id. A result line that is not JSON, has no custom_id, names an item of no stage of the
run, repeats an earlier custom_id or carries an error is not imported (check_result_line says why).

Requests: decoding `generate` - the live openai backend's request body (openai_request.generation_request),
the reply text parsed into an option; decoding `score` (completion-format runs only: a batch file cannot
apply a chat template) - one /v1/completions request per item whose prompt lists context + option for
every option with `echo` and `logprobs`, the option's score the sum of the log-probabilities of the
echoed tokens from the option's first character on (a token across the boundary fails the item).
"""

from __future__ import annotations

import json
import math
from collections.abc import Container, Iterator
from pathlib import Path
from typing import Any

from probe.backends.base import Query, Reply, score_reply
from probe.backends.model_input import completion_pair
from probe.backends.openai_api import ApiSettings, resolve_api_mode
from probe.backends.openai_request import COMPLETIONS_PATH, generated_reply, generation_request
from probe.common.errors import UserError
from probe.store.spec import BackendSpec


class BatchTarget:
    """What a batch run is recorded with: the request settings and their identity (no live backend)."""

    cacheable = False

    def __init__(self, config: BackendSpec) -> None:
        if config.kind != "openai" or not config.model:
            raise UserError(
                'batch: a batch run is an openai-backend run: give backend = "openai" and a model (--config RUN.toml)'
            )
        api_mode = resolve_api_mode(config.api_mode, config.model)
        constrain = config.constrain if config.constrain != "auto" else "none"
        self.settings = ApiSettings(
            model=config.model,
            api_mode=api_mode,
            constrain=constrain,
            max_tokens=config.max_tokens,
            decoding=config.decoding,
        )
        self.prompt_format = "chat" if api_mode == "chat" else "completion"
        if config.decoding == "score" and self.prompt_format == "chat":
            raise UserError(
                "--decoding score: a batch file cannot apply the model's chat template, so scoring "
                'requests need api_mode = "completions"; or give decoding = "generate"'
            )

    def identity(self) -> dict[str, object]:
        settings = self.settings
        identity = {
            "backend": "openai",
            "engine": "batch",
            "model": settings.model,
            "api_mode": settings.api_mode,
            "temperature": 0.0,
            "decoding": settings.decoding,
            "decided_by": settings.decoding,
        }
        if settings.decoding == "generate":
            return {**identity, "constrain": settings.constrain, "max_tokens": settings.max_tokens}
        return {**identity, "scores": "echoed prompt log-probabilities of the option's characters"}

    def request(self, query: Query) -> tuple[str, dict[str, Any]]:
        if self.settings.decoding == "generate":
            settings = self.settings
            return generation_request(
                query,
                model=settings.model,
                max_tokens=settings.max_tokens,
                constrain=settings.constrain,
                api_mode=settings.api_mode,
            )
        prompts = ["".join(completion_pair(query, option.text)) for option in query.options]
        return COMPLETIONS_PATH, {
            "model": self.settings.model,
            "prompt": prompts,
            "max_tokens": 1,
            "temperature": 0.0,
            "echo": True,
            "logprobs": 0,
        }

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
            scores[option.label] = _continuation_logprob(
                choice["logprobs"], len(context), len("".join(completion_pair(query, option.text)))
            )
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


def result_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON or the exception) for every non-blank line."""
    with path.open(encoding="utf-8", errors="replace") as file:
        for number, text in enumerate(file, start=1):
            if text.strip():
                try:
                    yield number, json.loads(text)
                except json.JSONDecodeError as error:
                    yield number, error


def check_result_line(line: Any, items: Container[str], seen: dict[str, int]) -> tuple[str | None, str | None]:
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


def request_line(custom_id: str, url: str, body: dict[str, Any]) -> str:
    """One line of a requests file."""
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": url, "body": body})
