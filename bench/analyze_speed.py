"""Time `probe analyze` on a synthetic run of a given size (default 1M answers).

.venv/bin/python -m bench.analyze_speed --answers 1000000
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.synthetic import answers_per_pair, create_synthetic_run
from probe.analysis.metrics import analyze
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="analyses to time")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.duckdb"
        started = time.perf_counter()
        count = synthetic_database(path, args.answers)
        print(f"synthetic run: {count:,} answers in {time.perf_counter() - started:.1f} s")
        for attempt in range(1, args.repeat + 1):
            print(f"probe analyze #{attempt}: {cli_analyze_seconds(path):.2f} s")
            print(f"metrics.analyze #{attempt}: {in_process_analyze_seconds(path):.2f} s")


if __name__ == "__main__":
    main()
