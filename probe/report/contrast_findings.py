"""The report's occupation lists and robustness verdicts per contrast of a run over name sets (report.json
`groups.occupations`, `groups.robustness`; stored by analyze() in contrast_occupations and contrast_robustness,
probe/analysis/contrast_findings.py): the gender run's two sections, by the people's own categories."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import pandas as pd

from probe.analysis.contrast_findings import CONTRAST_KEYS, OCCUPATION_COLUMNS, ROBUSTNESS_TABLE_COLUMNS
from probe.report.data import order_index, records
from probe.report.formatting import fmt_pct, p_phrase

OCCUPATIONS_METHOD = (
    "per contrast and occupation, each name set leans to the category whose person it picked more often (its "
    "share of picks balanced over the two name orders; a set at 50% leans to neither); the exact sign test over "
    "the leaning sets, Benjamini-Hochberg over the contrast's occupations (q < 0.05: preferred)"
)
# a preferred occupation's columns in report.json
LISTED = [
    "occupation",
    "preferred",
    "sets_a",
    "sets_b",
    "lean_a",
    "ci_low",
    "ci_high",
    "ci_level",
    "p_value",
    "q_value",
]
ROBUSTNESS_MEANING = {
    "holds": "every wording's own test shows it, in the same direction",
    "depends": "the estimate moves with the wording",
    "some": "some wordings show it, and the wording does not move it significantly",
    "not_shown": "no wording shows it",
    "not_testable": "too few name sets",
    "stable": "the wording does not move it",
}


def _ordered(frame: pd.DataFrame, attributes: Sequence[str], columns: Sequence[str]) -> pd.DataFrame:
    """Rows in the file's attribute order, then by `columns`."""
    rank = frame["attribute"].map(lambda attribute: order_index(list(attributes), attribute))
    return frame.assign(_rank=rank).sort_values(["_rank", *columns], ignore_index=True).drop(columns="_rank")


def occupation_lists(con: duckdb.DuckDBPyConnection, run_id: str, attributes: Sequence[str]) -> list[dict[str, Any]]:
    """Per condition and contrast: how many occupations had a leaning set (the BH family) and the preferred ones."""
    rows = con.execute(
        f"SELECT {', '.join(OCCUPATION_COLUMNS)} FROM contrast_occupations WHERE run_id = ?", [run_id]
    ).df()
    entries = []
    for (condition, attribute, a, b), family in _ordered(rows, attributes, ["condition", *CONTRAST_KEYS[1:]]).groupby(
        ["condition", *CONTRAST_KEYS], sort=False
    ):
        preferred = family[family["preferred"].notna()].sort_values(["q_value", "occupation"])
        entries.append(
            {
                "condition": condition,
                "attribute": attribute,
                "category_a": a,
                "category_b": b,
                "tested": int((family["sets"] > 0).sum()),
                "preferred": records(preferred[LISTED]),
            }
        )
    return entries


def listed_sentence(entries: Sequence[dict[str, Any]]) -> str | None:
    """The bottom line's occupations of a run over name sets (occupation_lists' entries): per condition, each
    contrast's listed occupations by the category they lean to, and how many contrasts list none."""
    sentences = []
    for condition in dict.fromkeys(entry["condition"] for entry in entries):
        own = [entry for entry in entries if entry["condition"] == condition]
        parts = []
        for entry in own:
            sides = [
                (entry[side], [row["occupation"] for row in entry["preferred"] if row["preferred"] == entry[side]])
                for side in ("category_a", "category_b")
            ]
            leaning = "; ".join(f"to {category}: {', '.join(names)}" for category, names in sides if names)
            if leaning:
                parts.append(f"{entry['category_a']} vs {entry['category_b']} ({entry['attribute']}), {leaning}")
        test = "sign test over name sets, Benjamini-Hochberg q < 0.05 within each contrast"
        if not parts:
            contrasts = f"{len(own)} contrast" + ("" if len(own) == 1 else "s")
            sentences.append(f"Occupations ({condition}): none listed in {contrasts} ({test}).")
            continue
        rest = f"; none in the other {len(own) - len(parts)} of {len(own)} contrasts" if len(parts) < len(own) else ""
        sentences.append(f"Occupations ({condition}) listed per contrast ({test}): {'; '.join(parts)}{rest}.")
    return " ".join(sentences) or None


def robustness_verdicts(con: duckdb.DuckDBPyConnection, run_id: str, attributes: Sequence[str]) -> list[dict[str, Any]]:
    """Per condition, contrast and metric of a run in several wordings: the verdict with each wording's estimate."""
    rows = con.execute(
        f"SELECT {', '.join(ROBUSTNESS_TABLE_COLUMNS)} FROM contrast_robustness WHERE run_id = ?", [run_id]
    ).df()
    rows = _ordered(rows, attributes, ["condition", *CONTRAST_KEYS[1:], "metric"])
    per_wording = rows[rows["scope"] == "wording"]
    entries = []
    for row in records(rows[rows["scope"] == "crossed"]):
        keys = ["condition", *CONTRAST_KEYS, "metric"]
        own = per_wording[(per_wording[keys] == pd.Series({key: row[key] for key in keys})).all(axis=1)]
        wordings = records(own.rename(columns={"key": "wording"})[["wording", "value", "ci_low", "ci_high", "p_value"]])
        entries.append(
            {
                **{key: row[key] for key in keys},
                **{key: row[key] for key in ("value", "sets", "wordings", "spread", "wording_p", "verdict")},
                "meaning": ROBUSTNESS_MEANING.get(row["verdict"], row["verdict"]),
                "per_wording": wordings,
                "text": "; ".join(wording_text(row["metric"], entry) for entry in wordings),
            }
        )
    return entries


def wording_text(metric: str, entry: dict[str, Any]) -> str:
    """One wording's estimate and its p: `paper 33.3% (p = 0.008)` (a grant gap in points)."""
    value = fmt_pct(entry["value"]) if metric == "preference" else f"{100 * entry['value']:+.1f} pts"
    tested = "" if entry["p_value"] is None else f" ({p_phrase(entry['p_value'])})"
    return f"{entry['wording']} {value}{tested}"
