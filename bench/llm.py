"""The default engine end to end: `probe run` overhead and the paper-preset estimate.

One `probe run` with the default backend and model (hf-causal on the bundled SmolLM2 GGUF; the real CLI,
in a child process started by `bench.timed_run`) is timed from spawn to exit. `llm_overhead_pct` is the
share of that wall time spent outside `backend.answer`, so it includes interpreter start-up, imports,
database set-up, dataset building, DuckDB writes, the analysis at the end, and loading the model (reported
on its own as `llm_startup_s`). The model's GGUF is converted once per machine and then loaded from the
cache (probe/backends/gguf_cache.py); the bench converts it before timing, so the timed run is a user's
second run, not their first.

`paper_preset_minutes_est` scales the run's measured parts to the paper preset's item counts (from the
real dataset builder): stage-1 and stage-2 answering loops per item, the stage-2 build per stage-2 item,
and everything else (start-up, analysis) as fixed. On a one-minute slice the fixed part dominates
`llm_overhead_pct`; `llm_per_item_overhead_pct` is the share of the answering loops spent outside
backend.answer (what grows with a run), and `paper_overhead_pct_est` the overhead share of the paper
preset's estimate (fixed part once, per-item part scaled).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb

from probe.backends import create_backend
from probe.store.config import RunConfig

# The slice of the paper preset timed by `--quick` (and by bench.engines): the first name pair, these
# occupations (office, manual, care, transport, science and teaching work, dance), all three conditions.
QUICK_OCCUPATIONS = ("accountant", "carpenter", "dancer", "nurse", "pilot", "scientist", "teacher")
SLICE_ARGS = ["--preset", "paper", "--pairs", "1", "--occupations", ",".join(QUICK_OCCUPATIONS)]


@dataclass(frozen=True)
class TimedRun:
    wall_s: float  # spawn to exit of the `probe run` process
    report: dict  # see bench.timed_run
    stage_items: dict[str, int]  # items per stage ("1", "2")
    bodies: list[dict]  # the HTTP requests the backend sent: path and JSON body

    @property
    def items(self) -> int:
        return sum(self.stage_items.values())


def timed_probe_run(probe_args: list[str], folder: Path) -> TimedRun:
    """Run `probe run PROBE_ARGS --db folder/run.duckdb --quiet` in a child process and time it."""
    database = folder / "run.duckdb"
    report_path, bodies_path = folder / "report.json", folder / "bodies.jsonl"
    command = [
        sys.executable,
        "-m",
        "bench.timed_run",
        str(report_path),
        str(bodies_path),
        "--",
        "run",
        *probe_args,
        "--db",
        str(database),
        "--quiet",
    ]
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, cwd=Path(__file__).resolve().parents[1])
    wall_s = time.perf_counter() - started
    con = duckdb.connect(str(database), read_only=True)
    try:
        stage_items = dict(con.execute("SELECT stage::VARCHAR, count(*) FROM items GROUP BY stage").fetchall())
    finally:
        con.close()
    bodies = [json.loads(line) for line in bodies_path.read_text().splitlines()]
    return TimedRun(wall_s, json.loads(report_path.read_text()), stage_items, bodies)


def _paper_seconds(run: TimedRun, paper_stage_items: dict[str, int], per_stage_s: dict[str, float]) -> float:
    """`per_stage_s` (seconds of each stage's loop) and the stage-2 build scaled per item to the paper
    preset's item counts, plus the run's fixed part (start-up, analysis: everything outside the stages)."""
    report = run.report
    between_s = report.get("between_stages_s", 0.0)
    paper_s = run.wall_s - sum(report["stage_wall_s"].values()) - between_s
    for stage, seconds in per_stage_s.items():
        paper_s += seconds / run.stage_items[stage] * paper_stage_items[stage]
    return paper_s + between_s / run.stage_items["2"] * paper_stage_items["2"]


def paper_minutes_estimate(run: TimedRun, paper_stage_items: dict[str, int]) -> float:
    """Scale the run's per-item parts to the paper preset's item counts; the rest is fixed."""
    return _paper_seconds(run, paper_stage_items, run.report["stage_wall_s"]) / 60


def paper_overhead_pct_estimate(run: TimedRun, paper_stage_items: dict[str, int]) -> float:
    """The share of the paper preset's estimated time spent outside backend.answer: the fixed start-up and
    analysis once, the per-item work (cache lookups, DuckDB writes, the stage-2 build) per item."""
    report = run.report
    outside = {stage: wall - report["stage_answer_s"][stage] for stage, wall in report["stage_wall_s"].items()}
    return 100 * _paper_seconds(run, paper_stage_items, outside) / (60 * paper_minutes_estimate(run, paper_stage_items))


def _loops_s(report: dict) -> float:
    """Seconds of the answering loops and the stage-2 build: the part of a run that grows with its items."""
    return sum(report["stage_wall_s"].values()) + report.get("between_stages_s", 0.0)


def measure(quick: bool, folder: Path, paper_stage_items: dict[str, int]) -> dict[str, float]:
    """The default engine's figures; `quick` times a slice of the paper preset instead of the quick preset."""
    default = RunConfig()
    create_backend(default.backend).close()  # converts the bundled GGUF into the cache if it is not there yet
    run = timed_probe_run(SLICE_ARGS if quick else ["--preset", "quick"], folder)
    report = run.report
    figures = {
        "llm_backend": default.backend.kind,
        "llm_run_items": run.items,
        "llm_run_wall_s": round(run.wall_s, 1),
        "llm_startup_s": round(report["backend_start_s"], 2),
        "llm_overhead_pct": round(100 * (run.wall_s - report["answer_s"]) / run.wall_s, 2),
        "llm_overhead_without_startup_pct": round(
            100 * (run.wall_s - report["answer_s"] - report["backend_start_s"]) / run.wall_s, 2
        ),
        "llm_per_item_overhead_pct": round(100 * (1 - report["answer_s"] / _loops_s(report)), 2),
        "llm_items_per_s": round(run.items / run.wall_s, 3),
        "llm_answer_items_per_s": round(run.items / report["answer_s"], 3),
    }
    if not quick:
        slice_folder = folder / "paper-slice"
        slice_folder.mkdir()
        run = timed_probe_run(["--preset", "paper", "--pairs", "1"], slice_folder)
    figures["paper_slice_items"] = run.items
    figures["paper_preset_minutes_est"] = round(paper_minutes_estimate(run, paper_stage_items), 1)
    figures["paper_overhead_pct_est"] = round(paper_overhead_pct_estimate(run, paper_stage_items), 2)
    figures["llm_load_average_1m_end"] = round(os.getloadavg()[0], 2)
    return figures
