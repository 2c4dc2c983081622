"""Cached work starts no model (probe/backends/lazy.py): a second run of a design whose answers are all cached
imports neither torch nor transformers, and answers exactly as the first; a cache miss builds the model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from probe.backends import lazy
from probe.store.config import RunConfig
from tests.tiny_models import build_causal_model

SLICE = [
    "--pairs",
    "1",
    "--occupations",
    "nurse,pilot,dancer",
    "--top-k",
    "1",
    "--conditions",
    "taxonomy",
    "--yes",
    "--quiet",
]
# `probe run` in a fresh interpreter, printing afterwards whether torch or transformers were imported.
RUN = (
    "import sys; from probe.cli import app\n"
    "try:\n    app(sys.argv[1:], prog_name='probe')\nexcept SystemExit as done:\n    code = done.code\n"
    "print('imported:', sorted(m for m in ('torch', 'transformers') if m in sys.modules)); sys.exit(code)"
)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_causal_model(tmp_path_factory.mktemp("tiny") / "model", chat=True)


def _run(tmp_path: Path, model: Path, run_id: str, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    command = [
        sys.executable,
        "-c",
        RUN,
        "run",
        "--backend",
        "hf-causal",
        "--model",
        str(model),
        "--db",
        str(tmp_path / "probe.duckdb"),
        "--run-id",
        run_id,
        *SLICE,
        *extra,
    ]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def _labels(db_file: Path, run_id: str) -> list[tuple]:
    import duckdb

    con = duckdb.connect(str(db_file), read_only=True)
    try:
        return con.execute(
            "SELECT i.prompt, a.label, a.scores_json FROM items i JOIN answers a USING (run_id, item_id)"
            " WHERE run_id = ? ORDER BY i.prompt",
            [run_id],
        ).fetchall()
    finally:
        con.close()


def test_a_fully_cached_run_imports_no_torch_and_answers_the_same(model: Path, tmp_path: Path) -> None:
    first = _run(tmp_path, model, "first")
    assert first.returncode == 0, first.stderr
    assert "imported: ['torch', 'transformers']" in first.stdout
    second = _run(tmp_path, model, "second")
    assert second.returncode == 0, second.stderr
    assert "imported: []" in second.stdout  # every answer from the cache: no model built
    assert _labels(tmp_path / "probe.duckdb", "second") == _labels(tmp_path / "probe.duckdb", "first")
    # reading what was stored needs no model either: analyze, report, compare, and `probe run` of a finished run
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    db_args = ["--db", str(tmp_path / "probe.duckdb")]
    for args in (
        ["analyze", "first"],
        ["report", "first", "-o", str(tmp_path / "r.html")],
        ["compare", "first", "second", "-o", str(tmp_path / "c.html")],
        ["run", "--run-id", "first", "--yes", "--quiet"],
    ):
        done = subprocess.run(
            [sys.executable, "-c", RUN, *args, *db_args], capture_output=True, text=True, env=env, timeout=600
        )
        assert done.returncode == 0 and "imported: []" in done.stdout, (args, done.stdout, done.stderr)
    # a design with a question the cache lacks builds the model on that miss
    wider = _run(tmp_path, model, "wider", "--occupations", "nurse,pilot,dancer,plumber")
    assert wider.returncode == 0, wider.stderr
    assert "imported: ['torch', 'transformers']" in wider.stdout


def test_the_remembered_identity_is_keyed_by_the_model_bytes_and_settings(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    config = RunConfig(backend="hf-causal", model=str(model)).backend
    key = lazy.lookup_key(config)
    assert key == lazy.lookup_key(RunConfig(backend="hf-causal", model=str(model)).backend)
    assert key != lazy.lookup_key(RunConfig(backend="hf-causal", model=str(model), decoding="generate").backend)
    hub = RunConfig(backend="hf-causal", model="some/hub-id").backend
    assert lazy.lookup_key(hub) is None  # revision known on load
    weights = next(model.glob("*.safetensors"))
    original = weights.read_bytes()
    try:
        weights.write_bytes(original + b"\0")  # other bytes: another key, never the old identity
        assert lazy.lookup_key(config) != key
    finally:
        weights.write_bytes(original)
    assert lazy.recalled(key) is None and not (tmp_path / "cache" / "taxonomy-probe" / "identities.json").exists()
