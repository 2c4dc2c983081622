"""`probe export --format hf-dataset`: the folder loads with the real `datasets` and its card parses with the
Hub's own card classes (huggingface_hub), for a run and for the design without a model."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from probe import pipeline
from probe.store.config import RunConfig
from tests.support import FakeBackend, invoke, query

datasets = pytest.importorskip("datasets", reason="the hf extra is not installed: pip install '.[hf]'")
huggingface_hub = pytest.importorskip("huggingface_hub", reason="the hf extra is not installed: pip install '.[hf]'")

SETTINGS = {"pairs": 2, "occupations": ("nurse", "pilot"), "top_k": 1}


def _load(folder: Path, name: str, cache: Path) -> datasets.Dataset:
    return datasets.load_dataset(str(folder), name, split="test", cache_dir=str(cache))


def test_a_run_exports_as_a_dataset_that_loads_with_its_configurations_and_row_counts(
    db_file: Path, tmp_path: Path, use_backend
) -> None:
    use_backend(FakeBackend())
    run_id = pipeline.run(RunConfig(**SETTINGS, db=str(db_file), run_id="r1", quiet=True)).run_id
    folder = tmp_path / "hf"
    code, output = invoke("export", run_id, "--format", "hf-dataset", "-o", str(folder), "--db", str(db_file))
    assert code == 0, output
    counts = query(db_file, "SELECT condition, count(*) AS n FROM items WHERE run_id = 'r1' GROUP BY condition")
    expected = {"stage1": 48, "taxonomy": 32, "baseline": 32, "control": 32, "answers": 144}
    assert {**dict(zip(counts["condition"], counts["n"], strict=True)), "answers": 144} == expected
    loaded = {name: _load(folder, name, tmp_path / "cache") for name in expected}
    assert {name: table.num_rows for name, table in loaded.items()} == expected
    first = loaded["stage1"][0]
    stored = query(
        db_file, "SELECT prompt, options_json FROM items WHERE run_id = 'r1' AND item_id = ?", [first["item_id"]]
    )
    assert (first["prompt"], first["choices"], first["choice_labels"]) == (
        stored["prompt"][0],
        ["yes", "no"],
        ["yes", "no"],
    )
    labels = query(db_file, "SELECT item_id, label FROM answers WHERE run_id = 'r1'")
    assert dict(zip(loaded["answers"]["item_id"], loaded["answers"]["label"], strict=True)) == dict(
        zip(labels["item_id"], labels["label"], strict=True)
    )

    card = huggingface_hub.DatasetCard.load(folder / "README.md")
    assert card.data.license == ["cc-by-4.0", "apache-2.0"]
    assert [config["config_name"] for config in card.data.configs] == list(expected)
    assert card.data.size_categories == ["n<1K"]
    metadata = yaml.safe_load(card.content.split("---")[1])
    huggingface_hub.DatasetCardData(ignore_metadata_errors=False, **metadata)  # raises on malformed metadata
    assert "CC BY 4.0" in card.text and "Apache License 2.0" in card.text and "2402.10899" in card.text


def test_the_design_without_a_model_exports_stage1_baseline_and_control(db_file: Path, tmp_path: Path) -> None:
    folder = tmp_path / "design"
    code, output = invoke(
        "export",
        "--format",
        "hf-dataset",
        "-o",
        str(folder),
        "--db",
        str(db_file),
        "--pairs",
        "2",
        "--occupations",
        "nurse,pilot",
        "--top-k",
        "1",
    )
    assert code == 0, output
    card = huggingface_hub.DatasetCard.load(folder / "README.md")
    assert [config["config_name"] for config in card.data.configs] == ["stage1", "baseline", "control"]
    rows = {name: _load(folder, name, tmp_path / "cache").num_rows for name in ("stage1", "baseline", "control")}
    assert rows == {"stage1": 48, "baseline": 32, "control": 32}
    assert "without a model" in card.text


def test_parquet_and_csv_still_need_a_run_id(db_file: Path, tmp_path: Path) -> None:
    code, output = invoke("export", "--format", "csv", "-o", str(tmp_path), "--db", str(db_file))
    assert (code, output.strip()) == (2, "error: --format csv: give the RUN_ID to export")


def test_importing_probe_and_its_commands_loads_none_of_the_tools() -> None:
    """The extras are optional: only a command that reads or runs a tool's files imports it."""
    tools = ("datasets", "huggingface_hub", "lm_eval", "inspect_ai", "every_eval_ever", "mlflow")
    modules = "probe, probe.cli, probe.integrations.source, probe.integrations.results, probe.integrations.mlflow_log"
    code = f"import sys, {modules}; print([m for m in {tools} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_run_in_several_wordings_exports_each_item_with_its_wording(
    db_file: Path, tmp_path: Path, use_backend
) -> None:
    use_backend(FakeBackend())
    run_id = pipeline.run(
        RunConfig(
            **SETTINGS,
            conditions=("taxonomy",),
            wordings=("paper", "restated"),
            db=str(db_file),
            run_id="two",
            quiet=True,
        )
    ).run_id
    folder = tmp_path / "hf"
    code, output = invoke("export", run_id, "--format", "hf-dataset", "-o", str(folder), "--db", str(db_file))
    assert code == 0, output
    for name, per_wording in (("stage1", 48), ("taxonomy", 32)):
        loaded = _load(folder, name, tmp_path / "cache")
        assert sorted(Counter(loaded["wording"]).items()) == [("paper", per_wording), ("restated", per_wording)]
        stored = query(db_file, "SELECT item_id, wording FROM items WHERE run_id = 'two' AND condition = ?", [name])
        assert dict(zip(loaded["item_id"], loaded["wording"], strict=True)) == dict(
            zip(stored["item_id"], stored["wording"], strict=True)
        )
