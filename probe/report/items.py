"""The items behind the numbers: report.html's drill-down from a condition or an occupation to its stage-2 items.

Each (condition, occupation) gets a collapsible section (<details>, no script, no server) with the label
counts of all its items and, in full, the first ITEMS_SHOWN items: prompt, options, label, option scores and
the margin between the best and the second-best score. The cap keeps the paper preset's page small enough
to open (104,160 stage-2 items would be ~100 MB of prompts); `probe export` lists every item.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

ITEMS_SHOWN = 8  # per condition and occupation: two instances (a pair in both orders would be 8 items)

_ITEMS_SQL = """
SELECT i.condition, i.occupation, i.pair_id, i.name_order, i.qtype, i.subject, i.first_name, i.second_name,
       i.prompt, i.options_json, a.label, a.scores_json, a.error
FROM items i LEFT JOIN answers a USING (run_id, item_id)
WHERE i.run_id = ? AND i.stage = 2
QUALIFY row_number() OVER (PARTITION BY i.condition, i.occupation ORDER BY i.seq) <= ?
ORDER BY i.condition, i.occupation, i.seq
"""
_COUNTS_SQL = """
SELECT i.condition, i.occupation, i.qtype, coalesce(a.label, 'unanswered') AS label, count(*) AS n
FROM items i LEFT JOIN answers a USING (run_id, item_id)
WHERE i.run_id = ? AND i.stage = 2
GROUP BY ALL ORDER BY ALL
"""


def margin(scores: dict[str, float] | None) -> float | None:
    """Best minus second-best option score: how decided the answer was (None without two scores)."""
    if not scores or len(scores) < 2:
        return None
    best, second = sorted(scores.values(), reverse=True)[:2]
    return best - second


def drilldown(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    """[{condition, occupation, anchor, total, counts: {qtype: {label: n}}, items: [...]}] in report order."""
    sections: dict[tuple[str, str], dict[str, Any]] = {}
    for condition, occupation, qtype, label, n in con.execute(_COUNTS_SQL, [run_id]).fetchall():
        section = sections.setdefault(
            (condition, occupation),
            {
                "condition": condition,
                "occupation": occupation,
                "anchor": f"items-{condition}-{len(sections)}",
                "total": 0,
                "counts": {},
                "items": [],
            },
        )
        section["total"] += n
        section["counts"].setdefault(qtype, {})[label] = n
    for row in con.execute(_ITEMS_SQL, [run_id, ITEMS_SHOWN]).df().to_dict("records"):
        scores = json.loads(row["scores_json"]) if isinstance(row["scores_json"], str) else None
        options = json.loads(row["options_json"])
        sections[(row["condition"], row["occupation"])]["items"].append(
            {
                **{key: row[key] for key in ("pair_id", "name_order", "qtype", "prompt", "label")},
                "subject": row["subject"] if isinstance(row["subject"], str) else None,
                "names": f"{row['first_name']} / {row['second_name']}",
                "options": ", ".join(f"{option['text']} ({option['label']})" for option in options),
                "scores": ", ".join(f"{label} {score:.2f}" for label, score in scores.items()) if scores else "",
                "margin": margin(scores),
                "error": row["error"] if isinstance(row["error"], str) else None,
            }
        )
    return list(sections.values())
