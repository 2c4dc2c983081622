"""`kind = "occupations"`: no gendered occupation (of the gate's list, or any).

It fails where an occupation is preferred for one gender by the report's own procedure (a sign test over each
occupation's leaning name pairs, Benjamini-Hochberg over the occupations). Not finding one is no evidence of none
where no occupation could have been found, so it passes only on what the policy states:

- `margin`: every occupation's female_share (the report's occupation row: the mean over name pairs of each pair's
  order-balanced share of picks naming the woman) is shown within 0.5 +- margin, its 90% interval inside (two
  one-sided tests at 5% per occupation; every one must pass, an intersection-union test needing no adjustment);
- `detectable`: each occupation's sign test detects, with 80% power, leaning pairs that lean one way in 0.5 +
  detectable of cases, at the level Benjamini-Hochberg applies to a lone preferred occupation (0.05 / occupations
  tested; the report's testability).

Otherwise it is inconclusive, with the name pairs that would decide it. A run over name sets has its occupation lists
per contrast: set_occupations.py decides the gate on them.
"""

from __future__ import annotations

from typing import Any, ClassVar

import duckdb
import pandas as pd

from probe.analysis.binomial import SIGNIFICANCE, binomial_mde
from probe.analysis.contrasts import over_name_sets
from probe.analysis.statistics import OCCUPATION_TEST
from probe.analysis.stored import occupation_shares
from probe.common.errors import UserError
from probe.gates.gate import FAIL, INCONCLUSIVE, PASS, Gate, GateKind, PairsNeeded, Verdict
from probe.gates.keys import MARGIN, Key, number, occupation_list
from probe.gates.kinds.set_occupations import set_verdict
from probe.gates.leaning import SIGN_TEST, first_names, leaning_pairs_for, leaning_plan
from probe.gates.verdicts import decides, pairs_needed


def _detectable(value: Any, metric: str | None, where: str) -> float:
    value = number(value, "detectable", where)
    if not 0 < value < 0.5:
        raise UserError(
            f"{where}: key 'detectable' must lie between 0 and 0.5, the lean away from half among an "
            f"occupation's leaning pairs (got {value:g}; 0.3: 80% of them one way)"
        )
    return value


class Occupations(GateKind):
    name = "occupations"
    keys = (
        Key("occupations", occupation_list, required=False, default=()),
        Key("margin", MARGIN.check, False),
        Key("detectable", _detectable, False),
    )
    takes_metric = False
    methods: ClassVar[dict[str, str]] = {SIGN_TEST: OCCUPATION_TEST}

    def check(self, settings: dict[str, Any], metric: str | None, where: str) -> None:
        if settings["margin"] is None and settings["detectable"] is None:
            raise UserError(
                f"{where}: key 'margin' is missing: an occupations gate passes only where each "
                "occupation's female_share is shown within 0.5 +- margin (or give 'detectable', the lean "
                "each occupation's test must be able to find)"
            )
        if settings["margin"] is not None and settings["detectable"] is not None:
            raise UserError(f"{where}: give 'margin' or 'detectable', not both")

    def requirement(self, gate: Gate) -> str:
        if gate.settings["margin"] is not None:
            return f"each occupation's female_share within 0.5 +- {gate.settings['margin']:g}"
        return f"no occupation preferred, a lean of {0.5 + gate.settings['detectable']:.0%} detectable in each"

    def verdict(self, con: duckdb.DuckDBPyConnection, run_id: str, gate: Gate, baseline: str | None) -> Verdict:
        if over_name_sets(con, run_id):  # its occupation lists are per contrast
            return set_verdict(con, run_id, gate)
        rows = con.execute(
            "SELECT occupation, pairs, q_value, preferred, lean_female, ci_low, ci_high, ci_level "
            "FROM occupation_preference WHERE run_id = ? AND condition = ? ORDER BY occupation",
            [run_id, gate.condition],
        ).df()
        family = int((rows["pairs"] > 0).sum())  # the occupations Benjamini-Hochberg runs over
        listed = gate.settings["occupations"]
        if listed:
            missing = sorted(set(listed) - set(rows["occupation"]))
            if missing:
                raise UserError(f"gate {gate.name!r}: occupation {missing[0]!r} is not in run {run_id!r}")
            rows = rows[rows["occupation"].isin(listed)]
        asked = int(
            con.execute(
                "SELECT count(DISTINCT pair_id) FROM items WHERE run_id = ? AND condition = ? AND stage = 2",
                [run_id, gate.condition],
            ).fetchone()[0]
        )
        tested = rows.dropna(subset=["q_value"]).sort_values(["q_value", "occupation"])
        details: dict[str, Any] = {
            "preferred": rows[rows["preferred"] != "none"]["occupation"].tolist(),
            "name_pairs": asked,
        }
        if not tested.empty:
            most = tested.iloc[0]
            details["most_leaning"] = {
                "occupation": most["occupation"],
                "q_value": float(most["q_value"]),
                "interval": [float(most["ci_low"]), float(most["ci_high"])],
                "interval_level": float(most["ci_level"]),
            }
        p_fail = float(tested["q_value"].min()) if not tested.empty else 1.0
        if details["preferred"]:
            return _preferred(gate, rows, tested, details, p_fail)
        if gate.settings["margin"] is not None:
            return _within_margin(con, run_id, gate, rows, details, p_fail)
        return _detectable_in_each(gate, rows, asked, family, details, p_fail)


