"""Time `probe compare` of 10 paper-size runs (synthetic, analysed first): the leaderboard, paired differences,
ranks, figures and the three files.

    .venv/bin/python -m bench.compare_speed --runs 10
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.synthetic import create_synthetic_run
from probe.analysis.metrics import analyze
from probe.store import db

PAPER_PAIRS = 70


def analysed_runs(path: Path, runs: int, pairs: int = PAPER_PAIRS) -> list[str]:
    """`runs` synthetic paper-size runs (62 occupations, 3 conditions, each its own seed), analysed."""
    con = db.connect(path)
    try:
        run_ids = [f"model-{index:02d}" for index in range(runs)]
        for seed, run_id in enumerate(run_ids):
            create_synthetic_run(con, run_id, pairs=pairs, seed=seed)
            analyze(con, run_id)
        return run_ids
    finally:
        con.close()


def cli_compare_seconds(path: Path, run_ids: list[str]) -> float:
    """Wall time of the `probe compare` command (a new process: start-up and imports included)."""
    command = [
        sys.executable,
        "-c",
        "from probe.cli import main; main()",
        "compare",
        *run_ids,
        "--db",
        str(path),
        "-o",
        str(path.parent / "compare.html"),
    ]
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def measure(folder: Path, runs: int = 10) -> dict[str, float]:
    path = folder / "compare.duckdb"
    run_ids = analysed_runs(path, runs)
    return {"compare_runs": runs, f"compare_{runs}_paper_runs_seconds": round(cli_compare_seconds(path, run_ids), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for name, value in measure(Path(folder), args.runs).items():
            print(f"{name}={value}")


if __name__ == "__main__":
    main()
