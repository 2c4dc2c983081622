"""`probe run --dry-run` and the confirmation of long runs: counts from the real builder, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from probe import pipeline, plan
from probe.cli import app
from probe.config import RunConfig
from tests.support import fingerprint
from tests.test_run import FakeBackend

SMALL = ["--pairs", "2", "--occupations", "nurse,pilot", "--top-k", "2"]


def test_paper_dry_run_states_the_calls_and_an_estimate_and_writes_nothing(tmp_path: Path) -> None:
    db_file = tmp_path / "new.duckdb"
    result = CliRunner().invoke(app, ["run", "--preset", "paper", "--dry-run", "--db", str(db_file)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "stage 1: 26,600 items (yes/no: is this person skilled in ...)"
    assert lines[1].startswith("stage 2: 104,160 items (taxonomy 34,720, baseline 34,720, control 34,720)")
    assert lines[2] == (
        "model calls after reuse (an identical prompt is asked once): 130,760 (stage 1 26,600, stage 2 104,160)"
    )
    # 26,600 / 15.3 + 104,160 / 7.5 seconds = 260 min, BENCHMARKS.md's paper_preset_minutes_est
    assert lines[3].startswith("estimated time with hf-causal: 4 h 20 min at 15.3 calls/s in stage 1 and 7.5")
    assert not db_file.exists()


def test_dry_run_on_an_existing_database_changes_nothing(db_file: Path) -> None:
    before = fingerprint(db_file)
    result = CliRunner().invoke(app, ["run", *SMALL, "--dry-run", "--db", str(db_file)])
    assert result.exit_code == 0, result.output
    assert fingerprint(db_file) == before


def test_a_long_run_is_refused_off_a_terminal_and_started_with_yes(
    db_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "create_backend", lambda config: FakeBackend())
    monkeypatch.setattr(plan, "CONFIRM_OVER_S", 10.0)  # the small run: 88 / 15.3 + 96 / 7.5 s = 19 s
    before = fingerprint(db_file)
    refused = CliRunner().invoke(app, ["run", *SMALL, "--db", str(db_file), "--quiet"])
    assert refused.exit_code == 2
    assert refused.output.startswith("error: this run needs 184 model calls, estimated at 19 s")
    assert refused.output.endswith("19 s with hf-causal; pass --yes to start it (or --dry-run to see the plan)\n")
    assert fingerprint(db_file) == before
    started = CliRunner().invoke(app, ["run", *SMALL, "--db", str(db_file), "--quiet", "--yes", "--run-id", "y"])
    assert (started.exit_code, started.output) == (0, "y\n")


def test_the_estimate_uses_the_speed_measured_in_this_database(db_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "create_backend", lambda config: FakeBackend())
    config = RunConfig(pairs=2, occupations=("nurse", "pilot"), top_k=2, db=str(db_file), quiet=True)
    assert plan.plan(config).rate_source.startswith("as measured for BENCHMARKS.md")
    pipeline.answer(RunConfig(**{**config.__dict__, "run_id": "measured"}))
    resumed = plan.plan(RunConfig(**{**config.__dict__, "run_id": "measured"}))
    assert resumed.rate_source == "measured in this database (run measured)"
    assert (resumed.already_answered, resumed.calls_left, resumed.seconds) == (resumed.calls, 0, 0.0)
