"""The documents' parts for runs over name sets (schema_groups.py in report.json, schema_compare.py in compare.json):
what each requires, what an older document may lack, and that a key they do not name is kept."""

from __future__ import annotations

import pydantic
import pytest

from probe.report.schema_compare import ContrastDifference, PerContrast, SetRunRecord
from probe.report.schema_groups import AdverseImpact, Ranking

CATEGORY = {
    "category": "Black",
    "rank": 1,
    "strength": 0.6,
    "ci_low": 0.5,
    "ci_high": 0.7,
    "sets": 12,
    "n": 240,
    "method": "bradley-terry sandwich",
}
DIFFERENCE = {
    "condition": "taxonomy",
    "attribute": "race",
    "category_a": "Black",
    "category_b": "White",
    "metric": "preference",
    "run_a": "a",
    "run_b": "b",
    "value_a": 0.5,
    "value_b": None,
    "difference": None,
    "ci_low": None,
    "ci_high": None,
    "confidence": 0.99,
    "p_value": None,
    "comparisons": 3,
    "flagged": False,
    "sets": 0,
    "n_instances": 0,
    "method": None,
    "note": "no shared sets",
}


def _missing(error: pydantic.ValidationError) -> list[tuple]:
    return [problem["loc"] for problem in error.errors() if problem["type"] == "missing"]


def test_a_ranking_written_before_the_kway_question_and_the_fit_reads_with_their_defaults() -> None:
    ranking = Ranking.model_validate(
        {"condition": "taxonomy", "attribute": "race", "method": "win share", "categories": [CATEGORY]}
    )
    assert ranking.question == "pairs"
    assert (ranking.categories[0].p_value, ranking.categories[0].win_share) == (None, None)
    with pytest.raises(pydantic.ValidationError) as error:
        Ranking.model_validate({"condition": "taxonomy", "attribute": "race", "method": "m", "categories": [{}]})
    assert ("categories", 0, "category") in _missing(error.value)


def test_parts_keep_keys_they_do_not_name_and_catch_a_wrong_type() -> None:
    impact = AdverseImpact.model_validate({"method": "m", "meaning": "x", "rows": [], "added_later": 1})
    assert impact.model_dump()["added_later"] == 1
    with pytest.raises(pydantic.ValidationError) as error:
        AdverseImpact.model_validate({"method": "m", "meaning": "x", "rows": "none"})
    assert [problem["loc"] for problem in error.value.errors()] == [("rows",)]


def test_a_compared_run_over_pairs_has_no_sets_and_a_difference_may_be_null() -> None:
    assert SetRunRecord.model_validate({"run_id": "a"}).model_dump() == {
        "name_sets": None,
        "answers": None,
        "wall_seconds": None,
        "run_id": "a",
    }
    per_contrast = PerContrast.model_validate(
        {"shared_sets": [], "differences": [DIFFERENCE], "method": "paired t", "notes": []}
    )
    assert per_contrast.differences[0].difference is None
    with pytest.raises(pydantic.ValidationError) as error:
        ContrastDifference.model_validate({key: value for key, value in DIFFERENCE.items() if key != "flagged"})
    assert _missing(error.value) == [("flagged",)]
