"""`probe run --dry-run` and the confirmation of long runs: counts from the real builder, nothing written."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from probe import pipeline
from probe.answering import plan
from probe.cli import app
from probe.store.config import RunConfig
from tests.support import FakeBackend, fingerprint

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
    db_file: Path, monkeypatch: pytest.MonkeyPatch, use_backend
) -> None:
    use_backend(FakeBackend())
    monkeypatch.setattr(plan, "CONFIRM_OVER_S", 10.0)  # the small run: 88 / 15.3 + 96 / 7.5 s = 19 s
    before = fingerprint(db_file)
    refused = CliRunner().invoke(app, ["run", *SMALL, "--db", str(db_file), "--quiet"])
    assert refused.exit_code == 2
    assert refused.output.startswith("error: this run needs 184 model calls, estimated at 19 s")
    assert refused.output.endswith("19 s with hf-causal; pass --yes to start it (or --dry-run to see the plan)\n")
    assert fingerprint(db_file) == before
    started = CliRunner().invoke(app, ["run", *SMALL, "--db", str(db_file), "--quiet", "--yes", "--run-id", "y"])
    assert (started.exit_code, started.output) == (0, "y\n")


def test_a_finished_run_has_nothing_left(db_file: Path, use_backend) -> None:
    use_backend(FakeBackend())
    config = RunConfig(pairs=2, occupations=("nurse", "pilot"), top_k=2, db=str(db_file), quiet=True)
    assert plan.plan(config).rate_source.startswith("as measured for BENCHMARKS.md")
    pipeline.answer(config.replaced(run_id="measured"))
    resumed = plan.plan(config.replaced(run_id="measured"))
    assert (resumed.already_answered, resumed.calls_left, resumed.seconds) == (resumed.calls, 0, 0.0)


def test_the_measured_speed_leaves_out_the_first_batch(db_file: Path, use_backend) -> None:
    """Answers are stamped when their batch returns: 11 batches of 8 a second apart are 80 calls in 10 s."""
    use_backend(FakeBackend())
    config = RunConfig(pairs=2, occupations=("nurse", "pilot"), top_k=2, db=str(db_file), quiet=True)
    pipeline.answer(config.replaced(run_id="timed"))
    con = duckdb.connect(str(db_file))
    con.execute(
        """UPDATE answers SET answered_at = stamped.at FROM (
               SELECT item_id, TIMESTAMP '2026-01-01' + to_seconds(stage * 100 + position // 8)
                      + to_microseconds(position % 8) AS at
               FROM (SELECT item_id, stage, row_number() OVER (PARTITION BY stage ORDER BY seq) - 1 AS position
                     FROM items WHERE run_id = 'timed')
           ) stamped WHERE answers.run_id = 'timed' AND answers.item_id = stamped.item_id"""
    )
    con.close()
    estimate = plan.plan(config)
    assert (estimate.stage1_calls, estimate.stage2_calls) == (88, 96)  # 11 and 12 batches of 8
    assert estimate.rates == pytest.approx(((88 - 8) / 10, (96 - 8) / 11))
    assert estimate.rate_source == "measured in this database (run timed)"
