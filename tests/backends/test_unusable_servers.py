"""An unusable server fails the run fast, whatever its size, with a line naming the cause.

Each class of server that never gives a usable reply (hangs, trickles bytes, 429 with a long Retry-After,
5xx on every request, a redirect loop) meets the first-requests breaker (backends/failfast.py) or a fatal
error; the first-reply window is shortened here so the tests take seconds (BENCHMARKS.md measures the
default settings at the paper preset's size).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probe.backends import failfast
from probe.backends.base import Query
from probe.backends.openai_api import ApiSettings, OpenAIBackend
from probe.cli import app
from probe.common.errors import RunFailed
from tests.fake_openai_server import FakeOpenAIServer, Step
from tests.support import YES_NO, query, seeded_copy

WINDOW_S = 2.0
# windows of 2 s: `make test` runs these alone, after the tests it runs on two processes
pytestmark = pytest.mark.serial


@pytest.fixture(autouse=True)
def short_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(failfast, "FIRST_REPLY_WINDOW_S", WINDOW_S)


def ask(prompt: str) -> Query:
    return Query(prompt, "binary", prompt, "", "", YES_NO, {})


def fails_with(step: Step, items: int = 200, **settings: object) -> tuple[str, float, int]:
    """The RunFailed message, the seconds it took and the requests served, for a server answering every request
    with `step`."""
    with FakeOpenAIServer(fault_plan=lambda prompt, attempt: step) as server:
        options = {"concurrency": 8, "timeout_s": 0.5, "backoff_s": 0.01, **settings}
        backend = OpenAIBackend(ApiSettings(model="m", base_url=server.base_url, **options))
        started = time.monotonic()
        try:
            with pytest.raises(RunFailed) as raised:
                backend.answer([ask(f"item {n}") for n in range(items)])
        finally:
            backend.close()
        took = time.monotonic() - started
        served = len(server.served)
    host = server.base_url.removeprefix("http://").removesuffix("/v1")
    message = str(raised.value)
    assert message.startswith(f"{host}: ")
    return message.removeprefix(f"{host}: "), took, served


def test_a_server_that_never_answers_fails_within_the_window() -> None:
    message, took, _ = fails_with(Step.slow(60))
    assert message.startswith(
        "the server answered none of the first requests (4 items failed, the last with: no complete reply within "
    )
    assert took < WINDOW_S + 1


def test_a_trickling_reply_meets_the_deadline_of_the_whole_request() -> None:
    """A byte every 0.1 s never trips a per-read timeout of 0.5 s; the request's total deadline ends it."""
    message, took, _ = fails_with(Step.trickle(0.1))
    assert "the last with: no complete reply within 0.5 s" in message
    assert took < WINDOW_S + 1


def test_endless_429_with_a_long_retry_after_is_not_waited_out() -> None:
    message, took, served = fails_with(Step.rate_limited(retry_after=3600))
    assert message.startswith("no reply within 2 s of the first request (last: RateLimitError: Error code: 429")
    assert WINDOW_S - 0.1 < took < WINDOW_S + 1
    assert served == 8  # the 8 in flight, each waiting for its retry until the window ended


def test_500_on_every_request_stops_after_the_first_items_fail_three_times() -> None:
    message, took, served = fails_with(Step.server_error(500), items=10_000)
    assert message == (
        "the server answered none of the first requests (4 items failed, the last with: InternalServerError: "
        "Error code: 500 - scripted 500); the run is marked failed and resumes with the same command"
    )
    assert served <= 8 * 4 and took < 5  # 10,000 items; 8 in flight, tried 3 times (4: one more before the stop)


def test_a_redirect_loop_is_named() -> None:
    message, took, served = fails_with(Step.redirect_loop())
    assert message == "redirect loop (Exceeded maximum allowed redirects.); check the --base-url"
    # 21 requests an item (20 redirects); of the 200 items about the 8 in flight start, a few more on a loaded
    # machine before the first loop is named (10 seen under load), never the rest.
    assert served <= 2 * 8 * 21 and took < 2


