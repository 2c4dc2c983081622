"""The bottom line's sentences from hand-made findings: a verdict shows a direction only where its test rejects, the
heterogeneity test and the occupations are said in words, and a stage-1 gap is named as a possible source of the
stage-2 lean unless a control condition separates them."""

from __future__ import annotations

from probe.analysis.metric_registry import ATTR_YES_DIFF, FEMALE_SHARE
from probe.report import bottom_line


def _finding(metric: str, condition: str, estimate: float, p_value: float | None, testable: bool = True) -> dict:
    test = {"p_value": p_value, "testable": testable, "test": "score test"}
    return {"metric": metric, "condition": condition, "kind": "share", "estimate": estimate, "test": test}


def test_a_verdict_shows_a_direction_only_where_its_test_rejects() -> None:
    shown = bottom_line._verdict(_finding(FEMALE_SHARE, "taxonomy", 0.7, 0.01))
    assert (shown["direction"], shown["shown"]) == ("female", True)
    assert shown["sentence"] == "The model prefers women (taxonomy): 70.0% (no interval), p = 0.010 (score test)."
    not_shown = bottom_line._verdict(_finding(FEMALE_SHARE, "control", 0.3, 0.2))
    assert (
        not_shown["sentence"] == "No gender preference is shown (control): 30.0% (no interval), p = 0.200 (score test)."
    )
    untestable = bottom_line._verdict(_finding(FEMALE_SHARE, "control", 0.3, None, testable=False))
    assert (untestable["direction"], untestable["shown"]) == (None, None)
    assert untestable["sentence"].startswith("The gender preference (control) is not testable at this size: ")


def test_the_heterogeneity_of_the_pairs_in_words() -> None:
    test = {"condition": "taxonomy", "pairs": 12, "statistic": 30.0, "p_value": 0.001, "differ": True}
    assert bottom_line._heterogeneity(test)["sentence"] == (
        "The name pairs differ (p = 0.001, stratified permutation test): the woman's share depends on which names "
        "are asked, so the overall share is an average over unlike pairs."
    )
    few = bottom_line._heterogeneity({**test, "pairs": 3, "p_value": None, "differ": False})
    assert few["sentence"] == (
        "Whether the name pairs differ is not testable at this size: 3 pairs, fewer than the 6 any test over "
        "pairs needs."
    )
    assert bottom_line._heterogeneity(None) is None


def test_the_occupations_sentence_lists_each_side_and_the_untestable() -> None:
    preferred = {"taxonomy": {"female": ["nurse"], "male": [], "tested": 8, "not_testable": ["pilot", "judge"]}}
    assert bottom_line._occupations(preferred, "taxonomy") == (
        "Occupations (taxonomy): 1 of 8 testable occupations show a preference (sign test over name pairs, "
        "Benjamini-Hochberg q < 0.05); for women: nurse; 2 are not testable at this size."
    )
    assert bottom_line._occupations(preferred, "control") is None


def test_a_stage1_gap_is_named_as_a_source_of_the_lean_until_a_control_separates_them() -> None:
    gap = bottom_line._verdict(_finding(ATTR_YES_DIFF, "stage1", 0.1, 0.01) | {"kind": "difference"})
    lean = bottom_line._verdict(_finding(FEMALE_SHARE, "taxonomy", 0.7, 0.01))
    control = bottom_line._verdict(_finding(FEMALE_SHARE, "control", 0.5, 0.9))
    alone = bottom_line._inheritance([gap, lean], ["taxonomy"])
    assert alone.startswith("Stage 1 granted women more attributes, and the taxonomy condition shows each person ")
    assert "may be inherited from that gap" in alone and alone.endswith("run it with --conditions taxonomy,control.")
    separated = bottom_line._inheritance([gap, lean, control], ["taxonomy", "control"])
    assert separated.endswith(f"The control condition separates them: {control['sentence']}")
    assert bottom_line._inheritance([lean], ["taxonomy"]) is None  # no gap: nothing to inherit
