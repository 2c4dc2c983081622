"""The words of the report's per-contrast robustness rows (probe/report/contrast_findings.py): each wording's
estimate with the p of its own test, a preference in percent and a grant gap in points."""

from __future__ import annotations

from probe.report.contrast_findings import ROBUSTNESS_MEANING, wording_text


def test_each_wording_reads_as_its_estimate_and_p() -> None:
    assert wording_text("preference", {"wording": "paper", "value": 1 / 3, "p_value": 0.0142}) == (
        "paper 33.3% (p = 0.014)"
    )
    assert wording_text("grant_gap", {"wording": "synonym", "value": 0.2, "p_value": 1e-5}) == (
        "synonym +20.0 pts (p < 0.001)"
    )
    assert wording_text("grant_gap", {"wording": "paper", "value": -0.05, "p_value": None}) == "paper -5.0 pts"


def test_every_verdict_of_the_robustness_procedure_has_its_meaning() -> None:
    assert set(ROBUSTNESS_MEANING) == {"holds", "depends", "some", "not_shown", "not_testable", "stable"}
