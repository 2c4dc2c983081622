"""Exact option scores from a served model (`--backend openai`, decoding `score`).

Two kinds of server can score, and `detect_scoring` tells them apart when the backend starts:
- llama.cpp's server (it answers GET /props): the exact scorer the llamacpp backend uses
  (llamacpp_score.py), pointed at the server's root.
- vLLM and servers with its replies: prompt log-probabilities of a completions request (`prompt_logprobs`,
  or the OpenAI-style `echo` + `logprobs`, whose `token_logprobs` follow the prompt's tokens).

Context and continuation are split as every engine splits them (model_input.py, after
lm-evaluation-harness) and each is tokenized on its own by the server (`/tokenize`), so the model sees
exactly the tokens hf-causal scores. A chat prompt is tokenized from its messages (the
server's chat template applied once, no special tokens added again); the request then carries token ids,
never rendered text, so no template is applied twice. One request per query carries every option's
sequence (a completions prompt may be a list of token-id lists), max_tokens 1, temperature 0.

A server that can do neither stops the run before the first question, with one line naming
`--decoding generate`.
"""

from __future__ import annotations

import math
import urllib.parse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import httpx

from probe.backends.base import BackendDefaults, Query, Reply, default_cache_key_parts, score_reply
from probe.backends.llamacpp_score import LlamaCppScorer
from probe.backends.model_input import chat_messages, completion_pair
from probe.common.errors import RunFailed, UserError
from probe.common.redact import host_port, safe_url

if TYPE_CHECKING:
    import openai

LLAMA_CPP = "llama.cpp"
PROMPT_LOGPROBS = "prompt-logprobs"
PROBE_TIMEOUT_S = 5.0  # each probe request: a server that cannot score is named within seconds
PROBE_TEXT = "Answer: yes"
CANNOT_SCORE = (
    "returns no prompt log-probabilities, so answer options cannot be scored exactly; "
    "add --decoding generate to parse generated answers instead"
)


def server_root(base_url: str) -> str:
    """http://host:port/v1?key=... -> http://host:port (vLLM's /tokenize, llama.cpp's endpoints)."""
    parts = urllib.parse.urlsplit(base_url)
    path = parts.path.rstrip("/").removesuffix("/v1")
    return parts._replace(path=path, query="", fragment="").geturl()


def detect_scoring(base_url: str, model: str, api_key: str, chat: bool) -> str:
    """LLAMA_CPP or PROMPT_LOGPROBS; a UserError naming --decoding generate when the server cannot score.

    `chat`: the prompts are chat messages, so the probe also tokenizes a message with the server's template."""
    root = server_root(base_url)
    where = host_port(base_url)
    parts = urllib.parse.urlsplit(base_url)
    query = dict(urllib.parse.parse_qsl(parts.query))  # ?api-key=... (Azure-style) on every request
    headers = {"Authorization": f"Bearer {api_key}"}
    try:
        with httpx.Client(timeout=PROBE_TIMEOUT_S, headers=headers, params=query) as client:
            props = client.get(root + "/props")
            if props.status_code == 200 and "default_generation_settings" in _json(props):
                return LLAMA_CPP
            tokens = client.post(root + "/tokenize", json={"model": model, "prompt": PROBE_TEXT})
            if tokens.status_code in (401, 403):
                raise RunFailed(f"{where}: the server rejected the API key (HTTP {tokens.status_code})")
            ids = _json(tokens).get("tokens") if tokens.status_code == 200 else None
            if not (isinstance(ids, list) and len(ids) >= 2 and all(isinstance(i, int) for i in ids)):
                raise UserError(f"--base-url {where}: the server has no /tokenize and {CANNOT_SCORE}")
            if chat:
                messages = [{"role": "user", "content": PROBE_TEXT}]
                templated = client.post(root + "/tokenize", json={"model": model, "messages": messages})
                if templated.status_code != 200:
                    raise UserError(
                        f"--base-url {where}: the server cannot apply a chat template to a message (HTTP "
                        f"{templated.status_code}); for a model without one give --api-mode completions"
                    )
            body = _completion_body(model, [ids])
            reply = client.post(parts._replace(query="").geturl().rstrip("/") + "/completions", json=body)
    except httpx.ConnectError as error:
        raise RunFailed(f"{where}: cannot connect ({error}); is the server running and the --base-url right?") from None
    except httpx.HTTPError as error:
        raise UserError(f"--base-url {where}: {type(error).__name__} probing for scores; {CANNOT_SCORE}") from None
    choices = _json(reply).get("choices") if reply.status_code == 200 else None
    try:
        _sequence_logprobs(choices[0], ids)
    except (LookupError, TypeError, ValueError):
        raise UserError(f"--base-url {where}: the server {CANNOT_SCORE}") from None
    return PROMPT_LOGPROBS


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _completion_body(model: str, sequences: list[list[int]]) -> dict[str, Any]:
    """Prompt log-probabilities of each sequence, asked both ways vLLM documents; one token generated."""
    return {
        "model": model,
        "prompt": sequences,
        "max_tokens": 1,
        "temperature": 0.0,
        "echo": True,
        "logprobs": 0,
        "prompt_logprobs": 0,
    }


