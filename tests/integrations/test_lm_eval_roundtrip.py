"""The real round trip: a run on hf-causal is exported as an lm-evaluation-harness task, the installed harness
(`lm_eval`, HFLM) runs it on the same tiny model, and `probe import lm-eval` of its samples gives a run with the
same labels and scores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import probe
from probe import pipeline
from probe.store.config import RunConfig
from tests.support import assert_one_line_error, invoke, query
from tests.tiny_models import build_causal_model

pytest.importorskip("lm_eval", reason="the lm-eval extra is not installed: pip install '.[lm-eval]'")

# The harness's own command line (`lm_eval ...`, as docs/integrations.md runs it), its task index limited to the
# exported folder: indexing the 14,000 task files lm_eval ships costs 15 s of CPU and none of them is asked.
HARNESS_CLI = (
    "import lm_eval.tasks\n"
    "class ExportedTasksOnly(lm_eval.tasks.TaskManager):\n"
    "    def __init__(self, *args, **kwargs):\n"
    "        super().__init__(*args, **{**kwargs, 'include_defaults': False})\n"
    "lm_eval.tasks.TaskManager = ExportedTasksOnly\n"
    "from lm_eval.__main__ import cli_evaluate\n"
    "cli_evaluate()\n"
)
SETTINGS = {"pairs": 2, "occupations": ("nurse", "pilot"), "top_k": 1, "threads": 2, "quiet": True}


@pytest.fixture(scope="module")
def harness_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A source run on hf-causal, its exported task, and the harness's samples of it on the same model."""
    root = tmp_path_factory.mktemp("lm-eval")
    model = build_causal_model(root / "tiny-chat", chat=True)
    db = root / "probe.duckdb"
    pipeline.run(RunConfig(**SETTINGS, backend="hf-causal", model=str(model), db=str(db), run_id="src"))
    task = root / "task"
    code, output = invoke("export", "src", "--format", "lm-eval", "-o", str(task), "--db", str(db))
    assert code == 0, output
    command = [
        sys.executable,
        "-c",
        HARNESS_CLI,
        "--model",
        "hf",
        "--model_args",
        f"pretrained={model},dtype=float32,max_length=4096",
        "--tasks",
        "taxonomy_probe",
        "--include_path",
        str(task),
        "--apply_chat_template",
        "--log_samples",
        "--output_path",
        str(root / "results"),
        "--device",
        "cpu",
        "--batch_size",
        "1",
    ]
    offline = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(root / "hf")}
    environment = {**os.environ, **offline, "OMP_NUM_THREADS": "1"}  # one core each: the tests run on two processes
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return {"db": db, "task": task, "samples": root / "results"}


def _samples(harness_run: dict[str, Path]) -> list[str]:
    return sorted(str(path) for path in harness_run["samples"].rglob("samples_taxonomy_probe_*.jsonl"))


def test_the_task_folder_has_a_task_per_question_type(harness_run: dict[str, Path]) -> None:
    names = sorted(path.name for path in harness_run["task"].glob("*.yaml"))
    assert names == [f"taxonomy_probe_{qtype}.yaml" for qtype in ("attr", "binary", "multiple", "single")]
    assert "output_type: multiple_choice" in (harness_run["task"] / "taxonomy_probe_single.yaml").read_text()
    assert "exported for run src" in (harness_run["task"] / "README.md").read_text()
    assert [Path(path).name.split("_2")[0] for path in _samples(harness_run)] == [
        f"samples_taxonomy_probe_{qtype}" for qtype in ("attr", "binary", "multiple", "single")
    ]


def test_the_imported_run_equals_the_projects_own_run(harness_run: dict[str, Path]) -> None:
    db = harness_run["db"]
    code, output = invoke("import", "lm-eval", *_samples(harness_run), "--run-id", "harness", "--db", str(db))
    assert code == 0, output
    pairs = query(
        db,
        """SELECT own.label AS own_label, other.label AS other_label, own.scores_json AS own_scores,
                                other.scores_json AS other_scores, other.decided_by
                         FROM answers own JOIN answers other USING (item_id)
                         WHERE own.run_id = 'src' AND other.run_id = 'harness'""",
    )
    assert len(pairs) == query(db, "SELECT count(*) AS n FROM items WHERE run_id = 'src'")["n"][0] == 144
    assert (pairs["own_label"] == pairs["other_label"]).mean() >= 0.99
    assert set(pairs["decided_by"]) == {"score"}
    gaps = [
        abs(json.loads(own)[label] - json.loads(other)[label])
        for own, other in zip(pairs["own_scores"], pairs["other_scores"], strict=True)
        for label in json.loads(own)
    ]
    assert max(gaps) < 1e-3
    metrics = query(db, "SELECT count(*) AS n FROM metrics WHERE run_id = 'harness'")["n"][0]
    assert metrics > 0  # analysed: reported, compared and gated like any run
    again, output = invoke("import", "lm-eval", *_samples(harness_run), "--run-id", "harness", "--db", str(db))
    assert (again, "warning" in output) == (0, False)  # the same files again: a finished import, nothing unused


