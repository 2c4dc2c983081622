"""`probe run` (the real CLI, in this process) with the time spent waiting for the model recorded.

    .venv/bin/python -m bench.timed_run REPORT.json BODIES.jsonl -- run --preset quick --db X --quiet

The parent (bench.llm) times the whole process from spawn to exit; this module adds, to REPORT.json:
- backend_start_s: creating the backend (for llamacpp: hashing the GGUF, starting the server, loading it);
- answer_s: time inside backend.answer (the model and the HTTP round trips: "waiting for the model"),
  split per stage (stage_answer_s), and the wall time of each stage's answering loop (stage_wall_s);
- between_stages_s: from the end of stage 1 to the start of stage 2 (building stage 2, inserting items).
Each HTTP request body the backend sends is appended to BODIES.jsonl, so the server's own throughput can
be measured on exactly the same requests.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from collections import defaultdict
from pathlib import Path


def _http_client_classes() -> list[type]:
    """The async HTTP clients requests leave through: httpx's (llama.cpp's exact scorer) and the one newer
    openai releases vendor (httpx2), where installed."""
    classes = []
    for name in ("httpx", "httpx2"):
        try:
            classes.append(importlib.import_module(name).AsyncClient)
        except ImportError:
            continue
    return classes


def main() -> None:
    report_path, bodies_path, separator, *probe_args = sys.argv[1:]
    if separator != "--":
        raise SystemExit("usage: python -m bench.timed_run REPORT.json BODIES.jsonl -- PROBE ARGS")
    from probe import pipeline
    from probe.answering import runner
    from probe.cli import main as probe_main

    report: dict[str, object] = {
        "backend_start_s": 0.0,
        "backend_close_s": 0.0,
        "answer_s": 0.0,
        "stage_answer_s": defaultdict(float),
        "stage_wall_s": {},
        "stage_bounds": {},
    }
    bodies: list[tuple[str, bytes]] = []

    def record_sends(client_class: type) -> None:
        real_send = client_class.send

        async def recording_send(self, request, **kwargs):
            bodies.append((request.url.path, request.content))
            return await real_send(self, request, **kwargs)

        client_class.send = recording_send

    for client_class in _http_client_classes():
        record_sends(client_class)

    real_create = pipeline.create_backend

    def timed_create(config):
        started = time.perf_counter()
        backend = real_create(config)
        report["backend_start_s"] += time.perf_counter() - started
        real_answer, real_close = backend.answer, backend.close

        def answer(queries):
            started = time.perf_counter()
            try:
                return real_answer(queries)
            finally:
                elapsed = time.perf_counter() - started
                report["answer_s"] += elapsed
                report["stage_answer_s"][str(queries[0].item["stage"])] += elapsed

        def close():
            started = time.perf_counter()
            try:
                real_close()
            finally:
                report["backend_close_s"] += time.perf_counter() - started

        backend.answer, backend.close = answer, close
        return backend

    pipeline.create_backend = timed_create

    real_answer_stage = runner._Answerer.answer_stage

    def timed_answer_stage(self, stage, *args, **kwargs):
        started = time.perf_counter()
        try:
            return real_answer_stage(self, stage, *args, **kwargs)
        finally:
            report["stage_bounds"][str(stage)] = (started, time.perf_counter())

    runner._Answerer.answer_stage = timed_answer_stage

    sys.argv = ["probe", *probe_args]
    try:
        probe_main()
    except SystemExit as exit_:
        if exit_.code not in (None, 0):
            raise
    finally:
        bounds = report.pop("stage_bounds")
        report["stage_wall_s"] = {stage: end - start for stage, (start, end) in bounds.items()}
        if "1" in bounds and "2" in bounds:
            report["between_stages_s"] = bounds["2"][0] - bounds["1"][1]
        Path(report_path).write_text(json.dumps(report))
        with open(bodies_path, "w") as file:
            for path, body in bodies:
                file.write(json.dumps({"path": path, "body": body.decode()}) + "\n")


if __name__ == "__main__":
    main()
