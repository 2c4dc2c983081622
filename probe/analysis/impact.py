"""The adverse-impact table (DESIGN.md section 11): per category its rate, the impact ratio to the highest-rate
category, the ratio's 95% interval and its test of ratio = 1, with the name set (a pair is a set of two) as the unit.

The four-fifths rule (29 CFR 1607.4(D)) and New York City's bias audits (6 RCNY 5-301) report, per category, the
selection rate (here "yes" to the binary question), or the scoring rate (the share above the median score: here
P(yes) from the exact option scores), and the impact ratio to the most-selected category; the contest rate (won the
single-subject question) is this probe's own decision.

One procedure gives the interval and the p-value (`RatioEstimate`): Fieller's test of ratio = r as the linear
contrast rate_c - r rate_ref = 0, with the contrast's variance the larger of the spread between sets (the sets'
influences, CR2-style leverage correction) and the binomial variance under the null (the two rates' maximum
likelihood under rate_c = r rate_ref, as the Miettinen-Nurminen score interval); t with Bell-McCaffrey degrees of
freedom. The interval is every r the test keeps, so it excludes 1 exactly when p < 0.05; a category never selected
keeps a real interval [0, upper], the floor bounding it, and an unbounded upper end (the reference rate not shown
above 0) is infinite. With fewer than MIN_PAIRS sets no interval is given and p is never below 2 * 0.5**sets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, stats
from statsmodels.stats.multitest import multipletests

from probe.analysis.binomial import CONFIDENCE, SIGNIFICANCE, binomial_min_p
from probe.analysis.statistics import MIN_PAIRS, bell_mccaffrey_df, t_quantile

FOUR_FIFTHS = 0.8  # 29 CFR 1607.4(D): a selection rate under four-fifths of the highest one is adverse impact
IMPACT_COLUMNS = ["condition", "attribute", "scope", "key", "category", "rate_kind", "n", "rate", "impact_ratio",
                  "ci_low", "ci_high", "p_value", "q_value", "four_fifths", "unknown"]  # fmt: skip
IMPACT_METHOD = (
    "Fieller interval of the ratio over name sets: the test of ratio = r is the t test of rate - r x reference rate "
    "= 0, its variance the larger of the spread between sets (CR2) and the binomial variance under that null; t with "
    "Bell-McCaffrey degrees of freedom; the interval is every r the test keeps, the p-value the same test of r = 1; "
    "q: Benjamini-Hochberg over occupations x categories"
)
GROUP_COLUMNS = ["condition", "attribute", "rate_kind", "scope", "key"]  # one ratio table each
_BESIDE = 1e-9  # relative step beside an estimate without variance
_LARGEST_RATIO = 1e6  # an upper end beyond this is unbounded (the reference rate is not shown above 0)


@dataclass(frozen=True)
class RatioEstimate:
    """rate(category) / rate(reference) over name sets: both sides' hits and usable answers per set (aligned)."""

    hits: np.ndarray
    n: np.ndarray
    reference_hits: np.ndarray
    reference_n: np.ndarray

    @property
    def sets(self) -> int:
        return int(np.count_nonzero((self.n > 0) | (self.reference_n > 0)))

    @property
    def rates(self) -> tuple[float, float]:
        return self.hits.sum() / self.n.sum(), self.reference_hits.sum() / self.reference_n.sum()

    @property
    def value(self) -> float:
        rate, reference = self.rates
        return rate / reference if reference > 0 else math.nan

    @property
    def estimable(self) -> bool:
        return self.sets >= 2 and np.isfinite(self.value)

    @property
    def df(self) -> float:
        used = (self.n > 0) | (self.reference_n > 0)
        return bell_mccaffrey_df(self.n[used] / self.n.sum() + self.reference_n[used] / self.reference_n.sum())

    def _variance(self, ratio: float) -> float:
        """Var(rate - ratio x reference rate): the spread between sets, at least the binomial variance under the
        null rate = ratio x reference rate."""
        rate, reference = self.rates
        total, reference_total = self.n.sum(), self.reference_n.sum()
        used = (self.n > 0) | (self.reference_n > 0)
        reference_residual = self.reference_hits - reference * self.reference_n
        influence = (self.hits - rate * self.n) / total - ratio * reference_residual / reference_total
        combined = self.n / total + self.reference_n / reference_total
        leverage = combined[used] / combined[used].sum()
        spread = float(np.sum(influence[used] ** 2 / (1 - leverage))) if self.sets >= 2 else math.nan
        null_reference = min((self.hits.sum() + self.reference_hits.sum()) / (ratio * total + reference_total), 1.0)
        null_rate = min(ratio * null_reference, 1.0)
        floor = null_rate * (1 - null_rate) / total + ratio**2 * null_reference * (1 - null_reference) / reference_total
        return max(spread, floor)

    def _statistic(self, ratio: float) -> float:
        """|rate - ratio x reference rate| / its standard error: 0 where the rates agree exactly, inf where they
        differ without any variance (every set at 0 or 1)."""
        rate, reference = self.rates
        distance, variance = abs(rate - ratio * reference), self._variance(ratio)
        if distance == 0:
            return 0.0
        return distance / math.sqrt(variance) if variance > 0 else math.inf

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
        """Every ratio the test keeps at 1 - confidence (upper end inf where unbounded); None with < MIN_PAIRS
        sets or nothing to estimate."""
        if not self.estimable or self.sets < MIN_PAIRS:
            return None
        critical = t_quantile(1 - (1 - confidence) / 2, self.df)
        rate, reference = self.rates
        estimate = self.value

        def excess(ratio: float) -> float:
            return (rate - ratio * reference) ** 2 - critical**2 * self._variance(ratio)

        # a ratio the test keeps strictly: the estimate, or beside it where both rates sit at 0 or 1 (no variance
        # at the estimate itself, but the null's binomial variance just beside it)
        step = _BESIDE * max(estimate, 1.0)
        inside = [r for r in (estimate, estimate + step, estimate - step) if r >= 0 and excess(r) < 0]
        if not inside:
            return None
        inner = inside[0]
        low = 0.0 if excess(0.0) <= 0 else optimize.brentq(excess, 0.0, inner, xtol=1e-12)
        high = max(inner, 1.0)
        while excess(high) <= 0:
            high *= 2
            if high > _LARGEST_RATIO:
                return low, math.inf
        return low, optimize.brentq(excess, inner, high, xtol=1e-12)

    def p_value(self, null: float = 1.0) -> float | None:
        """The interval's own test of ratio = null, never below the sets' exact bound 2 * 0.5**sets."""
        if not self.estimable:
            return None
        return max(float(2 * stats.t.sf(self._statistic(null), self.df)), binomial_min_p(self.sets))


