"""One run over two OpenAI-compatible endpoints (`--base-url A,B`): work is shared, labels are those of one
endpoint, and a run whose endpoint dies mid-run completes on the other.

The fake servers answer by a hash of the prompt, so runs are comparable item by item.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probe.cli import app
from probe.store.config import RunConfig
from tests.fake_openai_server import FakeOpenAIServer, Step
from tests.support import labels, seeded_copy

RUN_TOML = 'constrain = "grammar"\nconcurrency = 2\ntimeout = 2\nmax_retries = 2\nbackoff = 0.01\n'
REQUESTS = 40  # distinct prompts of --pairs 1 --occupations nurse --top-k 2 --conditions taxonomy,control


def paced(prompt: str, attempt: int) -> Step:
    """A few milliseconds per request, as a real server takes: both endpoints are kept busy."""
    return Step.ok(delay_s=0.01)


def probe_run(base_url: str, db_file: Path, run_id: str) -> tuple[int, str]:
    run_toml = db_file.parent / "RUN.toml"
    run_toml.write_text(RUN_TOML)
    result = CliRunner().invoke(
        app,
        [
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
            "2",
            "--conditions",
            "taxonomy,control",
            "--config",
            str(run_toml),
            "--run-id",
            run_id,
            "--db",
            str(db_file),
            "--quiet",
        ],
    )
    return result.exit_code, result.stdout


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("seed") / "probe.duckdb"


@pytest.fixture(scope="module")
def one_endpoint(seed: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    db_file = seeded_copy(seed, tmp_path_factory.mktemp("one") / "probe.duckdb")
    with FakeOpenAIServer(answer_by_hash=True) as server:
        assert probe_run(server.base_url, db_file, "one") == (0, "one\n")
    return labels(db_file, "one")


def test_two_endpoints_share_the_work_and_give_the_labels_of_one(
    seed: Path, tmp_path: Path, one_endpoint: dict[str, str]
) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    with (
        FakeOpenAIServer(answer_by_hash=True, fault_plan=paced) as first,
        FakeOpenAIServer(answer_by_hash=True, fault_plan=paced) as second,
    ):
        assert probe_run(f"{first.base_url},{second.base_url}", db_file, "two") == (0, "two\n")
    sent = [len(first.served), len(second.served)]
    assert sum(sent) == REQUESTS and min(sent) >= 0.2 * REQUESTS, sent
    assert labels(db_file, "two") == one_endpoint


def test_an_endpoint_stopped_mid_run_leaves_the_run_to_the_other(
    seed: Path, tmp_path: Path, one_endpoint: dict[str, str]
) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    with FakeOpenAIServer(answer_by_hash=True, fault_plan=paced) as survivor:
        dying = FakeOpenAIServer(answer_by_hash=True)
        stopped = threading.Event()

        def stop_after_five(prompt: str, attempt: int) -> Step:
            if len(dying.served) >= 5 and not stopped.is_set():
                stopped.set()
                threading.Thread(target=dying.__exit__).start()  # the server goes away mid-run
            return Step.ok(delay_s=0.01)

        dying.fault_plan = stop_after_five
        with dying:
            assert probe_run(f"{dying.base_url},{survivor.base_url}", db_file, "failover") == (0, "failover\n")
    assert stopped.is_set() and 5 <= len(dying.served) < REQUESTS
    assert labels(db_file, "failover") == one_endpoint


def test_the_run_fails_when_no_endpoint_is_left(seed: Path, tmp_path: Path) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    code, stdout = probe_run("http://127.0.0.1:9/v1,http://127.0.0.1:9/v2", db_file, "dead")
    assert (code, stdout) == (1, "")


def test_every_url_of_the_list_is_masked_in_the_run_record() -> None:
    config = RunConfig(base_url="http://u:key1@a:1/v1,https://b:2/v1?api-key=key2")
    assert config.settings()["base_url"] == "http://***@a:1/v1,https://b:2/v1?api-key=***"
