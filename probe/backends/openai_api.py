"""OpenAI-compatible HTTP backend: OpenAI, vLLM, Ollama, llama.cpp (also drives the embedded llamacpp one).

Decoding `score` (the default): every option's exact log-likelihood from the server's prompt
log-probabilities (openai_score.py: vLLM-style replies, or llama.cpp's server), label = their argmax; a
server that cannot score stops the run at start. Decoding `generate`: the request constrains the output to
the options (a GBNF grammar for llama.cpp, a JSON schema for servers with structured output) and the reply
is parsed into an option (openai_request.py, shared with batch files); no scores are stored (a chat
server's top logprobs of the first token are neither every option nor the options' whole texts, so they
could disagree with the label). Requests run
concurrently on one event loop; transient failures (429 with Retry-After, 5xx, timeouts, dropped
connections, unreadable bodies) are retried with bounded exponential backoff (what a failure means:
openai_failures.py), and an item that still fails becomes `unknown` with its error. `timeout` bounds each
request as a whole (a reply trickling in byte by byte cannot outlast it), and a breaker over the first
requests (backends/failfast.py) stops a run whose server answers none of them, so an unusable server fails a
run of any size in under a minute.
Failures that every other request would repeat (connection refused, unknown host, a redirect loop, 401,
403, unknown model) stop the run at once with `RunFailed` naming host:port. A stop signal (SIGTERM,
SIGHUP) sends no further request and gives those in flight STOP_GRACE_S. Reply bodies are read with a size cap
(backends/http.py). The API key is read from OPENAI_API_KEY when the client is built, is never part of the
identity, and is scrubbed (probe/common/redact.py) from every error text, even when a server echoes it back.
"""

from __future__ import annotations

import asyncio
import os
import urllib.parse
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

import openai

from probe.backends.base import BackendDefaults, Query, Reply, default_cache_key_parts
from probe.backends.endpoints import MultiEndpointBackend, split_urls
from probe.backends.failfast import FirstRequestsBreaker
from probe.backends.http import RefusedReply, capped_client
from probe.backends.openai_failures import (
    describe,
    is_transient,
    names_an_unknown_model,
    raise_if_every_request_would_fail,
    retry_delay,
)
from probe.backends.openai_request import CHAT_PATH, generated_reply, generation_request
from probe.backends.openai_score import (
    LLAMA_CPP,
    PROMPT_LOGPROBS,
    LlamaCppServedBackend,
    PromptLogprobScorer,
    check_same_protocol,
    detect_scoring,
    scoring_identity,
)
from probe.common import stopping
from probe.common.errors import RunFailed, UserError
from probe.common.redact import (
    API_KEY_VARIABLE,
    host_port,
    register_secret,
    register_url_secrets,
    safe_url,
    scrub,
    scrub_logs,
)
from probe.common.vocabulary import DECODINGS, UNKNOWN

if TYPE_CHECKING:
    from probe.store.spec import BackendSpec

BASE_URL_VARIABLE = "OPENAI_BASE_URL"  # read by the openai client when no base_url is given
# OpenAI models that only serve the legacy completions endpoint.
COMPLETIONS_ONLY_MODELS = ("gpt-3.5-turbo-instruct", "davinci-002", "babbage-002")
CONSTRAINTS = ("grammar", "json_schema", "none")
MAX_SERVED_MODELS = 10  # distinct model names kept from replies (a server inventing one per reply is not stored whole)
STOP_POLL_S = 0.2  # how often a batch in flight looks for SIGTERM/SIGHUP
STOP_GRACE_S = 5.0  # then how long its requests in flight may still take: a run stops within 10 s
DEFAULT_CONCURRENCY = 8


@dataclass(frozen=True)
class ApiSettings:
    """Everything that decides how requests are made; all but the retry knobs are part of the identity."""

    model: str
    base_url: str | None = None  # None: api.openai.com
    api_mode: str = "chat"  # "chat" (chat.completions) or "completions"
    constrain: str = "none"  # "grammar" (llama.cpp GBNF), "json_schema" (response_format) or "none"
    max_tokens: int = 16
    concurrency: int = 8
    timeout_s: float = 30.0  # the whole request (config.py: timeout)
    max_retries: int = 5
    backoff_s: float = 1.0  # first retry delay; doubles per attempt, capped (openai_failures.retry_delay)
    decoding: str = "generate"  # or "score": exact option log-likelihoods (openai_score.py)

    def __post_init__(self) -> None:
        if self.decoding not in DECODINGS:
            raise UserError(f"--decoding {self.decoding!r}: choose from {', '.join(DECODINGS)}")
        if self.api_mode not in ("chat", "completions"):
            raise UserError(f"api_mode {self.api_mode!r}: choose chat or completions")
        if self.constrain not in CONSTRAINTS:
            raise UserError(f"constrain {self.constrain!r}: choose from {', '.join(CONSTRAINTS)}")
        if self.concurrency < 1 or self.max_retries < 0 or self.max_tokens < 1 or self.timeout_s <= 0:
            raise UserError("concurrency, max_tokens and timeout must be positive, max_retries >= 0")


