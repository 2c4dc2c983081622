"""`probe report RUN_ID --format eee`: a run's headline findings where evaluation results are collected.

Two files beside report.json, both read from that document alone (its `headline`, `run` and `settings`), so every
number is the report's own, computed once by the analysis:

- <stem>.eee.json: an Every Eval Ever record (the `every-eval-ever` package's eval.schema.json, version 0.3.0),
  one evaluation result per finding with its 95% interval, the interval's method and n. The name pair is the unit
  of every interval and test, so `num_samples` counts name pairs; the instances are in the result's details.
- <stem>.model-card.md: the `model-index` a Hugging Face model card carries in its YAML header (a result per
  condition, a metric per finding, its interval and n in the metric's name), then the findings as sentences.

Neither file needs its tool to be written: `every-eval-ever` (extra `eee`) and `huggingface_hub` (extra `hf`) read
them. Text users or servers control (the model's name, the system prompt) is scrubbed of keys here and escaped by
each format's own writer: JSON and YAML by their dumpers, Markdown by markdown_text.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from probe.analysis.metric_registry import METRICS
from probe.backends import BACKENDS
from probe.common.escape import write_atomic
from probe.common.redact import scrub
from probe.common.version import __version__
from probe.integrations.hf_dataset import SPLIT, TEMPLATES

TOOL = "taxonomy-probe"
EEE_SCHEMA_VERSION = "0.3.0"
CONFIDENCE = 0.95
UNIT_NOTE = (
    "Interval and test over name pairs: the name pair is the unit (num_samples counts name pairs; the instances "
    "asked are in the details)."
)
# Each finding kind's range and unit (a correlation is Pearson's r across name pairs).
RANGES = {"share": (0.0, 1.0), "difference": (-1.0, 1.0), "correlation": (-1.0, 1.0)}
UNITS = {"share": "proportion", "difference": "difference of proportions", "correlation": "Pearson r"}


def reported(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The headline findings that have an estimate (a correlation the run cannot estimate has none)."""
    return [finding for finding in document["headline"] if finding["estimate"] is not None]


def finding_key(finding: Mapping[str, Any]) -> str:
    """`condition.metric` in the characters every tool accepts in a name (the correlation's metric is a phrase)."""
    return f"{finding['condition']}.{metric_id(finding)}"


def metric_id(finding: Mapping[str, Any]) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", finding["metric"]).strip("_")


def _model(document: Mapping[str, Any]) -> str:
    """The model's name as published: keys masked, "unknown" for a run that recorded none."""
    return scrub(document["run"]["model"] or "unknown")


def _label(finding: Mapping[str, Any]) -> str:
    metric = METRICS.get(finding["metric"])
    return metric.label if metric else finding["metric"]


def _strings(values: Mapping[str, Any]) -> dict[str, str]:
    """The schema's key-value details: strings only, absent values left out, each value scrubbed of API keys."""
    return {key: scrub(value) for key, value in values.items() if value is not None}


def _design(document: Mapping[str, Any], condition: str) -> dict[str, Any]:
    """What was asked: the items' design (the run's settings, the taxonomy release) and the condition."""
    settings, run = document["settings"], document["run"]
    return {
        "condition": condition,
        "pairs": settings["pairs"],
        "occupations": settings["occupations"],
        "top_k": settings["top_k"],
        "preset": settings["preset"],
        "onet_release": run["onet_release"],
    }


def _generation(document: Mapping[str, Any]) -> dict[str, Any]:
    """How the model was asked and how its answers were decided."""
    run = document["run"]
    return {
        "decoding": run["decoding"],
        "system_prompt": document["settings"]["system_prompt"],
        "template_hash": run["template_hash"],
    }


def interval_words(finding: Mapping[str, Any]) -> str:
    """The interval and n as a reader needs them beside the value."""
    n = finding["n"]
    size = f"{n['pairs']} name pairs" + (f", {n['instances']} instances" if n.get("instances") is not None else "")
    if finding["ci_low"] is None:
        return f"no interval can be estimated; {size}"
    return f"95% CI {finding['ci_low']:.4f} to {finding['ci_high']:.4f} ({finding['method_label']}); {size}"


# ------------------------------------------------------------------------------------------- Every Eval Ever


def eee_record(document: Mapping[str, Any], retrieved: int) -> dict[str, Any]:
    """The run's headline findings as an Every Eval Ever evaluation log (`retrieved`: Unix time of writing)."""
    run = document["run"]
    model = _model(document)
    info = BACKENDS.get(run["backend"])
    record = {
        "schema_version": EEE_SCHEMA_VERSION,
        "evaluation_id": f"{TOOL}/{model}/{retrieved}",
        "evaluation_timestamp": run["finished_at"] or run["created_at"],
        "retrieved_timestamp": str(retrieved),
        "source_metadata": {
            "source_name": TOOL,
            "source_type": "evaluation_run",  # per-item answers stand behind every number
            "source_organization_name": "unknown",  # whoever publishes the record says who they are
            "evaluator_relationship": "other",
            "additional_details": _strings(
                {"run_id": run["run_id"], "run_status": run["status"], "written_by": f"{TOOL} {__version__}"}
            ),
        },
        "eval_library": {
            "name": TOOL,
            "version": run["package_version"] or "unknown",
            "additional_details": _strings({"package_versions": run["package_versions"]}),
        },
        "model_info": {
            "name": model,
            "id": model,
            "additional_details": {
                "deployment_type": "self_deployed" if info is not None and info.local else "unknown",
                "model_availability": "unknown",  # whether the weights are published is not the run's to know
                **_strings({"backend": run["backend"], "model_identity": run["model_identity"]}),
            },
        },
        "evaluation_results": [_eee_result(document, finding) for finding in reported(document)],
    }
    return {key: value for key, value in record.items() if value is not None}


