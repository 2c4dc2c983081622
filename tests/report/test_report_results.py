"""`probe report --format eee` and `--mlflow`: the real `every-eval-ever` validator accepts the record, the Hub's
own card classes (huggingface_hub) parse and round-trip the model-index, and MLflow reads the logged run back;
every number equals report.json's. The run's model name is hostile and its system prompt holds the API key."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import probe
from probe import pipeline
from probe.common.escape import markdown_text
from probe.common.redact import MASK
from probe.integrations.results import eee_record
from probe.store.config import RunConfig
from tests.support import FakeBackend, assert_one_line_error, fingerprint, invoke

KEY = "sk-probe-test-0123456789abcdef"
MODEL = "org/evil\n---\nmodel-index: []\n# <script>alert(1)</script> | *x*"
SYSTEM_PROMPT = f"Be fair. {KEY}"
FINDING_KEYS = [
    "taxonomy.female_share",
    "stage1.attr_yes_f",
    "stage1.attr_yes_m",
    "stage1.attr_yes_diff",
    "taxonomy.position_first",
    "taxonomy.consistency",
    "taxonomy.bias",
    "taxonomy.pearson_r_consistency_bias_across_pairs",
]
# The package declares Python >= 3.12: there the extra installs it; make installs it on any Python (Makefile).
EEE_MISSING = "every-eval-ever is not installed: make, or pip install '.[eee]' (Python >= 3.12)"
WRITTEN = ["r.eee.json", "r.html", "r.json", "r.md", "r.model-card.md"]


class HostileModel(FakeBackend):
    def identity(self) -> dict[str, object]:
        return {**super().identity(), "model": MODEL}


@pytest.fixture(scope="module")
def run_db(seeded_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run of 6 name pairs (enough for every headline interval), answered by the fake backend."""
    db_file = Path(shutil.copy(seeded_db, tmp_path_factory.mktemp("results") / "probe.duckdb"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", KEY)
        patch.setattr(pipeline, "create_backend", lambda config: HostileModel())
        pipeline.run(
            RunConfig(
                pairs=6,
                occupations=("nurse", "pilot"),
                top_k=1,
                system_prompt=SYSTEM_PROMPT,
                db=str(db_file),
                run_id="r1",
                quiet=True,
            )
        )
    return db_file


@pytest.fixture
def with_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


@pytest.fixture(scope="module")
def published(run_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder `probe report r1 --format eee -o DIR/r.html` wrote."""
    folder = tmp_path_factory.mktemp("published")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", KEY)
        code, output = invoke("report", "r1", "--db", str(run_db), "-o", str(folder / "r.html"), "--format", "eee")
    assert code == 0, output
    assert output.splitlines()[-1] == f"results: {folder / 'r.eee.json'}, {folder / 'r.model-card.md'}"
    return folder


def _headline(folder: Path) -> list[dict[str, Any]]:
    document = json.loads((folder / "r.json").read_text())
    return [finding for finding in document["headline"] if finding["estimate"] is not None]


def test_the_every_eval_ever_record_validates_and_holds_the_reports_numbers(published: Path) -> None:
    validation = pytest.importorskip("every_eval_ever.validator.validation_core", reason=EEE_MISSING)
    from every_eval_ever.schema import get_schema_version

    checked = validation.validate_aggregate(published / "r.eee.json")
    assert (checked.valid, checked.errors, checked.warnings) == (True, [], [])
    record = json.loads((published / "r.eee.json").read_text())
    # The datastore's semantic checks that do not depend on where the file is filed.
    assert validation.check_score_metadata(record) == validation.check_model_deployment(record) == []
    assert record["schema_version"] == get_schema_version() == "0.3.0"

    headline = _headline(published)
    results = record["evaluation_results"]
    assert [result["evaluation_result_id"] for result in results] == FINDING_KEYS
    for result, finding in zip(results, headline, strict=True):
        uncertainty = result["score_details"]["uncertainty"]
        assert (result["score_details"]["score"], uncertainty) == (
            finding["estimate"],
            {
                "confidence_interval": {
                    "lower": finding["ci_low"],
                    "upper": finding["ci_high"],
                    "confidence_level": 0.95,
                    "method": finding["method"],
                },
                "num_samples": 6,
            },
        )
    female = results[0]
    assert female["metric_config"] == {
        "evaluation_description": "share of single-subject picks that name the woman, averaged over the two name "
        "orders (0.5 = no preference; above = women picked more). Interval and test over name pairs: the name pair "
        "is the unit (num_samples counts name pairs; the instances asked are in the details).",
        "metric_id": "taxonomy_probe.female_share",
        "metric_name": "woman picked (order-balanced)",
        "metric_kind": "share",
        "metric_unit": "proportion",
        "lower_is_better": False,
        "score_type": "continuous",
        "min_score": 0.0,
        "max_score": 1.0,
        "additional_details": {"better": "neither"},
    }
    details = female["score_details"]["details"]
    assert (details["unit"], details["pairs"], details["instances"]) == ("name pair", "6", "24")
    assert [result["metric_config"]["lower_is_better"] for result in results[5:7]] == [False, True]  # consistency, bias
    assert results[3]["metric_config"]["min_score"] == -1.0  # attr_yes_diff: a difference
    assert results[0]["source_data"]["additional_details"] == {
        "condition": "taxonomy",
        "pairs": "6",
        "occupations": "2",
        "top_k": "1",
        "onet_release": "O*NET 29.0 Database, August 2024 Release",
    }
    assert record["model_info"] == {
        "name": MODEL,
        "id": MODEL,
        "additional_details": {
            "deployment_type": "self_deployed",
            "model_availability": "unknown",
            "backend": "hf-causal",
        },
    }
    generation = results[0]["generation_config"]["additional_details"]
    assert generation["system_prompt"] == f"Be fair. {MASK}"
    assert record["eval_library"]["name"] == "taxonomy-probe"
    assert record["source_metadata"]["additional_details"]["run_id"] == "r1"


def test_a_served_model_and_a_finding_without_an_interval_still_validate(published: Path) -> None:
    """A served model's deployment is not the run's to know; a finding with too few pairs has no interval."""
    pytest.importorskip("every_eval_ever", reason=EEE_MISSING)
    from every_eval_ever.eval_types import EvaluationLog

    document = json.loads((published / "r.json").read_text())
    document["run"]["backend"] = "openai"
    document["headline"][0] |= {"ci_low": None, "ci_high": None, "method": None, "method_label": None}
    record = eee_record(document, 0)
    EvaluationLog.model_validate(record)
    assert record["model_info"]["additional_details"]["deployment_type"] == "unknown"
    assert record["evaluation_results"][0]["score_details"]["uncertainty"] == {"num_samples": 6}


def test_the_model_card_round_trips_through_huggingface_hubs_card_classes(published: Path) -> None:
    hub = pytest.importorskip("huggingface_hub", reason="the hf extra is not installed: pip install '.[hf]'")
    from huggingface_hub.repocard_data import eval_results_to_model_index, model_index_to_eval_results

    card = hub.ModelCard.load(published / "r.model-card.md")
    metadata = card.data.to_dict()
    assert list(metadata) == ["model-index"]
    hub.ModelCardData(ignore_metadata_errors=False, **metadata)  # raises on a model-index it cannot parse
    name, results = model_index_to_eval_results(metadata["model-index"])
    assert name == card.data.model_name == MODEL
    assert eval_results_to_model_index(name, results) == metadata["model-index"]
    headline = _headline(published)
    by_condition = sorted(headline, key=lambda finding: finding["condition"] != "taxonomy")  # a result per condition
    assert [(r.task_type, r.dataset_type, r.dataset_config, r.dataset_split, r.metric_value) for r in results] == [
        ("multiple-choice", "taxonomy-probe", f["condition"], "test", f["estimate"]) for f in by_condition
    ]
    female = headline[0]
    assert results[0].metric_type == "female_share"
    assert results[0].metric_name == (
        f"woman picked (order-balanced): 95% CI {female['ci_low']:.4f} to {female['ci_high']:.4f} (score interval); "
        "6 name pairs, 24 instances"
    )
    assert results[0].dataset_args == {
        "pairs": 6,
        "occupations": 2,
        "top_k": 1,
        "onet_release": "O*NET 29.0 Database, August 2024 Release",
    }
    # The body is Markdown: the model's name cannot start a heading or carry a tag there.
    assert card.text.startswith(
        "\n# Gender-bias audit of org/evil --- model-index: [] # \\<script>alert(1)\\</script> \\| \\*x\\*\n"
    )
    assert card.text.count("<script>") == card.text.count("\\<script>") == 1
    assert f"\n- {markdown_text(headline[-1]['finding'])}\n" in card.text


def test_no_output_holds_the_api_key(published: Path) -> None:
    for path in sorted(published.iterdir()):
        assert KEY not in path.read_text(), path.name


def test_mlflow_reads_back_the_logged_run(
    run_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_key: None
) -> None:
    mlflow = pytest.importorskip("mlflow", reason="the mlflow extra is not installed: pip install '.[mlflow]'")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 keeps its file store behind this switch
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    uri = (tmp_path / "mlruns").as_uri()
    folder = tmp_path / "out"
    code, output = invoke(
        "report", "r1", "--db", str(run_db), "-o", str(folder / "r.html"), "--format", "eee", "--mlflow", uri
    )
    assert code == 0, output
    client = mlflow.MlflowClient(tracking_uri=uri)
    logged = client.get_run(output.splitlines()[-1].removeprefix("mlflow: run "))
    experiment = client.get_experiment(logged.info.experiment_id)
    assert (experiment.name, logged.info.run_name, logged.info.status) == ("taxonomy-probe", "r1", "FINISHED")

    document = json.loads((folder / "r.json").read_text())
    run, settings = document["run"], document["settings"]
    assert logged.data.params == {
        "run_id": "r1",
        "model": MODEL,
        "backend": "hf-causal",
        "decoding": run["decoding"].replace(KEY, MASK),
        "pairs": "6",
        "occupations": "2",
        "top_k": "1",
        "conditions": "taxonomy, baseline, control",
        "system_prompt": f"Be fair. {MASK}",
        "onet_release": run["onet_release"],
        "template_hash": run["template_hash"],
        "package_version": run["package_version"],
    }
    assert settings["system_prompt"] == f"Be fair. {MASK}"
    expected = {}
    for key, finding in zip(FINDING_KEYS, _headline(folder), strict=True):
        expected |= {
            key: finding["estimate"],
            f"{key}_ci_low": finding["ci_low"],
            f"{key}_ci_high": finding["ci_high"],
            f"{key}_pairs": 6.0,
        }
        if finding["n"]["instances"] is not None:
            expected[f"{key}_instances"] = float(finding["n"]["instances"])
    assert logged.data.metrics == expected
    assert expected["taxonomy.female_share_instances"] == 24.0

    assert sorted(artifact.path for artifact in client.list_artifacts(logged.info.run_id)) == WRITTEN
    copy = Path(client.download_artifacts(logged.info.run_id, "r.json", str(tmp_path / "back")))
    assert copy.read_bytes() == (folder / "r.json").read_bytes()
    assert KEY not in json.dumps(logged.data.params)


def test_the_python_api_writes_the_same_results_and_mlflow_run_as_the_cli(
    run_db: Path, published: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_key: None
) -> None:
    mlflow = pytest.importorskip("mlflow", reason="the mlflow extra is not installed: pip install '.[mlflow]'")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    uri = (tmp_path / "mlruns").as_uri()
    page = probe.open_run("r1", db=run_db).report(tmp_path / "r.html", eee=True, mlflow=uri)
    assert page == tmp_path / "r.html"
    card = (tmp_path / "r.model-card.md").read_text()
    assert card == (published / "r.model-card.md").read_text()  # the record differs only in its timestamps
    record = json.loads((tmp_path / "r.eee.json").read_text())
    assert record["evaluation_results"] == json.loads((published / "r.eee.json").read_text())["evaluation_results"]
    client = mlflow.MlflowClient(tracking_uri=uri)
    (logged,) = client.search_runs([client.get_experiment_by_name("taxonomy-probe").experiment_id])
    assert (logged.info.run_name, logged.info.status) == ("r1", "FINISHED")


def test_a_tracking_server_failing_after_the_report_is_written_still_leaves_its_paths_printed(
    run_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from probe.integrations import mlflow_log

    def refuse(*_: object) -> str:
        raise RuntimeError("tracking server went away")

    monkeypatch.setattr(mlflow_log, "open_experiment", lambda uri: object())
    monkeypatch.setattr(mlflow_log, "log_report", refuse)
    folder = tmp_path / "out"
    code, output = invoke("report", "r1", "--db", str(run_db), "-o", str(folder / "r.html"), "--mlflow", "http://x")
    assert code == 1 and "tracking server went away" in output
    assert output.splitlines()[:2] == [
        f"report: {folder / 'r.html'}",
        f"summaries: {folder / 'r.md'}, {folder / 'r.json'}",
    ]
    assert (folder / "r.html").is_file()


def test_without_mlflow_installed_it_is_one_line_naming_the_extra_and_nothing_is_written(
    run_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)  # `import mlflow` raises ImportError
    before = fingerprint(run_db)
    code, output = invoke(
        "report", "r1", "--db", str(run_db), "-o", str(tmp_path / "out" / "r.html"), "--mlflow", "http://127.0.0.1:9"
    )
    assert_one_line_error(code, output, "--mlflow needs MLflow: pip install 'taxonomy-probe[mlflow]'")
    assert not (tmp_path / "out").exists() and fingerprint(run_db) == before


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--format", "pdf"], "--format 'pdf': choose from html, eee"),
        (["--mlflow", " "], "--mlflow: give a tracking URI"),
        (["--mlflow", "bogus://x"], "--mlflow bogus://x: "),
    ],
)
def test_bad_options_are_one_line_errors_and_nothing_is_written(
    run_db: Path, tmp_path: Path, flags: list[str], message: str
) -> None:
    if "bogus://x" in flags:
        pytest.importorskip("mlflow", reason="the mlflow extra is not installed: pip install '.[mlflow]'")
    before = fingerprint(run_db)
    code, output = invoke("report", "r1", "--db", str(run_db), "-o", str(tmp_path / "out" / "r.html"), *flags)
    assert_one_line_error(code, output, message)
    assert not (tmp_path / "out").exists() and fingerprint(run_db) == before


def test_the_card_header_is_yaml_a_reader_parses_without_the_hub(published: Path) -> None:
    """The header parses with plain YAML too (the hostile name stays one scalar)."""
    header = (published / "r.model-card.md").read_text().split("\n---\n\n", 1)[0].removeprefix("---\n")
    assert yaml.safe_load(header)["model-index"][0]["name"] == MODEL


def test_no_export_holds_the_api_key(run_db: Path, tmp_path: Path, with_key: None) -> None:
    # found by review: the dataset card (made for a public Hub upload), the Inspect task's system_prompt.txt and the
    # lm-eval task's system_instruction.txt carried the system prompt with the key in it
    for form in ("hf-dataset", "lm-eval", "inspect"):
        code, output = invoke("export", "r1", "--format", form, "-o", str(tmp_path / form), "--db", str(run_db))
        assert code == 0, output
    texts = {path.relative_to(tmp_path).as_posix(): path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    assert [name for name, text in texts.items() if KEY.encode() in text] == []
    assert texts["inspect/system_prompt.txt"] == texts["lm-eval/system_instruction.txt"] == b"Be fair. ***"
    assert "- The run used a system prompt: Be fair. \\*\\*\\*\n" in texts["hf-dataset/README.md"].decode()
