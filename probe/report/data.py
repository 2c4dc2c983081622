"""Reading a run for its report: the run card, settings, counts and the analysed tables as JSON."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from probe.analysis.binomial import SIGNIFICANCE, binomial_min_p
from probe.analysis.metric_registry import ATTR_YES_F, ATTR_YES_M
from probe.analysis.metrics import METRIC_COLUMNS
from probe.analysis.preference import PREFERENCE_COLUMNS
from probe.backends import BACKENDS
from probe.common.errors import UserError
from probe.common.redact import scrub
from probe.common.vocabulary import CATEGORIES, CONDITIONS, QTYPES, STAGE1_CONDITION

SCHEMA_VERSION = 1
_SECRET_NAME = re.compile(r"api_?key|secret|password|authorization|bearer|access_?token|^token$", re.I)


# ---------------------------------------------------------------------------------------------- reading


def _config(raw: str | None) -> dict[str, Any]:
    """The run's settings; a missing or unreadable config_json reads as empty (the card shows blanks)."""
    try:
        parsed = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _text(value: Any) -> str | None:
    """Render a setting for the run card: dicts as `k=v` lists, no secrets (keys named like credentials)."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items()) if not _is_secret_name(str(k)))
    return str(value)


def _is_secret_name(name: str) -> bool:
    return _SECRET_NAME.search(name) is not None


def _iso(value: Any) -> str | None:
    return value.isoformat(sep=" ", timespec="seconds") if isinstance(value, dt.datetime) else _text(value)


def run_row(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
    """The run's row as a dict (`SELECT *`, so a database from an older schema still reads)."""
    cursor = con.execute("SELECT * FROM runs WHERE run_id = ?", [run_id])
    row = cursor.fetchone()
    if row is None:
        recent = con.execute("SELECT run_id FROM runs ORDER BY created_at DESC LIMIT 5").fetchall()
        known = [r[0] for r in recent]
        hint = f" (recent runs: {', '.join(known)})" if known else " (the database has no runs)"
        raise UserError(f"run {run_id!r}: no such run{hint}")
    return dict(zip([column[0] for column in cursor.description], row, strict=True))


# Keys of the backend identity (runs.backend_json) that say which model, not how it decodes (with the keys the
# backend declares as naming its weights: BackendInfo.identity_keys).
_NOT_DECODING = frozenset({"backend", "model", "base_url"})


def _identity_keys(backend: str | None) -> tuple[str, ...]:
    """The identity keys the run's backend declares; none for a backend no longer registered."""
    return BACKENDS[backend].identity_keys if backend in BACKENDS else ()


def _model_identity(keys: Sequence[str], identity: Mapping[str, Any]) -> str | None:
    """The first declared key the identity holds: a file's sha256, a hub revision, or for a local folder each
    weight file's sha256 (`<sha256> (<file>)`, comma-separated)."""
    value = next((identity[key] for key in keys if identity.get(key)), None)
    if isinstance(value, Mapping):
        return ", ".join(f"{digest} ({name})" for name, digest in sorted(value.items()))
    return _text(value)


