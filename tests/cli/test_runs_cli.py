"""Living with runs: `probe --version`, `probe runs`, the run id shown at start, resume by id alone."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from probe import __version__, pipeline
from probe.answering.runs import preset_label
from probe.cli import app
from probe.store.config import load_config
from tests.fake_openai_server import FakeOpenAIServer, Step
from tests.support import FakeBackend, query

RUN_TOML = 'constrain = "grammar"\nconcurrency = 1\ntimeout = 10\n'
STARTED = re.compile(r"^run (\S+) in (.+); if it stops, resume it with: (.+)$")


def test_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert (result.exit_code, result.output) == (0, f"probe (taxonomy-probe) {__version__}\n")


def test_runs_on_a_database_without_runs(db_file: Path) -> None:
    result = CliRunner().invoke(app, ["runs", "--db", str(db_file)])
    assert (result.exit_code, result.output) == (0, f"no runs in {db_file}\n")


def _slow(prompt: str, attempt: int) -> Step:
    return Step.ok(delay_s=0.05)


def test_a_run_killed_with_sigkill_is_listed_and_resumed_by_its_id_alone(db_file: Path) -> None:
    """The id printed at start is enough: `probe runs` shows the killed run, `--run-id ID --db DB` finishes it."""
    run_toml = db_file.parent / "RUN.toml"
    run_toml.write_text(RUN_TOML)
    with FakeOpenAIServer(answer_by_hash=True, fault_plan=_slow) as server:
        args = [
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
            "taxonomy",
            "--config",
            str(run_toml),
            "--db",
            str(db_file),
        ]
        process = subprocess.Popen(
            [sys.executable, "-c", "from probe.cli import main; main()", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "COLUMNS": "200"},
        )
        try:
            line = process.stderr.readline().strip()
            started = STARTED.match(line)
            assert started, line
            run_id = started.group(1)
            assert started.group(3) == f"probe run --run-id {run_id} --db {db_file}"
            deadline = time.monotonic() + 60
            while len(server.served) < 5:  # killed mid stage 1, after some answers
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.01)
        finally:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(30)
            process.stderr.close()
        listed = CliRunner().invoke(app, ["runs", "--db", str(db_file)], env={"COLUMNS": "200"})
        assert listed.exit_code == 0
        row = next(line for line in listed.output.splitlines() if run_id in line)
        cells = row.split()
        assert cells[0] == run_id and cells[3:5] == ["fake-model", "openai"]
        # killed in stage 1 (24 items: 1 pair x 2 orders x 2 subjects x 6 attributes), some answered
        assert re.fullmatch(r"\d+/24", cells[-4]) and cells[-3:] == ["(stage", "1)", "stopped"]
        assert f"probe run --run-id RUN_ID --db {db_file}" in listed.output

        resumed = CliRunner().invoke(app, ["run", "--run-id", run_id, "--db", str(db_file)])
    assert resumed.exit_code == 0, resumed.output
    assert resumed.output.splitlines()[0] == line and run_id in resumed.output.splitlines()
    counts = query(
        db_file,
        "SELECT (SELECT count(*) FROM items WHERE run_id = ?1), "
        "(SELECT count(*) FROM answers WHERE run_id = ?1 AND error IS NULL), "
        "(SELECT status FROM runs WHERE run_id = ?1), (SELECT count(*) FROM runs)",
        [run_id],
    ).iloc[0]
    # nurse, top-2 of 3 categories: stage 1 = 1 pair x 2 orders x 2 subjects x 6 attributes; stage 2 >= 1
    assert counts.iloc[0] > 24 and counts.iloc[1] == counts.iloc[0]
    assert (counts.iloc[2], counts.iloc[3]) == ("complete", 1)
    listed = CliRunner().invoke(app, ["runs", "--db", str(db_file)], env={"COLUMNS": "200"})
    assert f"{counts.iloc[0]}/{counts.iloc[0]}" in listed.output and "complete" in listed.output


def test_resume_with_a_changed_answer_setting_is_refused(db_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "create_backend", lambda config: FakeBackend())
    common = ["--pairs", "1", "--occupations", "nurse", "--top-k", "1", "--db", str(db_file), "--quiet"]
    first = CliRunner().invoke(app, ["run", *common, "--run-id", "r1"])
    assert (first.exit_code, first.output) == (0, "r1\n")
    changed = CliRunner().invoke(app, ["run", "--run-id", "r1", "--db", str(db_file), "--top-k", "2"])
    assert changed.exit_code == 2
    assert changed.output.startswith("error: --top-k: run r1 was started with 1, not 2")


def test_runs_lists_a_preset_only_where_the_run_asked_what_it_asks(
    db_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--preset quick --pairs 1 --occupations nurse` is not the quick preset's 12 pairs and 8 occupations."""
    monkeypatch.setattr(pipeline, "create_backend", lambda config: FakeBackend())
    common = ["--preset", "quick", "--pairs", "1", "--occupations", "nurse", "--db", str(db_file), "--quiet"]
    assert CliRunner().invoke(app, ["run", *common, "--run-id", "small"]).exit_code == 0
    listed = CliRunner().invoke(app, ["runs", "--db", str(db_file)])
    [row] = [line for line in listed.output.splitlines() if line.strip().startswith("small")]
    assert " quick (modified) " in row
    quick = load_config({"preset": "quick"}).settings()
    assert (preset_label(quick), preset_label({**quick, "pairs": 6}), preset_label({**quick, "preset": None})) == (
        "quick",
        "quick (modified)",
        None,
    )


