"""The comparison's figures (compare.html): the leaderboard of the runs and their paired differences."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from probe.analysis.metric_registry import COMPARED_METRICS, METRICS
from probe.report.figures import _error_bars, _figure_uri, new_figure

RUN_COLOURS = ("#332288", "#DDAA33", "#BB5566", "#44AA99", "#88CCEE", "#999933", "#AA4499", "#666666")


def figure_leaderboard(data: Mapping[str, Any]) -> str | None:
    """Forest plot of the leaderboard: one panel per headline metric, each run's estimate with its 95% interval."""
    rows = data["leaderboard"]
    metrics = list(dict.fromkeys(metric for row in rows for metric in row["metrics"]))
    if not metrics:
        return None
    columns = min(4, len(metrics))
    lines = -(-len(metrics) // columns)
    fig = new_figure(2.3 * columns + 1.2, (0.55 + 0.22 * len(rows)) * lines + 0.4)
    axes = fig.subplots(lines, columns, sharey=True, squeeze=False).ravel()
    for ax, metric in zip(axes, metrics, strict=False):
        entries = [row["metrics"].get(metric) or {} for row in rows]
        values = np.array([np.nan if e.get("value") is None else e["value"] for e in entries], dtype=float)
        lows = np.array([np.nan if e.get("ci_low") is None else e["ci_low"] for e in entries], dtype=float)
        highs = np.array([np.nan if e.get("ci_high") is None else e["ci_high"] for e in entries], dtype=float)
        ax.errorbar(
            values,
            range(len(rows)),
            xerr=_error_bars(values, lows, highs),
            fmt="o",
            markersize=4,
            capsize=2,
            color=RUN_COLOURS[0],
        )
        null = METRICS[metric].null if metric in METRICS else None
        if null is not None:
            ax.axvline(null, color="#444444", linewidth=0.8, linestyle="--")
        ax.set_title(metric, fontsize=9)
        ax.tick_params(labelsize=8)
        ax.spines[["top", "right"]].set_visible(False)
        ax.grid(axis="x", color="#e5e5e5", linewidth=0.6)
    for ax in axes[len(metrics) :]:
        ax.set_visible(False)
    axes[0].set_yticks(range(len(rows)), [row["run_id"] for row in rows])
    axes[0].invert_yaxis()
    return _figure_uri(fig)


def figure_differences(data: Mapping[str, Any]) -> str | None:
    """Paired differences (run - reference) with bootstrap CIs: a forest plot per shared condition."""
    rows = pd.DataFrame(data["paired_differences"])
    if rows.empty:
        return None
    conditions = [c for c in data["shared"]["conditions"] if c in set(rows["condition"])]
    others = list(dict.fromkeys(rows["run_b"]))
    fig = new_figure(2.4 + 2.6 * len(conditions), 0.9 + 0.32 * len(COMPARED_METRICS))
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
                xerr=_error_bars(values, part["ci_low"].to_numpy(dtype=float), part["ci_high"].to_numpy(dtype=float)),
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
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(others), 3), frameon=False, fontsize=8)
    return _figure_uri(fig)
