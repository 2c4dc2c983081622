"""Batch engines: export -> an engine answers the JSONL -> import gives the labels of a live run against the same
engine; a damaged results file loses nothing valid and names each bad line; importing again changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from probe.backends.base import Query
from probe.backends.openai_batch import BatchTarget
from probe.cli import app
from probe.common.errors import UserError
from probe.pipeline.batch import import_results
from probe.store.config import RunConfig
from tests.fake_openai_server import FakeOpenAIServer
from tests.support import SINGLE, fingerprint, labels, query

DESIGN = {"pairs": 1, "occupations": ["nurse", "pilot"], "top_k": 1, "conditions": ["taxonomy"]}


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def answer_batch(requests: Path, results: Path, base_url: str) -> None:
    """A batch engine: every request line sent to `base_url`'s server, one result line each (OpenAI's format)."""
    lines = []
    with httpx.Client(timeout=10) as client:
        for number, text in enumerate(requests.read_text().splitlines()):
            request = json.loads(text)
            reply = client.post(base_url.removesuffix("/v1") + request["url"], json=request["body"])
            response = {"status_code": reply.status_code, "request_id": f"req-{number}", "body": reply.json()}
            lines.append(
                json.dumps(
                    {
                        "id": f"batch_req_{number}",
                        "custom_id": request["custom_id"],
                        "response": response,
                        "error": None,
                    }
                )
            )
    results.write_text("".join(line + "\n" for line in lines))


@pytest.fixture
def batch_toml(tmp_path: Path) -> Path:
    toml = tmp_path / "RUN.toml"
    toml.write_text(
        'backend = "openai"\nmodel = "fake-model"\ndecoding = "generate"\nconstrain = "grammar"\n'
        + "".join(f"{key} = {json.dumps(value)}\n" for key, value in DESIGN.items())
    )
    return toml


def test_export_answer_import_gives_the_labels_of_a_live_run(db_file: Path, batch_toml: Path, tmp_path: Path) -> None:
    with FakeOpenAIServer(answer_by_hash=True) as server:
        cli(
            "run",
            "--config",
            str(batch_toml),
            "--base-url",
            server.base_url,
            "--run-id",
            "live",
            "--db",
            str(db_file),
            "--quiet",
        )
        for stage in (1, 2):
            requests, results = tmp_path / f"requests{stage}.jsonl", tmp_path / f"results{stage}.jsonl"
            exported = cli(
                "batch", "export", "batched", "-o", str(requests), "--config", str(batch_toml), "--db", str(db_file)
            )
            assert exported.startswith(f"{requests}: ") and f" stage-{stage} requests of run batched" in exported
            answer_batch(requests, results, server.base_url)
            imported = cli("batch", "import", "batched", str(results), "--db", str(db_file))
            assert imported.startswith(f"imported {len(requests.read_text().splitlines())} answers (0 already")
    assert "run batched is complete and analysed" in imported
    assert labels(db_file, "batched") == labels(db_file, "live")
    assert len(labels(db_file, "live")) == 2 * 2 * 6 + 2 * 2 * 4  # stage 1: 6 attributes; stage 2: 2 jobs x 4
    runs = query(db_file, "SELECT run_id, status, backend_json FROM runs ORDER BY run_id")
    assert list(runs.status) == ["complete", "complete"]
    assert json.loads(runs.backend_json[0])["engine"] == "batch"
    assert query(db_file, "SELECT count(*) AS n FROM metrics WHERE run_id = 'batched'").n[0] > 0


def test_a_damaged_results_file_names_each_bad_line_and_loses_nothing_valid(
    db_file: Path, batch_toml: Path, tmp_path: Path
) -> None:
    requests, results, damaged = tmp_path / "requests.jsonl", tmp_path / "results.jsonl", tmp_path / "damaged.jsonl"
    cli("batch", "export", "b", "-o", str(requests), "--config", str(batch_toml), "--db", str(db_file))
    with FakeOpenAIServer(answer_by_hash=True) as server:
        answer_batch(requests, results, server.base_url)
    good = results.read_text().splitlines()
    failed = json.loads(good[4]) | {"response": {"status_code": 500, "body": {}}, "error": {"message": "overloaded"}}
    foreign = json.loads(good[0]) | {"custom_id": "not-an-item"}
    lines = [good[0], "{not json", good[0], json.dumps(foreign), json.dumps(failed), *good[5:], good[1][:40]]
    damaged.write_text("\n".join(lines) + "\n")  # good[2] and good[3] are missing
    first_id = json.loads(good[0])["custom_id"]
    result = CliRunner().invoke(app, ["batch", "import", "b", str(damaged), "--db", str(db_file)])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"{damaged}: line 2: not JSON (Expecting property name enclosed in double quotes)",
        f"{damaged}: line 3: custom_id {first_id} repeats line 1",
        f"{damaged}: line 4: custom_id not-an-item is no item of this run (a result of another run?)",
        f"{damaged}: line 5: custom_id {failed['custom_id']}: the engine reported an error "
        "({'message': 'overloaded'})",
        f"{damaged}: line {len(lines)}: not JSON (Invalid control character at)",
    ]
    valid = 1 + len(good[5:])
    assert result.stdout.splitlines() == [
        f"imported {valid} answers (0 already imported, 5 lines not imported)",
        f"{len(good) - valid} stage-1 items have no answer yet: probe batch export b -o FILE --db {db_file}",
    ]
    before = fingerprint(db_file)
    again = import_results(db_file, "b", damaged)
    assert (again.imported, again.already, again.pending, again.stage, again.complete) == (
        0,
        valid,
        len(good) - valid,
        1,
        False,
    )
    assert [problem.split(":")[0] for problem in again.problems] == [
        "line 2",
        "line 3",
        "line 4",
        "line 5",
        f"line {len(lines)}",
    ]
    assert fingerprint(db_file) == before  # importing again changes nothing
    cli("batch", "export", "b", "-o", str(requests), "--db", str(db_file))  # the rest, asked again
    assert len(requests.read_text().splitlines()) == len(good) - valid


def test_scoring_requests_and_their_echoed_log_probabilities() -> None:
    target = BatchTarget(RunConfig(backend="openai", model="m", api_mode="completions").backend)
    item = Query("1", "single", "Mary and John.\nAnswer:", "", "", SINGLE, {})
    url, body = target.request(item)
    assert (url, body["prompt"], body["echo"], body["logprobs"]) == (
        "/v1/completions",
        ["Mary and John.\nAnswer: Mary", "Mary and John.\nAnswer: John"],
        True,
        0,
    )

    def choice(index: int, option_logprobs: list[float], split: int = 22) -> dict:
        # tokens: the context in two pieces, the option (" Mary" / " John") in len(option_logprobs) pieces
        offsets = [0, 10, *range(split, split + len(option_logprobs)), 27]
        values = [None, -1.0, *option_logprobs, -0.5]  # the last: the one generated token
        return {"index": index, "logprobs": {"text_offset": offsets, "token_logprobs": values}}

    reply = target.reply(item, {"choices": [choice(1, [-2.0]), choice(0, [-0.25, -0.5])]})
    assert (reply.scores, reply.label, reply.decided_by) == ({"female": -0.75, "male": -2.0}, "female", "score")
    with pytest.raises(ValueError, match="a token spans context and option"):
        target.reply(item, {"choices": [choice(0, [-0.25], split=23), choice(1, [-2.0])]})
    with pytest.raises(UserError, match="scoring requests need api_mode"):
        BatchTarget(RunConfig(backend="openai", model="m", api_mode="chat").backend)