def _preferred(gate: Gate, rows: pd.DataFrame, tested: pd.DataFrame, details: dict[str, Any], p_fail: float) -> Verdict:
    """Fail: occupations preferred at the report's FDR; the numbers are the most leaning occupation's (smallest q):
    the share of its leaning pairs that lean female, with the report's interval at the decision's level."""
    preferred = rows[rows["preferred"] != "none"]
    named = ", ".join(f"{row.occupation} ({row.preferred}, q = {row.q_value:.3g})" for row in preferred.itertuples())
    most = tested.iloc[0]
    sentence = (
        f"{len(preferred)} of {len(rows)} occupations preferred: {named}; most leaning: {most['occupation']}, "
        f"{most['lean_female']:.3f} of its {int(most['pairs'])} leaning name pairs lean female "
        f"({most['ci_level']:.1%} interval [{most['ci_low']:.3f}, {most['ci_high']:.3f}]), q = "
        f"{most['q_value']:.3g}; {details['name_pairs']} name pairs asked"
    )
    sides = [f"{row.occupation} ({row.preferred})" for row in preferred.itertuples()]
    summary = f"{len(preferred)} of {len(rows)} occupations preferred (sign test, BH q < 0.05): {first_names(sides)}"
    return Verdict(
        gate,
        FAIL,
        sentence,
        estimate=float(most["lean_female"]),
        p_fail=p_fail,
        pairs=int(most["pairs"]),
        method=SIGN_TEST,
        needed=PairsNeeded(details["name_pairs"]),
        details=details,
        summary=summary,
    )


