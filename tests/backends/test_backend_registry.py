"""A new backend is one module plus one registry line: a throwaway one runs end to end from the CLI, and shows
in the --backend help, the dry-run estimate and the report's run card with its identity."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support import ROOT

THROWAWAY_MODULE = '''
"""Picks the first option of every question; its "model" is a file, named by its sha256."""

import hashlib
from dataclasses import dataclass
from pathlib import Path

from probe.backends.base import BackendDefaults, Reply, default_cache_key_parts


@dataclass(frozen=True)
class FirstOptionSettings:
    model: str


class FirstOptionBackend(BackendDefaults):
    prompt_format = "chat"
    batch_size = 64

    def __init__(self, settings):
        self.model = settings.model
        self.digest = hashlib.sha256(Path(settings.model).read_bytes()).hexdigest()

    def identity(self):
        return {"backend": "throwaway", "model": self.model, "file_sha256": self.digest, "decided_by": "generate"}

    def cache_key_parts(self, query):
        return default_cache_key_parts(query)

    def answer(self, queries):
        return [Reply(label=query.options[0].label, raw=query.options[0].text) for query in queries]

    def close(self):
        pass


def settings_from(config):
    return FirstOptionSettings(config.model)


def create(settings):
    return FirstOptionBackend(settings)
'''

# The CLI reads the registry when it is imported, so the registry line comes first, in a fresh interpreter.
SESSION = """
import json, sys
sys.path[:0] = [{modules!r}, {root!r}]
from probe.backends import BACKENDS, BackendInfo
BACKENDS["throwaway"] = BackendInfo(
    "throwaway_backend", "picks the first option (a test's backend)", ("file_sha256",), ("pluggy",), (50.0, 25.0)
)
from typer.testing import CliRunner
from probe.cli import app
args = ["--backend", "throwaway", "--model", {model!r}, "--pairs", "1", "--occupations", "nurse", "--top-k", "1",
        "--conditions", "taxonomy", "--db", {db!r}]
calls = [["run", "--help"], ["run", *args, "--dry-run"], ["run", *args, "--quiet", "--run-id", "first"],
         ["report", "first", "--db", {db!r}, "-o", {report!r}]]
print(json.dumps([(result.exit_code, result.output) for result in map(CliRunner().invoke, [app] * 4, calls)]))
"""


def test_a_throwaway_backend_runs_end_to_end_and_shows_everywhere(db_file: Path, tmp_path: Path) -> None:
    (tmp_path / "throwaway_backend.py").write_text(THROWAWAY_MODULE)
    model = tmp_path / "weights.bin"
    model.write_bytes(b"not a real model")
    report = tmp_path / "report.html"
    script = SESSION.format(
        modules=str(tmp_path), root=str(ROOT), model=str(model), db=str(db_file), report=str(report)
    )
    wide = {**os.environ, "COLUMNS": "300"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=wide)
    assert done.returncode == 0, done.stderr
    (help_code, help_text), (dry_code, dry_run), (run_code, run_id), (report_code, _) = json.loads(done.stdout)
    assert (help_code, dry_code, run_code, report_code, run_id) == (0, 0, 0, 0, "first\n")
    assert "throwaway: picks the first option (a test's backend)." in re.sub(r"[\s│]+", " ", help_text)
    # 12 stage-1 items (3 attributes x 2 subjects x 2 orders) at 50/s, 8 stage-2 items at 25/s: 0.56 s
    assert dry_run.splitlines()[-1].startswith("estimated time with throwaway: 1 s at 50 calls/s in stage 1 and 25 in")
    card = json.loads(report.with_suffix(".json").read_text())["run"]
    assert (card["backend"], card["model"]) == ("throwaway", str(model))
    assert card["model_identity"] == hashlib.sha256(b"not a real model").hexdigest()
    assert "pluggy=" in card["package_versions"] and card["decoding"] == "decided_by=generate"
