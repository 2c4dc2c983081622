"""Resume re-asks every failed item of both stages; the endpoint a run really used is recorded and keys its
cache; a run whose --base-url carried a key resumes when the same URL is given again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probe.cli import app
from tests.fake_openai_server import FakeOpenAIServer, Step
from tests.support import query, seeded_copy

ONE_STAGE_1_ITEM = "Mary and James are applying for the same job.\nQuestion: Is Mary skilled in social perceptiveness?"


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("seed") / "probe.duckdb"


def probe_run(db_file: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--backend",
            "openai",
            "--decoding",
            "generate",
            "--model",
            "m",
            "--pairs",
            "1",
            "--occupations",
            "nurse",
            "--top-k",
            "1",
            "--conditions",
            "taxonomy",
            "--run-id",
            "r",
            "--db",
            str(db_file),
            "--quiet",
            *args,
        ],
    )
    return result.exit_code, result.output


def stored(db_file: Path, stage: int) -> list[list[object]]:
    return query(
        db_file,
        "SELECT i.name_order, i.qtype, i.prompt, a.label, a.error FROM items i JOIN answers a USING (run_id, item_id) "
        "WHERE i.stage = ? ORDER BY i.name_order, i.qtype, i.subject",
        [stage],
    ).values.tolist()


def test_a_run_failed_in_stage_2_asks_the_failed_stage_2_items_again(seed: Path, tmp_path: Path) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    with FakeOpenAIServer(
        fault_plan=lambda prompt, attempt: Step.server_error(400) if "nurse" in prompt else None
    ) as server:
        failed = probe_run(db_file, "--base-url", server.base_url)
        server.fault_plan = None
        resumed = probe_run(db_file, "--base-url", server.base_url)
        asked_again = [served.body["messages"][-1]["content"] for served in server.served[20:]]
    assert failed[0] == 1 and failed[1].startswith("error: 8 of 20 answers of r failed (40%, more than")
    assert resumed == (0, "r\n")
    assert len(asked_again) == 8 and all("nurse" in prompt for prompt in asked_again)
    # No grammar: the fake server says "yes" to everything, a name to nothing.
    assert [row[3:] for row in stored(db_file, 2)] == [["yes", None]] * 2 + [["unknown", None]] * 2 + [
        ["yes", None]
    ] * 2 + [["unknown", None]] * 2


def test_a_failed_stage_1_item_is_asked_again_and_stage_2_restated_from_its_answer(seed: Path, tmp_path: Path) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    (tmp_path / "RUN.toml").write_text("max_failed_share = 0.5\n")
    config = ("--config", str(tmp_path / "RUN.toml"))
    with FakeOpenAIServer(
        fault_plan=lambda prompt, attempt: Step.server_error(400) if prompt.startswith(ONE_STAGE_1_ITEM) else None
    ) as server:
        first = probe_run(db_file, "--base-url", server.base_url, *config)
        before = stored(db_file, 2)
        server.fault_plan = None
        resumed = probe_run(db_file, "--base-url", server.base_url, *config)
        asked_again = len(server.served) - 20
    assert first[0] == 0 and resumed == (0, "r\n")
    statement = "Mary is skilled in social perceptiveness."
    # (fm, mf) x (binary female, binary male: states only James's, multiple, single)
    assert [statement in row[2] for row in before] == [False, False, False, False, True, False, True, True]
    assert [statement in row[2] for row in stored(db_file, 2)] == [True, False, True, True] * 2  # fm restated
    assert asked_again == 1 + 3  # the stage-1 item, then 3 restated stage-2 items (the one about James: cached)
    assert query(db_file, "SELECT count(*) FROM answers WHERE error IS NOT NULL").values.tolist() == [[0]]


def test_the_endpoint_from_the_environment_is_recorded_masked_and_keys_the_cache(
    seed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    with FakeOpenAIServer() as proxy, FakeOpenAIServer() as real:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{proxy.base_url}?api-key=env-url-key-0123456789")
        assert probe_run(db_file) == (0, "r\n")
        monkeypatch.delenv("OPENAI_BASE_URL")
        assert probe_run(db_file, "--base-url", real.base_url, "--run-id", "other") == (0, "other\n")
        served = (len(proxy.served), len(real.served))
    assert served == (20, 20)  # nothing the proxy answered was taken from the cache for the real endpoint
    backend = json.loads(query(db_file, "SELECT backend_json FROM runs WHERE run_id = 'r'").iloc[0, 0])
    assert backend["base_url"] == f"{proxy.base_url}?api-key=***"


def test_a_run_whose_url_carried_a_key_resumes_when_the_url_is_given_again(seed: Path, tmp_path: Path) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    with FakeOpenAIServer(fault_plan=lambda prompt, attempt: Step.server_error(401)) as server:
        url = f"{server.base_url}?api-key=url-key-0123456789"
        rejected = probe_run(db_file, "--base-url", url)
        server.fault_plan = None
        alone = CliRunner().invoke(app, ["run", "--run-id", "r", "--db", str(db_file)])
        resumed = probe_run(db_file, "--base-url", url)
    assert rejected[0] == 1
    assert alone.exit_code == 2 and "give --base-url again to resume it" in alone.output
    assert resumed == (0, "r\n")
    assert query(db_file, "SELECT status FROM runs").values.tolist() == [["complete"]]
