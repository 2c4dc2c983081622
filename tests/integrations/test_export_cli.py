"""`probe export` and the entry points around it: exports read a database another process writes (from a copy, as
`probe runs` and `probe report` do), the lm-eval task's README counts its items, `python -m probe` runs the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.report.test_report import replay_run, steady_choice
from tests.support import ROOT, invoke

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("export")
    db_file = tmp / "probe.duckdb"
    replay_run(db_file, tmp, "r", steady_choice, occupations=("nurse",), top_k=1, pairs=1)
    return db_file


def test_export_reads_a_database_another_process_writes(one_run: Path, tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; con = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(60)",
            str(one_run),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"  # DuckDB's write lock: no other process may open the file
        tables = invoke("export", "r", "--format", "csv", "-o", str(tmp_path / "csv"), "--db", str(one_run))
        task = invoke("export", "r", "--format", "lm-eval", "-o", str(tmp_path / "task"), "--db", str(one_run))
        design = invoke(
            "export",
            "--format",
            "hf-dataset",
            "-o",
            str(tmp_path / "design"),
            "--pairs",
            "1",
            "--occupations",
            "nurse",
            "--top-k",
            "1",
            "--db",
            str(one_run),
        )
    finally:
        holder.kill()
        holder.wait(30)
    assert tables == (0, f"{tmp_path / 'csv' / 'items.csv'}\n{tmp_path / 'csv' / 'answers.csv'}\n")
    assert task[0] == 0 and (tmp_path / "task" / "README.md").exists(), task[1]
    assert design[0] == 0 and (tmp_path / "design" / "README.md").exists(), design[1]


def test_the_lm_eval_readme_counts_each_tasks_items(one_run: Path, tmp_path: Path) -> None:
    code, output = invoke("export", "r", "--format", "lm-eval", "-o", str(tmp_path / "task"), "--db", str(one_run))
    assert code == 0, output
    readme = (tmp_path / "task" / "README.md").read_text()
    # 1 pair x 2 orders x 2 subjects x 1 attribute per category (3); stage 2: 1 pair x 2 orders x 1 occupation x
    # 3 conditions, two binary items each
    assert "| `taxonomy_probe_attr` | 12 | stage 1: does this subject have this attribute? |" in readme
    assert "| `taxonomy_probe_binary` | 12 |" in readme and "| `taxonomy_probe_single` | 6 |" in readme
    assert "built-in method" not in readme


def test_python_m_probe_runs_the_command_line(one_run: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "probe", "runs", "--db", str(one_run)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert " r " in done.stdout and "complete" in done.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "probe", "report", "x", "--db", str(one_run.parent / "no.duckdb")],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
        check=False,
    )
    assert (missing.returncode, missing.stderr) == (2, f"error: {one_run.parent / 'no.duckdb'}: no such database\n")
