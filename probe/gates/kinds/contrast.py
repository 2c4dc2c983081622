"""`kind = "contrast"` (DESIGN.md section 11): a run over name sets' contrasts held within `margin` of no difference,
by the contrasts' own estimators over name sets (probe/analysis/contrasts.py). Keys: `contrast` (two categories,
`["male x Black", "male x White"]`, in either order) or `attribute` (every contrast of it, `"race_ethnicity"`), and
`margin` (default 0.1). The condition names the finding: a stage-2 condition its preference (the share of picks of
the alphabetically first category, band 0.5 +- margin; with `question = "kway"` the K-way choice's, of the two
categories' top picks), `stage1` its grant gap (band 0 +- margin).

Pass: every chosen contrast's 90% interval inside the band (an intersection-union test: no adjustment). Fail: a
contrast's interval at 1 - 0.05 / k (k chosen contrasts: Bonferroni) entirely outside the band; p_fail = k x the test
of the band's edge nearer the estimate, so the interval lies outside exactly where p_fail < 0.05. Otherwise
inconclusive, with the sets that would decide the binding contrast (normal approximation from its 95% interval, as
the impact_ratio gate's). The numbers shown are the failing contrast's, else the one nearest to failing.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import duckdb
from scipy import stats

from probe.analysis.binomial import POWER, SIGNIFICANCE
from probe.analysis.contrasts import CONTRAST_METHOD, CONTRAST_NULLS, Contrast, contrast_estimates, kway_counts
from probe.analysis.differences import p_beside
from probe.analysis.statistics import MIN_PAIRS
from probe.analysis.stored import stored_counts
from probe.common.errors import UserError
from probe.common.vocabulary import CONDITIONS, STAGE1_CONDITION
from probe.gates.gate import FAIL, INCONCLUSIVE, PASS, Gate, GateKind, PairsNeeded, Verdict
from probe.gates.keys import Key, margin
from probe.gates.verdicts import MOST_PAIRS

DEFAULT_MARGIN = 0.1  # a preference within 40-60%, a grant gap within 10 points


def _contrast(value: Any, metric: str | None, where: str) -> tuple[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 2 or not all(isinstance(v, str) and v.strip() for v in value):
        raise UserError(f'{where}: key \'contrast\' must be two categories, e.g. ["male x Black", "male x White"]')
    return tuple(sorted(value))  # type: ignore[return-value]


def _attribute(value: Any, metric: str | None, where: str) -> str | None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise UserError(
            f"{where}: key 'attribute' must name an attribute of the run's names ('sex', "
            "'race_ethnicity', 'sex x race_ethnicity', ...)"
        )
    return value


def _question(value: Any, metric: str | None, where: str) -> str:
    if value not in QUESTIONS:
        raise UserError(f"{where}: key 'question' must be one of {', '.join(QUESTIONS)} (got {value!r})")
    return value


# The stage-2 question a gate reads: the two-person contests' preference or the K-way choice's top picks
QUESTIONS = {"pairs": "preference", "kway": "kway_preference"}


def _metric(gate: Gate) -> str:
    return "grant_gap" if gate.condition == STAGE1_CONDITION else QUESTIONS[gate.settings["question"]]


class ContrastGate(GateKind):
    name = "contrast"
    keys = (
        Key("contrast", _contrast, required=False),
        Key("attribute", _attribute, required=False),
        Key("margin", margin, required=False, default=DEFAULT_MARGIN),
        Key("question", _question, required=False, default="pairs"),
    )
    takes_metric = False
    methods: ClassVar[dict[str, str]] = {"contrast": CONTRAST_METHOD}
    unit: ClassVar[str] = "name sets"

    def conditions(self, metric: str | None) -> tuple[str, ...]:
        return (STAGE1_CONDITION, *CONDITIONS)

    def check(self, settings: dict[str, Any], metric: str | None, where: str) -> None:
        if (settings.get("contrast") is None) == (settings.get("attribute") is None):
            raise UserError(
                f"{where}: a contrast gate takes one of the keys 'contrast' (two categories) or "
                "'attribute' (every contrast of it)"
            )

    def verdict(self, con: duckdb.DuckDBPyConnection, run_id: str, gate: Gate, baseline: str | None) -> Verdict:
        return contrast_verdict(con, run_id, gate)

    def requirement(self, gate: Gate) -> str:
        finding = {"grant_gap": "grant gap", "preference": "preference", "kway_preference": "K-way preference"}
        return f"a {finding[_metric(gate)]} within {CONTRAST_NULLS[_metric(gate)]:g} +- {gate.settings['margin']:g}"


def contrast_verdict(con: duckdb.DuckDBPyConnection, run_id: str, gate: Gate) -> Verdict:
    """The gate's verdict on the chosen contrasts of the run (module docstring)."""
    metric = _metric(gate)
    counts = {table: stored_counts(con, run_id, table) for table in ("contrast_counts", "grant_counts")}
    kway = kway_counts(stored_counts(con, run_id, "impact_counts")) if metric == "kway_preference" else None
    estimates = contrast_estimates(counts["contrast_counts"], counts["grant_counts"], kway)
    pair, attribute = gate.settings.get("contrast"), gate.settings.get("attribute")
    chosen = {
        key: estimate
        for key, estimate in estimates.items()
        if key[0] == gate.condition and key[4] == metric and (key[1] == attribute if attribute else key[2:4] == pair)
    }
    if not chosen:
        known = sorted({key[1] for key in estimates} | {c for key in estimates for c in key[2:4]})
        raise UserError(
            f"gate {gate.name!r}: run {run_id!r} has no contrast {list(pair) if pair else attribute!r} "
            f"in condition {gate.condition} (its attributes and categories: "
            f"{', '.join(known) or 'none: not a run over name sets'})"
        )
    null, width = CONTRAST_NULLS[metric], gate.settings["margin"]
    band = (null - width, null + width)
    k = len(chosen)
    adjusted = 1 - SIGNIFICANCE / k
    sets = min(estimate.pairs for estimate in chosen.values())
    rows = {key: _row(estimate, band, adjusted, k) for key, estimate in chosen.items()}
    if any(row["ci90"] is None for row in rows.values()):
        return Verdict(
            gate,
            INCONCLUSIVE,
            f"{_label(next(iter(chosen)))}: no interval from {sets} name sets "
            f"({MIN_PAIRS} or more per contrast are needed)",
            band=band,
            pairs=sets,
            needed=PairsNeeded(None, f"{sets} name sets: a plan needs a run of {MIN_PAIRS} or more"),
            summary=f"{_label(next(iter(chosen)))}: no interval from {sets} name sets",
        )
    failing = [key for key, row in rows.items() if row["outside"]]
    passing = all(band[0] < row["ci90"][0] and row["ci90"][1] < band[1] for row in rows.values())
    verdict = FAIL if failing else PASS if passing else INCONCLUSIVE
    shown = (
        min(failing, key=lambda key: rows[key]["p_fail"])
        if failing
        else max(rows, key=lambda key: max(band[0] - rows[key]["ci90"][0], rows[key]["ci90"][1] - band[1]))
    )
    row, estimate = rows[shown], chosen[shown]
    said = {PASS: "shown", FAIL: "shown not to be", INCONCLUSIVE: "not shown either way to be"}[verdict]
    sentence = (
        f"{_label(shown)} is {said} {gate.kind.requirement(gate)}: estimate {estimate.value:.4f} (90% CI "
        f"{_text(row['ci90'])}, {adjusted:.1%} CI {_text(row['ci_adjusted'])}), {k} contrasts over "
        f"{estimate.pairs} name sets; {CONTRAST_METHOD}"
    )
    level, read = (f"{adjusted:.1%}", row["ci_adjusted"]) if verdict == FAIL else ("90%", row["ci90"])
    summary = (  # the terminal's line: it printed none
        f"{_label(shown)} {estimate.value:.3f}, {level} CI {_text(read)} over {estimate.pairs} name sets: {said} "
        f"{gate.kind.requirement(gate)}"
    )
    needed = _sets_needed(estimate, band, k)
    if verdict == INCONCLUSIVE and needed.pairs is not None:
        sentence += f"; about {needed.pairs} name sets would decide it with 80% power, if the truth is this estimate"
    return Verdict(
        gate,
        verdict,
        sentence,
        estimate.value,
        row["ci90"],
        row["ci_adjusted"],
        band,
        min(row["p_fail"] for row in rows.values()),
        pairs=estimate.pairs,
        instances=estimate.instances,
        method="contrast",
        needed=needed,
        summary=summary,
        details={
            "contrasts": {
                _label(key): {"estimate": chosen[key].value, "ci90": row["ci90"], "p_fail": row["p_fail"]}
                for key, row in rows.items()
            }
        },
    )


