"""The written documents against their published JSON Schemas (`probe schema report|compare`): conftest.py checks
every report.json and compare.json a test writes, tests/report/test_schema.py the schemas themselves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema

from probe.report.schema import published_schema


def document_kind(document: Mapping[str, Any]) -> str:
    """Which written document this is: compare.json has a leaderboard of runs, report.json one run."""
    return "compare" if "leaderboard" in document else "report"


def schema_problems(document: Mapping[str, Any], kind: str | None = None) -> list[str]:
    """Where `document` breaks its published JSON Schema (`probe schema report|compare`): one line per problem."""
    kind = kind or document_kind(document)
    if kind not in _VALIDATORS:
        _VALIDATORS[kind] = jsonschema.Draft202012Validator(published_schema(kind))
    errors = sorted(_VALIDATORS[kind].iter_errors(document), key=lambda error: list(error.absolute_path))
    return [f"{kind}.json /{'/'.join(map(str, error.absolute_path))}: {error.message[:200]}" for error in errors]


def check_document(document: Mapping[str, Any]) -> None:
    """Fail the test where a written document breaks its schema."""
    problems = schema_problems(document)
    assert not problems, "\n".join(problems[:10])


_VALIDATORS: dict[str, Any] = {}
