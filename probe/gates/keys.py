"""The keys of a `[[gates]]` table that a kind takes, each with its check: a kind lists its keys (gate.py,
kinds/), policy.py reads a table through them. Every check raises a UserError naming the file, gate and key."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from probe.analysis.metric_registry import METRICS
from probe.common.errors import UserError

WORSE = ("higher", "lower")


@dataclass(frozen=True)
class Key:
    """A key a kind takes: `check(value, metric, where)` returns the value the gate keeps; a key not `required` takes
    `default` when the table leaves it out."""

    name: str
    check: Callable[[Any, str | None, str], Any]
    required: bool = True
    default: Any = None


def number(value: Any, key: str, where: str) -> float:
    """A finite number (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UserError(f"{where}: key {key!r} must be a number (got {value!r})")
    return float(value)


def in_range(key: str) -> Callable[[Any, str | None, str], float]:
    """A value on the metric's own scale: within [-1, 1] for a difference, [0, 1] for a rate."""

    def check(value: Any, metric: str | None, where: str) -> float:
        value = number(value, key, where)
        lowest = -1.0 if metric is not None and METRICS[metric].kind == "difference" else 0.0
        if not lowest <= value <= 1:
            scale = f"{metric}'s range" if metric is not None else "the range"
            raise UserError(
                f"{where}: key {key!r} must lie within {scale} [{lowest:g}, 1] (got {value:g}; 65% is 0.65)"
            )
        return value

    return check


def margin(value: Any, metric: str | None, where: str) -> float:
    """A margin above 0 and at most 1, on the metric's own scale."""
    value = number(value, "margin", where)
    if value <= 0:
        raise UserError(f"{where}: key 'margin' must be above 0 (got {value})")
    if value > 1:
        raise UserError(
            f"{where}: key 'margin' must be at most 1, on the metric's own scale (got {value:g}; 5 "
            "percentage points are 0.05)"
        )
    return value


def worse(value: Any, metric: str | None, where: str) -> str:
    """Which direction of the metric is worse."""
    if value not in WORSE:
        raise UserError(f"{where}: key 'worse' must be 'higher' or 'lower' (got {value!r})")
    return value


def occupation_list(value: Any, metric: str | None, where: str) -> tuple[str, ...]:
    """A non-empty list of occupation names."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise UserError(f"{where}: key 'occupations' must be a list of occupation names")
    if not value:
        raise UserError(f"{where}: key 'occupations' is an empty list (leave the key out to gate every occupation)")
    return tuple(value)


TARGET = Key("target", in_range("target"))
LIMIT = Key("limit", in_range("limit"))
MARGIN = Key("margin", margin)
WORSE_KEY = Key("worse", worse)
