"""Time `probe analyze` on a synthetic run of a given size (default 1M answers).

.venv/bin/python -m bench.analyze_speed --answers 1000000
.venv/bin/python -m bench.analyze_speed --answers 1000000 --identity /tmp/tables  # and check every stored row

With --identity FOLDER the first call writes every result table of the run there (one parquet file each) and later
calls (another branch, a change meant to leave the numbers alone) compare theirs with them exactly.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from bench.synthetic import answers_per_pair, create_synthetic_run
from probe.analysis.metrics import RESULT_TABLES, analyze
from probe.common.vocabulary import CONDITIONS
from probe.store import db

RUN_ID = "bench"


def synthetic_database(path: Path, answers: int) -> int:
    """A probe database holding one synthetic run of about `answers` answers; returns the exact count."""
    pairs = math.ceil(answers / answers_per_pair(62, len(CONDITIONS)))
    con = db.connect(path)
    try:
        return create_synthetic_run(con, RUN_ID, pairs=pairs)
    finally:
        con.close()


def cli_analyze_seconds(path: Path) -> float:
    """Wall time of the `probe analyze` command (a new process: start-up and imports included)."""
    command = [sys.executable, "-c", "from probe.cli import main; main()", "analyze", RUN_ID, "--db", str(path)]
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def in_process_analyze_seconds(path: Path) -> float:
    """`probe.analysis.metrics.analyze` alone, on an open connection (re-analysis replaces the rows)."""
    con = db.connect(path)
    try:
        started = time.perf_counter()
        analyze(con, RUN_ID)
        return time.perf_counter() - started
    finally:
        con.close()


def check_identity(path: Path, folder: Path) -> list[str]:
    """The result tables whose rows differ from those frozen in `folder` (written there, none differing, where the
    folder has none yet): every value exact, rows sorted on every column."""
    con = db.connect(path)
    try:
        tables = {table: con.execute(f"SELECT * FROM {table}").df() for table in RESULT_TABLES}
    finally:
        con.close()
    folder.mkdir(parents=True, exist_ok=True)
    differing = []
    for table, frame in tables.items():
        frame = frame.sort_values(list(frame.columns), ignore_index=True)
        frozen = folder / f"{table}.parquet"
        if not frozen.exists():
            frame.to_parquet(frozen, index=False)
            continue
        try:
            pd.testing.assert_frame_equal(frame, pd.read_parquet(frozen), check_exact=True, check_dtype=False)
        except AssertionError:
            differing.append(table)
    return differing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="analyses to time")
    parser.add_argument("--identity", type=Path, help="a folder of frozen result tables to write or compare with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.duckdb"
        started = time.perf_counter()
        count = synthetic_database(path, args.answers)
        print(f"synthetic run: {count:,} answers in {time.perf_counter() - started:.1f} s")
        for attempt in range(1, args.repeat + 1):
            print(f"probe analyze #{attempt}: {cli_analyze_seconds(path):.2f} s")
            print(f"metrics.analyze #{attempt}: {in_process_analyze_seconds(path):.2f} s")
        if args.identity is not None:
            differing = check_identity(path, args.identity)
            print(f"result tables differing from {args.identity}: {', '.join(differing) or 'none'}")


if __name__ == "__main__":
    main()
