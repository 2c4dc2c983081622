"""A database another process writes is read from a copy (`connect_or_snapshot`): a checkpoint between the copies
of the WAL and the file, or a copy torn by one, gives a consistent snapshot or one line saying why and what to do.

The writer is a process holding the database open that does what the test tells it, when it tells it; the copies
are the product's, with a checkpoint or a tear put between them by a fake `shutil.copyfile`: no clock decides."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probe.cli import app
from probe.store import db
from tests.support import assert_one_line_error, seeded_copy

# Holds the database (DuckDB's write lock) with 10 rows of `scratch` and a run `live` with no answers in its WAL; on
# "checkpoint" adds 5 rows and checkpoints them into the file; answers each line with "done".
WRITER = """
import duckdb, sys
con = duckdb.connect(sys.argv[1])
con.execute("CREATE TABLE scratch (i INTEGER)")
con.execute("CHECKPOINT")
con.execute("INSERT INTO scratch SELECT * FROM range(10)")
con.execute("INSERT INTO runs (run_id, backend, status) VALUES ('live', 'openai', 'running')")
print("ready", flush=True)
for line in sys.stdin:
    con.execute("INSERT INTO scratch SELECT * FROM range(5)")
    con.execute("CHECKPOINT")
    print("done", flush=True)
"""


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("seed") / "probe.duckdb"


@pytest.fixture
def writer(seed: Path, tmp_path: Path) -> Iterator[tuple[Path, Callable[[], None]]]:
    """The database a process is writing, and a function that makes that process checkpoint (and waits)."""
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db_file)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdin is not None
    assert process.stdout.readline() == "ready\n"

    def checkpoint() -> None:
        process.stdin.write("checkpoint\n")
        process.stdin.flush()
        assert process.stdout.readline() == "done\n"

    yield db_file, checkpoint
    process.stdin.close()
    assert process.wait(30) == 0


def copies(monkeypatch: pytest.MonkeyPatch, after: Callable[[Path, Path], None]) -> list[str]:
    """Every copy the snapshot makes is done, then `after(source, target)`; returns the names copied, in order."""
    copied: list[str] = []
    real = db.shutil.copyfile

    def copy_then(source: Path, target: Path) -> None:
        real(source, target)
        copied.append(Path(source).name)
        after(Path(source), Path(target))

    monkeypatch.setattr(db.shutil, "copyfile", copy_then)
    monkeypatch.setattr(db, "SNAPSHOT_WAIT_S", 0.0)
    return copied


def rows(con: db.duckdb.DuckDBPyConnection) -> int:
    try:
        return con.execute("SELECT count(*) FROM scratch").fetchone()[0]
    finally:
        con.close()


def test_a_database_being_written_is_read_from_a_copy_of_its_wal_and_file(
    writer: tuple[Path, Callable[[], None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    db_file, _ = writer
    copied = copies(monkeypatch, lambda source, target: None)
    con, snapshot = db.connect_or_snapshot(db_file)
    assert (snapshot, rows(con), copied) == (True, 10, ["probe.duckdb.wal", "probe.duckdb"])


@pytest.mark.parametrize("read_only", [True, False])  # `probe report` analyses into its copy
def test_a_checkpoint_between_the_copies_leaves_the_file_that_holds_it_all(
    writer: tuple[Path, Callable[[], None]], monkeypatch: pytest.MonkeyPatch, read_only: bool
) -> None:
    """The copied WAL (10 rows) is older than the file copied after the checkpoint (15 rows): DuckDB refuses the
    pair, and the file alone is the snapshot (main's version copied the file first, then a WAL it did not fit)."""
    db_file, checkpoint = writer
    copied = copies(monkeypatch, lambda source, target: checkpoint() if source.suffix == ".wal" else None)
    con, snapshot = db.connect_or_snapshot(db_file, read_only=read_only)
    assert (snapshot, rows(con), copied) == (True, 15, ["probe.duckdb.wal", "probe.duckdb"])


BLOCK = 256 * 1024  # DuckDB's block size
BUSY = (True, "refused")  # the database being written, opened first


def opens(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, str]]:
    """Every database opened, first the one being written (refused: busy), then each copy: whether a WAL was beside
    it, and whether it opened or was refused."""
    opened: list[tuple[bool, str]] = []
    real = db.connect

    def connect_and_note(path: Path, *, read_only: bool = False) -> db.duckdb.DuckDBPyConnection:
        with_wal = Path(f"{path}.wal").exists()
        try:
            con = real(path, read_only=read_only)
        except db.UserError:
            opened.append((with_wal, "refused"))
            raise
        opened.append((with_wal, "opened"))
        return con

    monkeypatch.setattr(db, "connect", connect_and_note)
    return opened