def _row(estimate: Any, band: tuple[float, float], adjusted: float, comparisons: int) -> dict[str, Any]:
    """A contrast's 90% and Bonferroni intervals, whether the latter lies outside the band, and its p_fail."""
    ci_adjusted = estimate.interval(adjusted)
    value = estimate.value
    outside = ci_adjusted is not None and (ci_adjusted[0] > band[1] or ci_adjusted[1] < band[0])
    edge = band[1] if value > band[1] else band[0] if value < band[0] else None
    p_value = p_beside(estimate, edge, adjusted) if edge is not None else None
    return {
        "ci90": estimate.interval(0.90),
        "ci_adjusted": ci_adjusted,
        "outside": outside,
        "p_fail": 1.0 if p_value is None else min(1.0, comparisons * p_value),
    }


def _sets_needed(estimate: Any, band: tuple[float, float], comparisons: int) -> PairsNeeded:
    """Sets at which the contrast's interval leaves the band's nearer edge with 80% power, its standard error (from
    its 95% interval) shrinking as 1 / sqrt(sets)."""
    interval = estimate.interval()
    inside = band[0] < estimate.value < band[1]
    distance = min(abs(estimate.value - band[0]), abs(estimate.value - band[1]))
    if interval is None or distance == 0:
        return PairsNeeded(None, "no interval to plan from, or the estimate sits on the band's edge")
    error = (interval[1] - interval[0]) / (2 * stats.norm.ppf(0.975))
    level = 0.95 if inside else 1 - SIGNIFICANCE / (2 * comparisons)
    needed = math.ceil(estimate.pairs * ((stats.norm.ppf(level) + stats.norm.ppf(POWER)) * error / distance) ** 2)
    return PairsNeeded(min(max(needed, MIN_PAIRS), MOST_PAIRS + 1))


def _label(key: Contrast) -> str:
    condition, attribute, a, b, metric = key
    return f"{metric} {a} vs {b} ({attribute}, {condition})"


def _text(interval: tuple[float, float] | None) -> str:
    return "none" if interval is None else f"[{interval[0]:.3f}, {interval[1]:.3f}]"
