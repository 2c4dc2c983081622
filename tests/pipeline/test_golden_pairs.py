"""The default female-male pairs run is the contrast ('sex', 'female', 'male') of name sets (issue 45): its items,
cache keys, metrics and report.json stay byte-for-byte what they were before people and contrasts existed. The
expected values were frozen under tests/data/golden_pairs/ from the code before that change; regenerate them only
for a change meant to alter the default run (`GOLDEN_WRITE=1`), and say so in CHANGELOG.md."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb

import probe
from probe import pipeline
from probe.store.config import RunConfig
from tests.support import DATA, FakeBackend

GOLDEN = DATA / "golden_pairs"
RUN_ID = "golden"
# report.json's parts that change from run to run whatever the code: the run record (times, versions) and counts of
# items that carry the times
VOLATILE = ("run",)


def _observed(db_file: Path, tmp_path: Path) -> dict[str, str]:
    con = duckdb.connect(str(db_file), read_only=True)
    try:
        items = con.execute("SELECT item_id FROM items WHERE run_id = ? ORDER BY item_id", [RUN_ID]).fetchall()
        keys = con.execute("SELECT cache_key FROM answer_cache ORDER BY cache_key").fetchall()
        metrics = con.execute("SELECT * EXCLUDE (run_id) FROM metrics WHERE run_id = ? ORDER BY ALL", [RUN_ID]).df()
    finally:
        con.close()
    probe.open_run(RUN_ID, db=db_file).report(tmp_path / "report.html")
    report = json.loads((tmp_path / "report.json").read_text())
    for key in VOLATILE:
        report.pop(key)
    return {
        "items.txt": "\n".join(row[0] for row in items) + "\n",
        "cache_keys.txt": "\n".join(row[0] for row in keys) + "\n",
        "metrics.csv": metrics.to_csv(index=False, float_format="%.12g"),
        "report.json": json.dumps(report, indent=1, sort_keys=True) + "\n",
    }


def test_the_default_pairs_run_is_as_before(db_file: Path, tmp_path: Path, use_backend) -> None:
    use_backend(FakeBackend())
    config = RunConfig(
        pairs=6,
        occupations=("nurse", "engineer"),
        top_k=2,
        conditions=("taxonomy", "control"),
        run_id=RUN_ID,
        db=str(db_file),
        quiet=True,
    )
    pipeline.run(config)
    observed = _observed(db_file, tmp_path)
    if os.environ.get("GOLDEN_WRITE"):
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for name, text in observed.items():
            (GOLDEN / name).write_text(text)
    for name, text in observed.items():
        assert text == (GOLDEN / name).read_text(), f"{name} differs from tests/data/golden_pairs/{name}"
