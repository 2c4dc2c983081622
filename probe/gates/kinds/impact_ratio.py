"""`kind = "impact_ratio"` (DESIGN.md section 11): every category of an attribute shown at or above `limit` (default
0.8, the four-fifths rule) of the highest-rate category's rate, by the adverse-impact table's own ratio test over name
sets (probe/analysis/impact.py).

Pass: every category's ratio to the highest rate shown above the limit: for every other category k, the one-sided
test of rate_c <= limit x rate_k rejects at 5% (90% intervals, an intersection-union test: no adjustment). Fail: a
category's ratio shown below it, Bonferroni over the K (K - 1) ordered pairs: its interval at 1 - 0.05 / K, the
minimum over its K - 1 others of each pair's interval at 1 - 0.05 / (K (K - 1)); p_fail = the same Bonferroni p, so
the interval lies below the limit exactly where p_fail < 0.05 (the family's Holm step then takes it). Otherwise
inconclusive, with the sets that would decide the binding category (normal approximation from its interval: N =
sets x ((z + z_0.8) se / |ratio - limit|)^2), never fewer than the decision's interval needs: a pass 6 sets, a fail
the sets whose exact bound reaches 0.05 / (K (K - 1)) (9 at K = 4, 12 at K = 8: under them no fail is possible, and
the gate says so instead of printing an interval it does not have). The numbers shown are the failing category's,
else the one with the lowest 90% lower bound.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import duckdb
from scipy import stats

from probe.analysis.binomial import POWER, SIGNIFICANCE
from probe.analysis.impact import FOUR_FIFTHS, GROUP_COLUMNS, IMPACT_METHOD, GroupRatios, group_ratios
from probe.analysis.sets_needed import fail_sets, interval_sets
from probe.analysis.statistics import MIN_PAIRS
from probe.analysis.stored import stored_counts
from probe.common.errors import UserError
from probe.common.user_text import checked_text
from probe.common.vocabulary import CONDITIONS, DECISIONS_CONDITION, RATE_KINDS
from probe.gates.gate import FAIL, INCONCLUSIVE, PASS, Gate, GateKind, PairsNeeded, Verdict
from probe.gates.keys import Key, number
from probe.gates.verdicts import MOST_PAIRS

METHOD = "fieller_sets"


def _attribute(value: Any, metric: str | None, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UserError(
            f"{where}: key 'attribute' must name an attribute of the run's names ('sex', "
            "'race_ethnicity', 'sex x race_ethnicity', ...)"
        )
    return checked_text(value, f"{where}: key 'attribute'")  # printed in gate.md and JUnit as a name is


def _rate_kind(value: Any, metric: str | None, where: str) -> str:
    if value not in RATE_KINDS:
        raise UserError(f"{where}: key 'rate_kind' must be one of {', '.join(RATE_KINDS)} (got {value!r})")
    return value


def _limit(value: Any, metric: str | None, where: str) -> float:
    value = number(value, "limit", where)
    if not 0 < value <= 1:
        raise UserError(f"{where}: key 'limit' must lie in (0, 1] (got {value:g}; four-fifths is 0.8)")
    return value


class ImpactRatio(GateKind):
    name = "impact_ratio"
    keys = (
        Key("attribute", _attribute),
        Key("rate_kind", _rate_kind, required=False, default="selection"),
        Key("limit", _limit, required=False, default=FOUR_FIFTHS),
    )
    takes_metric = False
    methods: ClassVar[dict[str, str]] = {METHOD: IMPACT_METHOD}
    unit: ClassVar[str] = "name sets"

    def conditions(self, metric: str | None) -> tuple[str, ...]:
        """The stage-2 conditions of a probed run, and 'decisions' for an imported decisions run."""
        return (*CONDITIONS, DECISIONS_CONDITION)

    def verdict(self, con: duckdb.DuckDBPyConnection, run_id: str, gate: Gate, baseline: str | None) -> Verdict:
        return impact_verdict(con, run_id, gate)

    def requirement(self, gate: Gate) -> str:
        return (
            f"every {gate.settings['attribute']} category's {gate.settings['rate_kind']} rate at least "
            f"{gate.settings['limit']:g} of the highest"
        )


def impact_verdict(con: duckdb.DuckDBPyConnection, run_id: str, gate: Gate) -> Verdict:
    """The gate's verdict on the run's overall ratios to the highest rate (module docstring)."""
    attribute, rate_kind, limit = (gate.settings[key] for key in ("attribute", "rate_kind", "limit"))
    counts = stored_counts(con, run_id, "impact_counts")  # the overall scope's, as analyze() counted them
    counts = counts[counts["condition"] == gate.condition]
    if attribute not in set(counts["attribute"]):
        found = ", ".join(sorted(set(counts["attribute"]))) or "none"
        raise UserError(
            f"gate {gate.name!r}: run {run_id!r} has no {attribute!r} categories in condition "
            f"{gate.condition} (its attributes: {found})"
        )
    counts = counts[counts["attribute"] == attribute]
    if rate_kind not in set(counts["rate_kind"]):  # scoring rates exist only where answers were decided by score
        raise UserError(
            f"gate {gate.name!r}: run {run_id!r} has no {rate_kind} rates of {attribute!r} in condition "
            f"{gate.condition} (its rate kinds: {', '.join(sorted(set(counts['rate_kind'])))}; the scoring rate "
            "needs a run whose answers were decided by option scores)"
        )
    ratios = group_ratios(counts[counts["rate_kind"] == rate_kind].drop(columns=GROUP_COLUMNS))
    sets = int(counts["set_id"].nunique())
    categories = [category for category in ratios.rates if ratios.others(category)]
    comparisons = len(categories) * (len(categories) - 1)  # every ordered pair: Bonferroni for a fail
    details: dict[str, Any] = {"highest": ratios.reference, "categories": {}, "sets": sets}
    shown90 = {c: ratios.interval(c, 0.90, comparisons=1) for c in categories}
    if (
        not categories
        or sets < MIN_PAIRS
        or any(interval is None and ratios.value(c) < 1 for c, interval in shown90.items())
    ):
        reason = f"no interval: {sets} name sets ({MIN_PAIRS} or more are needed), or no two categories with rates"
        return Verdict(
            gate,
            INCONCLUSIVE,
            reason + " to compare",
            band=(limit, math.inf),
            pairs=sets,
            summary=reason + " to compare",
            needed=PairsNeeded(None, f"{sets} name sets: a plan needs a run of {MIN_PAIRS} or more"),
            details=details,
        )
    adjusted = 1 - SIGNIFICANCE / len(categories)
    fewest_to_fail = fail_sets(len(categories))
    rows = {}
    for category in categories:
        # a category shown to have the highest rate has no interval: its ratio is 1, above any limit; below
        # fewest_to_fail sets no category has an interval at the fail's level
        ci90 = shown90[category] or (1.0, 1.0)
        ci_adjusted = (ratios.interval(category, adjusted) or (1.0, 1.0)) if sets >= fewest_to_fail else None
        rows[category] = {
            "ratio": ratios.value(category),
            "ci90": ci90,
            "ci_adjusted": ci_adjusted,
            "p_below": ratios.p_below(category, limit, comparisons) or 1.0,
        }
        details["categories"][category] = {
            "ratio": rows[category]["ratio"],
            "p_below": rows[category]["p_below"],
            "ci90": _bounds(shown90[category]),
            "ci_adjusted": _bounds(ratios.interval(category, adjusted)),
            "four_fifths_verdict": ratios.four_fifths_verdict(category),
        }
    p_fail = min(row["p_below"] for row in rows.values())
    passing = all(row["ci90"][0] > limit for row in rows.values())
    failing = [c for c, row in rows.items() if row["ci_adjusted"] is not None and row["ci_adjusted"][1] < limit]
    verdict = PASS if passing else FAIL if failing else INCONCLUSIVE
    shown = (
        min(failing, key=lambda c: rows[c]["p_below"]) if failing else min(rows, key=lambda c: (rows[c]["ci90"][0], c))
    )
    row = rows[shown]
    needed = _sets_needed(ratios, shown, limit, sets, comparisons, fewest_to_fail)
    said = {PASS: "shown", FAIL: "shown not to be", INCONCLUSIVE: "not shown either way to be"}[verdict]
    summary = (
        f"{attribute} ({gate.condition}) is {said} {gate.kind.requirement(gate)}: {shown} at "
        f"{row['ratio']:.3f} of the highest rate ({ratios.reference}; 90% CI {_text(row['ci90'])}, "
        f"{adjusted:.1%} CI {_text(row['ci_adjusted'])}), {len(categories)} categories over {sets} name sets"
    )
    sentence = f"{summary}; {IMPACT_METHOD}"
    if sets < fewest_to_fail:
        sentence += (
            f"; no fail is possible under {fewest_to_fail} name sets (its {adjusted:.1%} interval takes "
            f"each of the {comparisons} ordered pairs of categories at 1 - 0.05 / {comparisons})"
        )
    if verdict == INCONCLUSIVE:
        sentence += (
            f"; {needed.note}"
            if needed.pairs is None
            else f"; about {needed.pairs} name sets would decide it with 80% power, if the truth is this ratio"
        )
    return Verdict(
        gate,
        verdict,
        sentence,
        row["ratio"],
        row["ci90"],
        row["ci_adjusted"],
        (limit, math.inf),
        p_fail,
        pairs=sets,
        instances=ratios.answers(shown)[0],
        method=METHOD,
        needed=needed,
        details=details,
        summary=summary,
    )


def _sets_needed(
    ratios: GroupRatios, category: str, limit: float, sets: int, comparisons: int, fewest_to_fail: int
) -> PairsNeeded:
    """Sets at which the category's interval excludes the limit with 80% power, its standard error (from its 95%
    interval; with too few sets for that one's Bonferroni level, its unadjusted 90% one) shrinking as 1 / sqrt(sets):
    a pass needs the one-sided 5% test (and MIN_PAIRS sets), a fail the Bonferroni one (and `fewest_to_fail`)."""
    interval, confidence = ratios.interval(category), 0.95
    if interval is None and sets < interval_sets(len(ratios.rates)):  # too few sets for its Bonferroni level
        interval, confidence = ratios.interval(category, 0.90, comparisons=1), 0.90
    value = ratios.value(category)
    distance = abs(value - limit)
    if interval is None or distance == 0:
        return PairsNeeded(None, "no interval to plan from, or the ratio sits on the limit")
    error = (interval[1] - interval[0]) / (2 * stats.norm.ppf(1 - (1 - confidence) / 2))
    level = 0.95 if value > limit else 1 - SIGNIFICANCE / (2 * comparisons)
    needed = math.ceil(sets * ((stats.norm.ppf(level) + stats.norm.ppf(POWER)) * error / distance) ** 2)
    return PairsNeeded(min(max(needed, MIN_PAIRS if value > limit else fewest_to_fail), MOST_PAIRS + 1))


def _bounds(interval: tuple[float, float] | None) -> list[float | None] | None:
    """An interval for gate.json: an unbounded end is null."""
    return None if interval is None else [bound if math.isfinite(bound) else None for bound in interval]


def _text(interval: tuple[float, float] | None) -> str:
    if interval is None:
        return "none"
    high = f"{interval[1]:.3f}" if math.isfinite(interval[1]) else "inf"
    return f"[{interval[0]:.3f}, {high}]"
