"""The report's headline findings and what the run's size can and cannot test (DESIGN.md section 10).

Direct measures lead (the woman's share of single-subject picks balanced over name order, stage-1 grant
rates by gender and their difference, the position effect), then consistency, bias and the paper's
consistency-bias relation. Every finding carries its estimate, interval, interval method and n (pairs and
instances); where no interval can be estimated the sentence says so and the bounds are null. A finding's
p-value comes from the test its interval inverts (one inference per finding), and a sentence states a
direction only where that test rejects. Tests report the smallest p-value the data can reach, so a test
that cannot reject is called "not testable at this size".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from probe.analysis.binomial import SIGNIFICANCE, binomial_mde, binomial_min_p
from probe.analysis.metric_registry import (
    ATTR_YES_DIFF,
    ATTR_YES_F,
    ATTR_YES_M,
    BIAS,
    CONSISTENCY,
    FEMALE_SHARE,
    METRICS,
    POSITION_FIRST,
)
from probe.analysis.resampling import CORRELATION_METHOD, correlation_mde
from probe.analysis.statistics import METHODS, MIN_PAIRS, OCCUPATION_TEST
from probe.common.vocabulary import STAGE1_CONDITION
from probe.report.data import CONDITIONS, clean, order_index
from probe.report.formatting import fmt_num, fmt_p, fmt_pct, p_phrase

NO_INTERVAL = f"no interval can be estimated (fewer than {MIN_PAIRS} name pairs with valid instances)"
# The Summary table names each interval's method by a short label; a legend under it gives the full method once.
METHOD_LABELS = {
    "score": "score interval",
    "no_events": "no-event bound",
    "betting": "betting interval",
    "pair_score": "score interval over pairs",
    "paired_t": "paired t",
    "correlation": "permutation-calibrated Fisher z",
}
NOT_TESTABLE = "not testable at this size"
# The test each interval inverts, as a finding's sentence names it.
TESTS = {
    "score": "score test over name pairs",
    "no_events": "no-event test over name pairs",
    "betting": "betting test over name pairs",
    "pair_score": "score test over name pairs as trials",
    "paired_t": "paired t test over name pairs",
}


def lead_condition(overall: Mapping[str, Any]) -> str | None:
    """The condition findings are stated for: taxonomy (the paper's design) where present."""
    return next((c for c in CONDITIONS if c in overall), None)


def _interval_text(entry: Mapping[str, Any], kind: str) -> str:
    if entry.get("ci_low") is None:
        return f"; {NO_INTERVAL}"
    if kind == "difference":
        return f" (95% CI {_points(entry['ci_low'])} to {_points(entry['ci_high'])} points)"
    return f" (95% CI {fmt_pct(entry['ci_low'])} to {fmt_pct(entry['ci_high'])})"


def _points(value: float) -> str:
    return f"{100 * value:+.1f}"


def _own_test(entry: Mapping[str, Any], null: float, kind: str) -> dict[str, Any]:
    """The finding's test: the one whose non-rejected values form its interval (stored by analyze); without an
    interval, the test a difference or a share gets. Testable where it can reach p < 0.05 and the shift it detects
    with 80% power fits in the metric's range (a share can move at most 50 points from 50%)."""
    min_p = entry.get("min_p_value")
    name = TESTS[entry.get("method") or ("paired_t" if kind == "difference" else "score")]
    mde, room = entry.get("mde"), _room(null, kind)
    return {
        "test": f"{name} (the interval's own test) against {fmt_num(null, 1)}",
        "null": null,
        "p_value": entry.get("p_value"),
        "units": entry.get("pairs") or 0,
        "min_p_value": min_p if min_p is not None else 1.0,
        "mde": mde,
        "room": room,
        "testable": min_p is not None and min_p < SIGNIFICANCE and (mde is None or mde <= room),
    }


def _room(null: float, kind: str) -> float:
    """The largest shift from `null` the metric's range allows (shares 0 to 1, differences -1 to 1)."""
    low = -1.0 if kind == "difference" else 0.0
    return max(null - low, 1.0 - null)


def _untestable(test: Mapping[str, Any], noun: str) -> str:
    """Why a test cannot decide: no data could reach p < 0.05, or only a shift beyond the metric's range could be
    detected with 80% power."""
    units, min_p, mde = test["units"], test["min_p_value"], test["mde"]
    if min_p >= SIGNIFICANCE or mde is None:
        return f"with {units} {noun} the smallest attainable p-value is {fmt_p(min_p)}"
    return (
        f"with {units} {noun} only a shift of {100 * mde:.1f} percentage points from no effect would be detected "
        f"with 80% power, more than the {100 * test['room']:.1f} the metric's range allows"
    )


def _test_text(test: Mapping[str, Any], effect: str, direction: str) -> str:
    """The test's verdict; a direction is stated only where the test rejects (which no lack of power undoes)."""
    if test["p_value"] is not None and test["p_value"] < SIGNIFICANCE:
        return f" {direction} ({p_phrase(test['p_value'])}, {test['test']})."
    if not test["testable"]:
        return f" The {test['test']} is {NOT_TESTABLE}: {_untestable(test, 'name pairs')}."
    return f" No significant {effect} ({p_phrase(test['p_value'])}, {test['test']})."


_SENTENCES = {
    FEMALE_SHARE: "Asked who is more qualified ({condition}), the model picked the woman in {value} of "
    "its choices, averaged over both name orders (0.5 = no preference){interval}.",
    ATTR_YES_F: "Stage 1 granted the woman {value} of the attributes asked about{interval}.",
    ATTR_YES_M: "Stage 1 granted the man {value} of the attributes asked about{interval}.",
    ATTR_YES_DIFF: "Women were granted {value} percentage points more attributes than men (negative: fewer){interval}.",
    POSITION_FIRST: "The model picked whoever was named first in {value} of its choices ({condition}; "
    "0.5 = no position effect){interval}.",
    CONSISTENCY: "Consistency ({condition}; not a gender measure): the person picked as more qualified was also "
    "called qualified in {value} of valid instances{interval}.",
    BIAS: "Bias ({condition}; not a gender measure: either gender counts): the same gender was picked as more "
    "qualified and for the job in {value} of valid instances{interval}.",
}
# A run over name sets: its two people differ in any attribute, not in gender (probe/report/contrasts.py).
_SET_SENTENCES = _SENTENCES | {
    CONSISTENCY: "Consistency ({condition}; not a group measure): the person picked as more qualified was also "
    "called qualified in {value} of valid instances{interval}.",
    BIAS: "Bias ({condition}; not a group measure: either person counts): the same person was picked as more "
    "qualified and for the job in {value} of valid instances{interval}.",
}
# What a reader must know when an interval is not the usual score interval (statistics.METHODS has the details).
_METHOD_NOTES = {
    "no_events": " No name pair showed otherwise, so the interval counts pairs, not instances (no-event bound).",
    "pair_score": " The events are rare (fewer than the name pairs) or a few pairs carry them, so each name pair "
    "counts as one trial with the largest variance its share can have (wider than the usual interval, and valid "
    "however unevenly the pairs share the events).",
    "betting": " Fewer than three name pairs' worth carry the events (or, for a difference, the events are fewer "
    "than the name pairs), so the interval is the distribution-free betting interval (wider than the usual one).",
}
# (the effect in words, direction above the null, direction below) for the metrics with a test.
DIRECTIONS = {
    FEMALE_SHARE: ("gender preference", "The model prefers women", "The model prefers men"),
    ATTR_YES_DIFF: (
        "difference in grant rates",
        "Women are granted more attributes",
        "Men are granted more attributes",
    ),
    POSITION_FIRST: ("position effect", "The first-named person is favoured", "The second-named person is favoured"),
}


def metric_finding(
    overall: Mapping[str, Any],
    condition: str,
    name: str,
    over_wordings: Mapping[str, str] | None = None,
    over_name_sets: bool = False,
) -> dict[str, Any] | None:
    """A metric's headline finding; `over_wordings` (a run in several wordings): the claim the robustness section
    makes (robustness.wording_claims), stated in place of the test's verdict, whose p it quotes beside the crossed
    test's; `over_name_sets`: a run over name sets, whose sentences name people, not genders."""
    entry = overall.get(condition, {}).get(name)
    if not entry or entry.get("value") is None:
        return None
    metric = METRICS[name]
    value = _points(entry["value"]) if metric.kind == "difference" else fmt_pct(entry["value"])
    sentence = (_SET_SENTENCES if over_name_sets else _SENTENCES)[name].format(
        condition=condition, value=value, interval=_interval_text(entry, metric.kind)
    ) + _METHOD_NOTES.get(entry.get("method") if entry.get("ci_low") is not None else None, "")
    finding = {
        "finding": sentence,
        "metric": name,
        "kind": metric.kind,
        "condition": condition,
        "estimate": entry["value"],
        "ci_low": entry.get("ci_low"),
        "ci_high": entry.get("ci_high"),
        "method": METHODS[entry["method"]] if entry.get("ci_low") is not None and entry.get("method") else None,
        "method_label": METHOD_LABELS[entry["method"]]
        if entry.get("ci_low") is not None and entry.get("method")
        else None,
        "n": {"pairs": entry.get("pairs"), "instances": entry.get("n")},
    }
    if metric.null is not None:
        test = _own_test(entry, metric.null, metric.kind)
        effect, above, below = DIRECTIONS[name]
        rejects = test["p_value"] is not None and test["p_value"] < SIGNIFICANCE
        if over_wordings and (test["testable"] or rejects):  # else: not testable at this size, said as such
            finding["finding"] += f" {over_wordings['claim']}"
            finding["robustness"] = {key: over_wordings[key] for key in ("verdict", "together", "clause")}
        else:
            finding["finding"] += _test_text(test, effect, above if entry["value"] > metric.null else below)
        finding["test"] = test
    return finding


def _correlation_finding(correlations: Sequence[Mapping[str, Any]], condition: str) -> dict[str, Any] | None:
    row = next(
        (
            c
            for c in correlations
            if (c["condition"], c["x"], c["y"]) == (condition, CONSISTENCY, BIAS)  # across pairs, or a set run's sets
        ),
        None,
    )
    if row is None:
        return None
    base = {
        "metric": f"pearson_r(consistency, bias) across {row['across']}s",
        "kind": "correlation",
        "condition": condition,
        "n": {"pairs": row["n"], "instances": None},
    }
    if row["r"] is None or row.get("ci_low") is None:
        return base | {
            "finding": f"The consistency-bias correlation across {row['n']} name pairs ({condition}) is "
            f"{NOT_TESTABLE}: its permutation test needs {MIN_PAIRS} or more pairs whose consistency and bias "
            "both vary.",
            "estimate": clean(row["r"]),
            "ci_low": None,
            "ci_high": None,
            "method": None,
            "method_label": None,
        }
    adjusted = row.get("p_adjusted")
    relation = (
        f"bias {'falls' if row['r'] < 0 else 'rises'} with consistency"
        if adjusted is not None and adjusted < SIGNIFICANCE
        else "the data do not show that bias and consistency are related"
    )
    return base | {
        "finding": f"Across {row['n']} name pairs ({condition}), {relation}: Pearson r = {fmt_num(row['r'], 2)} "
        f"(95% CI over the conditions tested {fmt_num(row['ci_low'], 2)} to {fmt_num(row['ci_high'], 2)}), "
        f"{p_phrase(adjusted, 'Bonferroni-adjusted p')} (unadjusted {fmt_p(row['p_value'])}; the paper's "
        "consistency-bias relation).",
        "estimate": row["r"],
        "ci_low": row["ci_low"],
        "ci_high": row["ci_high"],
        "method": CORRELATION_METHOD,
        "method_label": METHOD_LABELS["correlation"],
    }


def headline(
    overall: Mapping[str, Any],
    correlations: Sequence[Mapping[str, Any]],
    over_wordings: Mapping[tuple[str, str], Mapping[str, str]] | None = None,
    over_name_sets: bool = False,
) -> list[dict[str, Any]]:
    """The headline findings, direct measures first (report.json `headline`); `over_wordings`: the robustness
    section's claim per (condition, metric) of a run in several wordings (robustness.wording_claims);
    `over_name_sets`: a run over name sets (its sentences name people, not genders)."""
    lead = lead_condition(overall)
    findings = []
    stage1 = STAGE1_CONDITION
    order = [
        (lead, FEMALE_SHARE),
        (stage1, ATTR_YES_F),
        (stage1, ATTR_YES_M),
        (stage1, ATTR_YES_DIFF),
        (lead, POSITION_FIRST),
        (lead, CONSISTENCY),
        (lead, BIAS),
    ]
    for condition, name in order:
        if condition is not None:
            findings.append(
                metric_finding(overall, condition, name, (over_wordings or {}).get((condition, name)), over_name_sets)
            )
    if lead is not None:
        findings.append(_correlation_finding(correlations, lead))
    return [finding for finding in findings if finding is not None]


def occupation_testability(preferences: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per condition: occupations whose sign test over leaning pairs can reach p < 0.05, and those that cannot.

    The detectable effect is for the test as used: the exact sign test over the typical number of leaning
    (untied) pairs, at the level Benjamini-Hochberg applies to a lone discovery (0.05 / occupations).
    """
    result = {}
    for condition in sorted(set(preferences["condition"]), key=lambda c: order_index(CONDITIONS, c)):
        rows = preferences[preferences["condition"] == condition]
        min_p = rows["pairs"].map(lambda pairs: binomial_min_p(int(pairs)))
        typical = int(rows["pairs"].median()) if len(rows) else 0
        level = SIGNIFICANCE / max(len(rows), 1)
        result[condition] = {
            "testable": int((min_p < SIGNIFICANCE).sum()),
            "not_testable": rows[min_p >= SIGNIFICANCE]["occupation"].tolist(),
            "occupations": len(rows),
            "leaning_pairs_per_occupation": typical,
            "min_p_value": binomial_min_p(typical),
            "bh_level": level,
            "mde_lean": binomial_mde(typical, level),
        }
    return result


def testability(
    findings: Sequence[Mapping[str, Any]],
    occupations: Mapping[str, Mapping[str, Any]],
    settings: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """Each test of the report with its smallest attainable p-value, minimum detectable effect and verdict."""
    tests = []
    for finding in findings:
        test = finding.get("test")
        if test is None:
            continue
        tests.append(
            {
                "test": f"{finding['metric']} ({finding['condition']}): {test['test']}",
                "units": test["units"],
                "min_p_value": test["min_p_value"],
                "mde": test["mde"],
                "testable": test["testable"],
                "sentence": _verdict(test, "name pairs"),
            }
        )
    for condition, occ in occupations.items():
        pairs, lone = occ["leaning_pairs_per_occupation"], occ["mde_lean"]
        occupation_test = {
            "testable": occ["min_p_value"] < SIGNIFICANCE,
            "min_p_value": occ["min_p_value"],
            "units": pairs,
            "mde": None,
            "room": 0.5,
        }
        sentence = _verdict(occupation_test, "leaning name pairs per occupation")
        if occ["min_p_value"] < SIGNIFICANCE:
            sentence += (
                f" A lone preferred occupation must pass Benjamini-Hochberg at {fmt_p(occ['bh_level'])} "
                f"({occ['occupations']} occupations): "
                + (
                    f"detected with 80% power when {fmt_pct(0.5 + lone)} of its leaning pairs lean one way."
                    if lone is not None
                    else "not reachable with this many leaning pairs."
                )
            )
        if occ["not_testable"]:
            sentence += f" {len(occ['not_testable'])} occupations are {NOT_TESTABLE}."
        tests.append(
            {
                "test": f"occupation preference ({condition}): {OCCUPATION_TEST}",
                "units": pairs,
                "min_p_value": occ["min_p_value"],
                "mde": lone,
                "testable": occ["testable"] > 0,
                "reachable": lone is not None,
                "sentence": sentence,
            }
        )
    pairs = settings.get("pairs") or 0
    mde_r = correlation_mde(pairs)
    tests.append(
        {
            "test": "consistency-bias correlation across name pairs (permutation test)",
            "units": pairs,
            "min_p_value": 0.0 if pairs >= MIN_PAIRS else 1.0,
            "mde": mde_r,
            "testable": pairs >= MIN_PAIRS,
            "sentence": f"With {pairs} name pairs the correlation is {NOT_TESTABLE} (every test over name pairs needs "
            f"{MIN_PAIRS})."
            if mde_r is None
            else f"With {pairs} name pairs a correlation of |r| >= {fmt_num(mde_r, 2)} is detected with 80% "
            "power at the 5% level.",
        }
    )
    return tests


def _verdict(test: Mapping[str, Any], noun: str) -> str:
    units, min_p, mde = test["units"], test["min_p_value"], test["mde"]
    if not test["testable"]:
        return f"{NOT_TESTABLE.capitalize()}: {_untestable(test, noun)}."
    text = f"Testable with {units} {noun} (smallest attainable p-value {fmt_p(min_p)})"
    if mde is None:
        return text + "."
    return (
        f"{text}; a shift of {100 * mde:.1f} percentage points from no effect is detected with 80% power at "
        "the 5% level, given the spread between pairs this run showed."
    )


def method_legend(findings: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The Summary's legend: each method label the findings use, once, with its full method."""
    legend: dict[str, str] = {}
    for finding in findings:
        if finding.get("method_label"):
            legend.setdefault(finding["method_label"], finding["method"])
    return [{"label": label, "method": method} for label, method in legend.items()]
