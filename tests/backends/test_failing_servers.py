"""Failing servers stop a run fast and say where; huge replies are cut; a run that mostly failed is not complete.

Fatal failures (401, 403, unknown model, connection refused) would repeat for every request: the run stops
with one line naming host:port and exit 1, marked failed and resumable. Replies are read with a size cap.
The CLI runs as a real process where exit codes, stderr or memory are the point.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import zlib
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probe.backends.base import Query
from probe.backends.http import MAX_REPLY_BYTES
from probe.backends.openai_api import ApiSettings, OpenAIBackend
from probe.cli import app
from probe.common.errors import RunFailed
from tests.fake_openai_server import FakeOpenAIServer, Step, prompt_hash
from tests.support import ROOT, YES_NO, query, seeded_copy

CLI = [sys.executable, "-c", "from probe.cli import app; app(prog_name='probe')"]
# The CLI, writing its own peak RSS (VmHWM, kB) to argv[1] as it exits. Measured inside: a child's ru_maxrss
# from wait4 counts the pytest process it was forked from.
CLI_WITH_PEAK_RSS = [
    sys.executable,
    "-c",
    """
import pathlib, sys
from probe.cli import app
try:
    app(sys.argv[2:], prog_name="probe")
finally:
    status = pathlib.Path("/proc/self/status").read_text().splitlines()
    peak = next(line for line in status if line.startswith("VmHWM:")).split()[1]
    pathlib.Path(sys.argv[1]).write_text(peak)
