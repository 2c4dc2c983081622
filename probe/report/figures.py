"""Figures of the report and the comparison: self-contained SVG data URIs (no network, no script)."""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from probe.analysis.impact import FOUR_FIFTHS
from probe.analysis.metric_registry import (
    BIAS,
    CONSISTENCY,
    CONTEXT_SENSITIVITY,
    FIGURE1_METRICS,
    ORDER_CONSISTENCY,
    POSITION_FIRST,
)
from probe.common.vocabulary import CONDITIONS
from probe.report.data import order_index

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn: commands that draw none skip its 0.5 s import
    from matplotlib.figure import Figure

GENDER_COLOURS = {"female": "#D55E00", "male": "#0072B2", "none": "#8C8C8C"}
CONDITION_COLOURS = {"taxonomy": "#332288", "baseline": "#999999", "control": "#44AA99"}


# ---------------------------------------------------------------------------------------------- figures


def svg_bytes(fig: Figure) -> bytes:
    """The figure as SVG, the same bytes for the same input (no date, fixed element ids)."""
    import matplotlib

    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "taxonomy-probe"}):  # element ids: otherwise random per call
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    return buffer.getvalue()


def _figure_uri(fig: Figure) -> str:
    """An SVG data URI: vector (prints sharply), isolated in an <img>."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg_bytes(fig)).decode("ascii")


def new_figure(width: float, height: float) -> Figure:
    """A white figure with constrained layout (matplotlib imported here, on the first figure)."""
    from matplotlib.figure import Figure

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
    """The paper's Figure 1: six metrics per condition with their 95% intervals clustered by name pair."""
    conditions = [c for c in CONDITIONS if c in overall]
    if not conditions:
        return None
    fig = new_figure(8.0, 3.4)
    ax = fig.add_subplot()
    series = {c: [_metric_triplet(overall, c, m) for m in FIGURE1_METRICS] for c in conditions}
    _grouped_bars(ax, FIGURE1_METRICS, series, CONDITION_COLOURS)
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of valid instances")
    ax.legend(frameon=False, ncols=len(conditions), loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return _figure_uri(fig)


def figure_occupations(preferences: pd.DataFrame) -> str | None:
    """Per occupation, the share of leaning name pairs that lean female with its exact interval (the quantity the
    occupation test tests), one panel per condition, sorted by the first."""
    if preferences.empty:
        return None
    conditions = sorted(set(preferences["condition"]), key=lambda c: order_index(CONDITIONS, c))
    order = (
        preferences[preferences["condition"] == conditions[0]]
        .sort_values(["lean_female", "occupation"], na_position="first")["occupation"]
        .tolist()
    )
    order += sorted(set(preferences["occupation"]) - set(order))
    position = {occupation: index for index, occupation in enumerate(order)}
    fig = new_figure(2.6 + 2.4 * len(conditions), 1.2 + 0.16 * len(order))
    axes = fig.subplots(1, len(conditions), sharey=True, squeeze=False)[0]
    for ax, condition in zip(axes, conditions, strict=True):
        rows = preferences[preferences["condition"] == condition]
        y = rows["occupation"].map(position).to_numpy()
        share = rows["lean_female"].to_numpy(dtype=float)
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
        ax.set_xlabel("share of leaning name pairs leaning female")
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
    fig = new_figure(6.0, 3.0)
    ax = fig.add_subplot()
    _grouped_bars(ax, groups, series, GENDER_COLOURS)
    ax.set_ylim(0, 1)
    ax.set_ylabel("share answered 'yes'")
    ax.legend(frameon=False, ncols=2, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return _figure_uri(fig)


def figure_pairs(metrics: pd.DataFrame, correlations: Sequence[Mapping[str, Any]]) -> str | None:
    """Consistency against bias per name pair (a run over name sets: per set, its set rows), one colour per condition
    (the paper's correlation finding, across the same units)."""
    unit = "set" if (metrics["scope"] == "set").any() else "pair"
    pearson = {
        row["condition"]: row["r"]
        for row in correlations
        if (row["across"], row["x"], row["y"], row["method"]) == (unit, CONSISTENCY, BIAS, "pearson")
    }
    pairs = metrics[(metrics["scope"] == unit) & metrics["metric"].isin([CONSISTENCY, BIAS])]
    wide = pairs.pivot_table(index=["condition", "key"], columns="metric", values="value").dropna()
    if wide.empty or not {CONSISTENCY, BIAS} <= set(wide.columns):
        return None
    fig = new_figure(5.2, 3.8)
    ax = fig.add_subplot()
    for condition in sorted(set(wide.index.get_level_values(0)), key=lambda c: order_index(CONDITIONS, c)):
        rows = wide.loc[condition]
        label = condition if pearson.get(condition) is None else f"{condition} (r = {pearson[condition]:.2f})"
        ax.scatter(
            rows[CONSISTENCY],
            rows[BIAS],
            s=18,
            alpha=0.8,
            label=label,
            color=CONDITION_COLOURS.get(condition, "#666666"),
        )
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(f"consistency (per name {unit})")
    ax.set_ylabel(f"bias (per name {unit})")
    ax.legend(frameon=False)
    _style_axes(ax)
    return _figure_uri(fig)


def figure_sensitivity(overall: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Order consistency and first-position choice per condition, and the taxonomy-vs-baseline switch rate."""
    metrics = (ORDER_CONSISTENCY, POSITION_FIRST, CONTEXT_SENSITIVITY)
    conditions = [c for c in CONDITIONS if any(m in overall.get(c, {}) for m in metrics)]
    if not conditions:
        return None
    fig = new_figure(6.5, 3.0)
    ax = fig.add_subplot()
    series = {c: [_metric_triplet(overall, c, m) for m in metrics] for c in conditions}
    _grouped_bars(ax, metrics, series, CONDITION_COLOURS)
    ax.axhline(0.5, color="#444444", linewidth=0.8, linestyle="--")
    ax.set_ylim(0, 1)
    ax.set_ylabel("share")
    ax.legend(frameon=False, ncols=len(conditions), loc="lower center", bbox_to_anchor=(0.5, 1.0))
    return _figure_uri(fig)


def figure_robustness(section: Mapping[str, Any] | None) -> str | None:
    """One panel per finding: the estimate under each wording with its interval, the crossed estimate and
    interval as a band, the null dashed."""
    if not section or not section["findings"]:
        return None
    findings = section["findings"]
    columns = min(len(findings), 3)
    rows = -(-len(findings) // columns)
    fig = new_figure(3.4 * columns, 0.35 * len(section["wordings"]) * rows + 1.2 * rows)
    axes = np.atleast_1d(fig.subplots(rows, columns, squeeze=False).ravel())
    for ax, finding in zip(axes, findings, strict=False):
        entries = finding["per_wording"]
        positions = np.arange(len(entries))[::-1]
        values = [entry["estimate"] for entry in entries]
        errors = _error_bars(values, [e["ci_low"] for e in entries], [e["ci_high"] for e in entries])
        scale = 100.0
        if finding["ci_low"] is not None:
            ax.axvspan(scale * finding["ci_low"], scale * finding["ci_high"], color="#332288", alpha=0.12, lw=0)
        ax.axvline(scale * finding["estimate"], color="#332288", linewidth=1)
        if finding["null"] is not None:
            ax.axvline(scale * finding["null"], color="#555555", linestyle="--", linewidth=0.8)
        ax.errorbar(
            scale * np.asarray(values, dtype=float),
            positions,
            xerr=scale * errors,
            fmt="o",
            color="#332288",
            markersize=4,
            capsize=2,
            linewidth=1,
        )
        ax.set_yticks(positions, [entry["wording"] for entry in entries], fontsize=8)
        unit = "points" if finding["kind"] == "difference" else "%"
        ax.set_title(f"{finding['label']} ({finding['condition']})", fontsize=9)
        ax.set_xlabel(unit, fontsize=8)
        ax.tick_params(axis="x", labelsize=8)
        _style_axes(ax)
    for ax in axes[len(findings) :]:
        ax.set_visible(False)
    return _figure_uri(fig)


def figure_pair_shares(pairs: Mapping[str, Any] | None) -> str | None:
    """The bottom line's figure: each name pair's share of picks of the woman with its own interval, coloured by the
    lean its interval shows (hollow: none), strongest to the woman on top."""
    if not pairs or not pairs["rows"]:
        return None
    rows = pd.DataFrame(pairs["rows"])
    labels = [
        f"{row.female} / {row.male}" if isinstance(row.female, str) else f"pair {row.pair_id}"
        for row in rows.itertuples()
    ]
    y = np.arange(len(rows))[::-1]
    fig = new_figure(5.2, 1.0 + 0.2 * len(rows))
    ax = fig.subplots()
    ax.hlines(y, rows["ci_low"].to_numpy(float), rows["ci_high"].to_numpy(float), color="#bbbbbb", linewidth=1.2)
    names = {"female": "leans to the woman", "male": "leans to the man", "none": "no lean shown"}
    for lean, colour in GENDER_COLOURS.items():
        chosen = (rows["lean"] == lean).to_numpy()
        ax.scatter(
            rows["value"].to_numpy(float)[chosen],
            y[chosen],
            s=22,
            zorder=3,
            linewidths=1.0,
            edgecolors=colour,
            facecolors=colour if lean != "none" else "white",
            label=names[lean],
        )
    ax.axvline(0.5, color="#444444", linewidth=0.8, linestyle="--")
    ax.set_xlim(-0.03, 1.03)  # a pair at 0 or 100% shows its whole dot
    ax.set_yticks(y, labels, fontsize=7.5)
    ax.set_xlabel(f"share of picks of the woman ({pairs['condition']}), 95% interval")
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="x", color="#e5e5e5", linewidth=0.6)
    fig.legend(loc="outside lower center", ncols=3, frameon=False, fontsize=8)
    return _figure_uri(fig)


def figure_impact_ratios(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """The overall impact ratios with their intervals against the four-fifths line, one panel per condition."""
    ratios = [
        row
        for row in rows
        if row["reference"] is not None and row["category"] != row["reference"] and row["impact_ratio"] is not None
    ]
    if not ratios:
        return None
    conditions = list(dict.fromkeys(row["condition"] for row in ratios))
    labels = list(dict.fromkeys(f"{row['attribute']}: {row['category']} ({row['rate_kind']})" for row in ratios))
    fig = new_figure(2.6 + 2.6 * len(conditions), 1.2 + 0.22 * len(labels))
    axes = fig.subplots(1, len(conditions), sharey=True, squeeze=False)[0]
    for ax, condition in zip(axes, conditions, strict=True):
        for row in (row for row in ratios if row["condition"] == condition):
            y = labels.index(f"{row['attribute']}: {row['category']} ({row['rate_kind']})")
            if row["ci_low"] is not None:
                ax.hlines(y, row["ci_low"], row["ci_high"], color="#888888", linewidth=1.2)
            below = row["ci_high"] is not None and row["ci_high"] < FOUR_FIFTHS
            ax.scatter([row["impact_ratio"]], [y], s=24, zorder=3, color="#D55E00" if below else "#0072B2")
        ax.axvline(FOUR_FIFTHS, color="#444444", linewidth=0.8, linestyle="--")
        ax.axvline(1.0, color="#bbbbbb", linewidth=0.8)
        ax.set_xlim(0, 1.05)
        ax.set_title(condition, fontsize=10)
        ax.set_xlabel("impact ratio (to the highest rate)")
        ax.spines[["top", "right"]].set_visible(False)
    axes[0].set_yticks(range(len(labels)), labels, fontsize=7.5)
    axes[0].set_ylim(-0.7, len(labels) - 0.3)
    return _figure_uri(fig)
