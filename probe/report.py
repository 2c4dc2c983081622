"""Fairness audit report of one run, and the comparison of several runs (models).

Everything here reads the tables the analyzers fill (`metrics`, `occupation_preference`, `correlations`,
`regression`) plus the run record; metric formulas live in `probe.metrics` only. A report is three files:
a self-contained HTML page (inline CSS and SVG figures, no network, no script needed), a Markdown summary
and a JSON summary for pipelines.

JSON summary of a report (`report.json`, `schema_version` 1; keys are stable, values may be null):

- `schema_version`: 1
- `run`: run_id, model, model_identity, backend, decoding, onet_release, template_hash,
  package_version, package_versions, created_at, finished_at, status
- `settings`: pairs (number of name pairs), occupations (number), top_k, conditions (list)
- `counts`: items_stage1, items_stage2, answers, by_qtype {qtype: {items, unknown, unknown_rate}}
- `overall`: {condition: {metric: {value, ci_low, ci_high, n}}}: every overall-scope metric
- `preferred_occupations`: {condition: {female: [occupation], male: [occupation], tested: int}}
- `correlations`: [{condition, across, x, y, method, r, p_value, n}]
- `regression`: {condition: [{term, coef, odds_ratio, ci_low, ci_high, p_value, n, n_clusters}]}

JSON summary of a comparison (`compare.json`, `schema_version` 1):

- `schema_version`, `runs` (the `run` objects above, each with top_k, pairs, occupations, conditions),
  `differences_in_settings` (list of sentences; empty when the runs share every setting)
- `shared`: pairs, occupations, conditions, instances (what the paired differences are computed on)
- `leaderboard`: [{run_id, model, condition, <metric>: value ..., preferred_female, preferred_male}], one
  row per run for the lead condition (taxonomy where shared), each run on all its own instances
- `overall`: {run_id: the `overall` object of that run's report}
- `paired_differences`: [{condition, metric, run_a, run_b, value_a, value_b, difference, ci_low, ci_high,
  n_instances, n_pairs}] (difference = run_b - run_a)
- `preference_agreement`: [{condition, run_a, run_b, occupations, same_preferred, kappa}]
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import jinja2
import markupsafe
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from probe.errors import UserError

SCHEMA_VERSION = 1
CONDITIONS = ("taxonomy", "baseline", "control")
FIGURE1_METRICS = ("consistency", "bias", "prefer_f", "prefer_m", "switch_f2m", "switch_m2f")
LEADERBOARD_METRICS = (*FIGURE1_METRICS, "neutral", "position_first", "unknown_rate")
QTYPES = ("attr", "binary", "single", "multiple")
_MISSING = "\u2013"  # an en dash where a value is missing
_MINUS = "\u2212"
GENDER_COLOURS = {"female": "#D55E00", "male": "#0072B2", "none": "#8C8C8C"}
CONDITION_COLOURS = {"taxonomy": "#332288", "baseline": "#999999", "control": "#44AA99"}
_TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
ONET_ATTRIBUTION = (
    "This includes information from the O*NET Database by the U.S. Department of Labor, Employment and "
    "Training Administration (USDOL/ETA). Used under the CC BY 4.0 license. O*NET\u00ae is a trademark of "
    "USDOL/ETA."
)
# Our own stylesheet, inlined (the page needs no other file) and marked safe: autoescape would mangle its quotes.
_STYLE = markupsafe.Markup((_TEMPLATE_DIR / "style.css").read_text(encoding="utf-8"))
_SECRET_NAME = re.compile(r"api_?key|secret|password|authorization|bearer|access_?token|^token$", re.I)
_TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(_TEMPLATE_DIR),
    autoescape=jinja2.select_autoescape(["html", "html.j2"]),  # every user string escaped
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


@dataclass(frozen=True)
class ReportFiles:
    html: Path
    markdown: Path
    json: Path


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


def _require_run(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
    """The run's row as a dict (`SELECT *`, so a database from an older schema still reads)."""
    cursor = con.execute("SELECT * FROM runs WHERE run_id = ?", [run_id])
    row = cursor.fetchone()
    if row is None:
        recent = con.execute("SELECT run_id FROM runs ORDER BY created_at DESC LIMIT 5").fetchall()
        known = [r[0] for r in recent]
        hint = f" (recent runs: {', '.join(known)})" if known else " (the database has no runs)"
        raise UserError(f"run {run_id!r}: no such run{hint}")
    return dict(zip([column[0] for column in cursor.description], row, strict=True))


