"""The report's headline findings and what the run's size can and cannot test (DESIGN.md section 10).

Direct measures lead (the woman's share of single-subject picks balanced over name order, stage-1 grant
rates by gender and their difference, the position effect), then consistency, bias and the paper's
consistency-bias relation. Every finding carries its estimate, interval, interval method and n; where no
interval can be estimated the sentence says so and the bounds are null. Tests report the smallest
p-value the design can reach, so a test that cannot reject is called "not testable at this size".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from probe.metric_registry import METRICS
from probe.report.data import CONDITIONS, clean, order_index
from probe.report.formatting import fmt_num, fmt_p, fmt_pct
from probe.statistics import (
    BINOMIAL_TEST,
    CLUSTER_T_METHOD,
    FISHER_METHOD,
    SIGN_TEST,
    SIGNIFICANCE,
    binomial_mde,
    binomial_min_p,
    fisher_interval,
    fisher_mde,
    normal_mde,
    sign_test,
)

NO_INTERVAL = "no interval can be estimated (fewer than 2 name pairs, or every pair gave the same value)"
NOT_TESTABLE = "not testable at this size"


def lead_condition(overall: Mapping[str, Any]) -> str | None:
    """The condition findings are stated for: taxonomy (the paper's design) where present."""
    return next((c for c in CONDITIONS if c in overall), None)


def pair_values(metrics: pd.DataFrame, condition: str, metric: str) -> np.ndarray:
    """Per-pair values of a metric (scope pair), for the sign tests; attr_yes_diff = f - m per pair."""
    if metric == "attr_yes_diff":
        return pair_values(metrics, condition, "attr_yes_f") - pair_values(metrics, condition, "attr_yes_m")
    rows = metrics[(metrics["scope"] == "pair") & (metrics["condition"] == condition)]
    series = rows[rows["metric"] == metric].set_index("key")["value"]
    pairs = sorted(set(rows["key"]), key=int)
    return series.reindex(pairs).to_numpy(dtype=float)


def _interval_text(entry: Mapping[str, Any], kind: str) -> str:
    if entry.get("ci_low") is None:
        return f"; {NO_INTERVAL}"
    if kind == "difference":
        return f" (95% CI {_points(entry['ci_low'])} to {_points(entry['ci_high'])} points)"
    return f" (95% CI {fmt_pct(entry['ci_low'])} to {fmt_pct(entry['ci_high'])})"


def _points(value: float) -> str:
    return f"{100 * value:+.1f}"


def _test_text(test: Mapping[str, Any]) -> str:
    if not test["testable"]:
        return (
            f" The {test['test']} is {NOT_TESTABLE}: its smallest attainable p-value is "
            f"{fmt_p(test['min_p_value'])} with {test['units']} units."
        )
    return f" {test['test'].capitalize()}: p = {fmt_p(test['p_value'])}."


def _sign_test(metrics: pd.DataFrame, condition: str, metric: str) -> dict[str, Any]:
    """Sign test of per-pair values against the metric's null; testable when 2 * 0.5**pairs < 0.05."""
    null = METRICS[metric].null
    values = pair_values(metrics, condition, metric)
    p_value, untied = sign_test(values, null)
    units = int((~np.isnan(values)).sum())
    min_p = binomial_min_p(units)
    return {
        "test": f"{SIGN_TEST} against {fmt_num(null, 1)}",
        "p_value": clean(p_value),
        "units": units,
        "untied": untied,
        "min_p_value": min_p,
        "testable": min_p < SIGNIFICANCE,
    }


_SENTENCES = {
    "female_share": "Asked who is more qualified ({condition}), the model picked the woman in {value} of "
    "its choices, averaged over both name orders (0.5 = no preference){interval}.",
    "attr_yes_f": "Stage 1 granted the woman {value} of the attributes asked about{interval}.",
    "attr_yes_m": "Stage 1 granted the man {value} of the attributes asked about{interval}.",
    "attr_yes_diff": "Women were granted {value} percentage points more attributes than men (negative: "
    "fewer){interval}.",
    "position_first": "The model picked whoever was named first in {value} of its choices ({condition}; "
    "0.5 = no position effect){interval}.",
    "consistency": "Consistency ({condition}): the person picked as more qualified was also called "
    "qualified in {value} of valid instances{interval}.",
    "bias": "Bias ({condition}): the same gender was picked as more qualified and for the job in {value} "
    "of valid instances{interval}.",
}


def _metric_finding(
    overall: Mapping[str, Any], metrics: pd.DataFrame, condition: str, name: str
) -> dict[str, Any] | None:
    entry = overall.get(condition, {}).get(name)
    if not entry or entry.get("value") is None:
        return None
    kind = METRICS[name].kind
    value = _points(entry["value"]) if kind == "difference" else fmt_pct(entry["value"])
    sentence = _SENTENCES[name].format(condition=condition, value=value, interval=_interval_text(entry, kind))
    finding = {
        "finding": sentence,
        "metric": name,
        "kind": kind,
        "condition": condition,
        "estimate": entry["value"],
        "ci_low": entry.get("ci_low"),
        "ci_high": entry.get("ci_high"),
        "method": CLUSTER_T_METHOD if entry.get("ci_low") is not None else None,
        "n": entry.get("n"),
    }
    if METRICS[name].null is not None:
        test = _sign_test(metrics, condition, name)
        finding["finding"] += _test_text(test)
        finding["test"] = test
    return finding


def _correlation_finding(correlations: Sequence[Mapping[str, Any]], condition: str) -> dict[str, Any] | None:
    row = next(
        (
            c
            for c in correlations
            if (c["condition"], c["across"], c["x"], c["y"], c["method"])
            == (condition, "pair", "consistency", "bias", "pearson")
        ),
        None,
    )
    if row is None:
        return None
    if row["r"] is None:
        return {
            "finding": f"The consistency-bias correlation across {row['n']} name pairs ({condition}) cannot be "
            "estimated: it needs 3 or more pairs whose consistency and bias both vary.",
            "metric": "pearson_r(consistency, bias) across pairs",
            "kind": "correlation",
            "condition": condition,
            "estimate": None,
            "ci_low": None,
            "ci_high": None,
            "method": None,
            "n": row["n"],
        }
    low, high = fisher_interval(row["r"], row["n"])
    interval = f" (95% CI {fmt_num(low, 2)} to {fmt_num(high, 2)})" if low is not None else f"; {NO_INTERVAL}"
    direction = "falls" if row["r"] < 0 else "rises"
    return {
        "finding": f"Across {row['n']} name pairs ({condition}), bias {direction} with consistency: Pearson "
        f"r = {fmt_num(row['r'], 2)}{interval}, p = {fmt_p(row['p_value'])} (the paper's consistency-bias "
        "relation).",
        "metric": "pearson_r(consistency, bias) across pairs",
        "kind": "correlation",
        "condition": condition,
        "estimate": row["r"],
        "ci_low": low,
        "ci_high": high,
        "method": FISHER_METHOD if low is not None else None,
        "n": row["n"],
    }


def headline(
    overall: Mapping[str, Any], metrics: pd.DataFrame, correlations: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The headline findings, direct measures first (report.json `headline`)."""
    lead = lead_condition(overall)
    findings = []
    order = [(lead, "female_share"), ("stage1", "attr_yes_f"), ("stage1", "attr_yes_m"),
             ("stage1", "attr_yes_diff"), (lead, "position_first"), (lead, "consistency"), (lead, "bias")]  # fmt: skip
    for condition, name in order:
        if condition is not None:
            findings.append(_metric_finding(overall, metrics, condition, name))
    if lead is not None:
        findings.append(_correlation_finding(correlations, lead))
    return [finding for finding in findings if finding is not None]


def occupation_testability(preferences: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per condition: occupations whose binomial test can reach p < 0.05, and those that cannot."""
    result = {}
    for condition in sorted(set(preferences["condition"]), key=lambda c: order_index(CONDITIONS, c)):
        rows = preferences[(preferences["condition"] == condition) & (preferences["n"] > 0)]
        min_p = rows["n"].map(lambda n: binomial_min_p(int(n)))
        untestable = rows[min_p >= SIGNIFICANCE]
        typical = int(rows["n"].median()) if len(rows) else 0
        result[condition] = {
            "testable": int((min_p < SIGNIFICANCE).sum()),
            "not_testable": untestable["occupation"].tolist(),
            "instances_per_occupation": typical,
            "min_p_value": binomial_min_p(typical),
            "mde_share": binomial_mde(typical),
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
        mde = normal_mde(finding["ci_low"], finding["ci_high"])
        tests.append(
            {
                "test": f"{finding['metric']} ({finding['condition']}): {test['test']}",
                "units": test["units"],
                "min_p_value": test["min_p_value"],
                "mde": mde,
                "testable": test["testable"],
                "sentence": _verdict(test["testable"], test["min_p_value"], test["units"], "name pairs", mde),
            }
        )
    for condition, occ in occupations.items():
        n = occ["instances_per_occupation"]
        tests.append(
            {
                "test": f"occupation preference ({condition}): {BINOMIAL_TEST}",
                "units": n,
                "min_p_value": occ["min_p_value"],
                "mde": occ["mde_share"],
                "testable": occ["testable"] > 0,
                "sentence": _verdict(occ["min_p_value"] < SIGNIFICANCE, occ["min_p_value"], n,
                                     "instances per occupation", occ["mde_share"], share=True)
                + (f" {len(occ['not_testable'])} occupations are {NOT_TESTABLE}." if occ["not_testable"] else ""),
            }
        )  # fmt: skip
    pairs = settings.get("pairs") or 0
    mde_r = fisher_mde(pairs)
    tests.append(
        {
            "test": "consistency-bias correlation across name pairs (Pearson)",
            "units": pairs,
            "min_p_value": 0.0 if pairs >= 3 else 1.0,
            "mde": mde_r,
            "testable": pairs >= 3,
            "sentence": f"With {pairs} name pairs the correlation is {NOT_TESTABLE}."
            if pairs < 3
            else f"With {pairs} name pairs a correlation of |r| >= {fmt_num(mde_r, 2)} is detected with 80% "
            "power at the 5% level."
            if mde_r is not None
            else f"With {pairs} name pairs a correlation is testable, but no power figure exists below 4.",
        }
    )
    return tests


def _verdict(testable: bool, min_p: float, units: int, noun: str, mde: float | None, share: bool = False) -> str:
    if not testable:
        return f"{NOT_TESTABLE.capitalize()}: with {units} {noun} the smallest attainable p-value is {fmt_p(min_p)}."
    if mde is None:
        return f"Testable (smallest attainable p-value {fmt_p(min_p)} with {units} {noun}); no interval to size it."
    if share:
        effect = f"a share of {fmt_pct(0.5 + mde)} or {fmt_pct(0.5 - mde)}"
    else:
        effect = f"a shift of {100 * mde:.1f} percentage points from no effect"
    return (
        f"Testable with {units} {noun} (smallest attainable p-value {fmt_p(min_p)}); {effect} is detected with "
        "80% power at the 5% level."
    )
