"""What a failed request to an OpenAI-compatible server means (probe/backends/openai_failures.py), on hand-made
errors: 429 and 5xx are retried, other statuses are not; the wait is the server's Retry-After or an exponential
backoff, both capped; a refused connection or a redirect loop ends the run naming the server. Against servers that
fail for real: test_failing_servers.py, test_unusable_servers.py."""

from __future__ import annotations

import email.utils
import time

import httpx
import openai
import pytest

from probe.backends.openai_failures import (
    MAX_BACKOFF_S,
    MAX_RETRY_AFTER_S,
    describe,
    is_transient,
    names_an_unknown_model,
    raise_if_every_request_would_fail,
    retry_delay,
)
from probe.common.errors import RunFailed

REQUEST = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")


def status_error(status: int, message: str = "failed", headers: dict[str, str] | None = None) -> openai.APIStatusError:
    response = httpx.Response(status, headers=headers or {}, request=REQUEST)
    return openai.APIStatusError(message, response=response, body=None)


def connection_error(cause: Exception) -> openai.APIConnectionError:
    try:
        try:
            raise cause
        except Exception as inner:
            raise openai.APIConnectionError(request=REQUEST) from inner
    except openai.APIConnectionError as error:
        return error


@pytest.mark.parametrize(("status", "transient"), [(429, True), (500, True), (503, True), (400, False), (404, False)])
def test_rate_limits_and_server_errors_are_retried_other_statuses_are_not(status: int, transient: bool) -> None:
    assert is_transient(status_error(status)) is transient
    assert is_transient(openai.APITimeoutError(request=REQUEST)) is True


def test_the_wait_is_retry_after_or_the_backoff_both_capped() -> None:
    assert retry_delay(status_error(429, headers={"retry-after": "2"}), attempt=5, backoff_s=1.0) == 2.0
    assert (
        retry_delay(status_error(429, headers={"retry-after": "3600"}), attempt=0, backoff_s=1.0) == MAX_RETRY_AFTER_S
    )
    soon = email.utils.formatdate(time.time() + 3600, usegmt=True)  # an HTTP date an hour away
    assert retry_delay(status_error(503, headers={"retry-after": soon}), attempt=0, backoff_s=1.0) == MAX_RETRY_AFTER_S
    assert [retry_delay(status_error(500), attempt, backoff_s=0.5) for attempt in range(3)] == [0.5, 1.0, 2.0]
    assert retry_delay(status_error(500), attempt=20, backoff_s=0.5) == MAX_BACKOFF_S


def test_a_refused_connection_or_a_redirect_loop_ends_the_run() -> None:
    with pytest.raises(RunFailed, match=r"^127\.0\.0\.1:9: cannot connect \(refused\); is the server running"):
        raise_if_every_request_would_fail("127.0.0.1:9", connection_error(httpx.ConnectError("refused")))
    with pytest.raises(RunFailed, match=r"^127\.0\.0\.1:9: redirect loop \(too many\); check the --base-url$"):
        raise_if_every_request_would_fail("127.0.0.1:9", connection_error(httpx.TooManyRedirects("too many")))
    # a dropped connection mid-run may pass: retried, not the end
    raise_if_every_request_would_fail("127.0.0.1:9", connection_error(httpx.ReadError("reset")))
    raise_if_every_request_would_fail("127.0.0.1:9", status_error(500))


def test_an_unknown_model_is_named_and_an_error_is_one_scrubbed_line() -> None:
    assert names_an_unknown_model(status_error(404, "The model `gpt-9` does not exist"))
    assert not names_an_unknown_model(status_error(400, "max_tokens is too large"))
    line = describe(status_error(500, "boom\n  at\tline 2 " + "x" * 400))
    assert line.startswith("APIStatusError: boom at line 2 xxx") and "\n" not in line
    assert len(line) == len("APIStatusError: ") + 300
