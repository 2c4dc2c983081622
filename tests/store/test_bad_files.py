"""Bad database files and full disks end in one line naming the file and the cause, never a traceback, and
leave the file as it was; DuckDB never loads or downloads an extension; a database a run is writing can be
read (`probe runs`, `probe report`) from a snapshot."""

from __future__ import annotations

import os
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

import probe
from probe.cli import app
from probe.store import db
from tests.fake_openai_server import FakeOpenAIServer, Step
from tests.support import ROOT, assert_one_line_error, fingerprint, query, seeded_copy

CLI = [sys.executable, "-c", "from probe.cli import app; app(prog_name='probe')"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("seed") / "probe.duckdb"


def openai_run(server: FakeOpenAIServer, db_file: Path, run_id: str = "r") -> list[str]:
    return [
        "run",
        "--backend",
        "openai",
        "--decoding",
        "generate",
        "--base-url",
        server.base_url,
        "--model",
        "m",
        "--pairs",
        "2",
        "--occupations",
        "nurse,pilot",
        "--top-k",
        "2",
        "--run-id",
        run_id,
        "--db",
        str(db_file),
        "--quiet",
    ]


def test_a_sqlite_file_as_db_is_named_and_untouched(tmp_path: Path) -> None:
    sqlite_file = tmp_path / "data.db"
    with sqlite3.connect(sqlite_file) as con:
        con.execute("CREATE TABLE runs (id INTEGER)")
    before = sqlite_file.read_bytes()
    for args in (["runs", "--db", str(sqlite_file)], ["run", "--pairs", "1", "--db", str(sqlite_file)]):
        result = CliRunner().invoke(app, args)
        assert_one_line_error(
            result.exit_code,
            result.output,
            f"{sqlite_file}: a SQLite database, not a probe (DuckDB) database; give another --db",
        )
    assert sqlite_file.read_bytes() == before


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("CREATE TABLE sales (id INTEGER, amount DOUBLE)", "not a probe database (its tables: sales)"),
        (
            "CREATE TABLE runs (run_id VARCHAR, started DATE)",
            "not a probe database (table runs has no column backend, backend_json, config_json)",
        ),
    ],
    ids=["other tables", "a runs table of another shape"],
)
def test_a_duckdb_file_with_another_schema_is_named_and_unchanged(sql: str, message: str, tmp_path: Path) -> None:
    other = tmp_path / "other.duckdb"
    with duckdb.connect(str(other)) as con:
        con.execute(sql)
    before = fingerprint(other)
    for command in (["runs"], ["report", "r"], ["run", "--pairs", "1"]):
        result = CliRunner().invoke(app, [*command, "--db", str(other)])
        assert_one_line_error(result.exit_code, result.output, f"{other}: {message}; give another --db")
    assert fingerprint(other) == before


def test_duckdb_extensions_are_never_installed_or_loaded(seed: Path, tmp_path: Path) -> None:
    con = db.connect(seeded_copy(seed, tmp_path / "probe.duckdb"))
    try:
        settings = con.execute(
            "SELECT current_setting('autoinstall_known_extensions'), current_setting('autoload_known_extensions')"
        ).fetchone()
    finally:
        con.close()
    assert settings == (False, False)


def _file_size_limit(limit: int):
    def apply() -> None:  # in the child: a write past `limit` bytes fails as on a full disk (EFBIG, not a signal)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_full_disk_is_one_line_and_the_run_resumes(seed: Path, tmp_path: Path) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    with FakeOpenAIServer(answer_by_hash=True) as server:
        full = subprocess.run(
            [*CLI, *openai_run(server, db_file)],
            capture_output=True,
            text=True,
            env=ENV,
            preexec_fn=_file_size_limit(30_000),
            timeout=120,
            check=False,
        )
        resumed = subprocess.run(
            [*CLI, *openai_run(server, db_file)], capture_output=True, text=True, env=ENV, timeout=120, check=False
        )
    assert (full.returncode, full.stdout) == (1, "")
    assert full.stderr == (
        f"error: {db_file}.wal: cannot write the database (File too large); what was answered before is saved: "
        "make room, then run the same command again to resume\n"
    )
    assert (resumed.returncode, resumed.stdout, resumed.stderr) == (0, "r\n", "")
    assert query(db_file, "SELECT status FROM runs").values.tolist() == [["complete"]]


def test_a_database_being_written_is_read_from_a_snapshot(seed: Path, tmp_path: Path) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    with FakeOpenAIServer(answer_by_hash=True, fault_plan=lambda prompt, attempt: Step.ok(delay_s=0.5)) as server:
        writer = subprocess.Popen(
            [*CLI, *openai_run(server, db_file, "live")], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 60
            while len(server.served) < 60:  # stage 2 (from 48 on) has begun
                assert time.monotonic() < deadline and writer.poll() is None
                time.sleep(0.05)
            listed = CliRunner().invoke(app, ["runs", "--db", str(db_file)])
            reported = CliRunner().invoke(app, ["report", "live", "--db", str(db_file), "-o", str(tmp_path / "r.md")])
            answered = len(probe.open_run("live", db=db_file).answers())  # the API reads a snapshot too
            still_running = writer.poll() is None
        finally:
            writer.send_signal(signal.SIGTERM)
            writer.wait(30)
    assert still_running
    assert listed.exit_code == 0 and " live " in listed.output and "running" in listed.output, listed.output
    assert listed.output.endswith(f"(a probe process is writing {db_file}: shown as of now)\n")
    assert (reported.exit_code, (tmp_path / "r.md").exists()) == (0, True), reported.output  # the message, if any
    assert answered >= 48  # stage 1's items at least, read while the run wrote
    assert query(db_file, "SELECT count(*) FROM metrics").values.tolist() == [[0]]  # analysed in the copy only