# An item of a batch stopped by SIGTERM/SIGHUP before its reply came: stored as a failure, so resume asks it.
_NOT_ASKED = Reply(label=UNKNOWN, error="not answered: the run was stopped before the reply came")


class UnreadableResponse(Exception):
    """A 200 reply without the fields an OpenAI-compatible reply has (retried like a 5xx)."""


class OpenAIBackend(BackendDefaults):
    """Answers queries through an OpenAI-compatible endpoint; see the module docstring."""

    def __init__(self, settings: ApiSettings, api_key: str | None = None) -> None:
        self.settings = settings
        self.prompt_format = "chat" if settings.api_mode == "chat" else "completion"
        self.batch_size = settings.concurrency * 4
        self._api_key = api_key
        register_secret(api_key)
        register_url_secrets(settings.base_url)
        scrub_logs()
        self._loop = asyncio.new_event_loop()
        self._client: openai.AsyncOpenAI | None = None
        self._scorer = (
            PromptLogprobScorer(settings.model, settings.base_url or "", self.prompt_format)
            if settings.decoding == "score"
            else None
        )
        self._where = host_port(settings.base_url)
        self._served_models: set[str] = set()  # the model names the server's replies carry
        self._breaker = FirstRequestsBreaker(
            self._where, timeout_s=settings.timeout_s, max_retries=settings.max_retries
        )

    def identity(self) -> dict[str, object]:
        decoding = asdict(self.settings)
        for transport_only in ("concurrency", "timeout_s", "max_retries", "backoff_s", "decoding"):
            del decoding[transport_only]
        decoding["base_url"] = safe_url(self.settings.base_url)
        if self._scorer is not None:  # what shapes generated text only
            del decoding["constrain"], decoding["max_tokens"]
            return {"backend": "openai", "temperature": 0.0, **decoding, **scoring_identity(PROMPT_LOGPROBS)}
        return {"backend": "openai", "temperature": 0.0, **decoding, "decided_by": "generate"}

    def cache_key_parts(self, query: Query) -> list[object]:
        return default_cache_key_parts(query)

    def served_models(self) -> set[str]:
        """The model names in the server's replies (a proxy or alias may serve another model than asked for)."""
        return set(self._served_models)

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        return self._loop.run_until_complete(self._answer_all(queries))

    def close(self) -> None:
        if self._loop.is_closed():
            return
        if self._client is not None:
            self._loop.run_until_complete(self._client.close())
            self._client = None
        self._loop.close()

    async def _answer_all(self, queries: Sequence[Query]) -> list[Reply]:
        if self._client is None:
            self._client = openai.AsyncOpenAI(
                api_key=self._api_key or os.environ.get(API_KEY_VARIABLE) or "no-key",
                base_url=_without_query(self.settings.base_url),
                default_query=_query(self.settings.base_url),  # ?api-key=... (Azure-style) on every request
                timeout=self.settings.timeout_s,
                max_retries=0,  # retries are ours: Retry-After, unreadable bodies, one bound
                http_client=capped_client(self.settings.timeout_s),
            )
        limit = asyncio.Semaphore(self.settings.concurrency)

        async def one(query: Query) -> Reply:
            async with limit:
                if stopping.requested():  # SIGTERM/SIGHUP: no new request; the runner saves and stops after the batch
                    return _NOT_ASKED
                return await self._answer_with_retries(query)

        tasks = [asyncio.ensure_future(one(query)) for query in queries]
        watcher = asyncio.ensure_future(_abandon_on_stop_signal(tasks))
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in tasks:
                if task.done() and not task.cancelled() and task.exception() is not None:
                    raise task.exception()  # RunFailed: every other request would fail the same way
            return [_NOT_ASKED if task.cancelled() else task.result() for task in tasks]
        finally:  # a RunFailed stops the batch: the requests still waiting are not sent
            for task in [*tasks, watcher]:
                task.cancel()
            await asyncio.gather(*tasks, watcher, return_exceptions=True)

    async def _answer_with_retries(self, query: Query) -> Reply:
        attempt = 0
        while True:
            deadline_s = self._breaker.attempt_deadline_s()
            try:
                async with asyncio.timeout(deadline_s):  # the whole request: a trickling reply cannot outlast it
                    reply = await self._answer_once(query)
                self._breaker.succeeded()
                return reply
            except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as error:
                raise RunFailed(f"{self._where}: {describe(error)}") from None
            except RefusedReply as error:
                return self._failed_item(attempt, f"{type(error).__name__}: {error}")
            except openai.BadRequestError as error:
                if names_an_unknown_model(error):
                    raise RunFailed(f"{self._where}: {describe(error)}") from None
                return self._failed_item(attempt, describe(error))
            except (openai.APIError, UnreadableResponse, ValueError, TimeoutError, RecursionError) as error:
                raise_if_every_request_would_fail(self._where, error)
                cause = (
                    f"no complete reply within {deadline_s:.3g} s"
                    if isinstance(error, TimeoutError)
                    else (describe(error))
                )
                if not is_transient(error) or attempt >= self.settings.max_retries:
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    return self._failed_item(attempt, f"{cause}{tries}")
                self._breaker.failed(attempt, cause)
                await asyncio.sleep(self._breaker.wait_s(retry_delay(error, attempt, self.settings.backoff_s)))
                attempt += 1

    def _failed_item(self, attempt: int, error: str) -> Reply:
        """The item's last attempt failed: it is stored as unknown with `error` (unless the breaker trips)."""
        self._breaker.failed(attempt, error, last=True)
        return Reply(label=UNKNOWN, error=error)

    async def _answer_once(self, query: Query) -> Reply:
        if self._scorer is not None:
            return await self._scorer.reply(self._client, query)
        settings = self.settings
        path, body = generation_request(
            query,
            model=settings.model,
            max_tokens=settings.max_tokens,
            constrain=settings.constrain,
            api_mode=settings.api_mode,
        )
        standard = {
            key: body.pop(key) for key in ("model", "max_tokens", "temperature", "messages", "prompt") if key in body
        }
        if path == CHAT_PATH:
            response = await self._client.chat.completions.create(**standard, extra_body=body)
            text = _chat_text(response)
        else:
            response = await self._client.completions.create(**standard, extra_body=body)
            text = _completion_text(response)
        served = getattr(response, "model", None)
        if isinstance(served, str) and served and len(self._served_models) < MAX_SERVED_MODELS:
            self._served_models.add(served[:200])
        return generated_reply(text, query)


