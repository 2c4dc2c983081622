"""How numbers read in the report pages: percentages, intervals, p-values (one place for all)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from probe.analysis.binomial import SIGNIFICANCE
from probe.report.data import clean

MISSING = "\u2013"  # an en dash where a value is missing
_MINUS = "\u2212"


# ---------------------------------------------------------------------------------------------- formatting


def fmt_pct(value: Any, digits: int = 1) -> str:
    return MISSING if clean(value) is None else f"{100 * value:.{digits}f}%"


def fmt_num(value: Any, digits: int = 3) -> str:
    return MISSING if clean(value) is None else f"{value:.{digits}f}"


def fmt_p(value: Any) -> str:
    """A p-value in 3 decimals that never reads across the 5% line: 0.04996 prints 0.049 (rounded down where
    rounding would print 0.050 beside a significant result); one at or above 0.05 never rounds below 0.050."""
    if clean(value) is None:
        return MISSING
    if value < 0.001:
        return "<0.001"
    if value < SIGNIFICANCE <= round(value, 3):
        return f"{math.floor(value * 1000) / 1000:.3f}"
    return f"{value:.3f}"


def p_phrase(value: Any, name: str = "p") -> str:
    """`p = 0.020` in a sentence, `p < 0.001` for the smallest (never `p = <0.001`)."""
    text = fmt_p(value)
    return f"{name} < {text[1:]}" if text.startswith("<") else f"{name} = {text}"


def fmt_ci(entry: Mapping[str, Any] | None) -> str:
    """`62.3% [55.1, 70.0]`: a share with its 95% interval, in percent."""
    if not entry or entry.get("value") is None:
        return MISSING
    if entry.get("ci_low") is None or entry.get("ci_high") is None:
        return f"{fmt_pct(entry['value'])} (no interval)"
    return f"{fmt_pct(entry['value'])} [{100 * entry['ci_low']:.1f}, {100 * entry['ci_high']:.1f}]"


def fmt_estimate(finding: Mapping[str, Any]) -> str:
    """A headline finding's estimate and interval by its kind (metric_registry.KINDS): shares in %, differences
    in points, correlations as r."""
    value, low, high = finding["estimate"], finding.get("ci_low"), finding.get("ci_high")
    if value is None:
        return MISSING
    if finding["kind"] == "correlation":
        shown = f"r = {fmt_num(value, 2)}"
        interval = f" [{fmt_num(low, 2)}, {fmt_num(high, 2)}]"
    elif finding["kind"] == "difference":
        shown = f"{fmt_signed(value)} pts"
        interval = f" [{fmt_signed(low)}, {fmt_signed(high)}]"
    else:
        shown = fmt_pct(value)
        interval = f" [{100 * low:.1f}, {100 * high:.1f}]" if low is not None else ""
    return shown + (interval if low is not None else " (no interval)")


def fmt_signed(value: Any) -> str:
    """A difference of shares in percentage points with its sign: `+3.2`, `-1.0` (typeset minus)."""
    if clean(value) is None:
        return MISSING
    return f"{100 * value:+.1f}".replace("-", _MINUS)


def fmt_show(value: Any) -> str:
    return MISSING if value in (None, "") else str(value)


def fmt_contrast_value(value: Any, metric: str) -> str:
    """A run's value of a contrast: a preference is a share (`46.9%`), a grant gap a difference (`+26.8 pts`)."""
    if clean(value) is None:
        return MISSING
    return f"{fmt_signed(value)} pts" if metric == "grant_gap" else fmt_pct(value)


def fmt_difference(row: Mapping[str, Any]) -> str:
    """A paired difference in points with its interval: `-25.3 [-34.9, -15.7]`, or `+3.9 (no interval)`."""
    if row.get("difference") is None:
        return MISSING
    if row.get("ci_low") is None:
        return f"{fmt_signed(row['difference'])} (no interval)"
    return f"{fmt_signed(row['difference'])} [{fmt_signed(row['ci_low'])}, {fmt_signed(row['ci_high'])}]"


def fmt_duration(seconds: Any) -> str:
    """A run's wall time: `8.0 min`, `1 h 26 min`."""
    if clean(seconds) is None:
        return MISSING
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours} h {minutes} min"


# A run over name sets: its overall rows, occupation rows and consistency-bias correlation have the set as their unit
# (probe/analysis/metrics.py), so its findings and methods count sets where a run over name pairs counts pairs
_PAIR_WORD = re.compile(r"\bpair(s?)\b")  # pair, pairs, pair's, pairs' (never "paired")


def set_words(text: str | None) -> str | None:
    """A method or sentence about name pairs, worded for a run over name sets (its unit: the set)."""
    return None if text is None else _PAIR_WORD.sub(r"set\1", text)


def in_sets(finding: dict[str, Any]) -> dict[str, Any]:
    """A headline finding of a run over name sets, its sentence and method naming sets where they named pairs."""
    return finding | {key: set_words(finding.get(key)) for key in ("finding", "method", "method_label")}
