"""The typed documents (DESIGN.md section 13): `probe schema report|compare` publishes the JSON Schemas of
report.json and compare.json; a document written before a section existed still validates, a key the schema does
not name is allowed, a wrong type or a missing key is caught at its path. Every document a test writes is
validated too (conftest.py)."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest

import probe
from probe.report.data import SCHEMA_VERSION
from probe.report.schema import ReportDocument
from tests.documents import schema_problems
from tests.support import assert_one_line_error, invoke

ENTRY = {"value": 0.5, "ci_low": 0.2, "ci_high": 0.8, "n": 96, "pairs": 8}
# A report.json of schema_version 1 as the first release wrote it: no bottom line, robustness, workforce or
# adverse-impact section, no testability.
FIRST_REPORT: dict[str, Any] = {
    "schema_version": 1,
    "run": {
        "run_id": "old",
        "model": "m",
        "model_identity": "m",
        "backend": "replay",
        "decoding": "score",
        "onet_release": "O*NET 29.0",
        "template_hash": "abc",
        "package_version": "0.1.0",
        "package_versions": "{}",
        "created_at": "2026-11-01",
        "finished_at": None,
        "status": "complete",
    },
    "settings": {"pairs": 8, "occupations": 2, "top_k": 1, "conditions": ["taxonomy"]},
    "counts": {"items_stage1": 64, "items_stage2": 128, "answers": 192, "by_qtype": {}},
    "headline": [
        {
            "finding": "A sentence.",
            "metric": "bias",
            "kind": "share",
            "condition": "taxonomy",
            "estimate": 0.5,
            "ci_low": None,
            "ci_high": None,
            "method": None,
            "n": {"pairs": 8},
        }
    ],
    "overall": {"taxonomy": {"bias": ENTRY}},
    "preferred_occupations": {
        "taxonomy": {"female": [], "male": [], "tested": 2, "not_testable": [], "no_preference": ["nurse", "pilot"]}
    },
    "correlations": [],
    "regression": {},
    "stage1_rates": [],
    "occupation_preference": [],
    "pair_values": [],
    "items": [],
}
FIRST_COMPARE: dict[str, Any] = {
    "schema_version": 1,
    "runs": [{**FIRST_REPORT["run"], "top_k": 1, "pairs": 8, "occupations": 2, "conditions": ["taxonomy"]}],
    "differences_in_settings": [],
    "paired": True,
    "shared": {"pairs": 8, "occupations": 2, "conditions": ["taxonomy"], "instances": 16},
    "reference": "old",
    "leaderboard": [{"run_id": "old", "model": "m", "condition": "taxonomy", "metrics": {"bias": ENTRY}}],
    "overall": {"old": {"taxonomy": {"bias": ENTRY}}},
    "paired_differences": [],
    "ranks": [],
    "preference_agreement": [],
}


@pytest.mark.parametrize("name", ["report", "compare"])
def test_probe_schema_prints_a_versioned_json_schema(name: str) -> None:
    code, output = invoke("schema", name)
    assert code == 0, output
    schema = json.loads(output)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert (schema["$schema"], schema["$id"], schema["x-schema-version"], schema["title"]) == (
        "https://json-schema.org/draft/2020-12/schema",
        f"urn:taxonomy-probe:schema:{name}:1",
        1,
        f"{name}.json",
    )
    assert schema == probe.schema(name)


def test_an_unknown_document_is_a_one_line_error() -> None:
    code, output = invoke("schema", "gate")
    assert_one_line_error(code, output, "no schema 'gate': choose one of report, compare")


def test_documents_of_the_first_release_still_validate() -> None:
    assert schema_problems(FIRST_REPORT, "report") == []
    assert schema_problems(FIRST_COMPARE, "compare") == []
    assert ReportDocument.model_validate(FIRST_REPORT).workforce is None


def test_a_key_the_schema_does_not_name_is_allowed_at_every_level() -> None:
    report = copy.deepcopy(FIRST_REPORT)
    report["fairness_summary"] = [{"contrast": "female - male"}]  # a section a later release adds
    report["settings"]["names"] = "sets"
    report["overall"]["taxonomy"]["bias"]["method"] = "score"
    assert schema_problems(report, "report") == []


def test_a_wrong_type_a_missing_key_or_a_newer_version_is_caught_at_its_path() -> None:
    report = copy.deepcopy(FIRST_REPORT)
    report["settings"]["pairs"] = "8"
    del report["run"]["run_id"]
    report["overall"]["taxonomy"]["bias"]["ci_low"] = "low"
    report["schema_version"] = SCHEMA_VERSION + 1
    assert schema_problems(report, "report") == [
        "report.json /overall/taxonomy/bias/ci_low: 'low' is not valid under any of the given schemas",
        "report.json /run: 'run_id' is a required property",
        f"report.json /schema_version: {SCHEMA_VERSION + 1} is greater than the maximum of {SCHEMA_VERSION}",
        "report.json /settings/pairs: '8' is not valid under any of the given schemas",
    ]
    comparison = copy.deepcopy(FIRST_COMPARE)
    comparison["paired"] = "yes"
    assert schema_problems(comparison, "compare") == ["compare.json /paired: 'yes' is not of type 'boolean'"]
