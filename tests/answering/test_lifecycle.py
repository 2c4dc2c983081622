"""The one lifecycle of runs and scans (probe.answering.runs.lifecycle) and their one id space."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from bench.scan import write_replay_file
from probe.answering.runs import lifecycle
from probe.cli import app
from probe.common.errors import RunInterrupted
from tests.support import assert_one_line_error, fingerprint


@pytest.mark.parametrize(
    ("raised", "statuses"),
    [
        (None, ["running", "exit"]),
        (RuntimeError("server gone"), ["running", "exit", "failed"]),
        (KeyboardInterrupt(), ["running", "exit", "interrupted"]),
        (RunInterrupted(15, "SIGTERM"), ["running", "exit", "interrupted"]),
    ],
)
def test_a_record_is_running_while_it_asks_then_failed_or_interrupted_when_it_stops(
    raised: BaseException | None, statuses: list[str]
) -> None:
    """Completion is the body's to write (in the transaction of its last results), so a clean exit adds nothing."""
    written: list[str] = []
    expected = pytest.raises(type(raised)) if raised is not None else nullcontext()
    with expected, lifecycle(written.append, lambda: written.append("exit")):
        if raised is not None:
            raise raised
    assert written == statuses


def test_a_scan_cannot_take_a_runs_id(db_file: Path, tmp_path: Path) -> None:
    """The scan's items would be stored under the run's id and mixed into the run's answers."""
    answers = tmp_path / "answers.csv"
    write_replay_file(answers, db_file, np.ones((6, 70, 2), dtype=bool), ("29-9",))
    run = ["run", "--run-id", "shared", "--occupations", "Athletic Trainers", "--pairs", "2", "--backend", "replay"]
    assert CliRunner().invoke(app, [*run, "--answers", str(answers), "--db", str(db_file)]).exit_code == 0
    before = fingerprint(db_file)
    scan = ["scan", "--soc", "29-9", "--backend", "replay", "--answers", str(answers), "--db", str(db_file)]
    result = CliRunner().invoke(app, [*scan, "--quiet", "--scan-id", "shared"])
    assert_one_line_error(result.exit_code, result.output, "--scan-id shared: a run has this id; choose another")
    assert fingerprint(db_file) == before


def test_a_batch_run_cannot_take_a_scans_id(db_file: Path, tmp_path: Path) -> None:
    answers = tmp_path / "answers.csv"
    write_replay_file(answers, db_file, np.ones((6, 70, 2), dtype=bool), ("29-9",))
    scan = ["scan", "--soc", "29-9", "--backend", "replay", "--answers", str(answers), "--db", str(db_file)]
    assert CliRunner().invoke(app, [*scan, "--quiet", "--scan-id", "shared"]).exit_code == 0
    toml = tmp_path / "RUN.toml"
    toml.write_text('backend = "openai"\nmodel = "m"\ndecoding = "generate"\npairs = 1\noccupations = ["nurse"]\n')
    before = fingerprint(db_file)
    batch = ["batch", "export", "shared", "-o", str(tmp_path / "requests.jsonl"), "--db", str(db_file)]
    result = CliRunner().invoke(app, [*batch, "--config", str(toml)])
    assert_one_line_error(result.exit_code, result.output, "RUN_ID shared: a scan has this id; choose another")
    assert fingerprint(db_file) == before
