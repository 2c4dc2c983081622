"""The report's robustness section, for a run asked in more than one wording (probe run --wordings): per headline
metric the estimate under each wording, the spread between them, the crossed pair x wording interval and the
verdict of probe/analysis/robustness.py in a sentence (its figure: figures.figure_robustness)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb

from probe.analysis.binomial import SIGNIFICANCE
from probe.analysis.metric_registry import FEMALE_SHARE, METRICS, POSITION_FIRST, WORDING_METRICS
from probe.analysis.robustness import METHODS, WORDING_DIFFERENCES, robustness_methods
from probe.analysis.statistics import MIN_PAIRS
from probe.common.vocabulary import CONDITIONS, STAGE1_CONDITION
from probe.report.data import clean, order_index
from probe.report.findings import DIRECTIONS, TESTS
from probe.report.formatting import fmt_p, p_phrase, set_words

ORDER = (FEMALE_SHARE, POSITION_FIRST, *WORDING_DIFFERENCES, *WORDING_METRICS[2:])  # direct measures first
TOGETHER_TEST = "the crossed pair x wording test"


def _lower(sentence: str) -> str:
    return sentence[0].lower() + sentence[1:]


def _direction(metric: str, value: float) -> str:
    return _lower(DIRECTIONS[metric][1 if value > METRICS[metric].null else 2])


def _names(entries: list[Mapping[str, Any]]) -> str:
    return ", ".join(str(entry["wording"]) for entry in entries)


def _wording_claim(row: Mapping[str, Any], quoted: bool) -> str:
    """What each wording's own test shows: a direction under a wording only where its test rejects (`quoted`: with
    the tests' p-values; the Summary quotes none but its own)."""
    per_wording = row["per_wording"]
    metric, count, verdict = row["metric"], len(per_wording), row["verdict"]
    if verdict == "not_testable":
        return (
            f"not testable wording by wording: {row['pairs']} name pairs were asked in every wording, fewer than "
            f"the {MIN_PAIRS} any test over name pairs needs"
        )
    moves = f"wording test {p_phrase(row['wording_p'])}" if quoted else "the wording test rejects"
    if METRICS[metric].null is None:  # no direction to hold: only whether the value moves with the wording
        return "stable across wordings" if verdict == "stable" else f"depends on wording ({moves})"
    shown = [entry for entry in per_wording if _rejects(entry["p_value"])]
    if verdict == "holds":
        worst = max(entry["p_value"] for entry in shown)
        bound = p_phrase(worst) if fmt_p(worst).startswith("<") else f"p <= {fmt_p(worst)}"  # not "p <= <0.001"
        tests = f"each wording's own test over name pairs, {bound}" if quoted else "each wording's test"
        direction = _direction(metric, shown[0]["estimate"])
        return f"holds under every wording: {direction} under each of the {count} ({tests})"
    lead = f"depends on wording ({moves})" if verdict == "depends" else ""
    if not shown:
        smallest = min((entry["p_value"] for entry in per_wording if entry["p_value"] is not None), default=None)
        tests = f"each wording's own test, smallest {p_phrase(smallest)}" if quoted else "each wording's own test"
        alone = f"not shown under any of the {count} wordings alone ({tests})"
        return f"{lead}; {alone}" if lead else alone
    by_direction: dict[str, list[Mapping[str, Any]]] = {}
    for entry in shown:
        by_direction.setdefault(_direction(metric, entry["estimate"]), []).append(entry)
    parts = [f"{direction} under {_names(entries)} alone" for direction, entries in by_direction.items()]
    rest = [entry for entry in per_wording if entry not in shown]
    alone = f"shown under {len(shown)} of the {count} wordings by their own tests: {'; '.join(parts)}" + (
        f"; not under {_names(rest)}" if rest else ""
    )
    return f"{lead}; {alone}" if lead else alone


def _rejects(p_value: float | None) -> bool:
    return p_value is not None and p_value < SIGNIFICANCE


def together(row: Mapping[str, Any], own: Mapping[str, Any] | None, quoted: bool = True) -> tuple[str, str]:
    """The claim over all wordings together, (verdict, clause): a direction only where both the run's own test over
    name pairs (the summary interval's, every wording pooled) and the crossed pair x wording test (the wordings a
    sample too) reject on the same side; so it can never contradict the summary. An intersection-union test: valid
    at 0.05, its p the larger of the two. `quoted`: with the crossed test's p (the Summary quotes only its own)."""
    metric, null = row["metric"], METRICS[row["metric"]].null
    own_p = (own or {}).get("p_value")
    if row["pairs"] < MIN_PAIRS:
        return "not_testable", (
            f"over all wordings together not testable: {TOGETHER_TEST} needs {MIN_PAIRS} name "
            f"pairs asked in every wording ({row['pairs']} here)"
        )
    if row.get("p_value") is None or own_p is None:
        return "not_testable", (
            f"over all wordings together not testable: no interval can be estimated "
            f"({TOGETHER_TEST}: no spread between pairs and wordings, or the run's own test: "
            "none)"
        )
    own_test = TESTS[own.get("method") or ("paired_t" if METRICS[metric].kind == "difference" else "score")]
    own_words = f"{own_test}, every wording pooled: {p_phrase(own_p)}"
    tests = (
        f"{own_words}; {TOGETHER_TEST}: {p_phrase(row['p_value'])}"
        if quoted
        else f"{own_words}, and {TOGETHER_TEST} {'rejects' if _rejects(row['p_value']) else 'does not reject'}"
    )
    same_side = (own["value"] - null) * (row["estimate"] - null) > 0
    if _rejects(own_p) and _rejects(row["p_value"]) and same_side:
        return "shown", f"over all wordings together {_direction(metric, own['value'])} ({tests}; both reject)"
    return "not_shown", f"over all wordings together no direction is shown ({tests}; a direction needs both)"


