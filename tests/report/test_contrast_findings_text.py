"""The words of the report's per-contrast robustness rows (probe/report/contrast_findings.py): each wording's
estimate with the p of its own test, a preference in percent and a grant gap in points."""

from __future__ import annotations

from probe.report.contrast_findings import ROBUSTNESS_MEANING, listed_sentence, wording_text


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


def test_the_bottom_line_lists_each_contrasts_occupations_by_the_category_they_lean_to() -> None:
    def entry(condition: str, a: str, b: str, *listed: tuple[str, str]) -> dict:
        rows = [{"occupation": occupation, "preferred": category} for occupation, category in listed]
        return {"condition": condition, "attribute": "sex", "category_a": a, "category_b": b, "preferred": rows}

    lists = [
        entry("taxonomy", "female", "male", ("nurse", "female"), ("pilot", "male"), ("dancer", "female")),
        entry("control", "female", "male"),
    ]
    assert listed_sentence(lists) == (
        "Occupations (taxonomy) listed per contrast (sign test over name sets, Benjamini-Hochberg q < 0.05 within "
        "each contrast): female vs male (sex), to female: nurse, dancer; to male: pilot. Occupations (control): none "
        "listed in 1 contrast (sign test over name sets, Benjamini-Hochberg q < 0.05 within each contrast)."
    )
    assert listed_sentence([]) is None