async def _abandon_on_stop_signal(requests: Sequence[asyncio.Task[Reply]]) -> None:
    """After a stop signal, the requests in flight get STOP_GRACE_S to finish (their replies are saved); then they
    are abandoned: a slow server or a long Retry-After wait is not waited out."""
    while not stopping.requested():
        await asyncio.sleep(STOP_POLL_S)
    await asyncio.sleep(STOP_GRACE_S)
    for request in requests:
        request.cancel()


def _chat_text(response: Any) -> str:
    text = getattr(getattr(_first_choice(response), "message", None), "content", None)
    if not isinstance(text, str):
        raise UnreadableResponse("reply has no message content")
    return text


def _completion_text(response: Any) -> str:
    text = getattr(_first_choice(response), "text", None)
    if not isinstance(text, str):
        raise UnreadableResponse("reply has no text")
    return text


def _first_choice(response: Any) -> Any:
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise UnreadableResponse(f"reply has no choices: {scrub(response)[:200]}")
    return choices[0]


def _without_query(url: str | None) -> str | None:
    return urllib.parse.urlsplit(url)._replace(query="").geturl() if url else url


def _query(url: str | None) -> dict[str, str] | None:
    """The base URL's query parameters: the client would otherwise paste them into the middle of the path."""
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query)) or None if url else None


def resolve_api_mode(api_mode: str, model: str) -> str:
    """`auto` picks completions for the OpenAI models that only have that endpoint, else chat."""
    if api_mode != "auto":
        return api_mode
    return "completions" if model.startswith(COMPLETIONS_ONLY_MODELS) else "chat"


def settings_from(config: BackendSpec) -> ApiSettings:
    if not config.model:
        raise UserError("--model: the openai backend needs a model name (e.g. gpt-3.5-turbo-instruct)")
    # The endpoint the client will really use: OPENAI_BASE_URL when no --base-url is given. It is part of the
    # identity (recorded masked, hashed into cache keys), so answers from one server are never another's.
    base_url = config.base_url or os.environ.get(BASE_URL_VARIABLE) or None
    if not base_url and not os.environ.get(API_KEY_VARIABLE):
        raise UserError(f"{API_KEY_VARIABLE} is not set (needed for the OpenAI API; or give --base-url)")
    return ApiSettings(
        model=config.model,
        base_url=base_url,
        api_mode=resolve_api_mode(config.api_mode, config.model),
        constrain=config.constrain if config.constrain != "auto" else "none",
        max_tokens=config.max_tokens,
        concurrency=config.concurrency or DEFAULT_CONCURRENCY,
        timeout_s=config.timeout,
        max_retries=config.max_retries,
        backoff_s=config.backoff,
        decoding=config.decoding,
    )


def create(settings: ApiSettings) -> OpenAIBackend | MultiEndpointBackend | LlamaCppServedBackend:
    urls = split_urls(settings.base_url)
    if settings.decoding == "score":  # probe the servers first: one that cannot score stops the run here
        api_key = os.environ.get(API_KEY_VARIABLE) or "no-key"
        targets = urls or ["https://api.openai.com/v1"]
        chat = settings.api_mode == "chat"
        protocol = check_same_protocol([detect_scoring(url, settings.model, api_key, chat) for url in targets], targets)
        if protocol == LLAMA_CPP:
            return LlamaCppServedBackend(settings.model, urls, settings.api_mode, settings.timeout_s)
    if len(urls) > 1:  # --base-url URL1,URL2,...: one run spread over several servers
        endpoints = [OpenAIBackend(replace(settings, base_url=url)) for url in urls]
        return MultiEndpointBackend(endpoints, chunk_size=settings.concurrency)
    return OpenAIBackend(settings)
