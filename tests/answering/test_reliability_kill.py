"""SIGKILL a run in stage 1, in stage 2 and inside its analysis; the same command resumes it to the results
of an uninterrupted run. A second process on the same database gets one clear line and changes nothing.

The killed runs are forked children running the real CLI (`probe run ...`, the console script's code
path) against the fake OpenAI server in this process, which answers by a hash of the prompt and slowly
enough that a kill lands mid-stage. Kill points are seeded; the parent watches the server's request
count (or a marker file for the analysis), never the database, which a running probe holds locked.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from typer.testing import CliRunner

from probe import pipeline
from probe.cli import app
from probe.store.config import RunConfig
from tests.fake_openai_server import FakeOpenAIServer, Step
from tests.support import ROOT, FakeBackend, assert_one_line_error, labels, query, seeded_copy

RUN_ID = "audit"
REQUEST_DELAY_S = 0.03
RUN_TOML = 'constrain = "grammar"\nconcurrency = 2\ntimeout = 10\n'
WAIT_S = 60


def slow_answers(prompt: str, attempt: int) -> Step:
    return Step.ok(delay_s=REQUEST_DELAY_S)


def run_args(server: FakeOpenAIServer, db_file: Path) -> list[str]:
    run_toml = db_file.parent / "RUN.toml"
    run_toml.write_text(RUN_TOML)
    return [
        "run",
        "--backend",
        "openai",
        "--decoding",
        "generate",
        "--base-url",
        server.base_url,
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
        RUN_ID,
        "--db",
        str(db_file),
        "--quiet",
    ]


def start_probe(args: list[str], before: Callable[[], None] | None = None) -> multiprocessing.Process:
    """`probe ARGS` in a forked child (no interpreter start-up: the imports are already done)."""

    def main() -> None:
        if before is not None:
            before()
        app(args, prog_name="probe")

    process = multiprocessing.get_context("fork").Process(target=main, daemon=True)
    process.start()
    return process


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def kill(process: multiprocessing.Process) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.join(WAIT_S)
    assert process.exitcode == -signal.SIGKILL


def results(db_file: Path) -> dict[str, pd.DataFrame]:
    """The run's answers and its analysis, in a stable order (answered_at and cache flags excluded)."""
    tables = {
        "answers": "SELECT item_id, raw, label, scores_json, error FROM answers",
        "items": "SELECT item_id, stage, prompt FROM items",
        "metrics": "SELECT * FROM metrics",
        "occupation_preference": "SELECT * FROM occupation_preference",
        "correlations": "SELECT * FROM correlations",
        "regression": "SELECT * FROM regression",
    }
    return {name: query(db_file, f"{sql} WHERE run_id = ? ORDER BY ALL", [RUN_ID]) for name, sql in tables.items()}


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("seed") / "probe.duckdb"


@pytest.fixture(scope="module")
def reference(seed: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, pd.DataFrame]:
    """An uninterrupted run of the same command."""
    db_file = seeded_copy(seed, tmp_path_factory.mktemp("reference") / "probe.duckdb")
    with FakeOpenAIServer(answer_by_hash=True) as server:
        result = CliRunner().invoke(app, run_args(server, db_file))
    assert (result.exit_code, result.output) == (0, f"{RUN_ID}\n")
    return results(db_file)


def resume_and_compare(server: FakeOpenAIServer, db_file: Path, reference: dict[str, pd.DataFrame]) -> None:
    result = CliRunner().invoke(app, run_args(server, db_file))
    assert (result.exit_code, result.output) == (0, f"{RUN_ID}\n")
    resumed = results(db_file)
    assert resumed["answers"]["item_id"].is_unique
    assert len(resumed["answers"]) == len(resumed["items"])  # nothing lost, nothing twice
    for name, frame in reference.items():
        pd.testing.assert_frame_equal(resumed[name], frame, obj=name)
    status = query(db_file, "SELECT status FROM runs WHERE run_id = ?", [RUN_ID])["status"]
    assert list(status) == ["complete"]


@pytest.mark.parametrize(("stage", "seed_value"), [(1, 11), (2, 12)])
def test_sigkill_mid_stage_then_resume(
    stage: int, seed_value: int, seed: Path, tmp_path: Path, reference: dict[str, pd.DataFrame]
) -> None:
    items = reference["items"]
    stage1 = int((items["stage"] == 1).sum())
    stage2_prompts = items.loc[items["stage"] == 2, "prompt"].nunique()
    low, high = (3, stage1 - 3) if stage == 1 else (stage1 + 3, stage1 + stage2_prompts - 3)
    kill_after = random.Random(seed_value).randint(low, high)

    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    with FakeOpenAIServer(answer_by_hash=True, fault_plan=slow_answers) as server:
        process = start_probe(run_args(server, db_file))
        wait_for(lambda: len(server.served) >= kill_after, f"{kill_after} requests")
        kill(process)
        answered = query(
            db_file, "SELECT i.stage, count(*) AS n FROM answers JOIN items i USING (run_id, item_id) GROUP BY ALL"
        )
        by_stage = dict(zip(answered["stage"], answered["n"], strict=True))
        if stage == 1:
            assert by_stage.get(1, 0) < stage1 and 2 not in by_stage
        else:
            assert by_stage[1] == stage1 and by_stage.get(2, 0) < len(items) - stage1
        resume_and_compare(server, db_file, reference)