def test_ctrl_c_prints_the_command_that_resumes(db_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Interrupted(FakeBackend):
        def answer(self, queries):
            if self.batches == 1:
                raise KeyboardInterrupt
            return super().answer(queries)

    monkeypatch.setattr(pipeline, "create_backend", lambda config: Interrupted())
    args = ["run", "--pairs", "1", "--occupations", "nurse", "--top-k", "3", "--run-id", "r2", "--db", str(db_file)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 130
    resume = f"probe run --run-id r2 --db {db_file}"
    assert result.output.splitlines()[0] == f"run r2 in {db_file}; if it stops, resume it with: {resume}"
    assert result.output.splitlines()[-1] == f"interrupted; resume it with: {resume}"
    assert list(query(db_file, "SELECT status FROM runs")["status"]) == ["interrupted"]


def test_scans_are_listed_beside_runs_with_their_text_printed_literally(
    db_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A finished scan, one interrupted in round 1 (listed: interrupted, no flagged count yet) and a run."""
    from bench.scan import draw_answers, write_replay_file
    from probe.scanning import ScanSettings, rounds
    from probe.store.config import RunConfig
    from probe.store.db import connect

    answers = tmp_path / "answers.csv"
    write_replay_file(answers, db_file, draw_answers(np.random.default_rng(1), np.full(6, 0.5)), ("29-9",))
    config = RunConfig(backend="replay", answers=str(answers), db=str(db_file), quiet=True)
    assert pipeline.scan(config, ScanSettings(soc=("29-9",)), "fair", report=False).scan_id == "fair"

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        rounds.scan(config, ScanSettings(soc=("29-9",)), "cut", interrupted)
    hostile = "[bold]m\x1b]0;x\x07"  # rich markup and an escape sequence, as a server might name its model
    con = connect(db_file)
    try:
        con.execute("UPDATE scans SET model = ? WHERE scan_id = 'cut'", [hostile])
    finally:
        con.close()
    monkeypatch.setattr(pipeline, "create_backend", lambda config: FakeBackend())
    CliRunner().invoke(
        app,
        [
            "run",
            "--pairs",
            "1",
            "--occupations",
            "nurse",
            "--top-k",
            "1",
            "--run-id",
            "r",
            "--db",
            str(db_file),
            "--quiet",
        ],
    )

    listed = CliRunner().invoke(app, ["runs", "--db", str(db_file)], env={"COLUMNS": "200"})
    assert listed.exit_code == 0, listed.output
    lines = [line.strip() for line in listed.output.splitlines()]
    text = " ".join(line for line in lines if line)  # a table's title folds to its table's width on a long path
    assert text.index(f"runs in {db_file}") < text.index(f"scans in {db_file}")
    assert next(line for line in lines if line.startswith("r ")).split()[-2:] == ["36/36", "complete"]
    assert next(line for line in lines if line.startswith("scan id")).split() == [
        "scan",
        "id",
        "status",
        "model",
        "backend",
        "titles",
        "calls",
        "flagged",
        "started",
    ]
    started = r"\d\d-\d\d \d\d:\d\d"
    cut, fair = (line for line in lines if line.startswith(("cut ", "fair ")))  # newest first
    # printed as typed: the markup is not applied, the escape sequence shown as \x1b, \x07
    assert re.fullmatch(rf"cut +interrupted +\[bold\]m\\x1b\]0;x\\x07 +replay +6 +24 +{started}", cut)
    assert re.fullmatch(rf"fair +complete +{re.escape(str(answers))} +replay +6 +42 +0 +{started}", fair)
    assert lines[-1] == f"resume a scan that stopped with: probe scan --scan-id SCAN_ID --db {db_file}"
