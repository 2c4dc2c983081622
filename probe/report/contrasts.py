"""The report of a run over name sets (DESIGN.md section 11): its findings per contrast of two categories, read by
the people's own categories (contrast_metrics, category_metrics; probe/analysis/contrasts.py), never by the slots
a contest is stored in.

report.json gains `contrasts` (one row per condition x contrast x metric), `ranking` (per condition and attribute,
each category's strength with its interval and method) and `groups` (the attributes, the title's words, the K x K
preference matrices, stage-1 grant rates per category with their ratios, the methods); its bottom line states each
direct finding per attribute (preference per stage-2 condition, the stage-1 grant gap) and the adverse-impact
findings. A run over name pairs has none of these keys: its report stays as it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import duckdb
import pandas as pd

from probe.analysis.contrasts import CATEGORY_COLUMNS, CONTRAST_COLUMNS, CONTRAST_METHOD, DIRECT, RANKING_METHOD
from probe.analysis.impact import IMPACT_METHOD
from probe.analysis.metric_registry import BIAS, CONSISTENCY, POSITION_FIRST
from probe.common.vocabulary import CONDITIONS, STAGE1_CONDITION
from probe.report.contrast_findings import OCCUPATIONS_METHOD, listed_sentence, occupation_lists, robustness_verdicts
from probe.report.data import order_index, records
from probe.report.formatting import fmt_pct, p_phrase
from probe.report.impact import category_noun
from probe.taxonomy.name_sets import JOINT

NOT_SLOTS = (
    "This run asked name sets: every finding by a group above reads the people's own categories (a "
    "question's first and second person are positions, not a woman and a man). Consistency and bias "
    "are not group measures."
)


def attributes_of(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    """The run's attributes in the file's order, then their intersection where the file has several."""
    found = [
        row[0]
        for row in con.execute("SELECT DISTINCT attribute FROM run_contests WHERE run_id = ?", [run_id]).fetchall()
    ]
    joint = max(found, key=lambda attribute: attribute.count(JOINT), default=None)
    if joint is None or JOINT not in joint:
        return sorted(found)
    return [*joint.split(JOINT), joint]


def _sorted(frame: pd.DataFrame, attributes: Sequence[str], columns: Sequence[str]) -> pd.DataFrame:
    """Rows in report order: the stage-2 conditions as reported, then stage 1; attributes in the file's order."""
    ranks = {
        "condition": lambda c: len(CONDITIONS) if c == STAGE1_CONDITION else order_index(CONDITIONS, c),
        "attribute": lambda a: order_index(list(attributes), a),
    }
    return frame.sort_values(
        list(columns),
        key=lambda column: column.map(ranks[column.name]) if column.name in ranks else column,
        ignore_index=True,
    )


def groups_sections(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any] | None:
    """report.json's `contrasts`, `ranking` and `groups` of a run over name sets; None for a run over name pairs (or
    one analysed before contrasts existed)."""
    contrasts = con.execute(
        f"SELECT {', '.join(CONTRAST_COLUMNS)} FROM contrast_metrics WHERE run_id = ?", [run_id]
    ).df()
    if contrasts.empty:
        return None
    attributes = attributes_of(con, run_id)
    categories = con.execute(
        f"SELECT {', '.join(CATEGORY_COLUMNS)} FROM category_metrics WHERE run_id = ?", [run_id]
    ).df()
    contrasts = _sorted(contrasts, attributes, ["condition", "attribute", "metric", "category_a", "category_b"])
    categories = _sorted(categories, attributes, ["condition", "attribute", "metric", "rank", "category"])
    ranking = _ranking(categories)
    return {
        "contrasts": records(contrasts),
        "ranking": ranking,
        "groups": {
            "attributes": attributes,
            "title": " and ".join(attributes[:-1] if len(attributes) > 1 else attributes),
            "method": CONTRAST_METHOD,
            "ranking_method": RANKING_METHOD,
            "grant_ratio_method": IMPACT_METHOD,
            "matrices": _matrices(contrasts, ranking),
            "grant_rates": _grant_rates(categories),
            "further": _further(contrasts),
            "occupations": occupation_lists(con, run_id, attributes),
            "occupations_method": OCCUPATIONS_METHOD,
            "robustness": robustness_verdicts(con, run_id, attributes),
        },
    }


