"""report.json: the document of one run, assembled from the stored analysis and the findings; report.html and
report.md are rendered from it alone (probe/report/render.py)."""

from __future__ import annotations

from typing import Any

import duckdb
import pandas as pd

from probe.analysis.metric_registry import BIAS, CONSISTENCY
from probe.common.vocabulary import CONDITIONS, DECISIONS_BACKEND
from probe.report.bottom_line import bottom_line
from probe.report.contrasts import group_bottom_line, groups_sections
from probe.report.data import (
    SCHEMA_VERSION,
    decision_margins,
    item_counts,
    metrics_frame,
    order_index,
    overall_entries,
    preference_frame,
    preferred_lists,
    records,
    run_record,
    run_settings,
    stage1_rates,
)
from probe.report.decisions import decisions_summary
from probe.report.findings import headline, occupation_testability, testability
from probe.report.formatting import in_sets, set_words
from probe.report.impact import adverse_impact_section
from probe.report.items import drilldown
from probe.report.robustness import robustness_in_sets, robustness_section, wording_claims
from probe.report.set_testability import set_testability
from probe.report.workforce import workforce_section

PAIR_FIGURE_METRICS = (CONSISTENCY, BIAS)  # per name pair (a run over name sets: per set), for the figure


def _tests(
    findings: list[dict[str, Any]],
    occupations: dict[str, Any],
    settings: dict[str, Any],
    metrics: pd.DataFrame,
    over_sets: bool,
) -> list[dict[str, Any]]:
    """The headline's tests with their testability; a run over name sets' count its sets (the correlation's too)."""
    if not over_sets:
        return testability(findings, occupations, settings)
    sets = metrics.loc[metrics["scope"] == "set", "key"].nunique()
    tests = testability(findings, occupations, settings | {"pairs": sets})
    return [test | {key: set_words(test[key]) for key in ("test", "sentence")} for test in tests]


def summary(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
    """The JSON summary of one run (keys documented in the module docstring)."""
    if run_record(con, run_id)["backend"] == DECISIONS_BACKEND:
        return decisions_summary(con, run_id)
    metrics = metrics_frame(con, run_id)
    correlations = con.execute(
        "SELECT condition, across, x, y, method, r, ci_low, ci_high, p_value, p_adjusted, n FROM correlations "
        "WHERE run_id = ?",
        [run_id],
    ).df()
    correlations = correlations.assign(rank=correlations["condition"].map(lambda c: order_index(CONDITIONS, c)))
    correlations = correlations.sort_values(["rank", "across", "x", "y", "method"]).drop(columns="rank")
    regression = con.execute(
        "SELECT condition, term, coef, odds_ratio, ci_low, ci_high, p_value, n, n_clusters, note "
        "FROM regression WHERE run_id = ? ORDER BY condition, term",
        [run_id],
    ).df()
    overall = overall_entries(metrics)
    correlation_records = records(correlations)
    settings = run_settings(con, run_id)
    preferences = preference_frame(con, run_id)
    groups = groups_sections(con, run_id)  # a run over name sets: its findings by the people's own categories
    robustness = robustness_section(con, run_id, overall)  # None unless the run asked more than one wording
    robustness = robustness if groups is None else robustness_in_sets(robustness)
    claims = wording_claims(robustness)
    findings = headline(overall, correlation_records, claims, over_name_sets=groups is not None)
    findings = findings if groups is None else [in_sets(finding) for finding in findings]
    document = {
        "schema_version": SCHEMA_VERSION,
        "run": run_record(con, run_id),
        "settings": settings,
        "counts": item_counts(con, run_id),
        "decision_margins": decision_margins(con, run_id),
        "headline": findings,
        "testability": [
            *_tests(findings, occupation_testability(preferences), settings, metrics, groups is not None),
            *set_testability(con, run_id),
        ],
        "overall": overall,
        "preferred_occupations": preferred_lists(preferences),
        "correlations": correlation_records,
        "regression": {
            condition: records(rows.drop(columns="condition"))
            for condition, rows in regression.groupby("condition", sort=False)
        },
        "stage1_rates": records(stage1_rates(metrics)),
        "occupation_preference": records(preferences),
        "pair_values": records(  # the units the consistency-bias correlation is across: a run over name sets' sets
            metrics[
                (metrics["scope"] == ("pair" if groups is None else "set"))
                & metrics["metric"].isin(PAIR_FIGURE_METRICS)
            ]
        ),
        "items": drilldown(con, run_id),
        "robustness": robustness,
        "workforce": workforce_section(con, run_id),  # None for a run analysed before the comparison existed
        "adverse_impact": adverse_impact_section(con, run_id),  # None for a run analysed before the table
    }
    if groups:
        document |= groups
        return {"schema_version": SCHEMA_VERSION, "bottom_line": group_bottom_line(document), **document}
    return {"schema_version": SCHEMA_VERSION, "bottom_line": bottom_line(con, run_id, document, claims), **document}
