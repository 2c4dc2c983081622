"""The adverse-impact table (DESIGN.md section 11): per category its rate, the impact ratio to the highest-rate
category, the ratio's 95% interval and its test of ratio = 1, with the name set (a pair is a set of two) as the unit.

The four-fifths rule (29 CFR 1607.4(D)) and New York City's bias audits (6 RCNY 5-301) report, per category, the
selection rate (here "yes" to the binary question), or the scoring rate (the share above the median score: here
P(yes) from the exact option scores), and the impact ratio to the most-selected category; the contest rate (won the
single-subject question) is this probe's own decision.

The impact ratio of category c is its rate over the highest rate, min over k of rate_c / rate_k. Each pairwise ratio
has one procedure for its interval and p-value (`RatioEstimate`): Fieller's test of ratio = r as the linear contrast
rate_c - r rate_k = 0, with the contrast's variance read at the null (the two rates' binomial maximum likelihood
under rate_c = r rate_k, as the Miettinen-Nurminen score interval): the spread between sets (the sets' influences,
CR2-style leverage correction) moved to those rates (`RatioEstimate._variance`), never below the binomial variance
there; t with Bell-McCaffrey degrees of freedom; the interval is every r the test keeps. The impact ratio's
interval (`GroupRatios.interval`) takes the minimum of the pairwise bounds, the upper ones at 1 - 0.05 / (K - 1)
(Bonferroni over the other categories), the lower ones at 95% (the
ratio lies below the minimum of the lower ends only if it lies below its pair's with the highest population
category, issue 48): it covers the ratio to the highest population rate whichever category that is, where an
interval to the observed highest category alone undercovers (the observed highest is the luckiest of several:
0.89-0.93 at K = 8, BENCHMARKS.md "Adverse impact"). The four-fifths verdict reads the interval: shown below 0.8,
shown at or above, or undecided. Its test of ratio = 1 (`p_below`) is the Bonferroni minimum of the pairwise tests
of the categories rated above, so the interval excludes 1 exactly when p < 0.05. A category never selected keeps
a real interval [0, upper]; an unbounded end is infinite; with fewer than MIN_PAIRS sets (or too few for the
Bonferroni level: 2 x 0.5**sets above it) no interval is given and p is never below 2 * 0.5**sets.

Imported decisions (probe import decisions / bloomberg) use the same engine with the set as the unit; where a name
recurs across sets (the Bloomberg study draws 100 names per group for 1,000 rankings) the contrast's variance adds
the spread between names beyond that between single answers (V_set + V_name - V_answer, never less than V_set), so
the interval is two-way clustered by set and by name (bench/bloomberg.py: 0-20% wider on the study's data).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
from scipy import optimize, stats
from statsmodels.stats.multitest import multipletests

from probe.analysis.binomial import CONFIDENCE, SIGNIFICANCE, binomial_min_p
from probe.analysis.freedom import cluster_effect_traces
from probe.analysis.null_variance import null_variance
from probe.analysis.statistics import MIN_PAIRS, bell_mccaffrey_df, t_quantile

FOUR_FIFTHS = 0.8  # 29 CFR 1607.4(D): a selection rate under four-fifths of the highest one is adverse impact
# The four-fifths verdict read from the 95% interval (`GroupRatios.four_fifths_verdict`), beside the point flag.
BELOW, AT_OR_ABOVE, UNDECIDED = "shown below 0.8", "shown at or above 0.8", "undecided"
IMPACT_COLUMNS = [
    "condition",
    "attribute",
    "scope",
    "key",
    "category",
    "rate_kind",
    "n",
    "rate",
    "impact_ratio",
    "ci_low",
    "ci_high",
    "p_value",
    "q_value",
    "four_fifths",
    "four_fifths_verdict",
    "unknown",
]
IMPACT_METHOD = (
    "ratio to the highest rate over name sets: the minimum over the other categories of Fieller intervals of the two "
    "rates' ratio (the test of ratio = r: the t test of rate - r x other rate = 0, its variance read at that null, "
    "both rates at their binomial maximum likelihood under it (Miettinen-Nurminen): the spread between sets (CR2) "
    "moved to those rates (binomial part at the null, the part beyond it x the squared ratio of p(1 - p), the "
    "covariance x that ratio's geometric mean), at least the binomial variance; Bell-McCaffrey degrees of freedom), "
    "the lower ends at 95%, the upper "
    "ends at 1 - 0.05 / (categories - 1) (Bonferroni: only the upper end needs it); the p-value is the same "
    "Bonferroni test of ratio = 1; the four-fifths verdict reads the interval (shown below 0.8, shown at or above "
    "0.8, or undecided); q: Benjamini-Hochberg over the categories below the highest-rate one of a condition, "
    "attribute and rate kind (overall), or over occupations x those categories (per occupation or job); a finding "
    "needs q < 0.05; imported decisions whose names recur across sets: also clustered by name (two-way, "
    "Cameron-Gelbach-Miller, the names' part CR2; their df where it is 1/4+ of the variance)"
)
GROUP_COLUMNS = ["condition", "attribute", "rate_kind", "scope", "key"]  # one ratio table each
COUNT_PARTS = ("hits", "n", "unknown")
PER_KEY_SCOPES = ("occupation", "job")  # a probed run's occupations, imported decisions' jobs: q over their rows
_BESIDE = 1e-9  # relative step beside an estimate without variance
_LARGEST_RATIO = 1e6  # an upper end beyond this is unbounded (the reference rate is not shown above 0)
NAMES_BIND = 0.25  # the names' share of a ratio's variance from which their degrees of freedom bind


@dataclass(frozen=True)
class RatioEstimate:
    """rate(category) / rate(reference) over name sets: both sides' hits and usable answers per set (aligned)."""

    hits: np.ndarray
    n: np.ndarray
    reference_hits: np.ndarray
    reference_n: np.ndarray
    # where names recur across sets (imported decisions): each side's variance between names beyond that between
    # single answers (name_excess, never below 0) and the degrees of freedom of the names behind both sides
    name_excess: tuple[float, float] = (0.0, 0.0)
    name_df: float = math.nan
    _intervals: dict[float, tuple[float, float] | None] = field(default_factory=dict, repr=False, compare=False)

    @cached_property
    def _used(self) -> np.ndarray:
        return (self.n > 0) | (self.reference_n > 0)

    @cached_property
    def sets(self) -> int:
        return int(np.count_nonzero(self._used))

    @cached_property
    def _totals(self) -> tuple[float, float, float, float]:
        """Both sides' hits and usable answers over every set, summed once (the root searches ask at every
        candidate ratio)."""
        return self.hits.sum(), self.n.sum(), self.reference_hits.sum(), self.reference_n.sum()

    @cached_property
    def rates(self) -> tuple[float, float]:
        hits, total, reference_hits, reference_total = self._totals
        return hits / total, reference_hits / reference_total

    @property
    def value(self) -> float:
        rate, reference = self.rates
        return rate / reference if reference > 0 else math.nan

    @property
    def estimable(self) -> bool:
        return self.sets >= 2 and np.isfinite(self.value)

    @cached_property
    def df(self) -> float:
        """Bell-McCaffrey over sets; with recurring names whose part is at least NAMES_BIND of the variance at the
        estimate, at most the names' own (`cluster_effect_traces`: a few common names leave few). Satterthwaite's
        mix of the two dfs covered 0.93 (an underestimated names' part takes many df); the names' df always widened
        the intervals without name effects by 9% (BENCHMARKS.md, issue 48 item 5)."""
        df = bell_mccaffrey_df(self._combined[self._used])
        names = self.name_excess[0] + self.value**2 * self.name_excess[1]
        if not names > 0 or not self.name_df > 0:
            return df
        own, other, inflation = self._influences
        sets = float(((own - self.value * other) ** 2 * inflation).sum())
        return min(df, self.name_df) if names >= NAMES_BIND * (sets + names) else df

    @cached_property
    def _combined(self) -> np.ndarray:
        return self.n / self.n.sum() + self.reference_n / self.reference_n.sum()

    @cached_property
    def _influences(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per used set: its influence on the rate, on the reference rate, and 1 / (1 - leverage) (CR2-style)."""
        rate, reference = self.rates
        used = self._used
        own = ((self.hits - rate * self.n) / self.n.sum())[used]
        other = ((self.reference_hits - reference * self.reference_n) / self.reference_n.sum())[used]
        return own, other, 1 / (1 - self._combined[used] / self._combined[used].sum())

    @cached_property
    def _moments(self) -> tuple[float, float, float, float, float]:
        """The spread between sets (CR2): Var(rate), Cov(both rates), Var(reference rate); and each side's sum of
        (set's share of answers)^2 / (1 - leverage): its variance over p(1 - p) were every set all one answer."""
        own, other, inflation = self._influences
        used = self._used
        return (
            float((own**2 * inflation).sum()),
            float((own * other * inflation).sum()),
            float((other**2 * inflation).sum()),
            float(((self.n[used] / self.n.sum()) ** 2 * inflation).sum()),
            float(((self.reference_n[used] / self.reference_n.sum()) ** 2 * inflation).sum()),
        )

    def _variance(self, ratio: float) -> float:
        """Var(rate - ratio x reference rate) read at the null (`null_variance`); two-way (recurring names): plus the
        spread between names beyond that between single answers (V_set + V_name - V_answer, Cameron, Gelbach &
        Miller 2011), as observed."""
        names = self.name_excess[0] + ratio**2 * self.name_excess[1]
        return null_variance(ratio, self.rates, self._totals, self._moments, names)

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
        sets or nothing to estimate. Computed once per level (a group's interval, verdict and gate ask again)."""
        if confidence not in self._intervals:
            self._intervals[confidence] = self._interval(confidence)
        return self._intervals[confidence]

    def _interval(self, confidence: float) -> tuple[float, float] | None:
        if not self.estimable or self.sets < MIN_PAIRS or binomial_min_p(self.sets) >= 1 - confidence:
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
    highest-rate category (for display; ties go to the first in order) and the ratio of every category to every
    other with a rate above 0 (`pairs`, keyed (category, other))."""

    categories: tuple[str, ...]  # every category of the group, in order
    sets: np.ndarray  # the name sets' ids, in order
    counts: np.ndarray  # (hits / n / unknown, category, set): each category's answers per set
    rates: dict[str, float]
    reference: str | None
    pairs: dict[tuple[str, str], RatioEstimate]

    def answers(self, category: str) -> tuple[int, int]:
        """The category's usable and unknown answers over every set."""
        index = self.categories.index(category)
        return int(self.counts[1, index].sum()), int(self.counts[2, index].sum())

    def others(self, category: str) -> list[str]:
        return [other for other in self.rates if (category, other) in self.pairs]

    def value(self, category: str) -> float:
        """The impact ratio: the category's rate over the highest rate (NaN without a rate, or every rate 0)."""
        highest = max(self.rates.values(), default=0.0)
        return self.rates[category] / highest if category in self.rates and highest > 0 else math.nan

    def interval(
        self, category: str, confidence: float = CONFIDENCE, comparisons: int | None = None
    ) -> tuple[float, float] | None:
        """The ratio to the highest population rate, min over k of rate_c / rate_k (capped at 1): the minimum of the
        pairs' lower ends at `confidence` and of their upper ends at 1 - (1 - confidence) / comparisons (Bonferroni;
        default: the other categories). The lower end needs no adjustment: the ratio is below it only if its pair
        with the highest population rate is. None where a pair has none, or where the category is shown to have the
        highest rate."""
        bounds = self._bounds(category, confidence, comparisons)
        return bounds if bounds is not None and bounds[0] < bounds[1] else None

    def _bounds(self, category: str, confidence: float, comparisons: int | None) -> tuple[float, float] | None:
        """`interval`'s two ends, the lower one possibly above the upper (the category shown to have the highest
        rate); None without other categories or where a pair has no interval."""
        others = self.others(category)
        if not others:
            return None
        upper_level = 1 - (1 - confidence) / (comparisons or len(others))
        lower = [self.pairs[category, other].interval(confidence) for other in others]
        upper = [self.pairs[category, other].interval(upper_level) for other in others]
        if any(bound is None for bound in lower + upper):
            return None
        return min(bound[0] for bound in lower), min(1.0, *(bound[1] for bound in upper))

    def four_fifths_verdict(self, category: str, limit: float = FOUR_FIFTHS) -> str:
        """The four-fifths rule read from the 95% interval: shown below the limit (upper end below it), shown at or
        above it (lower end at or above it; also a category shown to have the highest rate), else undecided."""
        bounds = self._bounds(category, CONFIDENCE, None)
        if bounds is None:
            return UNDECIDED
        return BELOW if bounds[1] < limit else AT_OR_ABOVE if bounds[0] >= limit else UNDECIDED

    def p_below(self, category: str, limit: float = 1.0, comparisons: int | None = None) -> float | None:
        """The test that the ratio to the highest rate is below `limit` (a pair's ratio shown below it), Bonferroni
        as the interval: p < 1 - confidence exactly when the interval's upper end lies below `limit`."""
        others = self.others(category)
        if not others:
            return None
        tests = [
            self.pairs[category, other].p_value(limit) for other in others if self.pairs[category, other].value < limit
        ]
        tests = [p for p in tests if p is not None]
        return min(1.0, (comparisons or len(others)) * min(tests)) if tests else 1.0


def group_ratios(counts: pd.DataFrame) -> GroupRatios:
    """The ratios of one group of metrics.sql `impact_counts` rows (set_id, category, hits, n, unknown, and the
    person's name where names recur: imported decisions): each
    category's counts summed per set with numpy (a pandas pivot per group cost seconds over a run's groups)."""
    sets, set_index = np.unique(counts["set_id"].to_numpy(), return_inverse=True)
    category_index, categories = pd.factorize(counts["category"].to_numpy(object), sort=True, use_na_sentinel=False)
    table = np.zeros((len(COUNT_PARTS), len(categories), len(sets)))
    for part, column in enumerate(COUNT_PARTS):
        np.add.at(table[part], (category_index, set_index), counts[column].to_numpy(float))
    totals = table.sum(axis=2)
    names = tuple(str(category) for category in categories)
    rates = {c: totals[0, i] / totals[1, i] for i, c in enumerate(names) if totals[1, i] > 0}
    reference = max(sorted(rates), key=lambda c: rates[c]) if rates else None
    rows = {c: i for i, c in enumerate(names)}
    excess, name_traces = _name_terms(counts, rates)
    pairs = {
        (category, other): RatioEstimate(
            table[0, rows[category]],
            table[1, rows[category]],
            table[0, rows[other]],
            table[1, rows[other]],
            name_excess=(excess.get(category, 0.0), excess.get(other, 0.0)),
            name_df=_name_df([name_traces.get(category), name_traces.get(other)]),
        )
        for category in rates
        for other in rates
        if other != category and rates[other] > 0
    }
    return GroupRatios(names, sets, table, rates, reference, pairs)


def _name_df(traces: list[tuple[float, float] | None]) -> float:
    """The names' degrees of freedom over both categories of a ratio (NaN where neither has two names or more)."""
    trace, square = (sum(part[i] for part in traces if part is not None) for i in (0, 1))
    return trace**2 / square if square > 0 else math.nan


def _name_terms(counts: pd.DataFrame, rates: dict[str, float]) -> tuple[dict[str, float], dict[str, tuple]]:
    """Per category, where its names recur across sets: the variance of its rate between names beyond that between
    single answers (set x name cells), never below 0, and its names' `cluster_effect_traces`; empty without names. A
    name that never recurs adds nothing (its cluster is its answer). The names' part is CR2 (each name's squared sum
    over 1 - its share): when a few names carry most answers (Zipf-like frequencies) the plain sum is too small, and
    their own degrees of freedom (`RatioEstimate.df`) are few (BENCHMARKS.md, issue 48 item 5)."""
    if "name" not in counts:
        return {}, {}
    named = counts[counts["name"].notna() & counts["category"].isin(list(rates))]
    if named.empty or not named.duplicated(["category", "name"]).any():
        return {}, {}
    totals = named.groupby("category")["n"].sum()
    residual = (named["hits"] - named["category"].map(rates) * named["n"]) / named["category"].map(totals)
    shares = named.groupby(["category", "name"])["n"].sum().div(totals, level="category")
    leverage = shares.where(shares < 1, 0.0)  # a category with a single name: its cluster is the category
    by_name = residual.groupby([named["category"], named["name"]]).sum() ** 2
    by_cell = (residual.groupby([named["category"], named["set_id"], named["name"]]).sum() ** 2).groupby(level=[0, 2])
    excess = ((by_name - by_cell.sum()) / (1 - leverage)).groupby(level=0).sum().clip(lower=0.0)
    return excess.to_dict(), {c: cluster_effect_traces(part.to_numpy()) for c, part in shares.groupby(level=0)}


def impact_rows(counts: pd.DataFrame) -> pd.DataFrame:
    """The adverse-impact rows from metrics.sql `impact_counts` (condition, attribute, rate_kind, scope, key, set_id,
    category, hits, n, unknown): per (condition, attribute, rate kind, scope, key) each category's rate and its ratio
    to the highest rate with the interval, test and four-fifths verdict of GroupRatios; q = Benjamini-Hochberg over
    the overall rows of a condition, attribute and rate kind (its categories but the highest-rate one) and over its
    occupation rows (occupations, or an imported run's jobs, x those categories)."""
    rows, references = [], []
    if "name" in counts and counts["name"].isna().all():  # a probed run: no names recur (a test per group cost 1 s)
        counts = counts.drop(columns="name")
    for (condition, attribute, rate_kind, scope, key), group in counts.groupby(GROUP_COLUMNS):
        ratios = group_ratios(group)
        references += [category == ratios.reference for category in ratios.categories]
        for category in ratios.categories:
            interval, p_value = ratios.interval(category), ratios.p_below(category)
            answers, unknown = ratios.answers(category)
            rows.append(
                {
                    "condition": condition,
                    "attribute": attribute,
                    "scope": scope,
                    "key": key,
                    "category": category,
                    "rate_kind": rate_kind,
                    "n": answers,
                    "rate": ratios.rates.get(category, math.nan),
                    "impact_ratio": ratios.value(category),
                    "ci_low": interval[0] if interval else math.nan,
                    "ci_high": interval[1] if interval else math.nan,
                    "p_value": math.nan if p_value is None else p_value,
                    "four_fifths_verdict": ratios.four_fifths_verdict(category),
                    "unknown": unknown,
                }
            )
    table = pd.DataFrame(rows, columns=[c for c in IMPACT_COLUMNS if c != "q_value"])
    table["q_value"] = np.nan
    # the highest-rate category's own test is always 1 (no category above it): it is no hypothesis of the family
    tested = table[table["p_value"].notna() & ~pd.Series(references, index=table.index)]
    for _, group in tested.groupby(["condition", "attribute", "rate_kind", tested["scope"].isin(PER_KEY_SCOPES)]):
        table.loc[group.index, "q_value"] = multipletests(group["p_value"], alpha=SIGNIFICANCE, method="fdr_bh")[1]
    table["four_fifths"] = table["impact_ratio"] < FOUR_FIFTHS
    return table[IMPACT_COLUMNS]
