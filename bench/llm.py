"""The embedded llama.cpp path end to end: `probe run` overhead, run vs server throughput, paper estimate.

One `probe run` (the real CLI, in a child process started by `bench.timed_run`) is timed from spawn to
exit. `llm_overhead_pct` is the share of that wall time spent outside `backend.answer`, so it includes
interpreter start-up, imports, database set-up, dataset building, DuckDB writes, the analysis at the end,
and the llama.cpp server start-up (reported on its own as `llm_server_startup_s` too). Time inside
`backend.answer` also holds the openai client's own work (JSON, HTTP): that cost shows up as the gap
between `llm_items_per_s` (the run) and `llm_server_items_per_s` (the same request bodies, recorded during
the run, sent straight to a fresh server of the same size with raw HTTP at the best concurrency).

`paper_preset_minutes_est` scales the run's measured parts to the paper preset's item counts (from the
real dataset builder): stage-1 and stage-2 answering loops per item, the stage-2 build per stage-2 item,
and everything else (start-up, analysis) as fixed.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb
import httpx

from probe.backends import llamacpp
from probe.config import RunConfig

# The slice of the paper preset timed by `--quick`: the first name pair, these occupations (office,
# manual, care, transport, science and teaching work, dance), all three conditions.
QUICK_OCCUPATIONS = ("accountant", "carpenter", "dancer", "nurse", "pilot", "scientist", "teacher")


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
        sys.executable, "-m", "bench.timed_run", str(report_path), str(bodies_path), "--",
        "run", *probe_args, "--db", str(database), "--quiet",
    ]  # fmt: skip
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


@dataclass(frozen=True)
class ServerResult:
    items_per_s: float
    prompt_tokens: int  # all prompt tokens of the requests
    evaluated_tokens: int  # those the server computed (the rest came from its prompt cache)


def server_throughput(bodies: list[dict], concurrency: int) -> ServerResult:
    """Throughput of a fresh embedded server (sized as `probe run` sizes it) on these request bodies."""
    backend = llamacpp.create(llamacpp.settings_from(RunConfig()))
    try:
        return asyncio.run(_send_all(backend.server_address, bodies, concurrency))
    finally:
        backend.close()


async def _send_all(address: str, bodies: list[dict], concurrency: int) -> ServerResult:
    limit = asyncio.Semaphore(concurrency)
    timings: list[dict] = []
    async with httpx.AsyncClient(timeout=600, limits=httpx.Limits(max_connections=concurrency)) as client:

        async def send(request: dict) -> None:
            async with limit:
                response = await client.post(
                    address + request["path"], content=request["body"], headers={"content-type": "application/json"}
                )
                response.raise_for_status()
                timings.append(response.json().get("timings", {}))

        started = time.perf_counter()
        await asyncio.gather(*(send(request) for request in bodies))
        items_per_s = len(bodies) / (time.perf_counter() - started)
    evaluated = sum(timing.get("prompt_n", 0) for timing in timings)
    return ServerResult(items_per_s, evaluated + sum(timing.get("cache_n", 0) for timing in timings), evaluated)


def paper_minutes_estimate(run: TimedRun, paper_stage_items: dict[str, int]) -> float:
    """Scale the run's per-item parts to the paper preset's item counts; the rest is fixed."""
    report = run.report
    per_item = sum(report["stage_wall_s"].values()) + report.get("between_stages_s", 0.0)
    fixed_s = run.wall_s - per_item
    paper_s = fixed_s
    for stage, wall in report["stage_wall_s"].items():
        paper_s += wall / run.stage_items[stage] * paper_stage_items[stage]
    paper_s += report.get("between_stages_s", 0.0) / run.stage_items["2"] * paper_stage_items["2"]
    return paper_s / 60


def measure(quick: bool, folder: Path, paper_stage_items: dict[str, int]) -> dict[str, float]:
    """All llama.cpp figures; `quick` times a slice of the paper preset instead of the quick preset."""
    if quick:
        run_args = ["--preset", "paper", "--pairs", "1", "--occupations", ",".join(QUICK_OCCUPATIONS)]
    else:
        run_args = ["--preset", "quick"]
    run = timed_probe_run(run_args, folder)
    report = run.report
    figures = {
        "llm_run_items": run.items,
        "llm_run_wall_s": round(run.wall_s, 1),
        "llm_server_startup_s": round(report["backend_start_s"], 2),
        "llm_overhead_pct": round(100 * (run.wall_s - report["answer_s"]) / run.wall_s, 2),
        "llm_overhead_without_startup_pct": round(
            100 * (run.wall_s - report["answer_s"] - report["backend_start_s"]) / run.wall_s, 2
        ),
        "llm_items_per_s": round(run.items / run.wall_s, 3),
        "llm_answer_items_per_s": round(run.items / report["answer_s"], 3),
    }
    slots = llamacpp.default_slots()
    for concurrency in (slots, 2 * slots):
        result = server_throughput(run.bodies, concurrency)
        figures[f"llm_server_items_per_s_c{concurrency}"] = round(result.items_per_s, 3)
        if concurrency == slots:  # the run's own concurrency
            figures["llm_prompt_tokens"] = result.prompt_tokens
            figures["llm_prompt_tokens_from_cache_pct"] = round(
                100 * (1 - result.evaluated_tokens / result.prompt_tokens), 1
            )
    figures["llm_server_items_per_s"] = max(
        value for name, value in figures.items() if name.startswith("llm_server_items_per_s_c")
    )
    if not quick:
        slice_folder = folder / "paper-slice"
        slice_folder.mkdir()
        run = timed_probe_run(["--preset", "paper", "--pairs", "1"], slice_folder)
    figures["paper_slice_items"] = run.items
    figures["paper_preset_minutes_est"] = round(paper_minutes_estimate(run, paper_stage_items), 1)
    figures["llm_load_average_1m_end"] = round(os.getloadavg()[0], 2)
    return figures