# The further findings' columns (contrast_metrics metrics beside the direct ones), in the report's order
FURTHER = (POSITION_FIRST, CONSISTENCY, BIAS, "prefer_gap", "bias_gap", "switch_gap")
FURTHER_SHOWN = 6  # an attribute with more contrasts than this shows only those with a finding flagged


def _further(contrasts: pd.DataFrame) -> list[dict[str, Any]]:
    """Per stage-2 condition and contrast its position, consistency, bias and gaps, as text (`*` = shown,
    Bonferroni): every contrast of an attribute with at most FURTHER_SHOWN, else those with a flagged one."""
    rows = []
    further = contrasts[contrasts["metric"].isin(FURTHER)]
    for (condition, attribute), family in further.groupby(["condition", "attribute"], sort=False):
        pairs = family.groupby(["category_a", "category_b"], sort=False)
        for (a, b), cells in pairs:
            if pairs.ngroups > FURTHER_SHOWN and not cells["flagged"].any():
                continue
            texts = {row["metric"]: _further_text(row) for row in cells.to_dict("records")}
            rows.append(
                {
                    "condition": condition,
                    "attribute": attribute,
                    "category_a": a,
                    "category_b": b,
                    "cells": [texts.get(metric) for metric in FURTHER],
                }
            )
    return rows


def _further_text(row: Mapping[str, Any]) -> str:
    """A share in % or a gap in points, with its interval and `*` where its (Bonferroni) test shows it."""
    share = not row["metric"].endswith("_gap")
    value = fmt_pct(row["estimate"]) if share else f"{100 * row['estimate']:+.1f} pts"
    if pd.isna(row["ci_low"]):
        return f"{value} (no interval)"
    low, high = ((fmt_pct(row[side]) if share else f"{100 * row[side]:+.1f}") for side in ("ci_low", "ci_high"))
    return f"{value} [{low}, {high}]{' *' if row['flagged'] else ''}"


# Each question's ranked metric in category_metrics and its preference in contrast_metrics
QUESTIONS = {"pairs": ("strength", "preference"), "kway": ("kway_strength", "kway_preference")}


def _ranking(categories: pd.DataFrame) -> list[dict[str, Any]]:
    """Per condition, attribute and question (the contests' Bradley-Terry fit, the K-way choice's Luce fit) the
    categories by strength, with the win share beside the contests' (a run analysed before the fit: the win share
    alone, as it was ranked then)."""
    wins = categories[categories["metric"] == "win_share"].set_index(["condition", "attribute", "category"])
    fitted = categories["metric"].isin([metric for metric, _ in QUESTIONS.values()])
    ranked = categories[fitted] if fitted.any() else categories[categories["metric"] == "win_share"]
    question = {metric: name for name, (metric, _) in QUESTIONS.items()} | {"win_share": "pairs"}
    entries = []
    for (condition, attribute, metric), group in ranked.groupby(["condition", "attribute", "metric"], sort=False):
        shares = wins["estimate"].reindex(
            list(zip(group["condition"], group["attribute"], group["category"], strict=True))
        )
        rows = group.rename(columns={"estimate": "strength"}).assign(
            win_share=shares.to_numpy() if metric == "strength" else None
        )
        entries.append(
            {
                "condition": condition,
                "attribute": attribute,
                "question": question[metric],
                "method": RANKING_METHOD,
                "categories": records(
                    rows[
                        [
                            "category",
                            "rank",
                            "strength",
                            "ci_low",
                            "ci_high",
                            "p_value",
                            "sets",
                            "n",
                            "method",
                            "win_share",
                        ]
                    ]
                ),
            }
        )
    return entries


