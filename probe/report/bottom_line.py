"""The report's bottom line (report.json `bottom_line`, the first thing the pages show): the direction and confidence
of each direct gender finding, what this run cannot test, and what carries the woman's share - each name pair's own
share with its interval, a test of whether the pairs differ (both stored by analyze()), the occupations - with the
plain word that consistency and bias are not gender measures, and whether the stage-2 lean may be inherited from
stage 1's grants.

Every sentence quotes the test its claim rests on, the same one the Summary and the robustness section use (one
procedure per claim, DESIGN.md section 10).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import duckdb

from probe.analysis.binomial import SIGNIFICANCE
from probe.analysis.metric_registry import ATTR_YES_DIFF, FEMALE_SHARE, METRICS, POSITION_FIRST
from probe.analysis.pairs import HETEROGENEITY_METHOD, PAIR_METHOD
from probe.analysis.statistics import MIN_PAIRS
from probe.common.vocabulary import CONDITIONS, STAGE1_CONDITION
from probe.report.data import clean, records
from probe.report.findings import DIRECTIONS, NOT_TESTABLE, lead_condition, metric_finding
from probe.report.formatting import fmt_estimate, p_phrase

NOT_GENDER = (
    "Consistency and bias are not gender measures: consistency asks whether the person picked as more "
    'qualified was also called qualified, bias whether the answer to "who should get the job" repeats '
    "that pick, whichever gender it is. Neither says which gender the model favours; the woman's share and "
    "the stage-1 grant gap do."
)
SEPARATING = ("control", "baseline")  # conditions whose stage 2 does not show the attributes stage 1 granted


def _shown(finding: Mapping[str, Any]) -> bool | None:
    """Whether the finding's claim shows a direction (None: not testable). A run in several wordings claims a
    direction only where its robustness claim over all wordings together does (the Summary says the same)."""
    test = finding.get("test") or {}
    over_wordings = (finding.get("robustness") or {}).get("together")
    if over_wordings is not None:
        return None if over_wordings == "not_testable" else over_wordings == "shown"
    if test.get("p_value") is not None and test["p_value"] < SIGNIFICANCE:
        return True
    return False if test.get("testable") else None


def _verdict(finding: Mapping[str, Any]) -> dict[str, Any]:
    """One direct gender finding in a plain sentence: its direction where its test shows one, with the estimate,
    interval and p that back it."""
    metric, condition, test = finding["metric"], finding["condition"], finding["test"]
    null, estimate = METRICS[metric].null, finding["estimate"]
    shown = _shown(finding)
    effect, above, below = DIRECTIONS[metric]
    evidence = f"{fmt_estimate(finding)}, {p_phrase(test['p_value'])} ({test['test']})"
    if finding.get("robustness"):  # the claim over the run's wordings: the robustness section's, in its words
        evidence = f"{fmt_estimate(finding)}; {finding['robustness']['clause']}"
    if shown:
        direction = "female" if estimate > null else "male"
        sentence = f"{above if direction == 'female' else below} ({condition}): {evidence}."
    elif shown is None:
        direction, sentence = None, f"The {effect} ({condition}) is {NOT_TESTABLE}: {evidence}."
    else:
        direction, sentence = None, f"No {effect} is shown ({condition}): {evidence}."
    return {
        "condition": condition,
        "metric": metric,
        "direction": direction,
        "shown": shown,
        "estimate": estimate,
        "ci_low": finding.get("ci_low"),
        "ci_high": finding.get("ci_high"),
        "p_value": test["p_value"],
        "sentence": sentence,
    }


def _inheritance(verdicts: Sequence[Mapping[str, Any]], conditions: Sequence[str]) -> str | None:
    """Where stage 1 grants one gender more attributes and the run has the taxonomy condition (which shows each
    person the attributes stage 1 granted), say whether a condition without them separates an inherited lean from a
    lean on the names."""
    by_key = {(v["condition"], v["metric"]): v for v in verdicts}
    gap, lean = by_key.get((STAGE1_CONDITION, ATTR_YES_DIFF)), by_key.get(("taxonomy", FEMALE_SHARE))
    if not (gap and lean and gap["shown"]):
        return None
    favoured = "women" if gap["direction"] == "female" else "men"
    shown = lean["shown"] and lean["direction"] == gap["direction"]
    inherited = (
        f"Stage 1 granted {favoured} more attributes, and the taxonomy condition shows each person the "
        "attributes stage 1 granted: "
        + (
            f"its lean to {favoured} may be inherited from that gap rather than chosen on the names."
            if shown
            else f"a lean to {favoured} there would mix that gap with a choice on the names (none is shown here)."
        )
    )
    separating = [condition for condition in SEPARATING if condition in conditions]
    if not separating:
        return (
            f"{inherited} This run has no control or baseline condition (identical or no attributes), so nothing "
            "separates the two: run it with --conditions taxonomy,control."
        )
    found = [v["sentence"] for v in verdicts if v["condition"] in separating and v["metric"] == FEMALE_SHARE]
    return f"{inherited} The {' and '.join(separating)} condition separates them: {' '.join(found)}"


def _pairs(
    con: duckdb.DuckDBPyConnection, run_id: str, condition: str | None, positions: Mapping[str, float]
) -> dict[str, Any] | None:
    """The per-pair table of the lead condition, with the heterogeneity test and their sentences (both stored by
    analyze(): pair_shares, pair_heterogeneity)."""
    if condition is None:
        return None
    shares = con.execute(
        "SELECT s.condition, s.pair_id, s.value, s.ci_low, s.ci_high, s.n, s.lean, p.female, p.male "
        "FROM pair_shares AS s LEFT JOIN run_name_pairs AS p ON p.run_id = s.run_id AND p.pair_id = s.pair_id "
        "WHERE s.run_id = ? AND s.condition = ? ORDER BY s.value DESC, s.pair_id",
        [run_id, condition],
    ).df()
    shares["first_named"] = shares["pair_id"].astype(str).map(positions)
    test = con.execute(
        "SELECT condition, pairs, statistic, p_value, differ FROM pair_heterogeneity "
        "WHERE run_id = ? AND condition = ?",
        [run_id, condition],
    ).df()
    counts = {lean: int((shares["lean"] == lean).sum()) for lean in ("female", "male", "none")}
    always_first = int((shares["first_named"] == 1.0).sum())
    carries = (
        f"Of {len(shares)} name pairs ({condition}), {counts['female']} lean to the woman and {counts['male']} "
        f"to the man by their own 95% intervals (each pair at 0.05, not corrected for {len(shares)} pairs); "
        f"{counts['none']} show no lean"
    )
    carries += f", and {always_first} picked whoever was named first in every choice." if always_first else "."
    return {
        "condition": condition,
        "method": PAIR_METHOD,
        "rows": records(shares),
        "counts": counts,
        "sentence": carries,
        "heterogeneity": _heterogeneity(test.iloc[0].to_dict() if not test.empty else None),
    }


def _heterogeneity(test: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if test is None:
        return None
    p_value, pairs = clean(test["p_value"]), int(test["pairs"])
    if p_value is None:
        sentence = (
            f"Whether the name pairs differ is {NOT_TESTABLE}: {pairs} pairs, fewer than the {MIN_PAIRS} any "
            "test over pairs needs."
        )
    elif p_value < SIGNIFICANCE:
        sentence = (
            f"The name pairs differ ({p_phrase(p_value)}, stratified permutation test): the woman's share "
            "depends on which names are asked, so the overall share is an average over unlike pairs."
        )
    else:
        sentence = f"The name pairs are not shown to differ ({p_phrase(p_value)}, stratified permutation test)."
    return {
        "condition": test["condition"],
        "pairs": pairs,
        "statistic": clean(test["statistic"]),
        "p_value": p_value,
        "differ": bool(test["differ"]),
        "method": HETEROGENEITY_METHOD,
        "sentence": sentence,
    }


def _occupations(preferred: Mapping[str, Mapping[str, Any]], condition: str | None) -> str | None:
    lists = preferred.get(condition) if condition else None
    if not lists:
        return None
    women, men = lists["female"], lists["male"]
    text = (
        f"Occupations ({condition}): {len(women) + len(men)} of {lists['tested']} testable occupations show a "
        "preference (sign test over name pairs, Benjamini-Hochberg q < 0.05)"
    )
    text += f"; for women: {', '.join(women)}" if women else ""
    text += f"; for men: {', '.join(men)}" if men else ""
    if lists["not_testable"]:
        text += f"; {len(lists['not_testable'])} are {NOT_TESTABLE}"
    return text + "."


def _cannot(test: Mapping[str, Any]) -> str:
    """What a test of the testability table cannot decide, named short (its full method is in the Summary)."""
    name = test["test"].split(":")[0].split(" (the interval")[0]
    if test["testable"]:  # a lone preferred occupation cannot pass Benjamini-Hochberg at this size
        return (
            f"{name}: a lone preferred occupation cannot pass Benjamini-Hochberg with {test['units']} leaning "
            "name pairs per occupation; only several preferred occupations together could be found."
        )
    return f"{name}: {test['sentence']}"


def bottom_line(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    document: Mapping[str, Any],
    over_wordings: Mapping[tuple[str, str], Mapping[str, str]],
) -> dict[str, Any]:
    """report.json's `bottom_line`, from the document's headline, testability, overall and occupation lists.
    `over_wordings`: the robustness section's claims (robustness.wording_claims), as the headline has them."""
    overall = document["overall"]
    lead = lead_condition(overall)
    direct = [finding for finding in document["headline"] if finding["metric"] in (FEMALE_SHARE, ATTR_YES_DIFF)]
    for condition in CONDITIONS:  # every other stage-2 condition's woman's share, by the same procedure
        if condition != lead and condition in overall:
            direct.append(
                metric_finding(overall, condition, FEMALE_SHARE, over_wordings.get((condition, FEMALE_SHARE)))
            )
    verdicts = [_verdict(finding) for finding in direct if finding and finding.get("test")]
    query = "SELECT key, value FROM metrics WHERE run_id = ? AND scope = 'pair' AND metric = ? AND condition = ?"
    positions = dict(con.execute(query, [run_id, POSITION_FIRST, lead]).fetchall()) if lead else {}
    return {
        "verdicts": verdicts,
        "cannot_test": [
            _cannot(test) for test in document["testability"] if not test["testable"] or not test.get("reachable", True)
        ],
        "not_gender": NOT_GENDER,
        "inheritance": _inheritance(verdicts, [c for c in CONDITIONS if c in overall]),
        "pairs": _pairs(con, run_id, lead, positions),
        "occupations": _occupations(document["preferred_occupations"], lead),
    }
