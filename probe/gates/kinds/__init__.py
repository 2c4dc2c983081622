"""The kinds of gate a policy may name, one module each, registered here by name.

Adding a kind: write probe/gates/kinds/NAME.py with a `GateKind` subclass (gate.py: its `name`, its `keys` from
keys.py or its own `Key`s, whether it `takes_metric` or `needs_baseline`, `verdict` - with the pairs that would
decide it - and `requirement`; an interval gate on one metric subclasses verdicts.IntervalKind and gives `band`),
then add one line below. policy.py, the Holm step, gate.json, gate.md, JUnit and `--plan` read it from here.
"""

from __future__ import annotations

from probe.gates.gate import GateKind
from probe.gates.kinds import (
    contrast,
    equivalence,
    impact_ratio,
    limits,
    non_inferiority,
    occupations,
    workforce_slope,
)

KINDS: dict[str, GateKind] = {
    kind.name: kind
    for kind in (
        equivalence.Equivalence(),
        limits.Max(),
        limits.Min(),
        non_inferiority.NonInferiority(),
        occupations.Occupations(),
        workforce_slope.WorkforceSlope(),
        impact_ratio.ImpactRatio(),
        contrast.ContrastGate(),
    )
}
