"""openai backend against the fault-injecting fake server: constraints, retries, bounds, final unknown."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from probe.backends import create_backend
from probe.backends.base import Option, Query, Reply
from probe.backends.openai_api import ApiSettings, OpenAIBackend
from probe.backends.openai_request import option_grammar
from probe.common.errors import UserError
from probe.store.config import RunConfig
from tests.fake_openai_server import FakeOpenAIServer, Step
from tests.support import SINGLE, YES_NO


def query(item_id: str, options: tuple[Option, ...] = YES_NO) -> Query:
    prompt = f"item {item_id}: Mary and John are applying for the same job. Is Mary qualified?"
    return Query(item_id, "binary", prompt, "", "", options, {})


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def backend_for(server: FakeOpenAIServer, **overrides: object) -> OpenAIBackend:
    settings = {
        "model": "fake",
        "base_url": server.base_url,
        "constrain": "grammar",
        "backoff_s": 0.01,
        "timeout_s": 2.0,
        "max_retries": 3,
        **overrides,
    }
    return OpenAIBackend(ApiSettings(**settings), api_key="sk-test-secret")


def test_grammar_constrains_and_the_label_is_generated_without_scores(server: FakeOpenAIServer) -> None:
    backend = backend_for(server)
    try:
        replies = backend.answer([query("1"), query("2", SINGLE)])
    finally:
        backend.close()
    assert replies == [
        Reply(label="yes", raw="yes", decided_by="generate"),
        Reply(label="female", raw="Mary", decided_by="generate"),
    ]
    grammars = sorted(served.body["grammar"] for served in server.served)
    assert grammars == ['root ::= " "? ("Mary" | "John")', 'root ::= " "? ("yes" | "no")']
    assert ["logprobs" in served.body for served in server.served] == [False, False]


def test_completions_mode(server: FakeOpenAIServer) -> None:
    backend = backend_for(server, api_mode="completions")
    try:
        [reply] = backend.answer([query("1", SINGLE)])
    finally:
        backend.close()
    assert backend.prompt_format == "completion"
    assert reply == Reply(label="female", raw="Mary", decided_by="generate")
    assert server.served[0].path == "/v1/completions"


def test_transient_failures_are_retried(server: FakeOpenAIServer) -> None:
    server.script([Step.server_error(500), Step.server_error(503), Step.broken_json(), Step.drop(), Step.slow(3.0)])
    backend = backend_for(server, max_retries=5)
    try:
        [reply] = backend.answer([query("1")])
    finally:
        backend.close()
    assert reply.label == "yes" and reply.error is None
    assert [served.step.kind for served in server.served] == [
        "status",
        "status",
        "broken_json",
        "drop",
        "ok",
        "ok",
    ]


def test_retry_after_is_honoured(server: FakeOpenAIServer) -> None:
    server.script([Step.rate_limited(retry_after=1)])
    backend = backend_for(server)
    try:
        [reply] = backend.answer([query("1")])
    finally:
        backend.close()
    assert reply.label == "yes"
    first, second = server.served
    assert second.at - first.at >= 1.0


def test_retries_are_bounded_and_the_item_becomes_unknown(server: FakeOpenAIServer) -> None:
    server.script([Step("status", status=500, for_prompt="item 1")] * 4)
    backend = backend_for(server, max_retries=3)
    try:
        replies = backend.answer([query("1"), query("2")])
    finally:
        backend.close()
    assert replies[0].label == "unknown"
    assert replies[0].error.startswith("InternalServerError: ") and replies[0].error.endswith("after 4 attempts")
    assert replies[1] == Reply(label="yes", raw="yes", decided_by="generate")
    assert sum("item 1" in served.body["messages"][-1]["content"] for served in server.served) == 4


def test_client_error_is_not_retried(server: FakeOpenAIServer) -> None:
    server.script([Step.server_error(422)])
    backend = backend_for(server)
    try:
        [reply] = backend.answer([query("1")])
    finally:
        backend.close()
    assert reply.label == "unknown" and reply.error.startswith("UnprocessableEntityError")
    assert len(server.served) == 1


def test_concurrency_limit(server: FakeOpenAIServer) -> None:
    server.script([Step.slow(0.3) for _ in range(8)])
    backend = backend_for(server, concurrency=4)
    started = time.monotonic()
    try:
        replies = backend.answer([query(str(i)) for i in range(8)])
    finally:
        backend.close()
    elapsed = time.monotonic() - started
    assert [reply.label for reply in replies] == ["yes"] * 8
    assert elapsed >= 0.6  # at most four at a time: two waves of 0.3 s


def test_identity_has_no_key_and_no_transport_knobs(server: FakeOpenAIServer) -> None:
    backend = backend_for(server)
    backend.close()
    identity = backend.identity()
    assert "sk-test-secret" not in repr(identity)
    assert identity == {
        "backend": "openai",
        "temperature": 0.0,
        "model": "fake",
        "base_url": server.base_url,
        "api_mode": "chat",
        "constrain": "grammar",
        "max_tokens": 16,
        "decided_by": "generate",
    }


def test_free_text_without_constraint_is_parsed(server: FakeOpenAIServer) -> None:
    server.default_answer = "As an AI I cannot say."
    backend = backend_for(server, constrain="none")
    try:
        [reply] = backend.answer([query("1")])
    finally:
        backend.close()
    assert "grammar" not in server.served[0].body
    assert reply == Reply(label="unknown", raw="As an AI I cannot say.", scores=None)


def test_grammar_escapes_quotes() -> None:
    assert option_grammar((Option('say "hi"', "yes"),)) == 'root ::= " "? ("say \\"hi\\"")'


def test_create_from_run_config(server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UserError, match="OPENAI_API_KEY is not set"):
        create_backend(RunConfig(backend="openai", model="gpt-3.5-turbo-instruct", decoding="generate").backend)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    instruct = create_backend(
        RunConfig(backend="openai", model="gpt-3.5-turbo-instruct", concurrency=2, decoding="generate").backend
    )
    instruct.close()
    assert (instruct.prompt_format, instruct.settings.api_mode, instruct.settings.concurrency) == (
        "completion",
        "completions",
        2,
    )
    local = create_backend(
        RunConfig(
            backend="openai", model="fake", base_url=server.base_url, constrain="grammar", decoding="generate"
        ).backend
    )
    try:
        [reply] = local.answer([query("1")])
    finally:
        local.close()
    assert (local.prompt_format, reply.label) == ("chat", "yes")
    assert server.served[0].body["grammar"] == 'root ::= " "? ("yes" | "no")'
    assert "sk-from-env" not in repr(local.identity())
