"""Verdicts of a release policy: pass, fail, unconfirmed or inconclusive per gate, from the report's own
inference. Each kind (kinds/) decides its own gates; this module holds what the interval kinds share, the
family's Holm step and the sentences.

Each gate's estimate is rebuilt from the run's per-pair rows exactly as `probe analyze` builds the overall one
(`share_estimate`, `difference_estimate`: the same method, the same 95% interval as the report), then:

- equivalence (target +- margin): pass when the 90% interval lies inside the band (two one-sided tests at 5%);
  fail when the 95% interval lies outside it; else inconclusive;
- max / min (a limit): pass when the 90% interval lies below / above the limit (a one-sided test at 5%); fail
  when the 95% interval lies beyond it; else inconclusive;
- non_inferiority (against a baseline run on the same pairs): the paired difference run - baseline, turned so
  that positive is worse, must be shown below the margin (90% interval), fails when the 95% interval lies above;
- occupations (kinds/occupations.py): fail when an occupation is preferred at the report's false discovery rate;
  pass only where each occupation is shown within the policy's margin, or each could show the lean it states.

The family: "the release passes" needs every gate to pass, an intersection-union test that needs no adjustment
(each interval gate's pass is a test at 5%). By default each gate's fail stands on its own test (a policy with
k gates whose metrics all sit inside their margins fails one more often as k grows). With `gate_family = "holm"`
"a gate fails" is claimed with Holm's step-down over every gate's fail p (an interval gate's test of its nearer
edge, an occupations gate's smallest q), so the chance of failing any gate whose metric sits inside its margin
stays at or below 5%; a fail that Holm does not confirm is "unconfirmed" and says so, with both p-values. Every
verdict states the name pairs that would decide it (`pairs_needed`; fails under Holm planned at 0.05 / gates),
or why no count does; `--plan` prints the same.
"""

from __future__ import annotations

import math
from functools import partial

import duckdb
import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests

from probe.analysis.binomial import POWER, SIGNIFICANCE
from probe.analysis.contrasts import over_name_sets
from probe.analysis.differences import DifferenceEstimate, difference_estimate
from probe.analysis.metric_registry import ATTR_YES_DIFF, ATTR_YES_F, ATTR_YES_M, POOLED_OVERALL_METRICS
from probe.analysis.statistics import METHODS, MIN_PAIRS, ShareEstimate, share_estimate
from probe.gates.gate import EXIT_CODES, FAIL, INCONCLUSIVE, PASS, UNCONFIRMED, Gate, GateKind, PairsNeeded, Verdict
from probe.report.formatting import set_words

MOST_PAIRS = 10_000  # pairs-needed figures above this read "more than 10,000"
ON_THE_EDGE = "no pair count decides it while the estimate sits on the edge"
Estimate = ShareEstimate | DifferenceEstimate