@pytest.mark.parametrize(("stop_signal", "stage", "seed_value"), [(signal.SIGTERM, 1, 21), (signal.SIGHUP, 2, 22)])
def test_sigterm_or_sighup_saves_the_batch_marks_the_run_interrupted_and_resume_finishes_it(
    stop_signal: signal.Signals,
    stage: int,
    seed_value: int,
    seed: Path,
    tmp_path: Path,
    reference: dict[str, pd.DataFrame],
) -> None:
    items = reference["items"]
    stage1 = int((items["stage"] == 1).sum())
    low, high = (3, stage1 - 10) if stage == 1 else (stage1 + 3, stage1 + 8)
    signal_after = random.Random(seed_value).randint(low, high)

    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    with FakeOpenAIServer(answer_by_hash=True, fault_plan=slow_answers) as server:
        process = start_probe(run_args(server, db_file))
        wait_for(lambda: len(server.served) >= signal_after, f"{signal_after} requests")
        os.kill(process.pid, stop_signal)
        process.join(WAIT_S)
        asked = len(server.served)
        assert process.exitcode == 128 + stop_signal
        stopped = results(db_file)
        status = query(db_file, "SELECT status FROM runs WHERE run_id = ?", [RUN_ID])["status"]
        assert list(status) == ["interrupted"]
        assert asked - len(stopped["answers"]) < 8  # the batch in flight (concurrency 2 x 4) was saved
        assert len(stopped["answers"]) < len(reference["answers"])
        resume_and_compare(server, db_file, reference)


class _PausesInsideTheAnalysisTransaction:
    """A connection that stops (for the kill) right after the first metric rows are inserted, uncommitted."""

    def __init__(self, con: duckdb.DuckDBPyConnection, marker: Path) -> None:
        self._con = con
        self._marker = marker

    def execute(self, sql: str, *args: object):
        result = self._con.execute(sql, *args)
        if sql.startswith("INSERT INTO metrics"):
            self._marker.touch()
            time.sleep(WAIT_S)
        return result

    def __getattr__(self, name: str) -> object:
        return getattr(self._con, name)


def test_sigkill_inside_the_analysis_then_resume(
    seed: Path, tmp_path: Path, reference: dict[str, pd.DataFrame]
) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    marker = tmp_path / "analysing"

    def pause_in_analysis() -> None:
        real_connect = pipeline.connect
        pipeline.connect = lambda path, **options: _PausesInsideTheAnalysisTransaction(
            real_connect(path, **options), marker
        )

    with FakeOpenAIServer(answer_by_hash=True) as server:
        process = start_probe(run_args(server, db_file), before=pause_in_analysis)
        wait_for(marker.exists, "the analysis")
        kill(process)
        killed = results(db_file)
        assert len(killed["answers"]) == len(reference["answers"])  # every answer was committed
        assert len(killed["metrics"]) == 0  # the half-written analysis was rolled back
        resume_and_compare(server, db_file, reference)


def test_a_second_process_on_the_database_gets_one_line_and_changes_nothing(
    seed: Path, tmp_path: Path, reference: dict[str, pd.DataFrame]
) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    with FakeOpenAIServer(answer_by_hash=True, fault_plan=slow_answers) as server:
        process = start_probe(run_args(server, db_file))
        wait_for(lambda: len(server.served) >= 5, "the first run to start")
        in_use = f"{db_file}: the database is in use by another probe process; wait for it to finish"
        # (`probe runs`, `probe report` and `probe export` read a snapshot instead: tests/store/test_bad_files.py,
        # tests/integrations/test_export_cli.py)
        for args in (
            ["run", "--backend", "replay", "--answers", "x.csv", "--run-id", "other", "--db", str(db_file)],
            ["analyze", RUN_ID, "--db", str(db_file)],
            ["taxonomy", "show", "nurse", "--db", str(db_file)],
        ):
            result = CliRunner().invoke(app, args)
            assert_one_line_error(result.exit_code, result.output, in_use)
        assert process.is_alive()  # the refusals came while the first run held the database
        process.join(WAIT_S)
        assert process.exitcode == 0
    first_run = results(db_file)
    for name, frame in reference.items():
        pd.testing.assert_frame_equal(first_run[name], frame, obj=name)
    assert list(query(db_file, "SELECT run_id FROM runs")["run_id"]) == [RUN_ID]


KILLABLE_RUN = """
import os, sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from probe import pipeline
from probe.store.config import RunConfig
from tests.support import FakeBackend

class Slow(FakeBackend):
    def answer(self, queries):
        time.sleep(float(os.environ["BATCH_SECONDS"]))  # > the runner's save interval: one commit a batch
        print("batch", flush=True)
        return super().answer(queries)

pipeline.create_backend = lambda settings: Slow()
pipeline.answer(RunConfig(**{settings!r}, run_id="killed"))
"""


def test_sigkill_then_restart_ends_with_the_labels_of_an_uninterrupted_run(db_file: Path, use_backend) -> None:
    """The runner's own commits (a fake backend, no server): a SIGKILL loses at most the batch in flight."""
    settings = dict(
        pairs=2,
        occupations=("nurse", "pilot"),
        top_k=2,
        conditions=("baseline",),
        db=str(db_file),
        quiet=True,
        no_cache=True,
    )
    use_backend(FakeBackend())
    reference = pipeline.answer(RunConfig(**settings, run_id="uninterrupted"))
    script = KILLABLE_RUN.format(root=str(ROOT), settings=settings)
    slow = {**os.environ, "BATCH_SECONDS": "0.6"}
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=slow)
    for _ in range(4):  # the backend is asked its 4th batch: 3 are answered
        assert process.stdout.readline() == "batch\n"
    process.send_signal(signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL
    partial = len(labels(db_file, "killed"))
    assert 2 * FakeBackend.batch_size <= partial <= 3 * FakeBackend.batch_size
    fast = {**os.environ, "BATCH_SECONDS": "0"}
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, env=fast)
    assert labels(db_file, "killed") == labels(db_file, reference)
