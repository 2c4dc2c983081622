"""Checks every interval in a written document (report, gate, compare) is ordered, holds its estimate and agrees
with its p-value: the conftest-wide rules the report, gate and compare tests call through `interval_problems`."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any


def interval_problems(data: Mapping[str, Any]) -> list[str]:
    """Every interval of a report.json, gate.json or compare.json that breaks a rule: zero width, inverted, OR
    outside, no method, or a p-value or verdict beside it that its interval contradicts."""
    if "gates" in data:
        return _gate_problems(data)
    if "paired_differences" in data:
        return _compare_problems(data)
    problems = []

    def check(where: str, low: Any, high: Any, estimate: Any = None) -> None:
        if low is None and high is None:
            return
        if low is None or high is None or not high > low:
            problems.append(f"{where}: [{low}, {high}] is not an interval")
        elif estimate is not None and not low <= estimate <= high:
            problems.append(f"{where}: {estimate} outside [{low}, {high}]")

    def disagree(low: Any, high: Any, null: float, p_value: Any) -> bool:
        """One inference per finding: the interval excludes the null exactly when p < 0.05."""
        if low is None or p_value is None or abs(p_value - 0.05) < 1e-9:
            return False
        return (p_value < 0.05) != (null < low or null > high)

    for finding in data["headline"]:
        check(f"headline {finding['metric']}", finding["ci_low"], finding["ci_high"], finding["estimate"])
        if finding["ci_low"] is not None and not finding["method"]:
            problems.append(f"headline {finding['metric']}: interval without a method")
        test = finding.get("test")
        if test and disagree(finding["ci_low"], finding["ci_high"], test["null"], test["p_value"]):
            problems.append(f"headline {finding['metric']}: p = {test['p_value']} disagrees with its interval")
    for row in data["correlations"]:
        if disagree(row["ci_low"], row["ci_high"], 0.0, row["p_adjusted"]):
            problems.append(f"correlation {row['condition']}: p = {row['p_value']} disagrees with its interval")
    for condition, entries in data["overall"].items():
        for metric, entry in entries.items():
            check(f"overall {condition} {metric}", entry["ci_low"], entry["ci_high"])
    for condition, rows in data["regression"].items():
        for row in rows:
            check(f"regression {condition} {row['term']}", row["ci_low"], row["ci_high"], row["odds_ratio"])
    for row in data["occupation_preference"]:
        # the interval sits at the level of the decision beside it: it excludes 0.5 exactly when preferred
        if row["ci_low"] is not None and (row["preferred"] != "none") != (row["ci_low"] > 0.5 or row["ci_high"] < 0.5):
            problems.append(
                f"occupation {row['occupation']}: [{row['ci_low']}, {row['ci_high']}] beside "
                f"preferred {row['preferred']}"
            )
    for condition, entry in ((data.get("workforce") or {}).get("by_condition") or {}).items():
        for name, null in (("slope", 1.0), ("adjusted_slope", 1.0), ("spearman", 0.0), ("pearson", 0.0)):
            fit = entry.get(name)
            if fit is None:  # the adjusted slope of an older run; no verdict below MIN_VERDICT_OCCUPATIONS either
                continue
            check(f"workforce {condition} {name}", fit["ci_low"], fit["ci_high"], fit["estimate"])
            if (
                fit["ci_low"] is not None
                and fit["verdict"] is not None
                and (fit["verdict"] != "inconclusive") != (fit["ci_low"] > null or fit["ci_high"] < null)
            ):
                problems.append(f"workforce {condition} {name}: verdict {fit['verdict']} beside its interval")
    for row in (data.get("adverse_impact") or {}).get("rows", []):  # ratio intervals: null ci_high = unbounded
        high = math.inf if row["ci_high"] is None else row["ci_high"]
        if row["ci_low"] is not None and disagree(row["ci_low"], high, 1.0, row["p_value"]):
            problems.append(
                f"impact ratio {row['condition']} {row['key']} {row['category']} {row['rate_kind']}: "
                f"p = {row['p_value']} disagrees with [{row['ci_low']}, {row['ci_high']}]"
            )
    for finding in data["headline"]:
        for printed in re.findall(r"p = ([0-9.]+)", finding["finding"]):  # a printed p never reads across 0.05
            test = finding.get("test") or {}
            actual = test.get("p_value")
            if actual is not None and printed != "0.05" and (float(printed) < 0.05) != (actual < 0.05):
                problems.append(f"headline {finding['metric']}: prints p = {printed} for p = {actual}")
    return problems


def _interval_rules(where: str, low: Any, high: Any, estimate: Any, null: float | None, p_value: Any) -> list[str]:
    """An interval's own rules: a real interval holding its estimate, and p < 0.05 exactly when it excludes the null."""
    if low is None and high is None:
        return []
    if low is None or high is None or not high > low:
        return [f"{where}: [{low}, {high}] is not an interval"]
    problems = []
    if estimate is not None and not low - 1e-9 <= estimate <= high + 1e-9:
        problems.append(f"{where}: {estimate} outside [{low}, {high}]")
    if null is None or p_value is None or abs(p_value - 0.05) <= 1e-9:
        return problems
    if (p_value < 0.05) != (null < low or null > high):
        problems.append(f"{where}: p = {p_value} disagrees with [{low}, {high}] about {null}")
    return problems