def _matrices(contrasts: pd.DataFrame, ranking: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per stage-2 condition, attribute and question the K x K preference matrix: cell (row, column) = the share of
    picks of the row's category in contests (or of the two's top picks in the K-way choice) between the two, with its
    interval (Bonferroni over the attribute's contrasts); categories in ranking order."""
    matrices = []
    order = {
        (entry["condition"], entry["attribute"], entry["question"]): [row["category"] for row in entry["categories"]]
        for entry in ranking
    }
    for question, (_, metric) in QUESTIONS.items():
        preference = contrasts[contrasts["metric"] == metric]
        for (condition, attribute), group in preference.groupby(["condition", "attribute"], sort=False):
            ranked = order.get((condition, attribute, question)) or sorted(
                set(group["category_a"]) | set(group["category_b"])
            )
            cells = {}
            for row in group.to_dict("records"):
                cells[row["category_a"], row["category_b"]] = row
                cells[row["category_b"], row["category_a"]] = row | {
                    "estimate": 1 - row["estimate"],
                    "ci_low": 1 - row["ci_high"],
                    "ci_high": 1 - row["ci_low"],
                }
            matrices.append(
                {
                    "condition": condition,
                    "attribute": attribute,
                    "metric": metric,
                    "categories": ranked,
                    "rows": [[_cell(cells.get((a, b))) if a != b else None for b in ranked] for a in ranked],
                }
            )
    return matrices


def _cell(row: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A matrix cell: its text, `45.0% [40.1, 49.9]` (a flagged contrast marked `*`; `45.0% (1 sets, no interval)`
    without an interval), and its heatmap shade (report.html): blue where the row's people are picked more, orange
    where less, as strong as the share's distance from 50%."""
    if row is None or pd.isna(row["estimate"]):
        return None
    share = float(row["estimate"])
    if pd.isna(row["ci_low"]):
        text = f"{fmt_pct(share)} ({row['sets']} sets, no interval)"
    else:
        mark = " *" if row["flagged"] else ""
        text = f"{fmt_pct(share)} [{100 * row['ci_low']:.1f}, {100 * row['ci_high']:.1f}]{mark}"
    red, green, blue = (49, 130, 189) if share >= 0.5 else (230, 85, 13)
    return {"text": text, "share": share, "shade": f"rgba({red}, {green}, {blue}, {min(abs(share - 0.5) * 2, 1):.2f})"}


def _grant_rates(categories: pd.DataFrame) -> list[dict[str, Any]]:
    """Stage-1 grant rate per category with its ratio to the highest rate (interval and test as the adverse-impact
    table's)."""
    rates = categories[categories["metric"] == "grant_rate"].set_index(["condition", "attribute", "category"])
    ratios = categories[categories["metric"] == "grant_ratio"].set_index(["condition", "attribute", "category"])
    joined = rates[["estimate", "ci_low", "ci_high", "sets", "n"]].join(
        ratios[["estimate", "ci_low", "ci_high", "p_value"]].add_prefix("ratio_"), how="left"
    )
    return records(joined.reset_index().rename(columns={"estimate": "rate"}))


def group_bottom_line(document: Mapping[str, Any]) -> dict[str, Any]:
    """report.json's `bottom_line` of a run over name sets: per attribute each direct finding (its contrasts'
    preference per stage-2 condition, stage 1's grant gap), then the overall adverse-impact findings (per occupation:
    the section), and the occupations listed per contrast; no slot-based verdict, no table of pairs read as a woman
    and a man."""
    contrasts = pd.DataFrame(document["contrasts"], columns=CONTRAST_COLUMNS)
    contrasts = contrasts[contrasts["metric"].isin(DIRECT)]
    verdicts, cannot = [], []
    for (condition, attribute, metric), family in contrasts.groupby(["condition", "attribute", "metric"], sort=False):
        shown = family[family["flagged"]]
        verdicts += [_verdict(row) for row in (shown if len(family) > 1 else family).to_dict("records")]
        if len(family) > 1 and shown.empty:
            effect = "difference in grant rates between" if metric == "grant_gap" else "preference between"
            verdicts.append(
                {
                    "condition": condition,
                    "attribute": attribute,
                    "metric": metric,
                    "shown": False,
                    "direction": None,
                    "sentence": f"No {effect} any two {attribute} categories is shown "
                    f"({condition}; {len(family)} contrasts, Bonferroni over them).",
                }
            )
        untestable = family[family["ci_low"].isna()]
        if len(untestable):
            cannot.append(
                f"{metric} between {attribute} categories ({condition}): {len(untestable)} of {len(family)} "
                "contrasts have too few name sets for an interval at their Bonferroni level (at most "
                f"{int(untestable['sets'].max())} sets each)."
            )
    overall = [row for row in (document["adverse_impact"] or {}).get("rows", []) if row["scope"] == "overall"]
    verdicts += [
        {
            "condition": row["condition"],
            "attribute": row["attribute"],
            "metric": "impact_ratio",
            "shown": True,
            "direction": None,
            "sentence": row["finding"],
        }
        for row in overall
        if row["finding"]
    ]
    return {
        "verdicts": verdicts,
        "cannot_test": cannot,
        "not_gender": NOT_SLOTS,
        "inheritance": None,
        "pairs": None,
        "occupations": listed_sentence((document.get("groups") or {}).get("occupations", [])),
    }


def _verdict(row: Mapping[str, Any]) -> dict[str, Any]:
    """One contrast's finding in a plain sentence, a direction only where its (Bonferroni) test shows one."""
    a, b = (category_noun(row["attribute"], row[side]) for side in ("category_a", "category_b"))
    preference = row["metric"] != "grant_gap"
    where = f"{row['condition']}, K-way choice" if row["metric"] == "kway_preference" else row["condition"]
    null = 0.5 if preference else 0.0
    estimated = not pd.isna(row["estimate"])  # none where no contest of it has a usable answer
    if preference or not estimated:
        value = fmt_pct(row["estimate"])
        interval = "" if pd.isna(row["ci_low"]) else f" [{fmt_pct(row['ci_low'])}, {fmt_pct(row['ci_high'])}]"
    else:
        value = f"{100 * row['estimate']:+.1f} points"
        interval = "" if pd.isna(row["ci_low"]) else f" [{100 * row['ci_low']:+.1f}, {100 * row['ci_high']:+.1f}]"
    adjusted = " (Bonferroni)" if row["comparisons"] > 1 else ""
    evidence = f"{value}{interval}, {p_phrase(row['p_value'])}{adjusted}, over {row['sets']} name sets"
    above = estimated and row["estimate"] > null
    if not estimated:
        what = "The preference between" if preference else "The grant gap between"
        sentence = f"{what} {a} and {b} ({where}) has no estimate: no contest of it has a usable answer."
    elif row["flagged"]:
        winner, loser = (a, b) if above else (b, a)
        claim = (
            f"{winner} are picked over {loser}"
            if preference
            else f"Stage 1 granted {winner} more attributes than {loser}"
        )
        sentence = f"{claim} ({where}): {evidence}."
    elif pd.isna(row["ci_low"]):
        what = "The preference between" if preference else "The grant gap between"
        sentence = f"{what} {a} and {b} ({where}) is not testable at this size: {evidence}."
    else:
        what = "preference between" if preference else "difference in grant rates between"
        sentence = f"No {what} {a} and {b} is shown ({where}): {evidence}."
    sentence = sentence[0].upper() + sentence[1:]
    return {
        "condition": row["condition"],
        "attribute": row["attribute"],
        "metric": row["metric"],
        "category_a": row["category_a"],
        "category_b": row["category_b"],
        "shown": bool(row["flagged"]),
        "direction": (row["category_a"] if above else row["category_b"]) if row["flagged"] else None,
        "estimate": row["estimate"],
        "ci_low": row["ci_low"],
        "ci_high": row["ci_high"],
        "p_value": row["p_value"],
        "sentence": sentence,
    }
