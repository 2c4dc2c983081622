"""`probe export --format hf-dataset`: a folder the real `datasets.load_dataset` loads per configuration, with a
dataset card whose metadata huggingface_hub parses (offline)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_report import first_named_choice, replay_run
from typer.testing import CliRunner

from probe.cli import app
from probe.store import db

datasets = pytest.importorskip("datasets", reason="the `hf` extra (datasets) is not installed")
huggingface_hub = pytest.importorskip("huggingface_hub")


def test_an_exported_run_loads_with_datasets_and_its_card_parses(tmp_path: Path) -> None:
    db_file = tmp_path / "probe.duckdb"
    replay_run(db_file, tmp_path, "first", first_named_choice)
    out = tmp_path / "hf"
    args = ["export", "first", "--format", "hf-dataset", "-o", str(out), "--db", str(db_file)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    con = db.connect(db_file, read_only=True)
    counts = dict(con.execute("SELECT CASE WHEN stage = 1 THEN 'stage1' ELSE 'stage2_' || condition END, count(*) "
                              "FROM items WHERE run_id = 'first' GROUP BY ALL").fetchall())  # fmt: skip
    counts["answers"] = con.execute("SELECT count(*) FROM answers WHERE run_id = 'first'").fetchone()[0]
    con.close()
    assert set(counts) == {"stage1", "stage2_taxonomy", "stage2_baseline", "stage2_control", "answers"}
    for name, rows in counts.items():
        loaded = datasets.load_dataset(str(out), name, split="train")
        assert loaded.num_rows == rows, name
    stage2 = datasets.load_dataset(str(out), "stage2_taxonomy", split="train")
    first = stage2[0]
    assert first["options"][0].keys() == {"label", "text"} and first["prompt"]
    answers = datasets.load_dataset(str(out), "answers", split="train")
    assert set(answers["label"]) <= {"yes", "no", "female", "male", "both", "neither", "unknown"}
    card = huggingface_hub.DatasetCard.load(out / "README.md")
    assert card.data.license == ["cc-by-4.0", "apache-2.0"]
    assert [config["config_name"] for config in card.data.configs] == [
        "stage1", "stage2_taxonomy", "stage2_baseline", "stage2_control", "answers"
    ]  # fmt: skip
    text = " ".join(card.text.split())
    assert "O*NET Database by the U.S. Department of Labor" in text and "UnQover" in text