def run_record(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
    """The run card: what was asked of which model, how, and with which data (never any credential)."""
    run = run_row(con, run_id)
    config = _config(run.get("config_json"))
    identity = _config(run.get("backend_json"))
    # Stored with the run since the column exists; older runs show the database's current release, marked so.
    current = con.execute("SELECT release FROM onet_release ORDER BY imported_at DESC LIMIT 1").fetchone()
    release = run.get("onet_release") or (f"{current[0]} (the database's current release)" if current else None)
    keys = _identity_keys(run.get("backend"))
    not_decoding = _NOT_DECODING | set(keys)
    decoding = {k: v for k, v in identity.items() if k not in not_decoding and not isinstance(v, Mapping)}
    versions = _config(run.get("versions_json"))
    return {
        "run_id": run["run_id"],
        "model": run.get("model") or _text(config.get("model")),
        "model_identity": _model_identity(keys, identity),
        "backend": run.get("backend"),
        "decoding": scrub(_text(decoding)) if decoding else None,  # a system prompt is the user's text: keys out
        "onet_release": release,
        "template_hash": run.get("template_hash"),
        "package_version": run.get("package_version") or versions.get("taxonomy-probe"),
        "package_versions": _text(versions) if versions else None,
        "created_at": _iso(run.get("created_at")),
        "finished_at": _iso(run.get("finished_at")),
        "status": run.get("status"),
    }


def run_settings(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
    """Pairs, occupations, top-k, conditions, preset and system prompt of a run, from its items (the truth) and its
    config; the system prompt is the user's text, scrubbed of keys (it is shown and exported)."""
    config = _config(run_row(con, run_id).get("config_json"))
    pairs, occupations = con.execute(
        "SELECT count(DISTINCT pair_id), count(DISTINCT occupation) FROM items WHERE run_id = ?", [run_id]
    ).fetchone()
    conditions = [
        c
        for (c,) in con.execute(
            "SELECT DISTINCT condition FROM items WHERE run_id = ? AND stage = 2", [run_id]
        ).fetchall()
    ]
    return {
        "pairs": pairs,
        "occupations": occupations,
        "top_k": config.get("top_k"),
        "conditions": [c for c in CONDITIONS if c in conditions] + sorted(set(conditions) - set(CONDITIONS)),
        "preset": config.get("preset"),
        "system_prompt": scrub(config["system_prompt"]) if config.get("system_prompt") else None,
    }


def item_counts(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
    """Items per stage and answered/unknown per question type (unanswered items count as unknown)."""
    rows = con.execute(
        """
        SELECT i.qtype, count(*) AS items, count(a.item_id) AS answered,
               count(*) FILTER (WHERE a.label IS NULL OR a.label = 'unknown') AS unknown
        FROM items i LEFT JOIN answers a USING (run_id, item_id)
        WHERE i.run_id = ?
        GROUP BY i.qtype
        """,
        [run_id],
    ).fetchall()
    by_qtype = {
        qtype: {"items": items, "unknown": unknown, "unknown_rate": unknown / items if items else None}
        for qtype, items, _answered, unknown in sorted(rows, key=lambda r: order_index(QTYPES, r[0]))
    }
    stage1 = by_qtype.get("attr", {}).get("items", 0)
    return {
        "items_stage1": stage1,
        "items_stage2": sum(v["items"] for v in by_qtype.values()) - stage1,
        "answers": sum(r[2] for r in rows),
        "by_qtype": by_qtype,
    }


NEAR_TIE_NATS = 0.1  # a top-two score margin below this is a near-tie: the pick is not firm


def decision_margins(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, dict[str, Any]]:
    """Per question type: how labels were decided, and for score-decided ones the top-two score margin
    (best minus second-best option log-likelihood, nats): quartiles and the share of near-ties."""
    rows = con.execute(
        "SELECT i.qtype, a.decided_by, a.scores_json FROM items i JOIN answers a USING (run_id, item_id) "
        "WHERE i.run_id = ? AND a.error IS NULL",
        [run_id],
    ).fetchall()
    margins: dict[str, list[float]] = {}
    answered: dict[str, int] = {}
    for qtype, decided_by, scores_json in rows:
        answered[qtype] = answered.get(qtype, 0) + 1
        if decided_by == "score" and scores_json:
            top = sorted(json.loads(scores_json).values(), reverse=True)
            margins.setdefault(qtype, []).append(top[0] - top[1])
    view = {}
    for qtype in sorted(answered, key=lambda q: order_index(QTYPES, q)):
        values = np.array(margins.get(qtype, []))
        quartiles = np.quantile(values, [0.25, 0.5, 0.75]).tolist() if len(values) else [None] * 3
        view[qtype] = {
            "answers": answered[qtype],
            "scored": len(values),
            "margin_q1": quartiles[0],
            "margin_median": quartiles[1],
            "margin_q3": quartiles[2],
            "near_tie_share": float(np.mean(values < NEAR_TIE_NATS)) if len(values) else None,
        }
    return view


def order_index(sequence: Sequence[str], value: str) -> int:
    return sequence.index(value) if value in sequence else len(sequence)


STAGE1_RATE_COLUMNS = ("group", "gender", "value", "ci_low", "ci_high", "n")


def metrics_frame(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    return con.execute(f"SELECT {', '.join(METRIC_COLUMNS)} FROM metrics WHERE run_id = ?", [run_id]).df()


def preference_frame(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    return con.execute(
        f"SELECT {', '.join(PREFERENCE_COLUMNS)} FROM occupation_preference WHERE run_id = ? "
        "ORDER BY condition, occupation",
        [run_id],
    ).df()


def clean(value: Any) -> Any:
    """JSON-safe scalar: NaN and missing become null, numpy numbers become Python numbers."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return None if math.isnan(value) else float(value)
    return value


def overall_entries(metrics: pd.DataFrame) -> dict[str, dict[str, dict[str, Any]]]:
    overall = metrics[metrics["scope"] == "overall"]
    result: dict[str, dict[str, dict[str, Any]]] = {}
    for row in overall.itertuples():
        result.setdefault(row.condition, {})[row.metric] = {
            "value": clean(row.value),
            "ci_low": clean(row.ci_low),
            "ci_high": clean(row.ci_high),
            "n": clean(row.n),
            "pairs": clean(row.pairs),
            "p_value": clean(row.p_value),
            "min_p_value": clean(row.min_p_value),
            "mde": clean(row.mde),
            "method": clean(row.method),
        }
    return {c: result[c] for c in sorted(result, key=lambda c: order_index((*CONDITIONS, STAGE1_CONDITION), c))}


def preferred_lists(preferences: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per condition, the significantly preferred occupations per gender (strongest first), and the rest split
    into testable without a preference and not testable at this size."""
    lists = {}
    for condition in sorted(set(preferences["condition"]), key=lambda c: order_index(CONDITIONS, c)):
        rows = preferences[preferences["condition"] == condition]
        strength = (rows["lean_female"] - 0.5).abs()  # the tested quantity: the share of leaning pairs
        ranked = rows.assign(strength=-strength).sort_values(["strength", "occupation"])
        testable = ranked["pairs"].map(lambda pairs: binomial_min_p(int(pairs)) < SIGNIFICANCE)
        lists[condition] = {
            "female": ranked[ranked["preferred"] == "female"]["occupation"].tolist(),
            "male": ranked[ranked["preferred"] == "male"]["occupation"].tolist(),
            "tested": int(testable.sum()),
            # Too few leaning pairs for the sign test ever to reach p < 0.05: never reported as "no preference".
            "not_testable": sorted(ranked[~testable]["occupation"]),
            "no_preference": sorted(ranked[testable & (ranked["preferred"] == "none")]["occupation"]),
        }
    return lists


def stage1_rates(metrics: pd.DataFrame) -> pd.DataFrame:
    """Attribute-grant rates per gender: overall ('all') and per category where the analyzers give them."""
    rows = metrics[
        (metrics["condition"] == STAGE1_CONDITION)
        & metrics["metric"].isin([ATTR_YES_F, ATTR_YES_M])
        & metrics["scope"].isin(["overall", "category"])
    ].copy()
    rows["group"] = np.where(rows["scope"] == "overall", "all", rows["key"])
    rows["gender"] = rows["metric"].map({ATTR_YES_F: "female", ATTR_YES_M: "male"})
    rows["rank"] = rows["group"].map(lambda g: order_index(("all", *CATEGORIES), g))
    return rows.sort_values(["rank", "group"])[list(STAGE1_RATE_COLUMNS)]


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: clean(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]
