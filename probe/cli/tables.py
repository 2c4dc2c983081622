"""The terminal tables `probe run` and `probe analyze --show` print: the headline metrics and the occupations
with a significant gender preference, read from an analysed run's tables (analysis computes; the CLI prints)."""

from __future__ import annotations

import duckdb
import pandas as pd
from rich.table import Table

from probe.analysis.binomial import SIGNIFICANCE, binomial_min_p
from probe.analysis.metric_registry import TABLE_METRICS
from probe.common.vocabulary import CONDITIONS, STAGE1_CONDITION


def headline_table(con: duckdb.DuckDBPyConnection, run_id: str) -> Table:
    """The paper's Figure 1 metrics (overall, mean over name pairs) per condition, 95% CIs clustered by pair."""
    overall = con.execute(
        "SELECT condition, metric, value, ci_low, ci_high, n FROM metrics WHERE run_id = ? AND scope = 'overall'",
        [run_id],
    ).df()
    stage2 = overall[overall["condition"] != STAGE1_CONDITION]
    conditions = sorted(set(stage2["condition"]), key=_condition_rank)
    table = Table(title=f"Run {run_id}: overall metrics, mean over name pairs [95% interval over name pairs; each "
                  "row's method in the report]")
    table.add_column("metric")
    for condition in conditions:
        table.add_column(condition, justify="right")
    cells = {(row.condition, row.metric): row for row in stage2.itertuples()}
    for metric in TABLE_METRICS:
        if any((condition, metric) in cells for condition in conditions):
            table.add_row(metric, *(_format_cell(cells.get((condition, metric))) for condition in conditions))
    table.add_row("valid instances", *(_format_count(cells.get((c, "consistency"))) for c in conditions))
    stage1 = {row.metric: row for row in overall[overall["condition"] == STAGE1_CONDITION].itertuples()}
    if "attr_yes_f" in stage1 or "attr_yes_m" in stage1:
        table.caption = (
            f"stage 1: attr_yes_f {_format_cell(stage1.get('attr_yes_f'))}, "
            f"attr_yes_m {_format_cell(stage1.get('attr_yes_m'))}"
        )
    return table


def preference_table(con: duckdb.DuckDBPyConnection, run_id: str) -> Table:
    """Occupations the model significantly prefers one gender for (BH q < 0.05), per condition."""
    prefs = con.execute(
        "SELECT condition, preferred, occupation, share_female, q_value FROM occupation_preference "
        "WHERE run_id = ? AND preferred <> 'none' ORDER BY condition, preferred, share_female",
        [run_id],
    ).df()
    table = Table(title=f"Run {run_id}: preferred gender per occupation (share S = female, BH q < 0.05)")
    for column in ("condition", "prefers women", "prefers men"):
        table.add_column(column)
    for condition in sorted(set(prefs["condition"]), key=_condition_rank):
        chosen = prefs[prefs["condition"] == condition]
        lists = [
            ", ".join(
                f"{row.occupation} ({row.share_female:.2f})"
                for row in chosen[chosen["preferred"] == gender].itertuples()
            )
            or "-"
            for gender in ("female", "male")
        ]
        table.add_row(condition, *lists)
    sizes = con.execute("SELECT pairs FROM occupation_preference WHERE run_id = ?", [run_id]).fetchall()
    untestable = sum(binomial_min_p(pairs) >= SIGNIFICANCE for (pairs,) in sizes)
    captions = ["no occupation with a significant preference"] if prefs.empty else []
    if untestable:  # too few instances for the exact test ever to reach p < 0.05: not "no preference"
        captions.append(f"{untestable} of {len(sizes)} occupation rows not testable at this size")
    table.caption = "; ".join(captions) or None
    return table


def _condition_rank(condition: str) -> tuple[int, str]:
    return (CONDITIONS.index(condition) if condition in CONDITIONS else len(CONDITIONS), condition)


def _format_cell(row) -> str:
    if row is None or pd.isna(row.value):
        return "-"
    if pd.isna(row.ci_low):  # one pair, or every pair alike: no interval rather than a zero-width one
        return f"{row.value:.3f} (no interval)"
    return f"{row.value:.3f} [{row.ci_low:.3f}, {row.ci_high:.3f}]"


def _format_count(row) -> str:
    return "-" if row is None else f"{row.n:,}"
