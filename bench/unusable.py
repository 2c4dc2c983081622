"""Time to fail against each class of unusable server, and peak memory under decompression bombs.

Each class is a fake OpenAI-compatible server (the test suite's fault-injecting one) answering every request
the same bad way; `probe run --preset paper` (26,600 stage-1 items first) runs against it with the default
settings, as a user would start it, and the wall time to its exit is measured (process start included).
Peak memory: the quick preset with every other reply a 10 kB gzip body that inflates to 10 MB, the rest
answered, so the whole run reads bombs 8 at a time; the CLI writes its own VmHWM as it exits.

    .venv/bin/python -m bench --only unusable
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.fake_openai_server import FakeOpenAIServer, Step, prompt_hash

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
PEAK_RSS_CLI = """
import pathlib, sys
from probe.cli import app
try:
    app(sys.argv[2:], prog_name="probe")
finally:
    status = pathlib.Path("/proc/self/status").read_text().splitlines()
    pathlib.Path(sys.argv[1]).write_text(next(line for line in status if line.startswith("VmHWM:")).split()[1])
"""


def _bomb() -> Step:
    body = json.dumps({"choices": [{"message": {"content": "yes"}}]}).encode() + b" " * 10_000_000
    return Step.raw(gzip.compress(body), headers=(("Content-Encoding", "gzip"),))


SERVER_CLASSES: dict[str, Step] = {
    "hangs": Step.slow(3600),
    "trickles_a_byte_every_2s": Step.trickle(2.0),
    "429_retry_after_3600": Step.rate_limited(retry_after=3600),
    "500_every_request": Step.server_error(500),
    "redirect_loop": Step.redirect_loop(),
    "401_key_rejected": Step.server_error(401),
    "every_reply_a_gzip_bomb": _bomb(),
}


def _probe(args: list[str], folder: Path, peak_file: Path) -> tuple[float, int, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", PEAK_RSS_CLI, str(peak_file), *args, "--db", str(folder / "probe.duckdb"), "--quiet"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=600,
        check=False,
    )
    return time.perf_counter() - started, done.returncode, done.stderr.strip().splitlines()[-1][:160]


def _paper_against(base_url: str, folder: Path, run_id: str) -> tuple[float, int, str]:
    args = [
        "run",
        "--preset",
        "paper",
        "--backend",
        "openai",
        "--decoding",
        "generate",
        "--base-url",
        base_url,
        "--model",
        "m",
        "--yes",
        "--run-id",
        run_id,
    ]
    return _probe(args, folder, folder / "peak_kb")


def measure(folder: Path) -> dict[str, float]:
    figures: dict[str, float] = {}
    seconds, code, line = _paper_against("http://127.0.0.1:9/v1", folder, "dead")
    figures |= {"fail_s_connection_refused": round(seconds, 1), "fail_exit_connection_refused": code}
    print(f"# connection refused: {line}", flush=True)
    for name, step in SERVER_CLASSES.items():
        with FakeOpenAIServer(fault_plan=lambda prompt, attempt, step=step: step) as server:
            seconds, code, line = _paper_against(server.base_url, folder, name)
        figures |= {f"fail_s_{name}": round(seconds, 1), f"fail_exit_{name}": code}
        print(f"# {name}: {line}", flush=True)

    def every_other_a_bomb(prompt: str, attempt: int) -> Step | None:
        return _bomb() if prompt_hash(prompt) % 2 else None

    run_toml = folder / "RUN.toml"
    run_toml.write_text('constrain = "grammar"\nmax_failed_share = 1.0\n')
    with FakeOpenAIServer(answer_by_hash=True, fault_plan=every_other_a_bomb) as server:
        args = [
            "run",
            "--preset",
            "quick",
            "--backend",
            "openai",
            "--decoding",
            "generate",
            "--base-url",
            server.base_url,
            "--model",
            "m",
            "--config",
            str(run_toml),
            "--run-id",
            "bombs",
        ]
        seconds, code, _ = _probe(args, folder, folder / "bomb_peak_kb")
        bombs = sum(1 for served in server.served if served.step.kind == "raw")
    figures |= {
        "bombs_read": bombs,
        "bombs_run_s": round(seconds, 1),
        "bombs_run_exit": code,
        "bombs_peak_rss_mb": round(int((folder / "bomb_peak_kb").read_text()) / 1024),
    }
    return figures