def _sequence_logprobs(choice: dict[str, Any], sequence: list[int]) -> list[float]:
    """log p(token_i | tokens before it) for i >= 1, from `prompt_logprobs` or else echoed `token_logprobs`."""
    per_position = choice.get("prompt_logprobs")
    if per_position is not None:
        values = [float(per_position[i][str(token)]["logprob"]) for i, token in enumerate(sequence) if i]
    else:
        echoed = choice["logprobs"]["token_logprobs"]
        if len(echoed) < len(sequence):
            raise ValueError("fewer echoed log-probabilities than prompt tokens")
        values = [float(value) for value in echoed[1 : len(sequence)]]
    if not all(math.isfinite(value) for value in values):
        raise ValueError("a log-probability that is not a finite number")
    return values


class PromptLogprobScorer:
    """Scores a query's options from one completions request (PROMPT_LOGPROBS servers); see the module docstring."""

    def __init__(self, model: str, base_url: str, prompt_format: str) -> None:
        self._model = model
        self._root = server_root(base_url)
        self._prompt_format = prompt_format
        self._option_tokens: dict[str, list[int]] = {}

    async def reply(self, client: openai.AsyncOpenAI, query: Query) -> Reply:
        """A score-decided reply; transport errors propagate to the openai backend's retry loop."""
        context = await self._context_tokens(client, query)
        options = [await self._continuation_tokens(client, query, option.text) for option in query.options]
        sequences = [context + tokens for tokens in options]
        body = _completion_body(self._model, sequences)
        extra = {"prompt_logprobs": body.pop("prompt_logprobs")}  # vLLM's own parameter
        response = await client.completions.create(**body, extra_body=extra)
        choices = sorted((choice.model_dump() for choice in response.choices), key=lambda choice: choice["index"])
        if len(choices) != len(sequences):
            raise ValueError(f"{len(choices)} choices for {len(sequences)} scored sequences")
        scores = {}
        for option, tokens, sequence, choice in zip(query.options, options, sequences, choices, strict=True):
            scores[option.label] = sum(_sequence_logprobs(choice, sequence)[-len(tokens) :])
        return score_reply(scores, query.options)

    async def _context_tokens(self, client: openai.AsyncOpenAI, query: Query) -> list[int]:
        if self._prompt_format == "chat":  # the server's chat template, applied once, no BOS added again
            return await self._tokenize(client, {"messages": chat_messages(query), "add_generation_prompt": True})
        context, _ = completion_pair(query, "")
        return await self._tokenize(client, {"prompt": context, "add_special_tokens": True})

    async def _continuation_tokens(self, client: openai.AsyncOpenAI, query: Query, text: str) -> list[int]:
        continuation = text if self._prompt_format == "chat" else completion_pair(query, text)[1]
        if continuation not in self._option_tokens:
            tokens = await self._tokenize(client, {"prompt": continuation, "add_special_tokens": False})
            if not tokens:
                raise ValueError(f"option {text!r} has no tokens")
            self._option_tokens[continuation] = tokens
        return self._option_tokens[continuation]

    async def _tokenize(self, client: openai.AsyncOpenAI, body: dict[str, Any]) -> list[int]:
        reply = await client.post(self._root + "/tokenize", body={"model": self._model, **body}, cast_to=object)
        tokens = reply.get("tokens") if isinstance(reply, dict) else None
        if not isinstance(tokens, list) or not all(isinstance(token, int) for token in tokens):
            raise ValueError("the server's /tokenize reply has no token list")
        return tokens


class LlamaCppServedBackend(BackendDefaults):
    """`--backend openai` against llama.cpp servers: llamacpp_score.py's exact scorer at each server's root."""

    def __init__(self, model: str, urls: Sequence[str], api_mode: str, timeout_s: float) -> None:
        self.prompt_format = "chat" if api_mode == "chat" else "completion"
        self.batch_size = 4 * len(urls)  # one query at a time per server (llamacpp_score.py)
        self._identity = {
            "backend": "openai",
            "model": model,
            "base_url": ",".join(str(safe_url(url)) for url in urls),
            "api_mode": api_mode,
            **scoring_identity(LLAMA_CPP),
        }
        self._scorer = LlamaCppScorer([server_root(url) for url in urls], self.prompt_format, timeout_s)

    def identity(self) -> dict[str, object]:
        return dict(self._identity)

    def cache_key_parts(self, query: Query) -> list[object]:
        return default_cache_key_parts(query)

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        return self._scorer.answer(queries)

    def close(self) -> None:
        self._scorer.close()


def scoring_identity(protocol: str) -> dict[str, object]:
    """What the identity of a scored openai run adds: how its scores were read."""
    how = {
        LLAMA_CPP: "exact: llama.cpp server, sum of forced option-token log-probabilities",
        PROMPT_LOGPROBS: "exact: prompt log-probabilities of the option tokens after the server-tokenized context",
    }[protocol]
    return {"decoding": "score", "decided_by": "score", "scores": how}


def check_same_protocol(protocols: Sequence[str], urls: Sequence[str]) -> str:
    """Several --base-url servers must score the same way (one run, one rule)."""
    if len(set(protocols)) > 1:
        listed = ", ".join(f"{host_port(url)}: {protocol}" for url, protocol in zip(urls, protocols, strict=True))
        raise UserError(f"--base-url: the servers score differently ({listed}); give servers of one kind")
    return protocols[0]
