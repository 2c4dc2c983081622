"""The report's robustness section, for a run asked in more than one wording (probe run --wordings): per headline
metric the estimate under each wording, the spread between them, the crossed pair x wording interval and the
verdict of probe/analysis/robustness.py in a sentence (its figure: figures.figure_robustness)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb

from probe.analysis.metric_registry import METRICS
from probe.analysis.robustness import METHODS, STAGE1_METRICS, STAGE2_METRICS
from probe.common.vocabulary import CONDITIONS, STAGE1_CONDITION
from probe.report.data import clean, order_index
from probe.report.findings import DIRECTIONS
from probe.report.formatting import p_phrase

ORDER = ("female_share", "position_first", *STAGE1_METRICS, *STAGE2_METRICS[2:])  # direct measures first


def _sentence(row: Mapping[str, Any], wordings: int) -> str:
    """The verdict in words, with the spread between wordings and the wording test."""
    metric, condition = row["metric"], row["condition"]
    spread = f"it moves {100 * row['spread']:.1f} points between wordings (wording test {p_phrase(row['wording_p'])})"
    where = f"{METRICS[metric].label} ({condition})"
    if METRICS[metric].null is None:  # no direction to hold: only whether the value moves with the wording
        return f"{where}: {'stable across wordings' if row['verdict'] == 'stable' else 'depends on wording'}; {spread}."
    if row["verdict"] == "holds":
        direction = DIRECTIONS[metric][1 if row["value"] > METRICS[metric].null else 2]
        return f"{where}: holds under every wording. {direction} under each of the {wordings}; {spread}."
    if row["verdict"] == "depends":
        return f"{where}: depends on wording. No direction holds under every wording; {spread}."
    return f"{where}: not shown under any of the {wordings} wordings (nor over them all); {spread}."


def robustness_section(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any] | None:
    """report.json's `robustness`: None for a run in one wording (no robustness rows)."""
    rows = con.execute("SELECT * EXCLUDE (run_id) FROM robustness WHERE run_id = ?", [run_id]).df()
    if rows.empty:
        return None
    wordings = list(dict.fromkeys(rows.loc[rows["scope"] == "wording", "key"]))
    crossed = rows[rows["scope"] == "crossed"]
    ranks = [(order_index((STAGE1_CONDITION, *CONDITIONS), condition), order_index(ORDER, metric))
             for condition, metric in zip(crossed["condition"], crossed["metric"], strict=True)]  # fmt: skip
    crossed = crossed.assign(rank=ranks).sort_values("rank")
    findings = []
    for row in crossed.to_dict("records"):
        kind = METRICS[row["metric"]].kind
        per_wording = rows[(rows["scope"] == "wording") & (rows["condition"] == row["condition"])
                           & (rows["metric"] == row["metric"])]  # fmt: skip
        findings.append({
            "condition": row["condition"], "metric": row["metric"], "label": METRICS[row["metric"]].label,
            "kind": kind, "finding": _sentence(row, len(wordings)), "verdict": row["verdict"],
            "estimate": clean(row["value"]), "ci_low": clean(row["ci_low"]), "ci_high": clean(row["ci_high"]),
            "p_value": clean(row["p_value"]), "null": METRICS[row["metric"]].null, "pairs": int(row["pairs"]),
            "spread": clean(row["spread"]), "wording_p": clean(row["wording_p"]),
            "pairs_only": {"estimate": clean(row["value"]), "ci_low": clean(row["pair_ci_low"]),
                           "ci_high": clean(row["pair_ci_high"]), "kind": kind},
            "per_wording": [{"wording": entry["key"], "estimate": clean(entry["value"]), "kind": kind,
                             "ci_low": clean(entry["ci_low"]), "ci_high": clean(entry["ci_high"]),
                             "p_value": clean(entry["p_value"])} for entry in per_wording.to_dict("records")],
        })  # fmt: skip
    return {"wordings": wordings, "method": METHODS["crossed"], "per_wording_method": METHODS["wording"],
            "pairs_only_method": METHODS["pairs"], "wording_test": METHODS["wording_test"],
            "findings": findings}  # fmt: skip