def pair_terms(
    con: duckdb.DuckDBPyConnection, run_id: str, condition: str, metric: str, pairs: list[str] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """(numerator, denominator, sizes, pair keys) of a metric over a run's pairs, as analyze aggregates them:
    pooled metrics sum hits over instances, the others average the pair values; a run over name sets' units are its
    sets, each set's contests summed (its stored set rows; keys: the sets)."""
    scope = "set" if over_name_sets(con, run_id) else "pair"
    rows = con.execute(
        "SELECT key, value, n FROM metrics WHERE run_id = ? AND scope = ? AND condition = ? AND metric = ?",
        [run_id, scope, condition, metric],
    ).df()
    rows = rows.set_index("key").reindex(pairs if pairs is not None else sorted(rows["key"], key=int))
    n = rows["n"].fillna(0).to_numpy(float)
    value = rows["value"].fillna(0).to_numpy(float)
    if metric in POOLED_OVERALL_METRICS:
        return np.round(value * n), n, n, list(rows.index)
    return np.where(n > 0, value, 0.0), (n > 0).astype(float), n, list(rows.index)


def run_estimate(con: duckdb.DuckDBPyConnection, run_id: str, gate: Gate) -> Estimate:
    """The gate's metric over the run's pairs: the estimate the report's overall row comes from."""
    if gate.metric == ATTR_YES_DIFF:
        women = pair_terms(con, run_id, gate.condition, ATTR_YES_F)
        men = pair_terms(con, run_id, gate.condition, ATTR_YES_M, women[3])
        return difference_estimate(women[:3], men[:3])
    return share_estimate(*pair_terms(con, run_id, gate.condition, gate.metric)[:3])


class IntervalKind(GateKind):
    """A gate on one metric's estimate against the values that pass (`band`, on the scale where `sign` x the
    estimate is read): pass, fail or inconclusive from its intervals (module docstring)."""

    def band(self, gate: Gate) -> tuple[float, float]:
        raise NotImplementedError

    def sign(self, gate: Gate) -> float:
        """-1 turns an estimate whose lower values are worse so that positive is worse; 1 by default."""
        return 1.0

    def estimate(self, con: duckdb.DuckDBPyConnection, run_id: str, gate: Gate, baseline: str | None) -> Estimate:
        return run_estimate(con, run_id, gate)

    def verdict(self, con: duckdb.DuckDBPyConnection, run_id: str, gate: Gate, baseline: str | None) -> Verdict:
        unit = "name sets" if over_name_sets(con, run_id) else None  # the unit of a run over name sets' rows
        return interval_verdict(gate, self.estimate(con, run_id, gate, baseline), unit)


def interval_verdict(gate: Gate, estimate: Estimate, unit: str | None = None) -> Verdict:
    """Pass / fail / inconclusive of an interval gate before the family's Holm step (module docstring), on the
    gate's scale (its kind's `sign`), with the name pairs (`unit`: sets) that would decide it."""
    kind: IntervalKind = gate.kind  # type: ignore[assignment]
    low, high = kind.band(gate)
    sign = kind.sign(gate)
    ci90, ci95 = estimate.interval(0.90), estimate.interval()
    value = sign * estimate.value + 0.0  # + 0.0: no "-0.0" for a difference of 0 turned
    needed = pairs_needed(estimate, value, (low, high), sign)
    replan = partial(pairs_needed, estimate, value, (low, high), sign)
    if ci90 is None or ci95 is None:
        counted = f"{estimate.pairs} {unit or gate.kind.unit}"
        said = f"{gate.metric} ({gate.condition}): no interval from {counted} ({MIN_PAIRS} or more)"
        return Verdict(
            gate,
            INCONCLUSIVE,
            said,
            band=(low, high),
            pairs=estimate.pairs,
            instances=estimate.instances,
            needed=needed,
            summary=said,
            unit=unit,
        )
    ci90, ci95 = _turned(ci90, sign), _turned(ci95, sign)
    beyond = high if value > high else low if value < low else None
    p_fail = 1.0 if beyond is None else estimate.p_value(sign * beyond)
    verdict = PASS if low < ci90[0] and ci90[1] < high else FAIL if ci95[1] < low or ci95[0] > high else INCONCLUSIVE
    return Verdict(
        gate,
        verdict,
        "",
        value,
        ci90,
        ci95,
        (low, high),
        p_fail,
        pairs=estimate.pairs,
        instances=estimate.instances,
        method=estimate.method,
        needed=needed,
        replan=replan,
        unit=unit,
    )


def _turned(interval: tuple[float, float], sign: float) -> tuple[float, float]:
    return interval if sign > 0 else (-interval[1], -interval[0])


def standard_error(estimate: Estimate, null: float) -> float | None:
    """The standard error the estimate's own test of `null` divides by, read back from its minimum detectable
    effect (statistics.py: mde = (t_0.975 + t_0.8) x se at the null, on the estimate's df); None under 6 pairs.
    A difference that every pair shows alike has no spread: its interval combines the two rates' own (MOVER), and
    the standard error is that interval's half-width over t_0.975."""
    if isinstance(estimate, DifferenceEstimate) and not estimate.variance > 0:
        interval = estimate.interval()
        return None if interval is None else (interval[1] - interval[0]) / (2 * float(stats.t.ppf(0.975, estimate.df)))
    mde = estimate.mde(null)
    if mde is None or not math.isfinite(mde) or not math.isfinite(estimate.df):
        return None
    return mde / float(stats.t.ppf(0.975, estimate.df) + stats.t.ppf(POWER, estimate.df))


def pairs_needed(
    estimate: Estimate, value: float, passing: tuple[float, float], sign: float = 1.0, fail_at: float = SIGNIFICANCE
) -> PairsNeeded:
    """Name pairs that decide the gate with 80% power if the truth is this estimate and the spread between pairs
        stays as this run showed; no figure (and the note why) where the estimate sits on an edge (no size decides it)
        or the run has under 6 pairs to plan from.

        With G pairs in this run, s(x) the standard error of its test of x (the variance at x, as the score test
        takes it) and d = |value - e| the distance to an edge e, N pairs scale every variance by G / N, so one side
        is decided with power T_df((d - t_df(1 - a) s(e) sqrt(G/N)) / (s(value) sqrt(G/N))), df = the run's df scaled
        by (N - 1) / (G - 1); with normal quantiles, N = G ((z_(1-a) s(e) + z_0.8 s(value)) / d)^2. A pass needs both
        one-sided tests at a = 5% (power P(low side) + P(high side) - 1; an open side always passes), a fail the 95%
        interval beyond the nearer edge (a = 2.5%; `fail_at` / 2 where the family's Holm step asks a two-sided p below
    `fail_at`); N is the smallest count reaching 80%. A no-event estimate (every
        pair at 0 or 1) stays so at any size: its test p = 2 max(1 - d, 0.5)^N decides it once below a. `value` and
        `passing` are on the gate's scale (`sign` as for interval_verdict).
    """
    low, high = passing
    inside = low < value < high
    if not estimate.estimable or estimate.pairs < MIN_PAIRS:
        return PairsNeeded(None, f"{estimate.pairs} name pairs: a plan needs a run of {MIN_PAIRS} or more")
    if not inside and low <= value <= high:
        return PairsNeeded(None, ON_THE_EDGE)
    edges = (low, high) if inside else (high if value > high else low,)
    level = 0.95 if inside else 1 - fail_at / 2
    if estimate.method == "no_events":

        def side(edge: float, pairs: int) -> float:
            far = max(1 - abs(value - edge), 0.5)
            return float(not math.isfinite(edge) or 2 * far**pairs < 2 * (1 - level))
    else:
        errors = {point: standard_error(estimate, sign * point) for point in (value, *edges) if math.isfinite(point)}
        if None in errors.values() or not errors[value] > 0:
            return PairsNeeded(None, "the test has no spread at the estimate to plan from")

        def side(edge: float, pairs: int) -> float:
            if not math.isfinite(edge):
                return 1.0
            scale = math.sqrt(estimate.pairs / pairs)
            df = max(estimate.df * (pairs - 1) / max(estimate.pairs - 1, 1), 1.0)
            shortfall = abs(value - edge) - float(stats.t.ppf(level, df)) * errors[edge] * scale
            return float(stats.t.cdf(shortfall / (errors[value] * scale), df))

    def power(pairs: int) -> float:
        return sum(side(edge, pairs) for edge in edges) - (len(edges) - 1)

    if power(MOST_PAIRS) < POWER:
        return PairsNeeded(MOST_PAIRS + 1)
    smallest, largest = MIN_PAIRS, MOST_PAIRS
    while smallest < largest:  # power grows with the pairs: bisect for the smallest count that reaches 80%
        middle = (smallest + largest) // 2
        smallest, largest = (middle + 1, largest) if power(middle) < POWER else (smallest, middle)
    return PairsNeeded(smallest)


def evaluate(
    con: duckdb.DuckDBPyConnection, run_id: str, gates: list[Gate], baseline: str | None, family: str | None = None
) -> list[Verdict]:
    """Every gate's verdict from its kind; under `family` "holm", fails confirmed by Holm over all gates (module
    docstring)."""
    verdicts = [gate.kind.verdict(con, run_id, gate, baseline) for gate in gates]
    if family == "holm":
        confirm_fails(verdicts)
    for verdict in verdicts:
        if not verdict.sentence:
            verdict.sentence, verdict.summary = interval_sentence(verdict), interval_summary(verdict)
        if verdict.verdict == UNCONFIRMED:
            verdict.sentence += f"; {unconfirmed_reason(verdict)}"
            verdict.summary += f"; {unconfirmed_reason(verdict)}"
    return verdicts


def confirm_fails(verdicts: list[Verdict]) -> None:
    """Holm's step-down over every gate's fail p (module docstring): a fail it does not confirm is unconfirmed."""
    tested = [verdict for verdict in verdicts if verdict.p_fail is not None]
    if not tested:
        return
    adjusted = multipletests([verdict.p_fail for verdict in tested], method="holm")[1]
    for verdict, p_holm in zip(tested, adjusted, strict=True):
        verdict.p_fail_holm = float(p_holm)
        if verdict.replan is not None:  # a fail the family confirms surely: p below 0.05 / gates, Holm's first step
            verdict.needed = verdict.replan(fail_at=SIGNIFICANCE / len(tested))
        if verdict.verdict == FAIL and p_holm >= SIGNIFICANCE:
            verdict.verdict = UNCONFIRMED
            verdict.details["holm_gates"] = len(tested)


def unconfirmed_reason(verdict: Verdict) -> str:
    """Why a gate that fails its own test is not a confirmed fail: Holm's p over the family; and what would confirm
    it."""
    reason = (
        f"fails on its own (p = {verdict.p_fail:.3g}), not confirmed by Holm over "
        f"{verdict.details['holm_gates']} gates (Holm p = {verdict.p_fail_holm:.3g})"
    )
    return reason + (
        f"; {decides(verdict.needed, brief=True, unit=_unit(verdict))}" if verdict.needed.pairs is not None else ""
    )


_SHOWN = {
    PASS: "shown",
    FAIL: "shown not to be",
    UNCONFIRMED: "shown on its own not to be",
    INCONCLUSIVE: "not shown either way to be",
}


def interval_sentence(verdict: Verdict) -> str:
    """What the verdict rests on (gate.json, gate.md, JUnit): estimate, intervals, n, method, what would decide it."""
    gate, method = verdict.gate, METHODS[verdict.method]
    text = (
        f"{gate.metric} ({gate.condition}) is {_SHOWN[verdict.verdict]} {gate.kind.requirement(gate)}: estimate "
        f"{verdict.estimate:.4f}, 90% CI [{verdict.ci90[0]:.4f}, {verdict.ci90[1]:.4f}], 95% CI "
        f"[{verdict.ci95[0]:.4f}, {verdict.ci95[1]:.4f}], {verdict.pairs} {_unit(verdict)}, {verdict.instances} "
        f"instances; {set_words(method) if verdict.unit == 'name sets' else method}"
    )
    return text + (f"; {decides(verdict.needed, unit=_unit(verdict))}" if verdict.verdict == INCONCLUSIVE else "")


def interval_summary(verdict: Verdict) -> str:
    """The same in one short line for the terminal: the estimate, the interval the verdict reads, the requirement."""
    gate = verdict.gate
    level, (low, high) = (95, verdict.ci95) if verdict.verdict in (FAIL, UNCONFIRMED) else (90, verdict.ci90)
    text = (
        f"{gate.metric} ({gate.condition}) {verdict.estimate:.3f}, {level}% CI [{low:.3f}, {high:.3f}] over "
        f"{verdict.pairs} {_unit(verdict)}: {_SHOWN[verdict.verdict]} {gate.kind.requirement(gate)}"
    )
    needed = decides(verdict.needed, brief=True, unit=_unit(verdict))
    return text + (f"; {needed}" if verdict.verdict == INCONCLUSIVE else "")


def _unit(verdict: Verdict) -> str:
    """What the verdict's pairs count: name pairs, or a run over name sets' sets."""
    return verdict.unit or verdict.gate.kind.unit


def decides(needed: PairsNeeded, brief: bool = False, unit: str = "name pairs") -> str:
    """What would decide an inconclusive gate: the name pairs or sets (`unit`; `brief`: without the assumption), or
    why no count does."""
    if needed.pairs is None:
        return needed.note
    count = f"about {needed.pairs:,}" if needed.pairs <= MOST_PAIRS else f"more than {MOST_PAIRS:,}"
    return f"{count} {unit} would decide it" + ("" if brief else " with 80% power, if the truth is this estimate")


def overall(verdicts: list[Verdict]) -> str:
    """The first outcome of EXIT_CODES' order any gate has: fail, unconfirmed, inconclusive, pass."""
    outcomes = {verdict.verdict for verdict in verdicts}
    return next(outcome for outcome in EXIT_CODES if outcome in outcomes or outcome == PASS)
