"""Time `probe.metrics.analyze` on a synthetic run of a given size (default 1M answers).

    .venv/bin/python bench/analyze_speed.py --answers 1000000
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import duckdb
from synthetic import CONDITIONS, answers_per_pair, create_synthetic_run

from probe import db
from probe.metrics import analyze


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="analyses to time (re-analysis replaces rows)")
    args = parser.parse_args()
    pairs = math.ceil(args.answers / answers_per_pair(62, len(CONDITIONS)))
    with tempfile.TemporaryDirectory() as folder:
        con = duckdb.connect(str(Path(folder) / "bench.duckdb"))
        con.execute(db.SCHEMA)
        started = time.perf_counter()
        count = create_synthetic_run(con, "bench", pairs=pairs)
        print(f"synthetic run: {pairs} pairs, {count:,} answers in {time.perf_counter() - started:.1f} s")
        for attempt in range(1, args.repeat + 1):
            started = time.perf_counter()
            analyze(con, "bench")
            print(f"analyze #{attempt}: {time.perf_counter() - started:.2f} s")
        rows = con.execute("SELECT count(*) FROM metrics WHERE run_id = 'bench'").fetchone()[0]
        print(f"metrics rows: {rows:,}")


if __name__ == "__main__":
    main()
