"""Cached work starts no model (probe/backends/lazy.py): a second run of a design whose answers are all cached
imports neither torch nor transformers, and answers exactly as the first; a cache miss builds the model."""

from __future__ import annotations

import json
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
# `probe` commands one after another in one fresh interpreter (each command's arguments as a JSON list), printing
# after each its exit code and whether torch or transformers had been imported by then: a command that imports
# them shows it on its own line, as no command before it had.
RUN = (
    "import json, sys; from probe.cli import app\n"
    "for args in map(json.loads, sys.argv[1:]):\n"
    "    code = 0\n"
    "    try:\n        app(args, prog_name='probe')\n    except SystemExit as done:\n        code = done.code\n"
    "    print('exit', code, 'imported:', sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n"
)
NO_MODEL = "exit 0 imported: []"
MODEL_BUILT = "exit 0 imported: ['torch', 'transformers']"


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_causal_model(tmp_path_factory.mktemp("tiny") / "model", chat=True)


def _run_args(tmp_path: Path, model: Path, run_id: str, *extra: str) -> list[str]:
    db_args = ["--db", str(tmp_path / "probe.duckdb")]
    return ["run", "--backend", "hf-causal", "--model", str(model), *db_args, "--run-id", run_id, *SLICE, *extra]


def _probe(tmp_path: Path, *commands: list[str]) -> list[str]:
    """The lines RUN prints for `commands`, run in a fresh interpreter with its own model cache."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    arguments = [json.dumps(command) for command in commands]
    done = subprocess.run(
        [sys.executable, "-c", RUN, *arguments], capture_output=True, text=True, env=env, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line.startswith("exit ")]


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
    assert _probe(tmp_path, _run_args(tmp_path, model, "first")) == [MODEL_BUILT]
    db_args = ["--db", str(tmp_path / "probe.duckdb")]
    commands = {
        "second": _run_args(tmp_path, model, "second"),  # every answer from the cache: no model built
        # reading what was stored needs no model either: analyze, report, compare, `probe run` of a finished run
        "analyze": ["analyze", "first", *db_args],
        "report": ["report", "first", "-o", str(tmp_path / "r.html"), *db_args],
        "compare": ["compare", "first", "second", "-o", str(tmp_path / "c.html"), *db_args],
        "finished": ["run", "--run-id", "first", "--yes", "--quiet", *db_args],
        # a design with a question the cache lacks builds the model on that miss
        "wider": _run_args(tmp_path, model, "wider", "--occupations", "nurse,pilot,dancer,plumber"),
    }
    printed = dict(zip(commands, _probe(tmp_path, *commands.values()), strict=True))
    assert printed == {**dict.fromkeys(commands, NO_MODEL), "wider": MODEL_BUILT}
    assert _labels(tmp_path / "probe.duckdb", "second") == _labels(tmp_path / "probe.duckdb", "first")


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