def _sentence(row: Mapping[str, Any], own: Mapping[str, Any] | None) -> str:
    """The verdict in words: what each wording's test shows, what the claim over all wordings together shows (metrics
    with a null), the spread between wordings."""
    spread = f"it moves {100 * row['spread']:.1f} points between wordings"
    return f"{METRICS[row['metric']].label} ({row['condition']}): {claim(row, own)}; {spread}."


def claim(row: Mapping[str, Any], own: Mapping[str, Any] | None, quoted: bool = True) -> str:
    """The claim under each wording and over them all; the Summary states it (`quoted` False: no p-value but that of
    its own test) in place of its own test's verdict."""
    words = _wording_claim(row, quoted)
    if METRICS[row["metric"]].null is None:
        return words
    return f"{words}; {together(row, own, quoted)[1]}"


def robustness_section(
    con: duckdb.DuckDBPyConnection, run_id: str, overall: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any] | None:
    """report.json's `robustness`: None for a run in one wording (no robustness rows). `overall`: the report's
    overall entries, whose tests the claims over all wordings together read."""
    rows = con.execute("SELECT * EXCLUDE (run_id) FROM robustness WHERE run_id = ?", [run_id]).df()
    if rows.empty:
        return None
    wordings = list(dict.fromkeys(rows.loc[rows["scope"] == "wording", "key"]))
    crossed = rows[rows["scope"] == "crossed"]
    ranks = [
        (order_index((STAGE1_CONDITION, *CONDITIONS), condition), order_index(ORDER, metric))
        for condition, metric in zip(crossed["condition"], crossed["metric"], strict=True)
    ]
    crossed = crossed.assign(rank=ranks).sort_values("rank")
    findings = []
    for row in crossed.to_dict("records"):
        kind, null = METRICS[row["metric"]].kind, METRICS[row["metric"]].null
        per_wording = rows[
            (rows["scope"] == "wording") & (rows["condition"] == row["condition"]) & (rows["metric"] == row["metric"])
        ]
        finding = {
            "condition": row["condition"],
            "metric": row["metric"],
            "label": METRICS[row["metric"]].label,
            "kind": kind,
            "verdict": row["verdict"],
            "estimate": clean(row["value"]),
            "ci_low": clean(row["ci_low"]),
            "ci_high": clean(row["ci_high"]),
            "p_value": clean(row["p_value"]),
            "null": null,
            "pairs": int(row["pairs"]),
            "spread": clean(row["spread"]),
            "wording_p": clean(row["wording_p"]),
            "pairs_only": {
                "estimate": clean(row["value"]),
                "ci_low": clean(row["pair_ci_low"]),
                "ci_high": clean(row["pair_ci_high"]),
                "kind": kind,
            },
            "per_wording": [
                {
                    "wording": entry["key"],
                    "estimate": clean(entry["value"]),
                    "kind": kind,
                    "ci_low": clean(entry["ci_low"]),
                    "ci_high": clean(entry["ci_high"]),
                    "p_value": clean(entry["p_value"]),
                }
                for entry in per_wording.to_dict("records")
            ],
        }
        own = overall.get(row["condition"], {}).get(row["metric"])
        finding["claim"] = claim(finding, own, quoted=False)
        finding["finding"] = _sentence(finding, own)
        if null is not None:
            finding["together"], finding["together_clause"] = together(finding, own)
        findings.append(finding)
    return {
        "wordings": wordings,
        "method": METHODS["crossed"],
        "per_wording_method": METHODS["wording"],
        "pairs_only_method": METHODS["pairs"],
        "wording_test": METHODS["wording_test"],
        "min_pairs": MIN_PAIRS,
        "findings": findings,
    }


def robustness_in_sets(section: dict[str, Any] | None) -> dict[str, Any] | None:
    """A run over name sets' section: its methods and sentences name sets where they named pairs (its rows' unit is
    the set: analysis/robustness.py `wording_rows`)."""
    if section is None:
        return None
    methods = robustness_methods("set")
    sentences = ("claim", "finding", "together_clause")
    findings = [
        finding | {key: set_words(finding[key]) for key in sentences if key in finding}
        for finding in section["findings"]
    ]
    return section | {
        "method": methods["crossed"],
        "per_wording_method": methods["wording"],
        "pairs_only_method": methods["pairs"],
        "wording_test": methods["wording_test"],
        "findings": findings,
    }


def wording_claims(section: Mapping[str, Any] | None) -> dict[tuple[str, str], dict[str, str]]:
    """{(condition, metric): {claim, verdict, together, clause}} for the metrics with a null: the Summary states the
    claim in place of its own test's verdict (one procedure per claim: the Summary and the robustness section say
    the same); `clause`: the claim over all wordings together alone, as the bottom line quotes it."""
    if section is None:
        return {}
    count = len(section["wordings"])
    return {
        (f["condition"], f["metric"]): {
            "claim": f"Over its {count} wordings: {f['claim']}.",
            "verdict": f["verdict"],
            "together": f["together"],
            "clause": f["together_clause"],
        }
        for f in section["findings"]
        if f["null"] is not None
    }