def test_few_retries_count_each_item_once_it_has_failed_them_all() -> None:
    message, _, served = fails_with(Step.server_error(503), max_retries=0)
    assert message.startswith("the server answered none of the first requests (4 items failed, the last with: Inte")
    assert served <= 8 + 4  # 4 struck, the others in flight or just sent


def test_replies_refused_on_every_request_stop_the_run_too() -> None:
    """Not retried (each would come again), yet a server whose every reply is too large is no more usable."""
    message, _, served = fails_with(Step.raw(b" " * 2_000_000))
    assert message.startswith(
        "the server answered none of the first requests (4 items failed, the last with: ReplyTooLarge: reply of "
        "2,000,000 bytes is over the 1,000,000-byte limit)"
    )
    assert served <= 8 + 4


def test_one_success_relaxes_the_breaker() -> None:
    """After the server has answered once, a few failing items are the items' own: stored as unknown, the run
    goes on (it stops only when 16 in a row fail: the next test)."""

    def fail_after_first(prompt: str, attempt: int) -> Step | None:
        return None if prompt == "item 0" else Step.server_error(500)

    with FakeOpenAIServer(fault_plan=fail_after_first) as server:
        backend = OpenAIBackend(
            ApiSettings(model="m", base_url=server.base_url, concurrency=1, backoff_s=0.01, max_retries=2)
        )
        try:
            replies = backend.answer([ask(f"item {n}") for n in range(6)])
        finally:
            backend.close()
    assert [reply.label for reply in replies] == ["yes"] + ["unknown"] * 5
    assert replies[1].error == "InternalServerError: Error code: 500 - scripted 500 after 3 attempts"


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("seed") / "probe.duckdb"


def test_the_cli_says_it_in_one_line_and_the_run_is_failed(seed: Path, tmp_path: Path) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    with FakeOpenAIServer(fault_plan=lambda prompt, attempt: Step.server_error(502)) as server:
        done = CliRunner().invoke(
            app,
            [
                "run",
                "--backend",
                "openai",
                "--decoding",
                "generate",
                "--base-url",
                server.base_url,
                "--model",
                "m",
                "--pairs",
                "2",
                "--occupations",
                "nurse",
                "--db",
                str(db_file),
                "--run-id",
                "dead",
                "--quiet",
            ],
        )
    assert done.exit_code == 1
    assert done.output.startswith("error: 127.0.0.1:") and done.output.count("\n") == 1
    assert "answered none of the first requests" in done.output and "502" in done.output
    assert query(db_file, "SELECT status FROM runs").values.tolist() == [["failed"]]


def test_a_server_that_starts_failing_mid_run_stops_the_run_in_one_line() -> None:
    """The breaker watches the whole run: after 30 answers the server returns 500 to everything; the run stops
    once 16 items in a row failed three times, instead of retrying the other 9,970 items one by one."""

    def fail_from_item_30(prompt: str, attempt: int) -> Step | None:
        return None if int(prompt.split()[1]) < 30 else Step.server_error(500)

    with FakeOpenAIServer(fault_plan=fail_from_item_30) as server:
        backend = OpenAIBackend(ApiSettings(model="m", base_url=server.base_url, concurrency=4, backoff_s=0.01))
        started = time.monotonic()
        try:
            with pytest.raises(RunFailed) as raised:
                backend.answer([ask(f"item {n}") for n in range(10_000)])
        finally:
            backend.close()
        took, served = time.monotonic() - started, len(server.served)
    assert str(raised.value).endswith(
        "the server stopped answering: the last 16 items failed with no success between them (the last with: "
        "InternalServerError: Error code: 500 - scripted 500); what was answered is saved, the run is marked "
        "failed and resumes with the same command"
    )
    # the 16 struck items and the 4 in flight, each tried up to 1 + max_retries (5) times: far from 10,000 items
    assert served <= 30 + (16 + 4) * 6 and took < 60
