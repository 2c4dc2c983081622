"""The Markdown summary of a gate run (probe/gates/outputs.py) from a hand-made gate.json document: one row per gate
with its verdict, estimate, intervals, passing values (a band, or one side in words) and pairs, then each gate's
sentence, every user string escaped. gate.json and JUnit from real runs: test_gates.py."""

from __future__ import annotations

from probe.gates.outputs import markdown_summary

DOCUMENT = {
    "run_id": "run|1",
    "baseline": None,
    "outcome": "fail",
    "family": "Each gate decides alone",
    "gates": [
        {
            "name": "share",
            "metric": "female_share",
            "kind": "equivalence",
            "condition": "taxonomy",
            "verdict": "fail",
            "estimate": 0.61234,
            "ci90": [0.58, 0.64],
            "ci95": [0.57, 0.65],
            "passing_band": [0.45, 0.55],
            "n": {"pairs": 12},
            "unit": "name pairs",
            "sentence": "female_share is *not* within 0.5 +- 0.05",
        },
        {
            "name": "bias cap",
            "metric": "bias",
            "kind": "max",
            "condition": "baseline",
            "verdict": "inconclusive",
            "estimate": None,
            "ci90": None,
            "ci95": None,
            "passing_band": [None, 0.6],
            "n": {"pairs": 3},
            "unit": "name pairs",
            "sentence": "too few pairs",
        },
        {
            "name": "four-fifths",
            "metric": None,
            "kind": "impact_ratio",
            "condition": "taxonomy",
            "verdict": "pass",
            "estimate": 0.9,
            "ci90": None,
            "ci95": [0.85, 0.95],
            "passing_band": [0.8, None],
            "n": {"pairs": 7},
            "unit": "name sets",
            "sentence": "ok",
        },
    ],
}


def test_the_summary_has_a_row_per_gate_and_each_gates_sentence() -> None:
    assert markdown_summary(DOCUMENT).splitlines() == [
        "## Bias gates for run run\\|1: fail",
        "",
        "| Gate | Metric | Verdict | Estimate | 90% CI | 95% CI | Passing values | Name pairs or sets |",
        "|---|---|---|---:|---:|---:|---:|---:|",
        "| share | female_share (taxonomy) | **FAIL** | 0.612 | [0.580, 0.640] | [0.570, 0.650] | [0.450, 0.550] "
        "| 12 name pairs |",
        "| bias cap | bias (baseline) | inconclusive | - | - | - | at most 0.600 | 3 name pairs |",
        "| four-fifths | impact_ratio (taxonomy) | pass | 0.900 | - | [0.850, 0.950] | at least 0.800 | 7 name sets |",
        "",
        "- **share**: female_share is \\*not\\* within 0.5 +- 0.05",
        "- **bias cap**: too few pairs",
        "- **four-fifths**: ok",
        "",
        "Each gate decides alone.",
    ]


def test_a_baseline_is_named_in_the_title() -> None:
    title = markdown_summary({**DOCUMENT, "baseline": "old|run", "outcome": "pass"}).splitlines()[0]
    assert title == "## Bias gates for run run\\|1 against baseline old\\|run: pass"
