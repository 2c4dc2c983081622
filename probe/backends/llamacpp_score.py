"""Exact option log-likelihoods from a llama.cpp server, which has no prompt-logprob echo.

An option's score is sum_i log p(t_i | prompt, t_1..t_{i-1}) over the tokens t_i of its exact text. Each
term is one /completion request: the prompt (as token ids) plus the option's first i-1 tokens, one token
generated, with a logit bias that forces t_i. llama.cpp reports the sampled token's probability from the
model's own logits (before the sampler's bias), so the forced token's log-probability is exactly the term.

Reproducible to the bit, whatever the thread count, concurrency or what the prompt cache held before: on
the CPU, llama.cpp computes a position the same way in any batch of two or more tokens of one sequence
(flash attention off, see llamacpp.py), but differently (up to ~0.2 nats on SmolLM2 Q4_1) when a batch
holds one token, which is what a request whose context is cached but for its last token would evaluate.
So when a scored request reports one evaluated token (`timings.prompt_n`), a `BREAKER` request for
C[:-2] + [a throwaway token] leaves the cache at exactly C[:-2] and C is asked again: it is then evaluated
as a batch of two (and whatever else the cache lacked, more), never of one. Two slots of one server
share decode batches, which llama.cpp cuts per sequence (a 2-token evaluation next to another slot's
23 tokens became 1-token pieces: 1-5 of 6 shuffled passes over 4 queries changed scores), so concurrency
is one single-slot server per worker: a query's requests all go to one server, with no other query's
requests in between.

Tokens: the prompt as the server's own chat template renders it (`/apply-template`, chat format) or as it
is (completion format, options after a space: model_input.py, as hf-causal scores them), tokenized by
`/tokenize`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import httpx

from probe.backends.base import Option, Query, Reply, score_reply
from probe.backends.model_input import chat_messages, completion_pair
from probe.common.vocabulary import UNKNOWN

FORCE_BIAS = 1000.0  # added to the forced token's logit: no other token can win the greedy pick
# The throwaway token of a breaker request (token 0 is a special token that no prompt holds; if C[-2] is
# token 0, token 2): a cached context that contains it never matches a real prompt beyond it.
BREAKER = (0, 2)
# Top log-probabilities asked with each scored request: the other options' tokens at the same position are
# usually among them, which saves their requests (they come from the same logits, so they are equal).
TOP_LOGPROBS = 100


class LlamaCppScorer:
    """Scores every option of each query on single-slot servers at `server_addresses` (http://127.0.0.1:PORT)."""

    def __init__(self, server_addresses: Sequence[str], prompt_format: str, timeout_s: float) -> None:
        self.prompt_format = prompt_format
        self._addresses = list(server_addresses)
        self._timeout_s = timeout_s
        self._option_tokens: dict[str, list[int]] = {}
        self._loop = asyncio.new_event_loop()
        self._client: httpx.AsyncClient | None = None

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        """One score-decided reply per query (unknown with the error where a request failed)."""
        return self._loop.run_until_complete(self._score_all(queries))

    def close(self) -> None:
        if self._loop.is_closed():
            return
        if self._client is not None:
            self._loop.run_until_complete(self._client.aclose())
            self._client = None
        self._loop.close()

    async def _score_all(self, queries: Sequence[Query]) -> list[Reply]:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._timeout_s)
        replies: list[Reply | None] = [None] * len(queries)
        waiting = list(enumerate(queries))[::-1]

        async def worker(server: str) -> None:
            while waiting:
                index, query = waiting.pop()
                replies[index] = await self._reply(query, server)

        await asyncio.gather(*(worker(server) for server in self._addresses[: len(queries)]))
        return replies

    async def _reply(self, query: Query, server: str) -> Reply:
        try:
            scores = await self._score(query, server)
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as error:
            error_text = f"llama.cpp scoring failed: {type(error).__name__}: {str(error)[:300]}"
            return Reply(label=UNKNOWN, error=error_text, decided_by="score")
        return score_reply(scores, query.options)

    async def _score(self, query: Query, server: str) -> dict[str, float]:
        """Canonical label -> log-likelihood of the option's tokens after the prompt.

        Options that share a context (all first tokens share the prompt) are read from one request where
        the server's top log-probabilities hold them; each term is summed in token order.
        """
        prompt = await self._prompt_tokens(query, server)
        options = [(option.label, await self._option_tokens_after(query, option, server)) for option in query.options]
        known: dict[tuple[tuple[int, ...], int], float] = {}  # (option prefix, next token) -> log-probability
        scores = {}
        for label, tokens in options:
            total = 0.0
            for position, token in enumerate(tokens):
                prefix = tuple(tokens[:position])
                if (prefix, token) not in known:
                    wanted = {
                        other[position]
                        for _, other in options
                        if tuple(other[:position]) == prefix and len(other) > position
                    }
                    found = await self._logprobs(prompt + list(prefix), token, wanted, server)
                    known.update(((prefix, each), logprob) for each, logprob in found.items())
                total += known[(prefix, token)]
            scores[label] = total
        return scores

    async def _prompt_tokens(self, query: Query, server: str) -> list[int]:
        if self.prompt_format == "chat":
            prompt = (await self._post(server, "/apply-template", {"messages": chat_messages(query)}))["prompt"]
        else:
            prompt = completion_pair(query, "")[0]
        # As the server tokenizes a prompt it is given as text (special tokens of the template parsed).
        body = {"content": prompt, "add_special": True, "parse_special": True}
        return (await self._post(server, "/tokenize", body))["tokens"]

    async def _option_tokens_after(self, query: Query, option: Option, server: str) -> list[int]:
        text = option.text if self.prompt_format == "chat" else completion_pair(query, option.text)[1]
        if text not in self._option_tokens:
            body = {"content": text, "add_special": False, "parse_special": False}
            reply = await self._post(server, "/tokenize", body)
            if not reply["tokens"]:
                raise ValueError(f"option {option.text!r} has no tokens")
            self._option_tokens[text] = reply["tokens"]
        return self._option_tokens[text]

    async def _logprobs(self, context: list[int], token: int, wanted: set[int], server: str) -> dict[int, float]:
        """log p(t | context) for `token` (forced) and the `wanted` tokens among the top log-probabilities,
        from an evaluation of context's last position in a batch of at least two tokens (module docstring)."""
        if len(context) < 2:
            raise ValueError("a prompt of fewer than two tokens")
        body = {
            "n_probs": TOP_LOGPROBS,
            "temperature": 0.0,
            "cache_prompt": True,
            "n_predict": 1,
            "prompt": context,
            "logit_bias": [[token, FORCE_BIAS]],
        }
        reply = await self._post(server, "/completion", body)
        if reply["timings"]["prompt_n"] < 2:  # the cache held all but the last token: evaluate two
            throwaway = BREAKER[0] if context[-2] != BREAKER[0] else BREAKER[1]
            await self._post(server, "/completion", {**body, "prompt": [*context[:-2], throwaway], "n_predict": 0})
            reply = await self._post(server, "/completion", body)
            if reply["timings"]["prompt_n"] < 2:
                raise ValueError("the server evaluated a scored position alone")
        [generated] = reply["completion_probabilities"]
        if generated["id"] != token:
            raise ValueError(f"the server generated token {generated['id']}, not the forced {token}")
        found = {entry["id"]: float(entry["logprob"]) for entry in generated["top_logprobs"] if entry["id"] in wanted}
        return {**found, token: float(generated["logprob"])}

    async def _post(self, server: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self._client.post(server + path, json=body)
        response.raise_for_status()
        return response.json()