def ensure_analysed(con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
    """Analyse the run first when it has answers but no metrics; returns True when it did.

    A report of an unanalysed run would be empty, and `probe analyze` is deterministic, so running it here
    saves the user a step without changing what the report says.
    """
    _require_run(con, run_id)
    if con.execute("SELECT count(*) FROM metrics WHERE run_id = ?", [run_id]).fetchone()[0]:
        return False
    if not con.execute("SELECT count(*) FROM answers WHERE run_id = ?", [run_id]).fetchone()[0]:
        raise UserError(f"run {run_id!r}: has no answers yet; finish it with `probe run --run-id {run_id}`")
    from probe.metrics import analyze

    analyze(con, run_id)
    return True


# Keys of the backend identity (runs.backend_json) that name the model rather than how it decodes.
_IDENTITY_KEYS = ("gguf_sha256", "sha256", "model_sha256", "revision", "commit_hash")
_NOT_DECODING = frozenset({"backend", "model", "base_url", *_IDENTITY_KEYS})


def run_record(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
    """The run card: what was asked of which model, how, and with which data (never any credential)."""
    run = _require_run(con, run_id)
    config = _config(run.get("config_json"))
    identity = _config(run.get("backend_json"))
    release = con.execute("SELECT release FROM onet_release ORDER BY imported_at DESC LIMIT 1").fetchone()
    model_identity = next((identity[k] for k in _IDENTITY_KEYS if identity.get(k)), None)
    decoding = {k: v for k, v in identity.items() if k not in _NOT_DECODING and not isinstance(v, Mapping)}
    versions = _config(run.get("versions_json"))
    return {
        "run_id": run["run_id"],
        "model": run.get("model") or _text(config.get("model")),
        "model_identity": _text(model_identity),
        "backend": run.get("backend"),
        "decoding": _text(decoding) if decoding else None,
        "onet_release": release[0] if release else None,
        "template_hash": run.get("template_hash"),
        "package_version": run.get("package_version") or versions.get("taxonomy-probe"),
        "package_versions": _text(versions) if versions else None,
        "created_at": _iso(run.get("created_at")),
        "finished_at": _iso(run.get("finished_at")),
        "status": run.get("status"),
    }


def run_settings(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
    """Pairs, occupations, top-k and conditions of a run, from its items (the truth) and its config."""
    config = _config(_require_run(con, run_id).get("config_json"))
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
        for qtype, items, _answered, unknown in sorted(rows, key=lambda r: _order(QTYPES, r[0]))
    }
    stage1 = by_qtype.get("attr", {}).get("items", 0)
    return {
        "items_stage1": stage1,
        "items_stage2": sum(v["items"] for v in by_qtype.values()) - stage1,
        "answers": sum(r[2] for r in rows),
        "by_qtype": by_qtype,
    }


def _order(sequence: Sequence[str], value: str) -> int:
    return sequence.index(value) if value in sequence else len(sequence)


def metrics_frame(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    return con.execute(
        "SELECT condition, scope, key, metric, value, ci_low, ci_high, n FROM metrics WHERE run_id = ?",
        [run_id],
    ).df()


def preference_frame(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    return con.execute(
        "SELECT condition, occupation, n, share_female, ci_low, ci_high, p_value, q_value, preferred "
        "FROM occupation_preference WHERE run_id = ? ORDER BY condition, occupation",
        [run_id],
    ).df()


def _clean(value: Any) -> Any:
    """JSON-safe scalar: NaN and missing become null, numpy numbers become Python numbers."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return None if math.isnan(value) else float(value)
    return value


def _overall(metrics: pd.DataFrame) -> dict[str, dict[str, dict[str, Any]]]:
    overall = metrics[metrics["scope"] == "overall"]
    result: dict[str, dict[str, dict[str, Any]]] = {}
    for row in overall.itertuples():
        result.setdefault(row.condition, {})[row.metric] = {
            "value": _clean(row.value),
            "ci_low": _clean(row.ci_low),
            "ci_high": _clean(row.ci_high),
            "n": _clean(row.n),
        }
    return {c: result[c] for c in sorted(result, key=lambda c: _order((*CONDITIONS, "stage1"), c))}


def _preferred_lists(preferences: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per condition, the significantly preferred occupations per gender, strongest preference first."""
    lists = {}
    for condition in sorted(set(preferences["condition"]), key=lambda c: _order(CONDITIONS, c)):
        rows = preferences[preferences["condition"] == condition]
        strength = (rows["share_female"] - 0.5).abs()
        ranked = rows.assign(strength=-strength).sort_values(["strength", "occupation"])
        lists[condition] = {
            "female": ranked[ranked["preferred"] == "female"]["occupation"].tolist(),
            "male": ranked[ranked["preferred"] == "male"]["occupation"].tolist(),
            "tested": len(rows),
        }
    return lists


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: _clean(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]


def summary(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
    """The JSON summary of one run (keys documented in the module docstring)."""
    metrics = metrics_frame(con, run_id)
    correlations = con.execute(
        "SELECT condition, across, x, y, method, r, p_value, n FROM correlations WHERE run_id = ?", [run_id]
    ).df()
    correlations = correlations.assign(rank=correlations["condition"].map(lambda c: _order(CONDITIONS, c)))
    correlations = correlations.sort_values(["rank", "across", "x", "y", "method"]).drop(columns="rank")
    regression = con.execute(
        "SELECT condition, term, coef, odds_ratio, ci_low, ci_high, p_value, n, n_clusters, note "
        "FROM regression WHERE run_id = ? ORDER BY condition, term",
        [run_id],
    ).df()
    return {
        "schema_version": SCHEMA_VERSION,
        "run": run_record(con, run_id),
        "settings": run_settings(con, run_id),
        "counts": item_counts(con, run_id),
        "overall": _overall(metrics),
        "preferred_occupations": _preferred_lists(preference_frame(con, run_id)),
        "correlations": _records(correlations),
        "regression": {
            condition: _records(rows.drop(columns="condition"))
            for condition, rows in regression.groupby("condition", sort=False)
        },
    }


# ---------------------------------------------------------------------------------------------- figures


def _figure_uri(fig: Figure) -> str:
    """An SVG data URI: vector (prints sharply), isolated in an <img>, same bytes for the same input."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _new_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    fig.set_facecolor("white")
    return fig


def _style_axes(ax: Any) -> None:
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="y", color="#e5e5e5", linewidth=0.6)
    ax.set_axisbelow(True)


def _error_bars(values: Sequence[float], lows: Sequence[float], highs: Sequence[float]) -> np.ndarray:
    """Matplotlib's (2, n) error array from CI bounds; a missing bound draws no bar."""
    values_a, lows_a, highs_a = (np.asarray(x, dtype=float) for x in (values, lows, highs))
    below = np.nan_to_num(values_a - lows_a, nan=0.0).clip(min=0)
    above = np.nan_to_num(highs_a - values_a, nan=0.0).clip(min=0)
    return np.vstack([below, above])


def _metric_triplet(overall: Mapping[str, Mapping[str, Any]], condition: str, metric: str) -> tuple:
    entry = overall.get(condition, {}).get(metric) or {}
    return tuple(np.nan if entry.get(k) is None else entry[k] for k in ("value", "ci_low", "ci_high"))


def _grouped_bars(
    ax: Any,
    groups: Sequence[str],
    series: Mapping[str, Sequence[tuple[float, float, float]]],
    colours: Mapping[str, str],
) -> None:
    """Bars for each series within each group, with CI whiskers; shared by every bar figure."""
    width = 0.8 / max(len(series), 1)
    positions = np.arange(len(groups))
    for index, (name, triplets) in enumerate(series.items()):
        values, lows, highs = zip(*triplets, strict=True) if triplets else ((), (), ())
        offset = (index - (len(series) - 1) / 2) * width
        ax.bar(
            positions + offset,
            np.nan_to_num(np.asarray(values, dtype=float)),
            width * 0.92,
            yerr=_error_bars(values, lows, highs),
            capsize=2,
            color=colours.get(name, "#666666"),
            error_kw={"linewidth": 0.8, "ecolor": "#222222"},
            label=name,
        )
    ax.set_xticks(positions, groups)
    _style_axes(ax)


def figure_headline(overall: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The paper's Figure 1: six metrics per condition with 95% bootstrap CIs over name pairs."""
    conditions = [c for c in CONDITIONS if c in overall]
    if not conditions:
        return None
    fig = _new_figure(8.0, 3.4)
    ax = fig.add_subplot()
    series = {c: [_metric_triplet(overall, c, m) for m in FIGURE1_METRICS] for c in conditions}
    _grouped_bars(ax, FIGURE1_METRICS, series, CONDITION_COLOURS)
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of valid instances")
    ax.legend(frameon=False, ncols=len(conditions), loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return _figure_uri(fig)


def figure_occupations(preferences: pd.DataFrame) -> str | None:
    """Share choosing the female subject per occupation, one panel per condition, sorted by the first."""
    if preferences.empty:
        return None
    conditions = sorted(set(preferences["condition"]), key=lambda c: _order(CONDITIONS, c))
    order = (
        preferences[preferences["condition"] == conditions[0]]
        .sort_values(["share_female", "occupation"], na_position="first")["occupation"]
        .tolist()
    )
    order += sorted(set(preferences["occupation"]) - set(order))
    position = {occupation: index for index, occupation in enumerate(order)}
    fig = _new_figure(2.6 + 2.4 * len(conditions), 1.2 + 0.16 * len(order))
    axes = fig.subplots(1, len(conditions), sharey=True, squeeze=False)[0]
    for ax, condition in zip(axes, conditions, strict=True):
        rows = preferences[preferences["condition"] == condition]
        y = rows["occupation"].map(position).to_numpy()
        share = rows["share_female"].to_numpy(dtype=float)
        ax.hlines(
            y,
            rows["ci_low"].to_numpy(dtype=float),
            rows["ci_high"].to_numpy(dtype=float),
            color="#bbbbbb",
            linewidth=1.2,
        )
        for preferred, colour in GENDER_COLOURS.items():
            chosen = (rows["preferred"].fillna("none") == preferred).to_numpy()
            significant = preferred != "none"
            ax.scatter(
                share[chosen],
                y[chosen],
                s=22,
                zorder=3,
                linewidths=1.0,
                edgecolors=colour,
                facecolors=colour if significant else "white",
                label=f"preferred: {preferred}" if significant else "not significant",
            )
        ax.axvline(0.5, color="#444444", linewidth=0.8, linestyle="--")
        ax.set_xlim(0, 1)
        ax.set_title(condition, fontsize=10)
        ax.set_xlabel("share choosing the female subject")
        ax.spines[["top", "right"]].set_visible(False)
        ax.grid(axis="x", color="#e5e5e5", linewidth=0.6)
    axes[0].set_yticks(range(len(order)), order, fontsize=7.5)
    axes[0].set_ylim(-0.7, len(order) - 0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3, frameon=False, fontsize=8)
    return _figure_uri(fig)


def figure_stage1(stage1: pd.DataFrame) -> str | None:
    """Attribute-grant rate (stage 1 'yes') for female and male subjects, overall and per category."""
    if stage1.empty:
        return None
    groups = list(dict.fromkeys(stage1["group"]))
    series = {
        gender: [
            tuple(rows[rows["group"] == g][["value", "ci_low", "ci_high"]].to_numpy(dtype=float)[0])
            if (rows["group"] == g).any()
            else (np.nan, np.nan, np.nan)
            for g in groups
        ]
        for gender, rows in ((g, stage1[stage1["gender"] == g]) for g in ("female", "male"))
    }
    fig = _new_figure(6.0, 3.0)
    ax = fig.add_subplot()
    _grouped_bars(ax, groups, series, GENDER_COLOURS)
    ax.set_ylim(0, 1)
    ax.set_ylabel("share answered 'yes'")
    ax.legend(frameon=False, ncols=2, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return _figure_uri(fig)


def figure_pairs(metrics: pd.DataFrame, correlations: Sequence[Mapping[str, Any]]) -> str | None:
    """Consistency against bias per name pair, one colour per condition (the paper's correlation finding)."""
    pearson = {
        row["condition"]: row["r"]
        for row in correlations
        if (row["across"], row["x"], row["y"], row["method"]) == ("pair", "consistency", "bias", "pearson")
    }
    pairs = metrics[(metrics["scope"] == "pair") & metrics["metric"].isin(["consistency", "bias"])]
    wide = pairs.pivot_table(index=["condition", "key"], columns="metric", values="value").dropna()
    if wide.empty or not {"consistency", "bias"} <= set(wide.columns):
        return None
    fig = _new_figure(5.2, 3.8)
    ax = fig.add_subplot()
    for condition in sorted(set(wide.index.get_level_values(0)), key=lambda c: _order(CONDITIONS, c)):
        rows = wide.loc[condition]
        label = condition if pearson.get(condition) is None else f"{condition} (r = {pearson[condition]:.2f})"
        ax.scatter(
            rows["consistency"],
            rows["bias"],
            s=18,
            alpha=0.8,
            label=label,
            color=CONDITION_COLOURS.get(condition, "#666666"),
        )
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("consistency (per name pair)")
    ax.set_ylabel("bias (per name pair)")
    ax.legend(frameon=False)
    _style_axes(ax)
    return _figure_uri(fig)


def figure_sensitivity(overall: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Order consistency and first-position choice per condition, and the taxonomy-vs-baseline switch rate."""
    metrics = ("order_consistency", "position_first", "context_sensitivity")
    conditions = [c for c in CONDITIONS if any(m in overall.get(c, {}) for m in metrics)]
    if not conditions:
        return None
    fig = _new_figure(6.5, 3.0)
    ax = fig.add_subplot()
    series = {c: [_metric_triplet(overall, c, m) for m in metrics] for c in conditions}
    _grouped_bars(ax, metrics, series, CONDITION_COLOURS)
    ax.axhline(0.5, color="#444444", linewidth=0.8, linestyle="--")
    ax.set_ylim(0, 1)
    ax.set_ylabel("share")
    ax.legend(frameon=False, ncols=len(conditions), loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return _figure_uri(fig)


# ---------------------------------------------------------------------------------------------- formatting


def fmt_pct(value: Any, digits: int = 1) -> str:
    return _MISSING if _clean(value) is None else f"{100 * value:.{digits}f}%"


def fmt_num(value: Any, digits: int = 3) -> str:
    return _MISSING if _clean(value) is None else f"{value:.{digits}f}"


def fmt_p(value: Any) -> str:
    if _clean(value) is None:
        return _MISSING
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def fmt_ci(entry: Mapping[str, Any] | None) -> str:
    """`62.3% [55.1, 70.0]`: a share with its 95% interval, in percent."""
    if not entry or entry.get("value") is None:
        return _MISSING
    if entry.get("ci_low") is None or entry.get("ci_high") is None:
        return fmt_pct(entry["value"])
    return f"{fmt_pct(entry['value'])} [{100 * entry['ci_low']:.1f}, {100 * entry['ci_high']:.1f}]"


def fmt_signed(value: Any) -> str:
    """A difference of shares in percentage points with its sign: `+3.2`, `-1.0` (typeset minus)."""
    if _clean(value) is None:
        return _MISSING
    return f"{100 * value:+.1f}".replace("-", _MINUS)


def fmt_show(value: Any) -> str:
    return _MISSING if value in (None, "") else str(value)


_TEMPLATES.filters.update(pct=fmt_pct, num=fmt_num, pvalue=fmt_p, ci=fmt_ci, show=fmt_show, signed=fmt_signed)

LIMITATIONS = (
    "Gender is treated as binary and is signalled only by first names; names also carry ethnicity, age "
    "and class, which this design does not separate from gender.",
    "The taxonomy (O*NET) and the name lists are US-centred; occupations, their attributes and the "
    "names' gender associations differ across countries and languages.",
    "A model's answers depend on the prompt wording, the answer format and decoding; another template "
    "may give other numbers. The template hash on the run card identifies the wording used here.",
    "Small models answer many questions near chance or not at all; read high unknown rates and wide "
    "intervals as 'not measured', not as 'unbiased'.",
    "The questions are hypothetical hiring-style decisions between two people; they do not measure "
    "harms in any deployed use of the model.",
)


# ---------------------------------------------------------------------------------------------- report


def stage1_rates(metrics: pd.DataFrame) -> pd.DataFrame:
    """Attribute-grant rates per gender: overall ('all') and per category where the analyzers give them."""
    rows = metrics[
        (metrics["condition"] == "stage1")
        & metrics["metric"].isin(["attr_yes_f", "attr_yes_m"])
        & metrics["scope"].isin(["overall", "category"])
    ].copy()
    rows["group"] = np.where(rows["scope"] == "overall", "all", rows["key"])
    rows["gender"] = rows["metric"].map({"attr_yes_f": "female", "attr_yes_m": "male"})
    rows["rank"] = rows["group"].map(lambda g: _order(("all", "skill", "knowledge", "ability"), g))
    return rows.sort_values(["rank", "group"])[["group", "gender", "value", "ci_low", "ci_high", "n"]]


def _headline(overall: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    conditions = [c for c in overall if c in CONDITIONS]
    extra = ("consistency_strict", "bias_f", "bias_m", "neutral", "unknown_rate")
    rows = [(m, [fmt_ci(overall[c].get(m)) for c in conditions]) for m in (*FIGURE1_METRICS, *extra)]
    counts = [fmt_show((overall[c].get("consistency") or {}).get("n")) for c in conditions]
    rows.append(("valid instances", counts))
    return {"conditions": conditions, "rows": rows}


def _short_term(term: str) -> str:
    """The analyzers' `occupation:nurse` -> `nurse`, `overall` -> `all occupations`."""
    return "all occupations" if term == "overall" else term.removeprefix("occupation:")


def _regression_table(regression: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Terms as rows, conditions as columns; intercept first, then by the first condition's odds ratio."""
    conditions = sorted(regression, key=lambda c: _order(CONDITIONS, c))
    cells: dict[str, dict[str, dict[str, Any]]] = {}
    for condition in conditions:
        for row in regression[condition]:
            cells.setdefault(_short_term(row["term"]), {})[condition] = row

    def sort_key(term: str) -> tuple:
        first = cells[term].get(conditions[0], {}) if conditions else {}
        ratio = first.get("odds_ratio")
        return (term != "all occupations", ratio is None, -(ratio or 0.0), term)

    return {
        "conditions": conditions,
        "rows": [{"term": term, "cells": cells[term]} for term in sorted(cells, key=sort_key)],
    }


def _examples(names: Sequence[str], limit: int = 5) -> str:
    """` (a, b, c, ...)`: the first few names, for a sentence."""
    if not names:
        return ""
    return f" ({', '.join(names[:limit])}{', ...' if len(names) > limit else ''})"


def _p_phrase(p_value: float | None) -> str:
    return "p < 0.001" if p_value is not None and p_value < 0.001 else f"p = {fmt_p(p_value)}"


def _correlation_rows(correlations: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (condition, across, x, y) with Pearson and Spearman side by side."""
    rows: dict[tuple, dict[str, Any]] = {}
    for c in correlations:
        row = rows.setdefault(
            (c["condition"], c["across"], c["x"], c["y"]),
            {"condition": c["condition"], "across": c["across"], "x": c["x"], "y": c["y"], "n": c["n"]},
        )
        row[f"{c['method']}_r"], row[f"{c['method']}_p"] = c["r"], c["p_value"]
    return [
        {"pearson_r": None, "pearson_p": None, "spearman_r": None, "spearman_p": None, **row}
        for row in rows.values()
    ]


def _difference_rows(differences: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (compared run, metric) with the conditions as cells."""
    rows: dict[tuple, dict[str, Any]] = {}
    for d in differences:
        row = rows.setdefault(
            (d["run_b"], d["metric"]), {"run_b": d["run_b"], "metric": d["metric"], "cells": {}}
        )
        row["cells"][d["condition"]] = d
    return list(rows.values())


def findings(data: Mapping[str, Any]) -> list[str]:
    """A few plain sentences for readers who stop after the first screen; all numbers come from `data`."""
    overall, sentences = data["overall"], []
    lead = next((c for c in CONDITIONS if c in overall), None)
    if lead is not None:
        entry = overall[lead]
        sentences.append(
            f"{lead.capitalize()} condition: consistency {fmt_ci(entry.get('consistency'))}, "
            f"bias {fmt_ci(entry.get('bias'))}, prefer_f {fmt_ci(entry.get('prefer_f'))}, "
            f"prefer_m {fmt_ci(entry.get('prefer_m'))} (mean over name pairs, 95% CI; "
            f"{fmt_show((entry.get('consistency') or {}).get('n'))} valid instances)."
        )
    if "control" in overall:
        control = overall["control"]
        sentences.append(
            "Control condition (both people have identical attributes): bias "
            f"{fmt_ci(control.get('bias'))}, of which the woman was picked twice in "
            f"{fmt_pct((control.get('bias_f') or {}).get('value'))} and the man in "
            f"{fmt_pct((control.get('bias_m') or {}).get('value'))} of instances."
        )
    lists = data["preferred_occupations"].get(lead)
    if lists:
        women, men = lists["female"], lists["male"]
        sentences.append(
            f"{len(women) + len(men)} of {lists['tested']} occupations show a significant preference in the "
            f"{lead} condition (q < 0.05): {len(women)} for women{_examples(women)}, "
            f"{len(men)} for men{_examples(men)}."
        )
    for row in data["correlations"]:
        if (row["condition"], row["across"], row["x"], row["y"], row["method"]) == (
            lead,
            "pair",
            "consistency",
            "bias",
            "pearson",
        ) and row["r"] is not None:
            sentences.append(
                f"Across {fmt_show(row['n'])} name pairs, consistency and bias correlate with Pearson "
                f"r = {fmt_num(row['r'], 2)} ({_p_phrase(row['p_value'])})."
            )
    stage2 = [v for qtype, v in data["counts"]["by_qtype"].items() if qtype != "attr"]
    items = sum(v["items"] for v in stage2)
    if items:
        unknown = sum(v["unknown"] for v in stage2) / items
        caution = " Read the metrics with care." if unknown > 0.05 else ""
        sentences.append(
            f"{fmt_pct(unknown)} of stage-2 answers were unknown (refused or unreadable).{caution}"
        )
    return sentences


def _status_warning(run: Mapping[str, Any]) -> str | None:
    if run["status"] in (None, "done", "finished", "complete", "completed", "analysed", "analyzed"):
        return None
    return f"This run's status is '{run['status']}': it may be incomplete, and its numbers may change."


def render_report(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[str, str, dict[str, Any]]:
    """HTML page, Markdown summary and JSON summary of an analysed run."""
    data = summary(con, run_id)
    metrics = metrics_frame(con, run_id)
    stage1 = stage1_rates(metrics)
    context = {
        **data,
        "headline": _headline(data["overall"]),
        "preferred": data["preferred_occupations"],
        "stage1_rows": _records(stage1),
        "regression": _regression_table(data["regression"]),
        "findings": findings(data),
        "correlation_rows": _correlation_rows(data["correlations"]),
        "status_warning": _status_warning(data["run"]),
        "limitations": LIMITATIONS,
        "attribution": ONET_ATTRIBUTION,
    }
    figures = {
        "headline": figure_headline(data["overall"]),
        "occupations": figure_occupations(preference_frame(con, run_id)),
        "stage1": figure_stage1(stage1),
        "pairs": figure_pairs(metrics, data["correlations"]),
        "sensitivity": figure_sensitivity(data["overall"]),
    }
    html = _TEMPLATES.get_template("report.html.j2").render(**context, figures=figures, css=_STYLE)
    markdown = _TEMPLATES.get_template("report.md.j2").render(**context)
    return html, markdown, data


def write_report(con: duckdb.DuckDBPyConnection, run_id: str, html_path: Path | None = None) -> ReportFiles:
    """Write report.html (or `html_path`), with report.md and report.json beside it."""
    return _write_files(html_path or Path("runs") / run_id / "report.html", *render_report(con, run_id))


def _write_files(html_path: Path, html: str, markdown: str, data: Mapping[str, Any]) -> ReportFiles:
    """The page and, beside it with the same stem, its Markdown and JSON summaries."""
    files = ReportFiles(html_path, html_path.with_suffix(".md"), html_path.with_suffix(".json"))
    html_path.parent.mkdir(parents=True, exist_ok=True)
    files.html.write_text(html, encoding="utf-8")
    files.markdown.write_text(markdown, encoding="utf-8")
    files.json.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return files


# ---------------------------------------------------------------------------------------------- compare

INSTANCE_KEY = ("condition", "pair_id", "name_order", "occupation")
COMPARED_METRICS = (
    *FIGURE1_METRICS,
    "neutral",
    "position_first",
    "order_consistency",
    "context_sensitivity",
    "unknown_rate",
)


def shared_instances(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> pd.DataFrame:
    """Stage-2 instance keys (condition, pair_id, name_order, occupation) that every run has items for."""
    placeholders = ", ".join("?" for _ in run_ids)
    return con.execute(
        f"""
        SELECT condition, pair_id, name_order, occupation FROM items
        WHERE stage = 2 AND run_id IN ({placeholders})
        GROUP BY condition, pair_id, name_order, occupation
        HAVING count(DISTINCT run_id) = ?
        ORDER BY condition, pair_id, name_order, occupation
        """,
        [*run_ids, len(run_ids)],
    ).df()


def shared_pair_counts(con: duckdb.DuckDBPyConnection, run_id: str, shared: pd.DataFrame) -> pd.DataFrame:
    """Per-pair metric counts (hits, n) of a run restricted to the shared instances.

    Reuses the analyzers' SQL unchanged: `instances` builds the run's per-instance table, the instances
    outside the shared set are removed, and `scope_counts` aggregates what is left, so every metric keeps
    the one definition in probe/metrics.sql.
    """
    from probe.metrics import metric_queries

    queries = metric_queries()
    con.execute(queries["instances"], {"run_id": run_id})
    con.register("shared_instance_keys", shared)
    try:
        con.execute(
            """
            DELETE FROM metric_instances AS m WHERE NOT EXISTS (
                SELECT 1 FROM shared_instance_keys AS k
                WHERE k.condition = m.condition AND k.pair_id = m.pair_id
                  AND k.name_order = m.name_order AND k.occupation = m.occupation)
            """
        )
        counts = con.execute(queries["scope_counts"], {"run_id": run_id}).df()
    finally:
        con.unregister("shared_instance_keys")
        con.execute(queries["drop_instances"])
    keep = (
        (counts["scope"] == "pair")
        & (counts["condition"] != "stage1")
        & counts["metric"].isin(COMPARED_METRICS)
    )
    return counts[keep]


def _ratio_terms(counts: pd.DataFrame, pairs: Sequence[str], metrics: Sequence[str]) -> tuple:
    """Numerator and denominator (pairs x metrics) whose column sums give each overall value.

    The same aggregation as the analyzers' overall rows: pooled metrics sum hits over instances, the
    others average the pair values over pairs with a valid instance.
    """
    from probe.metrics import POOLED_OVERALL_METRICS

    hits = counts.pivot(index="key", columns="metric", values="hits").reindex(index=pairs, columns=metrics)
    n = counts.pivot(index="key", columns="metric", values="n").reindex(index=pairs, columns=metrics)
    hits, n = hits.fillna(0).to_numpy(float), n.fillna(0).to_numpy(float)
    pooled = np.array([metric in POOLED_OVERALL_METRICS for metric in metrics])
    with np.errstate(invalid="ignore", divide="ignore"):
        pair_values = np.where(n > 0, hits / n, 0.0)
    return np.where(pooled, hits, pair_values), np.where(pooled, n, (n > 0).astype(float)), n.sum(axis=0)


def paired_differences(
    counts_a: pd.DataFrame, counts_b: pd.DataFrame, run_a: str, run_b: str
) -> list[dict[str, Any]]:
    """run_b - run_a per condition and metric on the shared instances, with a paired bootstrap CI.

    Name pairs are resampled once per replicate and the same resample is applied to both runs (seeded as
    the analyzers' bootstrap), so the interval reflects the pairing.
    """
    from probe.metrics import BOOTSTRAP_REPLICATES, BOOTSTRAP_SEED, CONFIDENCE

    rows = []
    conditions = sorted(
        set(counts_a["condition"]) & set(counts_b["condition"]), key=lambda c: _order(CONDITIONS, c)
    )
    for condition in conditions:
        part_a = counts_a[counts_a["condition"] == condition]
        part_b = counts_b[counts_b["condition"] == condition]
        metrics = [m for m in COMPARED_METRICS if m in set(part_a["metric"]) & set(part_b["metric"])]
        pairs = sorted(set(part_a["key"]) | set(part_b["key"]), key=int)
        num_a, den_a, n_a = _ratio_terms(part_a, pairs, metrics)
        num_b, den_b, n_b = _ratio_terms(part_b, pairs, metrics)
        rng = np.random.default_rng(BOOTSTRAP_SEED)
        weights = rng.multinomial(len(pairs), np.full(len(pairs), 1 / len(pairs)), size=BOOTSTRAP_REPLICATES)
        with np.errstate(invalid="ignore", divide="ignore"):
            value_a = num_a.sum(axis=0) / den_a.sum(axis=0)
            value_b = num_b.sum(axis=0) / den_b.sum(axis=0)
            replicates = (weights @ num_b) / (weights @ den_b) - (weights @ num_a) / (weights @ den_a)
        tail = (1 - CONFIDENCE) / 2 * 100
        for index, metric in enumerate(metrics):
            usable = replicates[:, index][~np.isnan(replicates[:, index])]
            low, high = (
                np.percentile(usable, [tail, 100 - tail]) if len(pairs) >= 2 and len(usable) else (None, None)
            )
            rows.append(
                {
                    "condition": condition,
                    "metric": metric,
                    "run_a": run_a,
                    "run_b": run_b,
                    "value_a": _clean(value_a[index]),
                    "value_b": _clean(value_b[index]),
                    "difference": _clean(value_b[index] - value_a[index]),
                    "ci_low": _clean(low),
                    "ci_high": _clean(high),
                    "n_instances": int(min(n_a[index], n_b[index])),
                    "n_pairs": len(pairs),
                }
            )
    return rows


def cohens_kappa(labels_a: Sequence[str], labels_b: Sequence[str]) -> float | None:
    """Cohen's kappa of two raters' labels; None where chance agreement is already 1 (one shared label)."""
    a, b = np.asarray(labels_a), np.asarray(labels_b)
    if len(a) == 0:
        return None
    observed = float(np.mean(a == b))
    expected = sum(float(np.mean(a == label)) * float(np.mean(b == label)) for label in set(a) | set(b))
    return None if expected >= 1 else (observed - expected) / (1 - expected)


def preference_agreement(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str) -> list[dict[str, Any]]:
    """How often two runs name the same preferred gender (female/male/none) for an occupation."""
    both = con.execute(
        """
        SELECT a.condition, a.occupation, a.preferred AS preferred_a, b.preferred AS preferred_b
        FROM occupation_preference AS a
        JOIN occupation_preference AS b USING (condition, occupation)
        WHERE a.run_id = ? AND b.run_id = ? AND a.n > 0 AND b.n > 0
        """,
        [run_a, run_b],
    ).df()
    rows = []
    for condition in sorted(set(both["condition"]), key=lambda c: _order(CONDITIONS, c)):
        part = both[both["condition"] == condition]
        rows.append(
            {
                "condition": condition,
                "run_a": run_a,
                "run_b": run_b,
                "occupations": len(part),
                "same_preferred": _clean(float(np.mean(part["preferred_a"] == part["preferred_b"]))),
                "kappa": cohens_kappa(part["preferred_a"].tolist(), part["preferred_b"].tolist()),
            }
        )
    return rows


def _distinct(con: duckdb.DuckDBPyConnection, column: str, run_id: str) -> set:
    return {
        value
        for (value,) in con.execute(
            f"SELECT DISTINCT {column} FROM items WHERE run_id = ? AND stage = 2", [run_id]
        ).fetchall()
    }


def settings_differences(con: duckdb.DuckDBPyConnection, runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Sentences naming every setting in which the runs differ, and what the comparison falls back to."""
    run_ids = [run["run_id"] for run in runs]
    sentences = []
    for column, noun in (
        ("occupation", "occupations"),
        ("pair_id", "name pairs"),
        ("condition", "conditions"),
    ):
        sets = [_distinct(con, column, run_id) for run_id in run_ids]
        if any(s != sets[0] for s in sets):
            shared = set.intersection(*sets)
            sizes = ", ".join(f"{run_id}: {len(s)}" for run_id, s in zip(run_ids, sets, strict=True))
            sentences.append(
                f"The runs cover different {noun} ({sizes}); they are compared on the {len(shared)} "
                f"{noun} they share."
            )
    for key, noun in (("top_k", "top-k"), ("template_hash", "prompt templates (hash)")):
        values = [run[key] for run in runs]
        if len(set(map(str, values))) > 1:
            listed = ", ".join(f"{run_id}: {value}" for run_id, value in zip(run_ids, values, strict=True))
            sentences.append(
                f"The runs use different {noun} ({listed}); shared instances were asked with "
                "different prompts, so differences mix model and prompt effects."
            )
    return sentences


def _compare_run(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
    settings = run_settings(con, run_id)
    return {
        **run_record(con, run_id),
        "top_k": settings["top_k"],
        "pairs": settings["pairs"],
        "occupations": settings["occupations"],
        "conditions": settings["conditions"],
    }


def compare_summary(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> dict[str, Any]:
    """The JSON summary of a comparison (keys documented in the module docstring)."""
    if len(run_ids) < 2:
        raise UserError("compare: give at least two run ids")
    if len(set(run_ids)) != len(run_ids):
        raise UserError(f"compare: run ids repeat ({', '.join(run_ids)})")
    runs = [_compare_run(con, run_id) for run_id in run_ids]
    shared = shared_instances(con, run_ids)
    if shared.empty:
        raise UserError(
            f"compare: runs {', '.join(run_ids)} share no stage-2 instance (pair, order, occupation)"
        )
    overall = {run_id: _overall(metrics_frame(con, run_id)) for run_id in run_ids}
    conditions = [c for c in CONDITIONS if c in set(shared["condition"])]
    lead = conditions[0] if conditions else sorted(set(shared["condition"]))[0]
    preferred = {run_id: _preferred_lists(preference_frame(con, run_id)) for run_id in run_ids}
    leaderboard = []
    for run in runs:
        entries = overall[run["run_id"]].get(lead, {})
        lists = preferred[run["run_id"]].get(lead, {"female": [], "male": []})
        leaderboard.append(
            {
                "run_id": run["run_id"],
                "model": run["model"],
                "condition": lead,
                **{metric: (entries.get(metric) or {}).get("value") for metric in LEADERBOARD_METRICS},
                "preferred_female": len(lists["female"]),
                "preferred_male": len(lists["male"]),
            }
        )
    reference = run_ids[0]
    counts = {run_id: shared_pair_counts(con, run_id, shared) for run_id in run_ids}
    return {
        "schema_version": SCHEMA_VERSION,
        "runs": runs,
        "differences_in_settings": settings_differences(con, runs),
        "shared": {
            "pairs": int(shared["pair_id"].nunique()),
            "occupations": int(shared["occupation"].nunique()),
            "conditions": sorted(set(shared["condition"]), key=lambda c: _order(CONDITIONS, c)),
            "instances": len(shared),
        },
        "leaderboard": leaderboard,
        "overall": overall,
        "paired_differences": [
            row
            for other in run_ids[1:]
            for row in paired_differences(counts[reference], counts[other], reference, other)
        ],
        "preference_agreement": [
            row
            for index, run_a in enumerate(run_ids)
            for run_b in run_ids[index + 1 :]
            for row in preference_agreement(con, run_a, run_b)
        ],
    }


RUN_COLOURS = ("#332288", "#DDAA33", "#BB5566", "#44AA99", "#88CCEE", "#999933", "#AA4499", "#666666")


def figure_side_by_side(data: Mapping[str, Any]) -> str | None:
    """Figure 1 metrics of the lead condition, one bar per run, each on all of that run's instances."""
    lead = data["leaderboard"][0]["condition"]
    fig = _new_figure(8.0, 3.4)
    ax = fig.add_subplot()
    series = {
        run["run_id"]: [_metric_triplet(data["overall"][run["run_id"]], lead, m) for m in FIGURE1_METRICS]
        for run in data["runs"]
    }
    colours = dict(zip(series, RUN_COLOURS * len(series), strict=False))
    _grouped_bars(ax, FIGURE1_METRICS, series, colours)
    ax.set_ylim(0, 1)
    ax.set_ylabel(f"share of valid instances ({lead})")
    ax.legend(frameon=False, ncols=min(len(series), 4), loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return _figure_uri(fig)


def figure_differences(data: Mapping[str, Any]) -> str | None:
    """Paired differences (run - reference) with bootstrap CIs: a forest plot per shared condition."""
    rows = pd.DataFrame(data["paired_differences"])
    if rows.empty:
        return None
    conditions = [c for c in data["shared"]["conditions"] if c in set(rows["condition"])]
    others = list(dict.fromkeys(rows["run_b"]))
    fig = _new_figure(2.4 + 2.6 * len(conditions), 0.9 + 0.32 * len(COMPARED_METRICS))
    axes = fig.subplots(1, len(conditions), sharey=True, squeeze=False)[0]
    for ax, condition in zip(axes, conditions, strict=True):
        for index, other in enumerate(others):
            part = rows[(rows["condition"] == condition) & (rows["run_b"] == other)]
            y = part["metric"].map(lambda m: COMPARED_METRICS.index(m)).to_numpy() + 0.18 * (
                index - (len(others) - 1) / 2
            )
            values = part["difference"].to_numpy(dtype=float)
            ax.errorbar(
                values,
                y,
                xerr=_error_bars(
                    values, part["ci_low"].to_numpy(dtype=float), part["ci_high"].to_numpy(dtype=float)
                ),
                fmt="o",
                markersize=4,
                capsize=2,
                color=RUN_COLOURS[(index + 1) % len(RUN_COLOURS)],
                label=f"{other} \u2212 {part['run_a'].iloc[0]}" if len(part) else other,
            )
        ax.axvline(0, color="#444444", linewidth=0.8, linestyle="--")
        ax.set_title(condition, fontsize=10)
        ax.set_xlabel("difference (share)")
        ax.spines[["top", "right"]].set_visible(False)
        ax.grid(axis="x", color="#e5e5e5", linewidth=0.6)
    axes[0].set_yticks(range(len(COMPARED_METRICS)), COMPARED_METRICS)
    axes[0].invert_yaxis()
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(
        handles, labels, loc="outside lower center", ncols=min(len(others), 3), frameon=False, fontsize=8
    )
    return _figure_uri(fig)


def render_comparison(
    con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]
) -> tuple[str, str, dict[str, Any]]:
    """HTML page, Markdown summary and JSON summary of a comparison of analysed runs."""
    data = compare_summary(con, run_ids)
    context = {
        **data,
        "reference": run_ids[0],
        "leaderboard_metrics": LEADERBOARD_METRICS,
        "side_by_side": _side_by_side_rows(data),
        "differences": _difference_rows(data["paired_differences"]),
        "attribution": ONET_ATTRIBUTION,
    }
    figures = {"side_by_side": figure_side_by_side(data), "differences": figure_differences(data)}
    html = _TEMPLATES.get_template("compare.html.j2").render(**context, figures=figures, css=_STYLE)
    markdown = _TEMPLATES.get_template("compare.md.j2").render(**context)
    return html, markdown, data


def _side_by_side_rows(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """(condition, metric) rows with each run's own overall value and CI, formatted."""
    rows = []
    for condition in data["shared"]["conditions"]:
        for metric in COMPARED_METRICS:
            cells = [
                fmt_ci(data["overall"][run["run_id"]].get(condition, {}).get(metric)) for run in data["runs"]
            ]
            if any(cell != _MISSING for cell in cells):
                rows.append({"condition": condition, "metric": metric, "cells": cells})
    return rows


def write_comparison(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str], html_path: Path) -> ReportFiles:
    """Write the comparison page with its Markdown and JSON summaries beside it."""
    return _write_files(html_path, *render_comparison(con, run_ids))
