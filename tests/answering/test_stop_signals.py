"""SIGTERM stops a run within 10 s even while the server does not answer, quietly, and the run resumes.

The CLI runs as a real process (its stderr is the point) against a server that accepts requests and never
answers, or asks for a long Retry-After: the run is waiting on the network when the signal comes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probe.cli import app
from tests.fake_openai_server import FakeOpenAIServer, Step
from tests.support import ROOT, query, seeded_copy

CLI = [sys.executable, "-c", "from probe.cli import app; app(prog_name='probe')"]
# a stop within 10 s: `make test` runs these alone, after the tests it runs on two processes
pytestmark = pytest.mark.serial
STOPPED = (
    "error: stopped by SIGTERM: the answers so far are saved and the run is marked interrupted; run the same "
    "command again to resume it\n"
)


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("seed") / "probe.duckdb"


ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def command(server: FakeOpenAIServer, db_file: Path) -> list[str]:
    return [
        *CLI,
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
        "1",
        "--occupations",
        "nurse",
        "--top-k",
        "1",
        "--run-id",
        "slow",
        "--db",
        str(db_file),
        "--quiet",
    ]


def wait_for_requests(server: FakeOpenAIServer, count: int) -> None:
    deadline = time.monotonic() + 60
    while len(server.served) < count:
        assert time.monotonic() < deadline, "the run sent no request"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("step", "signals"),
    [(Step.slow(120), 1), (Step.rate_limited(retry_after=3600), 1), (Step.slow(120), 2)],
    ids=["never answers", "long Retry-After", "second SIGTERM"],
)
def test_sigterm_while_waiting_on_the_server_exits_within_10_s_quietly(
    step: Step, signals: int, seed: Path, tmp_path: Path
) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    with FakeOpenAIServer(fault_plan=lambda prompt, attempt: step) as server:
        process = subprocess.Popen(
            command(server, db_file), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV
        )
        wait_for_requests(server, 8)
        sent = time.monotonic()
        for _ in range(signals):
            process.send_signal(signal.SIGTERM)
            time.sleep(0.3)
        stdout, stderr = process.communicate(timeout=30)
        took = time.monotonic() - sent
        server.fault_plan = None
        resumed = CliRunner().invoke(app, command(server, db_file)[len(CLI) :])  # the same command, in this process
    assert took < 10
    assert (process.returncode, stdout, stderr) == (128 + signal.SIGTERM, "", STOPPED)
    assert (resumed.exit_code, resumed.stdout) == (0, "slow\n")
    assert query(db_file, "SELECT status FROM runs").values.tolist() == [["complete"]]
