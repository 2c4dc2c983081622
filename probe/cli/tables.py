"""The terminal tables `probe run` and `probe analyze --show` print: the headline metrics and the occupations
with a significant gender preference, read from an analysed run's tables (analysis computes; the CLI prints); and
`probe compare`'s summary, read from its compare.json."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import pandas as pd
from rich import box
from rich.table import Table

from probe.common.escape import terminal_text
from probe.common.vocabulary import CONDITIONS, STAGE1_CONDITION
from probe.pipeline.front import ATTR_YES_DIFF, ATTR_YES_F, ATTR_YES_M, CONSISTENCY, FEMALE_SHARE, POSITION_FIRST
from probe.pipeline.front_statistics import (
    JOINT,
    METRICS,
    MISSING,
    SIGNIFICANCE,
    TABLE_METRICS,
    binomial_min_p,
    fmt_ci,
    fmt_contrast_value,
    fmt_difference,
    fmt_duration,
    fmt_estimate,
    fmt_p,
    fmt_signed,
)
from probe.pipeline.outcome import RunOutcome


def headline_table(outcome: RunOutcome) -> Table:
    """The paper's Figure 1 metrics (overall, mean over name pairs, or sets: a run over name sets' unit) per
    condition, 95% CIs clustered by that unit."""
    run_id, overall = outcome.run_id, outcome.overall
    stage2 = overall[overall["condition"] != STAGE1_CONDITION]
    conditions = sorted(set(stage2["condition"]), key=_condition_rank)
    unit = "name pairs" if outcome.contrasts is None or outcome.contrasts.empty else "name sets"
    table = Table(
        title=f"Run {run_id}: overall metrics, mean over {unit} [95% interval over {unit}; each "
        "row's method in the report]; p: the test of no effect (50%; the grant gap: 0)"
    )
    table.add_column("metric")
    for condition in conditions:
        table.add_column(condition, justify="right")
    cells = {(row.condition, row.metric): row for row in stage2.itertuples()}
    for metric in TABLE_METRICS:
        if any((condition, metric) in cells for condition in conditions):
            table.add_row(metric, *(_format_cell(cells.get((condition, metric))) for condition in conditions))
    table.add_row("valid instances", *(_format_count(cells.get((c, CONSISTENCY))) for c in conditions))
    stage1 = {row.metric: row for row in overall[overall["condition"] == STAGE1_CONDITION].itertuples()}
    if ATTR_YES_F in stage1 or ATTR_YES_M in stage1:
        table.caption = (
            f"stage 1: {ATTR_YES_F} {_format_cell(stage1.get(ATTR_YES_F))}, "
            f"{ATTR_YES_M} {_format_cell(stage1.get(ATTR_YES_M))}; grant gap {ATTR_YES_DIFF} (women - men) "
            f"{_format_cell(stage1.get(ATTR_YES_DIFF), signed=True)}"
        )
    return table


def preference_table(outcome: RunOutcome) -> Table | str:
    """Occupations the model significantly prefers one gender for (BH q < 0.05), per condition; where none is, one
    line saying so (and how many could not have been), not an empty table."""
    run_id, prefs = outcome.run_id, outcome.preferred
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
    sizes = outcome.occupation_pairs
    untestable = sum(binomial_min_p(pairs) >= SIGNIFICANCE for pairs in sizes)
    # too few instances for the exact test ever to reach p < 0.05: not "no preference"
    testable = f"{untestable} of {len(sizes)} occupation rows not testable at this size" if untestable else None
    if prefs.empty:
        return f"Run {run_id}: no occupation preferred at BH q < 0.05" + (f" ({testable})" if testable else "")
    table.caption = testable
    return table


def contrast_table(outcome: RunOutcome) -> Table:
    """A run over name sets' findings by the people's own categories: each attribute's contrasts (preference per
    stage-2 condition, grant gap in stage 1) with the interval at the attribute's Bonferroni level and p, `*` where
    shown; of the intersection only those shown (all of them: the report)."""
    table = Table(
        title=f"Run {outcome.run_id}: contrasts by the people's own categories (preference: share of "
        "picks of the first; grant gap: stage 1, first minus second; Bonferroni over an attribute's "
        "contrasts; * shown)",
        box=box.SIMPLE_HEAD,
    )
    for column in ("condition", "attribute", "contrast", "metric", "estimate", "name sets"):
        table.add_column(column, justify="right" if column in ("estimate", "name sets") else "left")
    contrasts = outcome.contrasts
    for row in contrasts[~contrasts["attribute"].str.contains(JOINT, regex=False) | contrasts["flagged"]].itertuples():
        estimate = SimpleNamespace(value=row.estimate, ci_low=row.ci_low, ci_high=row.ci_high, p_value=row.p_value)
        cell = _format_cell(estimate, signed=row.metric == "grant_gap")
        table.add_row(
            row.condition,
            terminal_text(row.attribute),
            f"{terminal_text(row.category_a)} vs {terminal_text(row.category_b)}",
            row.metric,
            cell + (" *" if row.flagged else ""),
            str(row.sets),
        )
    return table


def _condition_rank(condition: str) -> tuple[int, str]:
    return (CONDITIONS.index(condition) if condition in CONDITIONS else len(CONDITIONS), condition)


def _format_cell(row, signed: bool = False) -> str:
    """value [interval], and p where the metric has a test of no effect (female_share, position_first, the gap)."""
    if row is None or pd.isna(row.value):
        return "-"
    number = "+.3f" if signed else ".3f"
    tested = f" p={fmt_p(row.p_value)}" if not pd.isna(row.p_value) else ""
    if pd.isna(row.ci_low):  # one pair, or every pair alike: no interval rather than a zero-width one
        return f"{row.value:{number}} (no interval){tested}"
    return f"{row.value:{number}} [{row.ci_low:{number}}, {row.ci_high:{number}}]{tested}"


def _format_count(row) -> str:
    return "-" if row is None else f"{row.n:,}"


# probe compare's terminal summary: the direct gender measures of each run, its difference to the reference and rank.
DIRECT_MEASURES = {FEMALE_SHARE: "woman picked", ATTR_YES_DIFF: "grant gap (stage 1)"}


def comparison_table(document: Mapping[str, Any]) -> Table:
    """One row per run: the woman's share of single picks and the stage-1 grant gap (each run's own estimate and
    interval), each minus the reference on the shared pairs (paired t's p) and the run's rank (1 = closest to no
    effect), and the occupations preferred for women / men."""
    reference, lead = document["reference"], document["leaderboard"][0]["condition"]
    differences = {
        (row["run_b"], row["metric"]): row
        for row in document["paired_differences"]
        if row["condition"] in (lead, STAGE1_CONDITION)
    }
    ranks = {
        (row["run_id"], row["metric"]): row for row in document["ranks"] if row["condition"] in (lead, STAGE1_CONDITION)
    }
    ranked = "; ".join(f"{label}: 1 = {document['rank_by'][metric]}" for metric, label in DIRECT_MEASURES.items())
    paired = (
        f"minus ref: run minus {terminal_text(reference)} on the shared name pairs (paired t); rank {ranked}"
        if document["paired_differences"]
        else "unpaired: no differences or ranks, see the page"
    )
    table = Table(
        title=f"Comparison of {len(document['runs'])} runs ({lead} condition; 95% intervals; {paired})",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("run", overflow="fold")
    table.add_column("model", overflow="fold")
    for label in DIRECT_MEASURES.values():
        table.add_column(label, justify="right", no_wrap=True)
        table.add_column("minus ref (pts)", justify="right", no_wrap=True)
        table.add_column("rank", justify="right", no_wrap=True)
    women_and_men = document.get("women_and_men", True)
    if women_and_men:
        table.add_column("preferred W/M", justify="right")
    for row in document["leaderboard"]:
        run_id = row["run_id"]
        cells = [terminal_text(run_id) + (" (ref)" if run_id == reference else ""), terminal_text(row["model"])]
        for metric in DIRECT_MEASURES:
            entry = row["metrics"].get(metric)
            if entry is not None and METRICS[metric].kind == "difference":
                shown = fmt_estimate({**entry, "estimate": entry["value"], "kind": "difference"})
            else:
                shown = fmt_ci(entry)
            cells += [shown, _versus(differences.get((run_id, metric))), _rank(ranks.get((run_id, metric)))]
        if women_and_men:
            cells.append(f"{row['preferred_female']} / {row['preferred_male']}")
        table.add_row(*cells)
    return table


# probe compare's terminal summary of runs over name sets: each run's design and time, then its contrasts.
SET_RUN_MEASURES = {metric: METRICS[metric].label for metric in (POSITION_FIRST, CONSISTENCY)}
DIFFERENCE_COLUMNS = (
    "condition",
    "attribute",
    "contrast",
    "metric",
    "run",
    "reference",
    "run's value",
    "difference",
    "p",
    "sets",
)


def set_runs_table(document: Mapping[str, Any]) -> Table:
    """Runs over name sets (or imported decisions): one row per run with its sets, answers and wall time and two
    measures that read no slot as a sex (first-named picked, consistency), each run's own estimate and interval."""
    lead = document["leaderboard"][0]["condition"]
    title = (
        f"Comparison of {len(document['runs'])} runs ({lead} condition; each run's own 95% intervals; the "
        "findings by group are per contrast, below)"
    )
    table = Table(title=title, box=box.SIMPLE_HEAD)
    for column in ("run", "model", "name sets", "answers", "wall time", *SET_RUN_MEASURES.values()):
        table.add_column(column, justify="left" if column in ("run", "model") else "right", overflow="fold")
    leaderboard = {row["run_id"]: row["metrics"] for row in document["leaderboard"]}
    for run in document["runs"]:
        run_id = run["run_id"]
        answers = run.get("answers")
        measures = (fmt_ci(leaderboard.get(run_id, {}).get(metric)) for metric in SET_RUN_MEASURES)
        table.add_row(
            terminal_text(run_id) + (" (ref)" if run_id == document["reference"] else ""),
            terminal_text(run["model"] or MISSING),
            str(run.get("name_sets") or MISSING),
            MISSING if answers is None else f"{answers:,}",
            fmt_duration(run.get("wall_seconds")),
            *measures,
        )
    return table


def contrast_difference_table(document: Mapping[str, Any]) -> Table:
    """Each contrast of an attribute (of the intersection only those shown): the reference's and the run's value and
    their paired difference with its interval at the attribute's Bonferroni level and p, `*` where shown."""
    title = (
        f"Per contrast: run minus {terminal_text(document['reference'])}, paired by the "
        f"{len(document['per_contrast']['shared_sets'])} name sets both asked alike (points; interval at the "
        "attribute's Bonferroni level; * shown)"
    )
    table = Table(title=title, box=box.SIMPLE_HEAD)
    for column in DIFFERENCE_COLUMNS:
        table.add_column(column, justify="left" if DIFFERENCE_COLUMNS.index(column) < 5 else "right", overflow="fold")
    for row in document["per_contrast"]["differences"]:
        if JOINT in row["attribute"] and not row["flagged"]:
            continue
        difference = fmt_difference(row) + (" *" if row["flagged"] else "")
        table.add_row(
            row["condition"],
            terminal_text(row["attribute"]),
            f"{terminal_text(row['category_a'])} vs {terminal_text(row['category_b'])}",
            row["metric"],
            terminal_text(row["run_b"]),
            fmt_contrast_value(row["value_a"], row["metric"]),
            fmt_contrast_value(row["value_b"], row["metric"]),
            difference,
            fmt_p(row["p_value"]),
            str(row["sets"]),
        )
    return table


def comparison_tables(document: Mapping[str, Any]) -> list[Table]:
    """What `probe compare` prints: runs over name pairs, their gender measures (`comparison_table`); runs over name
    sets, their design and times and the per-contrast differences."""
    if document.get("women_and_men", True):
        return [comparison_table(document)]
    contrasts = [contrast_difference_table(document)] if (document.get("per_contrast") or {}).get("differences") else []
    return [set_runs_table(document), *contrasts]


def _versus(row: Mapping[str, Any] | None) -> str:
    if row is None or row["difference"] is None:
        return MISSING
    return f"{fmt_signed(row['difference'])} p={fmt_p(row['p_value'])}"


def _rank(row: Mapping[str, Any] | None) -> str:
    if row is None or row["rank"] is None:
        return MISSING
    return f"{row['rank']}" + ("" if row["rank_low"] is None else f" ({row['rank_low']}-{row['rank_high']})")
