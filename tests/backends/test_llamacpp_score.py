"""The llama.cpp scorer against a scripted server (httpx's mock transport): an option's score is the sum of its
tokens' forced log-probabilities, options sharing a position are read from one request, a request that evaluated
one token is asked again after a breaker, and a failed request is an unknown answer with its error."""

from __future__ import annotations

import json

import httpx

from probe.backends.base import Option, Query
from probe.backends.llamacpp_score import BREAKER, FORCE_BIAS, LlamaCppScorer

PROMPT = [1, 2, 3]
TOKENS = {" yes": [10], " no": [11, 12]}
LOGPROB = {10: -0.5, 11: -0.25, 12: -0.125}  # 11 and 12 together: -0.375, more likely than 10's -0.5


class ScriptedServer:
    """Answers /tokenize from TOKENS and /completion with the forced token's LOGPROB; the first `single` completions
    report one evaluated token."""

    def __init__(self, single: int = 0) -> None:
        self.single, self.completions = single, []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if request.url.path == "/tokenize":
            return httpx.Response(200, json={"tokens": TOKENS.get(body["content"], PROMPT)})
        self.completions.append(body)
        if body["n_predict"] == 0:  # a breaker
            return httpx.Response(200, json={"timings": {"prompt_n": 2}, "completion_probabilities": []})
        [[token, bias]] = body["logit_bias"]
        assert bias == FORCE_BIAS
        evaluated = 1 if self.single > 0 else 2
        self.single -= 1
        top = [{"id": other, "logprob": value} for other, value in LOGPROB.items()]
        generated = {"id": token, "logprob": LOGPROB[token], "top_logprobs": top}
        return httpx.Response(200, json={"timings": {"prompt_n": evaluated}, "completion_probabilities": [generated]})


def _score(server: ScriptedServer) -> list:
    scorer = LlamaCppScorer(["http://server"], "completion", timeout_s=5)
    scorer._client = httpx.AsyncClient(transport=httpx.MockTransport(server))
    query = Query("1", "binary", "Is it?", "", "", (Option("yes", "yes"), Option("no", "no")), {})
    try:
        return scorer.answer([query])
    finally:
        scorer.close()


def test_an_option_scores_the_sum_of_its_forced_tokens_and_shared_positions_take_one_request() -> None:
    server = ScriptedServer()
    [reply] = _score(server)
    assert (reply.label, reply.raw, reply.decided_by) == ("no", "no", "score")
    assert reply.scores == {"yes": -0.5, "no": -0.375}
    # position 0 once (both options' first tokens from its top log-probabilities), then no's second token
    assert [completion["prompt"] for completion in server.completions] == [PROMPT, [*PROMPT, 11]]


def test_a_position_evaluated_alone_is_asked_again_after_a_breaker() -> None:
    server = ScriptedServer(single=1)
    [reply] = _score(server)
    assert reply.scores == {"yes": -0.5, "no": -0.375}
    assert [(c["prompt"], c["n_predict"]) for c in server.completions[:3]] == [
        (PROMPT, 1),
        ([PROMPT[0], BREAKER[0]], 0),  # the cache left at the context but its last two tokens, then a throwaway
        (PROMPT, 1),
    ]


def test_a_failed_request_is_an_unknown_answer_with_its_error() -> None:
    def failing(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, json={})

    scorer = LlamaCppScorer(["http://server"], "completion", timeout_s=5)
    scorer._client = httpx.AsyncClient(transport=httpx.MockTransport(failing))
    query = Query("1", "binary", "Is it?", "", "", (Option("yes", "yes"), Option("no", "no")), {})
    [reply] = scorer.answer([query])
    scorer.close()
    assert (reply.label, reply.scores, reply.decided_by) == ("unknown", None, "score")
    assert reply.error.startswith("llama.cpp scoring failed: HTTPStatusError: Server error '503 Service Unavailable'")