def _gate_problems(data: Mapping[str, Any]) -> list[str]:
    """gate.json: each interval gate's 90% interval inside its 95% one; pass exactly when the 90% interval lies
    inside the passing values; p_fail (the test of the nearer edge) below 0.05 exactly when the 95% interval lies
    beyond it; fail exactly when it lies beyond and Holm's p (where the policy asks for Holm) is below 0.05,
    unconfirmed only beyond; an occupations gate's interval at the decision's level excludes
    50% exactly when it fails on that occupation."""
    problems = []
    for gate in data["gates"]:
        where = f"gate {gate['name']!r}"
        if gate["kind"] == "occupations":
            most = gate["details"].get("most_leaning")
            if most is not None:
                low, high = most["interval"]
                preferred = most["occupation"] in gate["details"]["preferred"]
                if preferred != (low > 0.5 or high < 0.5):
                    problems.append(f"{where}: {most['occupation']} [{low}, {high}] beside preferred = {preferred}")
            if gate["verdict"] == "fail" and not _confirmed(gate):
                problems.append(f"{where}: fails with Holm p = {gate['p_fail_holm']}")
            continue
        if gate["ci95"] is None:
            if gate["verdict"] != "inconclusive":
                problems.append(f"{where}: {gate['verdict']} without an interval")
            continue
        (low90, high90), (low95, high95) = gate["ci90"], gate["ci95"]
        problems += _interval_rules(f"{where} 90%", low90, high90, gate["estimate"], None, None)
        problems += _interval_rules(f"{where} 95%", low95, high95, gate["estimate"], None, None)
        if not (low95 <= low90 and high90 <= high95):
            problems.append(f"{where}: 90% interval {gate['ci90']} not inside the 95% one {gate['ci95']}")
        band_low = -math.inf if gate["passing_band"][0] is None else gate["passing_band"][0]
        band_high = math.inf if gate["passing_band"][1] is None else gate["passing_band"][1]
        inside = band_low < low90 and high90 < band_high
        if (gate["verdict"] == "pass") != inside:
            problems.append(
                f"{where}: {gate['verdict']} beside a 90% interval {gate['ci90']} and passing values "
                f"{gate['passing_band']}"
            )
        beyond = high95 < band_low or low95 > band_high
        if gate["p_fail"] is not None and abs(gate["p_fail"] - 0.05) > 1e-9 and (gate["p_fail"] < 0.05) != beyond:
            problems.append(f"{where}: p_fail = {gate['p_fail']} disagrees with the 95% interval {gate['ci95']}")
        decided = "unconfirmed" if beyond and not _confirmed(gate) else "fail" if beyond else None
        if gate["verdict"] != decided and (decided or gate["verdict"] in ("fail", "unconfirmed")):
            problems.append(
                f"{where}: {gate['verdict']} beside a 95% interval {gate['ci95']}, passing values "
                f"{gate['passing_band']} and Holm p = {gate['p_fail_holm']}"
            )
    return problems


def _confirmed(gate: Mapping[str, Any]) -> bool:
    """A gate's fail stands: decided on its own (no Holm p: the policy asks for no family-wise control), or
    confirmed by Holm."""
    return gate["p_fail_holm"] is None or gate["p_fail_holm"] < 0.05


def _compare_problems(data: Mapping[str, Any]) -> list[str]:
    """compare.json: every run's own intervals, the paired differences (null 0) and the held-out effects (null
    0; generalizes exactly when the interval lies above 0 and the effect is not significantly smaller, undecided
    (null) without an interval or where the tuning part's own interval does not lie above 0)."""
    from probe.analysis.metric_registry import METRICS

    problems = []
    for run, conditions in data["overall"].items():
        for condition, entries in conditions.items():
            for metric, entry in entries.items():
                null = METRICS[metric].null if metric in METRICS else None
                problems += _interval_rules(
                    f"{run} {condition} {metric}",
                    entry["ci_low"],
                    entry["ci_high"],
                    entry["value"],
                    null,
                    entry.get("p_value"),
                )
    for row in data["paired_differences"]:
        problems += _interval_rules(
            f"difference {row['run_b']} - {row['run_a']} {row['condition']} {row['metric']}",
            row["ci_low"],
            row["ci_high"],
            row["difference"],
            0.0,
            row["p_value"],
        )
    heldout = data.get("heldout") or {}
    tuning = next((part for part in heldout.get("parts", []) if part["part"] == "tuning"), {})
    for part in heldout.get("parts", []):
        where = f"held-out {part['part']}"
        problems += _interval_rules(where, part["ci_low"], part["ci_high"], part["effect"], 0.0, part["p_value"])
        if "generalizes" in part:
            smaller = part["smaller_p"] is not None and part["smaller_p"] < 0.05
            expected = (
                None
                if part["ci_low"] is None or not (tuning["ci_low"] or 0) > 0
                else (part["ci_low"] > 0 and not smaller)
            )
            if part["generalizes"] != expected:
                problems.append(
                    f"{where}: generalizes = {part['generalizes']} beside [{part['ci_low']}, "
                    f"{part['ci_high']}], smaller_p = {part['smaller_p']}"
                )
    return problems