@dataclass(frozen=True)
class GroupRatios:
    """One (condition, attribute, rate kind, scope, key) of the table: each category's answers and rate, the
    highest-rate category (None where no category has a hit) and the other categories' ratios to it."""

    wide: pd.DataFrame  # per set: hits, n, unknown of each category
    rates: dict[str, float]
    reference: str | None
    ratios: dict[str, RatioEstimate]


def group_ratios(counts: pd.DataFrame) -> GroupRatios:
    """The ratios of one group of metrics.sql `impact_counts` rows (set_id, category, hits, n, unknown); a tie for
    the highest rate goes to the first category in order (the other is tested, at p = 1)."""
    wide = counts.pivot_table(index="set_id", columns="category", values=["hits", "n", "unknown"], aggfunc="sum",
                              fill_value=0)  # fmt: skip
    totals = wide.sum()
    rates = {c: totals["hits"][c] / totals["n"][c] for c in wide["n"].columns if totals["n"][c] > 0}
    reference = max(sorted(rates), key=lambda c: rates[c]) if rates else None
    if reference is None or rates[reference] == 0:
        return GroupRatios(wide, rates, None, {})
    ratios = {category: RatioEstimate(*(wide[part][side].to_numpy(float) for side in (category, reference)
                                        for part in ("hits", "n")))
              for category in rates if category != reference}  # fmt: skip
    return GroupRatios(wide, rates, reference, ratios)


def impact_rows(counts: pd.DataFrame) -> pd.DataFrame:
    """The adverse-impact rows from metrics.sql `impact_counts` (condition, attribute, rate_kind, scope, key, set_id,
    category, hits, n, unknown): per (condition, attribute, rate kind, scope, key) each category's rate and its ratio
    to the highest-rate category; q = Benjamini-Hochberg over the occupation rows of a condition, attribute and rate
    kind (occupations x categories)."""
    rows = []
    for (condition, attribute, rate_kind, scope, key), group in counts.groupby(GROUP_COLUMNS):
        ratios = group_ratios(group)
        totals = ratios.wide.sum()
        for category in ratios.wide["n"].columns:
            row = {"condition": condition, "attribute": attribute, "scope": scope, "key": key, "category": category,
                   "rate_kind": rate_kind, "n": int(totals["n"][category]),
                   "rate": ratios.rates.get(category, math.nan),
                   "unknown": int(totals["unknown"][category])}  # fmt: skip
            rows.append(row | _ratio_columns(ratios, category))
    table = pd.DataFrame(rows, columns=[c for c in IMPACT_COLUMNS if c != "q_value"])
    table["q_value"] = np.nan
    occupations = table[(table["scope"] == "occupation") & table["p_value"].notna()]
    for _, group in occupations.groupby(["condition", "attribute", "rate_kind"]):
        table.loc[group.index, "q_value"] = multipletests(group["p_value"], alpha=SIGNIFICANCE, method="fdr_bh")[1]
    table["four_fifths"] = table["impact_ratio"] < FOUR_FIFTHS
    return table[IMPACT_COLUMNS]


def _ratio_columns(ratios: GroupRatios, category: str) -> dict:
    """impact_ratio, its interval and p-value for one category (the reference itself: ratio 1, no test)."""
    if category == ratios.reference:
        return {"impact_ratio": 1.0, "ci_low": math.nan, "ci_high": math.nan, "p_value": math.nan}
    if category not in ratios.ratios:
        return {"impact_ratio": math.nan, "ci_low": math.nan, "ci_high": math.nan, "p_value": math.nan}
    estimate = ratios.ratios[category]
    interval = estimate.interval()
    p_value = estimate.p_value()
    return {"impact_ratio": estimate.value, "ci_low": interval[0] if interval else math.nan,
            "ci_high": interval[1] if interval else math.nan,
            "p_value": math.nan if p_value is None else p_value}  # fmt: skip