def test_a_line_whose_prompt_this_run_does_not_ask_is_named_and_left_unknown(
    harness_run: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    single = next(path for path in _samples(harness_run) if "_single_" in path)
    lines = Path(single).read_text().splitlines()
    changed = json.loads(lines[0])
    changed["doc"]["prompt"] += " (another context)"
    edited = tmp_path / "samples_single.jsonl"
    edited.write_text("\n".join([json.dumps(changed), *lines[1:]]) + "\n")
    others = [path for path in _samples(harness_run) if "_single_" not in path]
    code, output = invoke(
        "import", "lm-eval", *others, str(edited), "--run-id", "edited", "--db", str(harness_run["db"])
    )
    assert code == 0, output
    assert f"{edited}, line 1: item {changed['doc']['item_id']} is asked with another prompt here" in output
    labels = query(
        harness_run["db"],
        "SELECT label, decided_by FROM answers WHERE run_id = 'edited' AND item_id = ?",
        [changed["doc"]["item_id"]],
    )
    assert (labels["label"][0], labels["decided_by"][0]) == ("unknown", "replay")


def test_a_file_that_is_not_harness_samples_is_one_line_naming_the_line(
    harness_run: dict[str, Path], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"doc_id": 0, "doc": {}, "filtered_resps": [["-1.0", "False"]]}\nnot json\n')
    code, output = invoke("import", "lm-eval", str(bad), "--run-id", "bad", "--db", str(harness_run["db"]))
    assert_one_line_error(code, output, f"{bad}, line 1: the sample has no exported item (item_id, prompt)")
    assert query(harness_run["db"], "SELECT count(*) AS n FROM runs WHERE run_id = 'bad'")["n"][0] == 0


def test_an_import_under_the_id_of_another_run_names_the_run_id(harness_run: dict[str, Path]) -> None:
    """The exporting run's own id is taken: one line naming --run-id (not an option of `probe run` that `probe
    import` lacks), and that run is left as it was."""
    db = harness_run["db"]
    before = query(db, "SELECT count(*) AS n FROM answers WHERE run_id = 'src'")["n"][0]
    code, output = invoke("import", "lm-eval", *_samples(harness_run), "--run-id", "src", "--db", str(db))
    assert_one_line_error(
        code,
        output,
        f"--run-id src: {db} holds another run of that id (not an import of these files); choose another --run-id",
    )
    assert query(db, "SELECT count(*) AS n FROM answers WHERE run_id = 'src'")["n"][0] == before == 144


def test_the_api_exports_and_imports_as_the_cli_does(harness_run: dict[str, Path], tmp_path: Path) -> None:
    """Run.export and probe.import_run go through the same format registry as `probe export` / `probe import`."""
    db = harness_run["db"]
    written = probe.open_run("src", str(db)).export("lm-eval", tmp_path / "task")
    assert sorted(path.relative_to(tmp_path / "task") for path in written) == sorted(
        path.relative_to(harness_run["task"]) for path in harness_run["task"].rglob("*") if path.is_file()
    )
    assert (tmp_path / "task" / "taxonomy_probe_single.yaml").read_text() == (
        harness_run["task"] / "taxonomy_probe_single.yaml"
    ).read_text()
    code, output = invoke("import", "lm-eval", *_samples(harness_run), "--run-id", "by-cli", "--db", str(db))
    assert code == 0, output
    run = probe.import_run("lm-eval", _samples(harness_run), "by-api", db)
    answers = query(
        db,
        """SELECT count(*) AS n, count(*) FILTER (WHERE cli.label = api.label
                                                           AND cli.scores_json = api.scores_json) AS same
                           FROM answers cli JOIN answers api USING (item_id)
                           WHERE cli.run_id = 'by-cli' AND api.run_id = 'by-api'""",
    )
    assert (answers["n"][0], answers["same"][0]) == (144, 144)
    assert run.metrics().equals(probe.open_run("by-cli", str(db)).metrics())
