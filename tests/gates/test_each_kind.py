"""Each gate kind of probe/gates/kinds/ on its own: the policy reader fills its keys (with their defaults), and the
kind states the values that pass (`band`, for the interval kinds) and its requirement in words, as gate.json,
gate.md and JUnit quote them. Their verdicts on runs: test_gates.py, test_gate_kinds.py, test_impact_gate.py,
test_contrasts.py (contrast), test_workforce.py (workforce_slope)."""

from __future__ import annotations

import math

import pytest

from probe.gates import parse_policy
from probe.gates.gate import Gate
from probe.gates.kinds import contrast, equivalence, impact_ratio, limits, non_inferiority, occupations, workforce_slope

SHARE = {"metric": "female_share", "condition": "taxonomy"}


def one_gate(kind: str, **keys: object) -> Gate:
    [gate] = parse_policy({"gates": [{"name": "g", "kind": kind, **keys}]}).gates
    return gate


@pytest.mark.parametrize(
    ("kind", "keys", "module", "band", "requirement"),
    [
        ("equivalence", {**SHARE, "target": 0.5, "margin": 0.05}, equivalence, (0.45, 0.55), "within 0.5 +- 0.05"),
        ("max", {**SHARE, "limit": 0.6}, limits, (-math.inf, 0.6), "at most 0.6"),
        ("min", {**SHARE, "limit": 0.4}, limits, (0.4, math.inf), "at least 0.4"),
        # on the "positive is worse" scale: worse = "lower" turns the difference
        (
            "non_inferiority",
            {**SHARE, "margin": 0.02, "worse": "lower"},
            non_inferiority,
            (-math.inf, 0.02),
            "no more than 0.02 below the baseline",
        ),
    ],
)
def test_an_interval_kind_passes_inside_its_band(kind, keys, module, band, requirement) -> None:
    gate = one_gate(kind, **keys)
    assert type(gate.kind).__module__ == module.__name__
    assert (gate.kind.band(gate), gate.kind.requirement(gate)) == (band, requirement)
    assert gate.kind.takes_metric and gate.metric == "female_share"


def test_non_inferiority_alone_needs_a_baseline_and_turns_lower_to_worse() -> None:
    lower = one_gate("non_inferiority", **SHARE, margin=0.02, worse="lower")
    higher = one_gate("non_inferiority", **SHARE, margin=0.02, worse="higher")
    assert (lower.kind.sign(lower), higher.kind.sign(higher)) == (-1.0, 1.0)
    assert higher.kind.requirement(higher) == "no more than 0.02 above the baseline"
    assert [one_gate(kind, **SHARE, limit=0.5).needs_baseline for kind in ("max", "min")] == [False, False]
    assert lower.needs_baseline and isinstance(lower.kind, non_inferiority.NonInferiority)


def test_impact_ratio_defaults_to_the_four_fifths_rule_on_selection_rates() -> None:
    gate = one_gate("impact_ratio", condition="taxonomy", attribute="race_ethnicity")
    assert isinstance(gate.kind, impact_ratio.ImpactRatio) and not gate.kind.takes_metric
    assert gate.settings == {"attribute": "race_ethnicity", "rate_kind": "selection", "limit": 0.8}
    assert gate.kind.requirement(gate) == "every race_ethnicity category's selection rate at least 0.8 of the highest"


def test_a_contrast_gate_asks_a_preference_or_in_stage_1_a_grant_gap() -> None:
    stage1 = one_gate("contrast", condition="stage1", attribute="sex")
    picks = one_gate("contrast", condition="taxonomy", contrast=["male x White", "male x Black"], margin=0.05)
    assert isinstance(stage1.kind, contrast.ContrastGate)
    assert stage1.settings == {"contrast": None, "attribute": "sex", "margin": 0.1, "question": "pairs"}
    assert (stage1.kind.requirement(stage1), picks.kind.requirement(picks)) == (
        "a grant gap within 0 +- 0.1",
        "a preference within 0.5 +- 0.05",
    )


def test_workforce_slope_and_occupations_state_their_requirement() -> None:
    slope = one_gate("workforce_slope", condition="taxonomy", limit=1.0)
    assert isinstance(slope.kind, workforce_slope.WorkforceSlope)
    assert slope.kind.requirement(slope) == "amplification slope at most 1"
    within = one_gate("occupations", condition="taxonomy", margin=0.1)
    assert isinstance(within.kind, occupations.Occupations)
    assert within.settings == {"occupations": (), "margin": 0.1, "detectable": None}
    assert within.kind.requirement(within) == "each occupation's female_share within 0.5 +- 0.1"


def test_an_unconfirmed_fails_reason_counts_the_runs_own_unit() -> None:
    from probe.gates.gate import Gate, PairsNeeded, Verdict
    from probe.gates.kinds import KINDS
    from probe.gates.verdicts import unconfirmed_reason

    gate = Gate("rare", KINDS["max"], "taxonomy", "bias", {"limit": 0.1})
    verdict = Verdict(
        gate, "unconfirmed", "", p_fail=0.01, p_fail_holm=0.06, details={"holm_gates": 6}, needed=PairsNeeded(40)
    )
    sets = Verdict(**{**vars(verdict), "unit": "name sets"})
    assert unconfirmed_reason(verdict).endswith("; about 40 name pairs would decide it")
    assert unconfirmed_reason(sets) == (
        "fails on its own (p = 0.01), not confirmed by Holm over 6 gates (Holm p = 0.06); about 40 name sets would "
        "decide it"
    )
