"""One model, two engines: the bundled SmolLM2 GGUF under llama.cpp and under hf-causal (transformers).

Both engines answer the same slice of the paper preset with the real `probe run` CLI (bench.llm's timed
child process), each into its own database. Per engine: items/s and the paper-preset estimate scaled
from the slice (bench.llm.paper_minutes_estimate). Agreement is over the items both runs hold with the
same prompt and asked subject (stage 2 is built from each engine's own stage-1 answers, so a stage-2
item exists in both only where the granted attributes agree): `engine_agreement` is the share of equal
labels, `engine_agreement_clear` the share among items where llama.cpp's top two option scores are at
least CLEAR_MARGIN nats apart. The llama.cpp run's HTTP requests are replayed unchanged to a fresh server
of the same size with raw httpx: `llamacpp_server_requests_per_s` against `llamacpp_run_requests_per_s`
is what the client side of the run costs.

`--gpu` times hf-causal on a CUDA GPU (`--device cuda`, bfloat16) instead of comparing engines, and says
so when there is none.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb
import httpx

from bench.llm import SLICE_ARGS, TimedRun, paper_minutes_estimate, timed_probe_run
from probe.backends import llamacpp
from probe.store.config import RunConfig

CLEAR_MARGIN = 0.5  # nats between llama.cpp's best and second-best option


@dataclass(frozen=True)
class ServerResult:
    requests_per_s: float
    prompt_tokens: int  # all prompt tokens of the requests
    evaluated_tokens: int  # those the server computed (the rest came from its prompt cache)


def server_throughput(bodies: list[dict], concurrency: int) -> ServerResult:
    """Throughput of a fresh embedded server (sized as `probe run` sizes it) on these request bodies."""
    backend = llamacpp.create(llamacpp.settings_from(RunConfig().backend))
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
        requests_per_s = len(bodies) / (time.perf_counter() - started)
    evaluated = sum(timing.get("prompt_n", 0) for timing in timings)
    return ServerResult(requests_per_s, evaluated + sum(timing.get("cache_n", 0) for timing in timings), evaluated)


def _answers(database: Path) -> dict[tuple[str, str | None], tuple[str, str | None]]:
    """(prompt, asked subject) -> (label, scores_json) for every answered item of the one run."""
    con = duckdb.connect(str(database), read_only=True)
    try:
        rows = con.execute(
            "SELECT i.prompt, i.subject, a.label, a.scores_json FROM items i JOIN answers a USING (run_id, item_id)"
        ).fetchall()
    finally:
        con.close()
    return {(prompt, subject): (label, scores) for prompt, subject, label, scores in rows}


def margin(scores_json: str | None) -> float | None:
    """Best minus second-best option score, or None without scores."""
    if not scores_json:
        return None
    top = sorted(json.loads(scores_json).values(), reverse=True)
    return top[0] - top[1] if len(top) > 1 else None


def agreement(reference: Path, other: Path) -> dict[str, float]:
    """Label agreement of `other` with `reference` (llama.cpp) over the items both answered."""
    ours, theirs = _answers(reference), _answers(other)
    shared = [key for key in ours if key in theirs]
    same = [ours[key][0] == theirs[key][0] for key in shared]
    clear = [
        ours[key][0] == theirs[key][0]
        for key in shared
        if (gap := margin(ours[key][1])) is not None and gap >= CLEAR_MARGIN
    ]
    return {
        "engine_items_compared": len(shared),
        "engine_agreement": round(sum(same) / len(same), 4) if same else float("nan"),
        "engine_clear_items": len(clear),
        "engine_agreement_clear": round(sum(clear) / len(clear), 4) if clear else float("nan"),
    }


def _engine_run(name: str, args: list[str], folder: Path, paper_stage_items: dict[str, int]) -> tuple[TimedRun, dict]:
    folder.mkdir()
    run = timed_probe_run([*SLICE_ARGS, *args], folder)
    return run, {
        f"{name}_slice_items": run.items,
        f"{name}_items_per_s": round(run.items / run.wall_s, 3),
        f"{name}_answer_items_per_s": round(run.items / run.report["answer_s"], 3),
        f"{name}_startup_s": round(run.report["backend_start_s"], 2),
        f"paper_preset_minutes_est_{name}": round(paper_minutes_estimate(run, paper_stage_items), 1),
    }


def _server_figures(run: TimedRun) -> dict[str, float]:
    """The llama.cpp run's own HTTP requests replayed to a fresh server: what the client side costs."""
    result = server_throughput(run.bodies, llamacpp.default_slots())
    return {
        "llamacpp_requests": len(run.bodies),  # /tokenize, /apply-template, scored and breaker /completion
        "llamacpp_run_requests_per_s": round(len(run.bodies) / run.report["answer_s"], 2),
        "llamacpp_server_requests_per_s": round(result.requests_per_s, 2),
        "llamacpp_prompt_tokens": result.prompt_tokens,
        "llamacpp_prompt_tokens_from_cache_pct": round(100 * (1 - result.evaluated_tokens / result.prompt_tokens), 1),
    }


def measure(folder: Path, paper_stage_items: dict[str, int], gpu: bool) -> dict[str, float | str]:
    if gpu:
        import torch

        if not torch.cuda.is_available():
            return {"gpu": "none: no CUDA GPU on this machine, nothing measured"}
        _, figures = _engine_run(
            "hf_causal_gpu", ["--backend", "hf-causal", "--device", "cuda"], folder / "gpu", paper_stage_items
        )
        return {"gpu": torch.cuda.get_device_name(0), **figures}
    llama_run, llama_figures = _engine_run(
        "llamacpp", ["--backend", "llamacpp"], folder / "llamacpp", paper_stage_items
    )
    _, hf_figures = _engine_run("hf_causal", ["--backend", "hf-causal"], folder / "hf_causal", paper_stage_items)
    return {
        **llama_figures,
        **_server_figures(llama_run),
        **hf_figures,
        **agreement(folder / "llamacpp" / "run.duckdb", folder / "hf_causal" / "run.duckdb"),
    }
