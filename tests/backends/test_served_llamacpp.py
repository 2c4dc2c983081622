"""`--backend openai` pointed at a llama.cpp server started as its own process scores exactly as `--backend
llamacpp` does on the same GGUF: the same labels, scores within 1e-6 (one occupation: both stages, every
question type)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probe.cli import app
from tests.support import ROOT, query, seeded_copy

SLICE = ["--pairs", "1", "--occupations", "nurse", "--top-k", "1", "--conditions", "taxonomy", "--quiet"]


@pytest.mark.slow
def test_a_llamacpp_server_scored_over_http_equals_the_llamacpp_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    db = seeded_copy(tmp_path / "seed.duckdb", tmp_path / "probe.duckdb")
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.llamacpp_server_process"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        base_url = server.stdout.readline().strip()
        served = CliRunner().invoke(
            app,
            [
                "run",
                "--backend",
                "openai",
                "--base-url",
                base_url,
                "--model",
                "smollm2",
                "--run-id",
                "served",
                "--db",
                str(db),
                *SLICE,
            ],
        )
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    local = CliRunner().invoke(
        app, ["run", "--backend", "llamacpp", "--concurrency", "1", "--run-id", "local", "--db", str(db), *SLICE]
    )
    assert (served.exit_code, local.exit_code) == (0, 0), served.output + local.output
    identity = json.loads(query(db, "SELECT backend_json FROM runs WHERE run_id = 'served'").iloc[0, 0])
    assert (identity["backend"], identity["decided_by"], identity["scores"].split(":")[1].strip()) == (
        "openai",
        "score",
        "llama.cpp server, sum of forced option-token log-probabilities",
    )
    answers = query(
        db,
        "SELECT run_id, i.prompt, label, scores_json, decided_by FROM answers JOIN items i "
        "USING (run_id, item_id) ORDER BY run_id, i.prompt",
    )
    by_run = {run: frame.reset_index(drop=True) for run, frame in answers.groupby("run_id")}
    assert len(by_run["served"]) == len(by_run["local"]) > 0
    assert list(by_run["served"]["prompt"]) == list(by_run["local"]["prompt"])
    assert list(by_run["served"]["label"]) == list(by_run["local"]["label"])
    assert set(by_run["served"]["decided_by"]) == {"score"}
    for mine, theirs in zip(by_run["served"]["scores_json"], by_run["local"]["scores_json"], strict=True):
        assert json.loads(mine) == pytest.approx(json.loads(theirs), abs=1e-6)