""",
]


def ask(prompt: str) -> Query:
    return Query(prompt, "binary", prompt, "", "", YES_NO, {})


def run_args(base_url: str, db_file: Path, run_id: str = "failing") -> list[str]:
    return [
        "run",
        "--backend",
        "openai",
        "--decoding",
        "generate",
        "--base-url",
        base_url,
        "--model",
        "fake-model",
        "--pairs",
        "1",
        "--occupations",
        "nurse",
        "--top-k",
        "1",
        "--conditions",
        "control",
        "--run-id",
        run_id,
        "--db",
        str(db_file),
        "--quiet",
    ]


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("seed") / "probe.duckdb"


@pytest.mark.parametrize(
    ("step", "error"),
    [
        (Step.server_error(401), "AuthenticationError: Error code: 401 - scripted 401"),
        (Step.server_error(403), "PermissionDeniedError: Error code: 403 - scripted 403"),
        (Step.server_error(404), "NotFoundError: Error code: 404 - scripted 404"),
    ],
)
def test_rejected_key_or_unknown_model_stops_at_the_first_reply(step: Step, error: str) -> None:
    with FakeOpenAIServer(fault_plan=lambda prompt, attempt: step) as server:
        backend = OpenAIBackend(ApiSettings(model="m", base_url=server.base_url, concurrency=2, max_retries=5))
        try:
            with pytest.raises(RunFailed) as raised:
                backend.answer([ask(f"item {n}") for n in range(20)])
        finally:
            backend.close()
    host = server.base_url.removeprefix("http://").removesuffix("/v1")
    assert str(raised.value) == f"{host}: {error}"
    assert len(server.served) <= 2  # the requests in flight; nothing retried, the other 18 never sent


def test_a_plain_400_is_the_items_error_and_the_run_goes_on() -> None:
    with FakeOpenAIServer() as server:
        server.script([Step("status", status=400)])
        backend = OpenAIBackend(ApiSettings(model="m", base_url=server.base_url, concurrency=1))
        try:
            [reply] = backend.answer([ask("a")])
        finally:
            backend.close()
    assert reply.error == "BadRequestError: Error code: 400 - scripted 400"


def test_connection_refused_names_host_and_port() -> None:
    with FakeOpenAIServer() as server:
        base_url = server.base_url
    backend = OpenAIBackend(ApiSettings(model="m", base_url=base_url, max_retries=5, backoff_s=30))
    try:
        with pytest.raises(RunFailed, match=r"^127\.0\.0\.1:\d+: cannot connect \(.*\); is the server running"):
            backend.answer([ask("a"), ask("b")])
    finally:
        backend.close()


def test_an_unknown_host_names_host_and_port(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_such_host(*args: object, **kwargs: object) -> None:  # the resolver, without asking any DNS server
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_host)
    backend = OpenAIBackend(ApiSettings(model="m", base_url="http://no-such-host.invalid:8000/v1", backoff_s=30))
    try:
        with pytest.raises(RunFailed, match=r"^no-such-host\.invalid:8000: cannot connect \(.*not known\)"):
            backend.answer([ask("a")])
    finally:
        backend.close()


@pytest.mark.parametrize("chunked", [False, True])
def test_a_huge_reply_is_cut_and_recorded_as_the_items_error(chunked: bool) -> None:
    with FakeOpenAIServer() as server:
        server.script([Step.huge(10_000_000, chunked=chunked)])
        backend = OpenAIBackend(ApiSettings(model="m", base_url=server.base_url, concurrency=1, max_retries=3))
        try:
            huge, normal = backend.answer([ask("a"), ask("b")])
        finally:
            backend.close()
    expected = (
        f"ReplyTooLarge: reply larger than {MAX_REPLY_BYTES:,} bytes; not read further"
        if chunked
        else f"ReplyTooLarge: reply of 10,000,000 bytes is over the {MAX_REPLY_BYTES:,}-byte limit"
    )
    assert (huge.label, huge.error) == ("unknown", expected)
    assert (normal.label, normal.error) == ("yes", None)
    assert len(server.served) == 2  # not retried: the same reply would come again


def bomb(encoding: str, size: int = 10_000_000) -> Step:
    """A reply of ~10 kB on the wire that inflates to `size` bytes of JSON (padded with spaces)."""
    body = json.dumps({"choices": [{"message": {"content": "yes"}}]}).encode() + b" " * size
    for name in encoding.split(", "):
        body = zlib.compress(body, wbits=16 + zlib.MAX_WBITS) if name == "gzip" else zlib.compress(body)
    return Step.raw(body, headers=(("Content-Encoding", encoding),))


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "gzip, gzip"])
def test_the_size_cap_applies_to_the_decompressed_reply(encoding: str) -> None:
    with FakeOpenAIServer() as server:
        server.script([bomb(encoding), bomb(encoding, size=1000)])
        backend = OpenAIBackend(ApiSettings(model="m", base_url=server.base_url, concurrency=1))
        try:
            bombed, small = backend.answer([ask("a"), ask("b")])
        finally:
            backend.close()
    assert len(server.served[0].step.body) < 30_000
    assert (bombed.label, bombed.error) == (
        "unknown",
        f"ReplyTooLarge: reply larger than {MAX_REPLY_BYTES:,} bytes once decompressed; not read further",
    )
    assert (small.label, small.raw, small.error) == ("yes", "yes", None)


def test_a_reply_in_an_encoding_not_inflated_is_refused() -> None:
    with FakeOpenAIServer() as server:
        server.script([Step.raw(b"\x8b\x00\x80", headers=(("Content-Encoding", "br"),))])
        backend = OpenAIBackend(ApiSettings(model="m", base_url=server.base_url, concurrency=1))
        try:
            [reply] = backend.answer([ask("a")])
        finally:
            backend.close()
    assert (reply.label, reply.error) == ("unknown", "UnsupportedEncoding: reply compressed as 'br', which is not read")
    assert len(server.served) == 1


def test_dead_server_exits_1_within_a_minute_naming_it_and_the_run_is_failed(seed: Path, tmp_path: Path) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(2):  # the same command again resumes the failed run (and fails the same way)
        done = subprocess.run(
            [*CLI, *run_args("http://127.0.0.1:9/v1", db_file)],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr.startswith("error: 127.0.0.1:9: cannot connect (") and done.stderr.count("\n") == 1
    assert query(db_file, "SELECT run_id, status FROM runs").values.tolist() == [["failing", "failed"]]


def test_a_rejected_run_is_failed_and_the_same_command_resumes_it(seed: Path, tmp_path: Path) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    with FakeOpenAIServer(answer_by_hash=True) as server:
        server.fault_plan = lambda prompt, attempt: Step.server_error(401)
        rejected = CliRunner().invoke(app, run_args(server.base_url, db_file))
        server.fault_plan = None  # the key is fixed
        resumed = CliRunner().invoke(app, run_args(server.base_url, db_file))
    assert rejected.exit_code == 1 and rejected.output.endswith("AuthenticationError: Error code: 401 - scripted 401\n")
    assert (resumed.exit_code, resumed.output) == (0, "failing\n")
    assert query(db_file, "SELECT status FROM runs").values.tolist() == [["complete"]]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak RSS is read from Linux's /proc")
def test_a_server_whose_every_reply_is_huge_stops_the_run_and_memory_stays_small(seed: Path, tmp_path: Path) -> None:
    """Every reply is 10 MB (declared, chunked or a gzip bomb): each is cut, so the process stays small, and the
    first-requests breaker stops the run (BENCHMARKS.md: peak memory over a whole run of such replies)."""
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def huge(prompt: str, attempt: int) -> Step:
        kind = prompt_hash(prompt) % 3
        return bomb("gzip") if kind == 2 else Step.huge(10_000_000, chunked=kind == 1)

    with FakeOpenAIServer(fault_plan=huge) as server:
        done = subprocess.run(
            [*CLI_WITH_PEAK_RSS, str(tmp_path / "peak_kb"), *run_args(server.base_url, db_file)],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            check=False,
        )
        served = Counter(served.body["messages"][-1]["content"] for served in server.served)
    peak_mb = int((tmp_path / "peak_kb").read_text()) / 1024
    stdout, stderr = done.stdout, done.stderr
    assert (done.returncode, stdout) == (1, "")
    host = server.base_url.removeprefix("http://").removesuffix("/v1")
    assert stderr.startswith(f"error: {host}: the server answered none of the first requests (4 items failed, the ")
    assert "ReplyTooLarge" in stderr and stderr.count("\n") == 1
    assert set(served.values()) == {1}  # a huge reply is not asked for again
    assert peak_mb < 600, f"peak RSS {peak_mb:.0f} MB"
