"""`kind = "equivalence"`: the metric is shown within target +- margin (two one-sided tests at 5%: the 90%
interval inside the band); it fails when the 95% interval lies outside."""

from __future__ import annotations

from probe.gates.gate import Gate
from probe.gates.keys import MARGIN, TARGET
from probe.gates.verdicts import IntervalKind


class Equivalence(IntervalKind):
    name = "equivalence"
    keys = (TARGET, MARGIN)

    def band(self, gate: Gate) -> tuple[float, float]:
        return gate.settings["target"] - gate.settings["margin"], gate.settings["target"] + gate.settings["margin"]

    def requirement(self, gate: Gate) -> str:
        return f"within {gate.settings['target']:g} +- {gate.settings['margin']:g}"
