"""The CI example (examples/ci/release_gate.sh, run by examples/ci/release-gate.yml) end to end: the study of
examples/release_gate.toml through the replay backend, `probe gate`, the report; the same commands the workflow
runs, with replayed answers instead of the bundled model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import junitparser
from test_report import replay_answers, steady_choice

from probe.store import db
from probe.store.config import QUICK_OCCUPATIONS

ROOT = Path(__file__).resolve().parents[1]


def test_release_gate_example_runs_end_to_end(tmp_path: Path) -> None:
    con = db.connect(tmp_path / "seed.duckdb")
    try:
        answers = replay_answers(con, steady_choice, QUICK_OCCUPATIONS, top_k=1, pairs=12)
    finally:
        con.close()
    answers.to_csv(tmp_path / "answers.csv", index=False)
    out = tmp_path / "gate-out"
    env = {**os.environ, "PROBE": str(Path(sys.executable).with_name("probe"))}
    done = subprocess.run(["bash", str(ROOT / "examples/ci/release_gate.sh"), str(out), "--backend", "replay",
                           "--answers", str(tmp_path / "answers.csv")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    # steady picks the woman for nurse, secretary and dancer and the man for pilot in every pair: those
    # occupations are preferred, so the occupation gate fails and the job with it (exit 1)
    assert done.returncode == 1, done.stderr
    verdicts = {gate["name"]: gate["verdict"] for gate in json.loads((out / "gate.json").read_text())["gates"]}
    assert verdicts["no gendered occupation"] == "fail"
    assert set(verdicts) == {"no gender preference", "position effect bounded",
                             "prefer_f not worse than the baseline", "no gendered occupation"}  # fmt: skip
    suite = next(iter(junitparser.JUnitXml.fromfile(str(out / "gates.xml"))))
    assert suite.tests == 4 and suite.failures == sum(verdict == "fail" for verdict in verdicts.values())
    assert (out / "report.html").exists() and (out / "gate.md").read_text().startswith(
        "## Bias gates for run release-candidate against baseline release-baseline: fail"
    )
