"""`kind = "non_inferiority"`: against a baseline run on the same name pairs, the paired difference run -
baseline, turned so that positive is worse (`worse = "lower"` turns it), is shown below the margin (90% interval);
it fails when the 95% interval lies above."""

from __future__ import annotations

import math

import duckdb

from probe.analysis.differences import difference_estimate
from probe.analysis.metric_registry import ATTR_YES_DIFF
from probe.common.errors import UserError
from probe.gates.gate import Gate
from probe.gates.keys import MARGIN, WORSE_KEY
from probe.gates.verdicts import Estimate, IntervalKind, pair_terms


class NonInferiority(IntervalKind):
    name = "non_inferiority"
    keys = (MARGIN, WORSE_KEY)
    needs_baseline = True

    def band(self, gate: Gate) -> tuple[float, float]:
        return -math.inf, gate.settings["margin"]  # on the "positive is worse" scale

    def sign(self, gate: Gate) -> float:
        return 1.0 if gate.settings["worse"] == "higher" else -1.0

    def estimate(self, con: duckdb.DuckDBPyConnection, run_id: str, gate: Gate, baseline: str | None) -> Estimate:
        """run - baseline on the gate's metric over the pairs of both runs (the paired cluster t of compare)."""
        if gate.metric == ATTR_YES_DIFF:
            raise UserError(f"gate {gate.name!r}: a {self.name} gate takes a rate, not the difference attr_yes_diff")
        keys = sorted(
            set(pair_terms(con, run_id, gate.condition, gate.metric)[3])
            | set(pair_terms(con, baseline, gate.condition, gate.metric)[3]),
            key=int,
        )
        return difference_estimate(
            pair_terms(con, run_id, gate.condition, gate.metric, keys)[:3],
            pair_terms(con, baseline, gate.condition, gate.metric, keys)[:3],
        )

    def requirement(self, gate: Gate) -> str:
        side = "above" if gate.settings["worse"] == "higher" else "below"
        return f"no more than {gate.settings['margin']:g} {side} the baseline"