def test_a_wal_copied_before_a_checkpoint_is_never_opened_with_the_file(
    writer: tuple[Path, Callable[[], None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pair is not left to DuckDB to refuse: before 1.4 it opened, replaying the WAL into a file that holds it
    (20 rows for 15, rows of tables without a key duplicated)."""
    db_file, checkpoint = writer
    copied = copies(monkeypatch, lambda source, target: checkpoint() if source.suffix == ".wal" else None)
    opened = opens(monkeypatch)
    con, _ = db.connect_or_snapshot(db_file)
    assert (rows(con), copied, opened) == (15, ["probe.duckdb.wal", "probe.duckdb"], [BUSY, (False, "opened")])


def test_a_checkpoint_while_the_file_is_copied_has_it_copied_again(
    writer: tuple[Path, Callable[[], None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file changed during its copy: that copy may be torn, and is not opened."""
    db_file, checkpoint = writer
    checkpointed: list[Path] = []

    def checkpoint_after_the_first_file(source: Path, target: Path) -> None:
        if source.suffix != ".wal" and not checkpointed:
            checkpointed.append(target)
            checkpoint()

    copied = copies(monkeypatch, checkpoint_after_the_first_file)
    opened = opens(monkeypatch)
    con, _ = db.connect_or_snapshot(db_file)
    assert (rows(con), copied, opened) == (
        15,
        ["probe.duckdb.wal", "probe.duckdb", "probe.duckdb"],  # the checkpoint took the WAL
        [BUSY, (False, "opened")],
    )


def test_a_copy_that_opens_but_cannot_be_read_is_taken_again(
    writer: tuple[Path, Callable[[], None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first file copy has a block of rows garbled: DuckDB opens it and fails only on reading that block (a
    checksum), which the snapshot does before it hands the copy out."""
    db_file, _ = writer
    garbled: list[Path] = []

    def garble_the_first_file(source: Path, target: Path) -> None:
        if source.suffix != ".wal" and not garbled:
            garbled.append(target)
            with target.open("r+b") as handle:
                handle.seek(db._HEADERS_SIZE + BLOCK + 100)  # the second block: rows of the seeded taxonomy
                handle.write(b"x" * 100)

    copied = copies(monkeypatch, garble_the_first_file)
    opened = opens(monkeypatch)
    con, _ = db.connect_or_snapshot(db_file)
    assert (rows(con), copied, opened) == (
        10,
        ["probe.duckdb.wal", "probe.duckdb"] * 2,
        [BUSY, (True, "opened"), (True, "opened")],
    )


def test_the_copy_is_deleted_with_its_connection(writer: tuple[Path, Callable[[], None]]) -> None:
    db_file, _ = writer
    con, _ = db.connect_or_snapshot(db_file)
    folder = Path(
        con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()[0]
    )
    assert (folder.name, folder.parent.is_dir()) == ("probe.duckdb", True)
    con.close()
    del con
    assert not folder.parent.exists()


def test_a_torn_copy_is_taken_again(writer: tuple[Path, Callable[[], None]], monkeypatch: pytest.MonkeyPatch) -> None:
    db_file, _ = writer
    torn: list[Path] = []

    def tear_the_first_file(source: Path, target: Path) -> None:
        if source.suffix != ".wal" and not torn:
            torn.append(target)
            target.write_bytes(b"torn")

    copied = copies(monkeypatch, tear_the_first_file)
    con, snapshot = db.connect_or_snapshot(db_file)
    assert (snapshot, rows(con), copied) == (True, 10, ["probe.duckdb.wal", "probe.duckdb"] * 2)


def test_copies_that_never_open_end_in_one_line_saying_what_to_do(
    writer: tuple[Path, Callable[[], None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    db_file, _ = writer
    copied = copies(monkeypatch, lambda source, target: target.write_bytes(b"torn"))
    result = CliRunner().invoke(app, ["report", "r", "--db", str(db_file)])
    assert_one_line_error(
        result.exit_code,
        result.output,
        f"{db_file}: a probe process is writing the database, and none of 5 copies of it taken meanwhile would "
        'open (the last: IO Error: The file "<copy>/probe.duckdb" exists, but it is not a valid DuckDB database '
        "file!); run the command again, or when that process has finished\n",
    )
    assert copied == ["probe.duckdb.wal", "probe.duckdb"] * 5


def test_a_run_being_written_before_it_saved_an_answer_is_reported_again_later(
    writer: tuple[Path, Callable[[], None]],
) -> None:
    """Its report is one line that says to come back, not only to finish the run (it may be running)."""
    db_file, _ = writer
    result = CliRunner().invoke(app, ["report", "live", "--db", str(db_file)])
    assert_one_line_error(
        result.exit_code,
        result.output,
        "run 'live': has no answers yet; a probe process is writing the database (read from a copy as of now): if it "
        "is this run, run the command again once it has saved answers, else finish it with `probe run --run-id live`\n",
    )


def test_a_checkpoint_under_way_between_the_copies_has_both_copied_again(
    writer: tuple[Path, Callable[[], None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file's size or time moved between the copies but not its headers: a checkpoint's blocks written, its
    headers not yet, so the WAL still holds rows the copied file's headers do not reach: both are copied again."""
    db_file, _ = writer
    copied = copies(monkeypatch, lambda source, target: None)
    real_state = db._checkpoint_state
    reads: list[int] = []

    def moving_once(path: Path) -> tuple[int, int, bytes]:
        size, mtime, headers = real_state(path)
        reads.append(1)
        return (size + 1 if len(reads) == 2 else size), mtime, headers  # the second read: between the first copies

    monkeypatch.setattr(db, "_checkpoint_state", moving_once)
    con, snapshot = db.connect_or_snapshot(db_file)
    assert (snapshot, rows(con), copied, len(reads)) == (True, 10, ["probe.duckdb.wal", "probe.duckdb"] * 2, 6)


def test_a_copy_that_fails_leaves_no_folder_behind(
    writer: tuple[Path, Callable[[], None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    db_file, _ = writer
    folders: list[Path] = []
    real_mkdtemp = db.tempfile.mkdtemp

    def noted_mkdtemp(prefix: str) -> str:
        folders.append(Path(real_mkdtemp(prefix=prefix)))
        return str(folders[-1])

    def full_disk(source: Path, target: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(db.tempfile, "mkdtemp", noted_mkdtemp)
    monkeypatch.setattr(db.shutil, "copyfile", full_disk)
    with pytest.raises(OSError, match="No space left on device"):
        db.connect_or_snapshot(db_file)
    assert len(folders) == 1 and not folders[0].exists()