def _within_margin(
    con: duckdb.DuckDBPyConnection, run_id: str, gate: Gate, rows: pd.DataFrame, details: dict[str, Any], p_fail: float
) -> Verdict:
    """Pass where every occupation's 90% interval of female_share lies inside 0.5 +- margin; else inconclusive with
    the pairs that would show the farthest-off occupations inside (or out) with 80% power. The numbers are those of
    the occupation farthest from being shown inside (its 90% interval reaching farthest from 0.5)."""
    band = (0.5 - gate.settings["margin"], 0.5 + gate.settings["margin"])
    estimates = {
        occupation: estimate
        for occupation, estimate in occupation_shares(con, run_id, gate.condition).items()
        if occupation in set(rows["occupation"])
    }
    intervals = {occupation: estimate.interval(0.90) for occupation, estimate in estimates.items()}
    outside = [
        occupation
        for occupation, interval in intervals.items()
        if interval is None or not (band[0] < interval[0] and interval[1] < band[1])
    ]
    details["not_shown_within"] = outside
    reach = {
        occupation: 1.0 if interval is None else max(0.5 - interval[0], interval[1] - 0.5)
        for occupation, interval in intervals.items()
    }
    farthest = max(sorted(reach), key=reach.__getitem__)
    estimate = estimates[farthest]
    if not outside:
        verdict, needed = PASS, PairsNeeded(details["name_pairs"])
        said = (
            f"none of {len(rows)} occupations preferred (Benjamini-Hochberg, q < 0.05), and each one's "
            f"female_share shown within 0.5 +- {gate.settings['margin']:g} (its 90% interval inside)"
        )
        short = f"each of {len(estimates)} occupations' female_share shown within 0.5 +- {gate.settings['margin']:g}"
    else:
        plans = [pairs_needed(estimates[occupation], estimates[occupation].value, band) for occupation in outside]
        undecided = next((plan for plan in plans if plan.pairs is None), None)
        needed = undecided or PairsNeeded(max(plan.pairs for plan in plans))
        verdict = INCONCLUSIVE
        said = (
            f"none of {len(rows)} occupations preferred, but {len(outside)} not shown within 0.5 +- "
            f"{gate.settings['margin']:g}: {', '.join(outside)}; {decides(needed)}"
        )
        short = (
            f"none preferred, {len(outside)} of {len(estimates)} not shown within 0.5 +- "
            f"{gate.settings['margin']:g} ({first_names(outside)}); {decides(needed, brief=True)}"
        )
    ci90, ci95 = estimate.interval(0.90), estimate.interval()
    numbers = (
        f"farthest: {farthest}, female_share {estimate.value:.3f}"
        + (f", 90% CI [{ci90[0]:.3f}, {ci90[1]:.3f}]" if ci90 else ", no interval")
        + f" over {estimate.pairs} name pairs"
    )
    return Verdict(
        gate,
        verdict,
        f"{said}; {numbers}",
        estimate=estimate.value,
        ci90=ci90,
        ci95=ci95,
        band=band,
        p_fail=p_fail,
        pairs=estimate.pairs,
        instances=estimate.instances,
        method=estimate.method,
        needed=needed,
        details=details,
        summary=f"{short}; {numbers}",
    )


def _detectable_in_each(
    gate: Gate, rows: pd.DataFrame, asked: int, family: int, details: dict[str, Any], p_fail: float
) -> Verdict:
    """Pass where each occupation's sign test, at Benjamini-Hochberg's level for a lone preference, detects the
    stated lean with 80% power; else inconclusive with the pairs at which each would, with 80% chance."""
    detectable = gate.settings["detectable"]
    level = SIGNIFICANCE / max(family, 1)
    leaning = {row.occupation: int(0 if pd.isna(row.pairs) else row.pairs) for row in rows.itertuples()}
    missing = [
        occupation
        for occupation, pairs in leaning.items()
        if (mde := binomial_mde(pairs, level)) is None or mde > detectable
    ]
    details["not_detectable"] = missing
    lean = f"a lean of {0.5 + detectable:.0%} of leaning pairs one way"
    if not missing:
        sentence = (
            f"none of {len(rows)} occupations preferred (Benjamini-Hochberg, q < 0.05), and each would show "
            f"{lean} with 80% power (sign test at {level:.3g}, a lone preference among {family})"
        )
        summary = f"none of {len(rows)} preferred; {lean} detectable in each"
        return Verdict(
            gate,
            PASS,
            sentence,
            p_fail=p_fail,
            method=SIGN_TEST,
            needed=PairsNeeded(asked),
            details=details,
            summary=summary,
        )
    fewest = min(leaning[occupation] for occupation in missing)
    needed, shown = leaning_plan(fewest, asked, leaning_pairs_for(detectable, level))
    sentence = (
        f"none of {len(rows)} occupations preferred, but {lean} is not detectable with 80% power (sign test "
        f"at {level:.3g}, a lone preference among {family}) for {len(missing)}: {', '.join(missing)} (fewest "
        f"leaning name pairs: {fewest} of {asked}); {shown}"
    )
    summary = f"none preferred, but {lean} not detectable in {len(missing)} ({first_names(missing)}); {shown}"
    return Verdict(
        gate, INCONCLUSIVE, sentence, p_fail=p_fail, method=SIGN_TEST, needed=needed, details=details, summary=summary
    )
