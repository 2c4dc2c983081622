"""One model, two engines: the bundled SmolLM2 GGUF under llama.cpp and under hf-causal agree.

Both answer the same small run through the real CLI; every label where llama.cpp's top two option
scores are >= 0.5 nats apart must agree, and >= 85% overall (bench/engines.py measures the same on a
larger slice). The comparison needs llama.cpp's exact option log-likelihoods (decided by score). Only
baseline-condition stage-2 prompts are compared (the run asks no other condition): they state no attribute, so
they do not depend on either engine's stage-1 answers and both engines answer the same 60 prompts (a taxonomy
prompt states the attributes each engine granted in stage 1, and differs where they differ); they also give more
clear labels than the taxonomy run of 112 items did (14 of 60, there 9 of 92).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.engines import agreement
from probe.cli import app
from tests.support import query, seeded_copy

RUN = ["--pairs", "1", "--occupations", "nurse,pilot,dancer", "--top-k", "1", "--conditions", "baseline", "--quiet"]


@pytest.mark.slow
def test_llamacpp_and_hf_causal_agree_on_the_bundled_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    databases = {}
    for backend in ("llamacpp", "hf-causal"):
        databases[backend] = seeded_copy(tmp_path / "seed.duckdb", tmp_path / f"{backend}.duckdb")
        args = ["run", "--backend", backend, *RUN, "--run-id", "r", "--db", str(databases[backend])]
        result = CliRunner().invoke(app, args)
        assert (result.exit_code, result.stdout.splitlines()[0]) == (0, "r"), result.output
        identity = json.loads(query(databases[backend], "SELECT backend_json FROM runs").iloc[0, 0])
        if identity.get("decided_by") != "score":
            pytest.skip(f"{backend} labels are not decided by exact option scores in this build")
    figures = agreement(databases["llamacpp"], databases["hf-causal"])
    assert figures["engine_items_compared"] == 60  # every item: no prompt depends on an engine's answers
    # Measured with llama.cpp's exact scores (2026-11-28): 0.9167 overall (0.8804 on the taxonomy run of
    # 2026-11-23; float32 dequantized weights vs Q4_1 with 8-bit activations move near-ties); every clear label
    # agrees, 14 of them (one 0.503 nats apart: another CPU's kernels may move it under the 0.5 line).
    assert figures["engine_agreement"] >= 0.85
    assert figures["engine_clear_items"] >= 12
    assert figures["engine_agreement_clear"] == 1.0