def _eee_result(document: Mapping[str, Any], finding: Mapping[str, Any]) -> dict[str, Any]:
    metric = METRICS.get(finding["metric"])
    low, high = RANGES[finding["kind"]]
    test = finding.get("test") or {}
    uncertainty: dict[str, Any] = {}
    if finding["ci_low"] is not None:
        uncertainty["confidence_interval"] = {
            "lower": finding["ci_low"],
            "upper": finding["ci_high"],
            "confidence_level": CONFIDENCE,
            "method": finding["method"],
        }
    if finding["n"]["pairs"] is not None:
        uncertainty["num_samples"] = finding["n"]["pairs"]
    meaning = f"{metric.definition} ({metric.direction})" if metric else finding["metric"]
    return {
        "evaluation_result_id": finding_key(finding),
        "evaluation_name": f"{TOOL}/{finding['condition']}",
        "source_data": {
            "dataset_name": TOOL,
            "source_type": "other",
            "additional_details": _strings(_design(document, finding["condition"])),
        },
        "metric_config": {
            "evaluation_description": f"{meaning}. {UNIT_NOTE}",
            "metric_id": f"taxonomy_probe.{metric_id(finding)}",
            "metric_name": _label(finding),
            "metric_kind": finding["kind"],
            "metric_unit": UNITS[finding["kind"]],
            # The schema asks for a direction; where neither is better, `better` says so.
            "lower_is_better": metric is not None and metric.better == "lower",
            "score_type": "continuous",
            "min_score": low,
            "max_score": high,
            "additional_details": {"better": (metric.better if metric else None) or "neither"},
        },
        "score_details": {
            "score": finding["estimate"],
            "uncertainty": uncertainty,
            "details": _strings(
                {
                    "unit": "name pair",
                    "pairs": finding["n"]["pairs"],
                    "instances": finding["n"]["instances"],
                    "finding": finding["finding"],
                    "test": test.get("test"),
                    "p_value": test.get("p_value"),
                }
            ),
        },
        "generation_config": {"additional_details": _strings(_generation(document))},
    }


# ------------------------------------------------------------------------------------- Hugging Face model card


def model_index(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The card's `model-index`: the model, a result per condition, a metric per finding."""
    by_condition: dict[str, list[dict[str, Any]]] = {}
    for finding in reported(document):
        by_condition.setdefault(finding["condition"], []).append(finding)
    results = []
    for condition, findings in by_condition.items():
        design = {key: value for key, value in _design(document, condition).items() if value is not None}
        dataset = {
            "type": TOOL,
            "name": "Taxonomy-based gender-bias probe",
            "config": design.pop("condition"),
            "split": SPLIT,
            "args": design,
        }
        metrics = [
            {
                "type": metric_id(finding),
                "value": finding["estimate"],
                "name": f"{_label(finding)}: {interval_words(finding)}",
            }
            for finding in findings
        ]
        results.append(
            {
                "task": {"type": "multiple-choice", "name": f"Gender-bias probe ({condition})"},
                "dataset": dataset,
                "metrics": metrics,
            }
        )
    return [{"name": _model(document), "results": results}]


def model_card(document: Mapping[str, Any]) -> str:
    """A model card holding the model-index (for the model's own card: merge its YAML header) and the findings."""
    header = yaml.safe_dump({"model-index": model_index(document)}, sort_keys=False, allow_unicode=True, width=1000)
    body = TEMPLATES.get_template("model_card.md.j2").render(
        run=document["run"],
        model=_model(document),
        findings=reported(document),
        version=__version__,
    )
    return f"---\n{header}---\n\n{body}"


def result_files(report_json: Path) -> tuple[Path, Path]:
    """Where the record and the card go: beside report.json, on its stem."""
    return report_json.with_suffix(".eee.json"), report_json.with_suffix(".model-card.md")


def write_results(report_json: Path) -> list[Path]:
    """The Every Eval Ever record and the model card of the report document at `report_json`."""
    document = json.loads(report_json.read_text(encoding="utf-8"))
    record_path, card_path = result_files(report_json)
    record = eee_record(document, int(time.time()))
    write_atomic(record_path, json.dumps(record, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    write_atomic(card_path, model_card(document))
    return [record_path, card_path]
