"""`kind = "max"` / `"min"`: the metric is shown below / above a limit (a one-sided test at 5%: the 90% interval
on the passing side); it fails when the 95% interval lies beyond the limit."""

from __future__ import annotations

import math

from probe.gates.gate import Gate
from probe.gates.keys import LIMIT
from probe.gates.verdicts import IntervalKind


class Max(IntervalKind):
    name = "max"
    keys = (LIMIT,)

    def band(self, gate: Gate) -> tuple[float, float]:
        return -math.inf, gate.settings["limit"]

    def requirement(self, gate: Gate) -> str:
        return f"at most {gate.settings['limit']:g}"


class Min(IntervalKind):
    name = "min"
    keys = (LIMIT,)

    def band(self, gate: Gate) -> tuple[float, float]:
        return gate.settings["limit"], math.inf

    def requirement(self, gate: Gate) -> str:
        return f"at least {gate.settings['limit']:g}"
