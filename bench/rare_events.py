"""Issue 48 item 4 by simulation: the rare-event cells of issue 40 (bench/edges.py) and issue 29's rare grants, each
interval the product chooses against the alternatives it chooses between, at 1,000+ runs a cell.

    .venv/bin/python -m bench.rare_events --runs 1000

Per cell and method: how often the truth lies below / above the 95% interval, coverage, median width, and the runs
whose p-value of the truth disagrees with the interval (p < 0.05 exactly when the truth is outside; 0 promised).
Methods: `chosen` (the product's `share_estimate` / `difference_estimate`), `score` / `paired_t` (the variance
interval forced), `betting` (the betting interval forced; for a difference, on each pair's part of the pooled
difference), and for a share `half_event` (betting only where events < pairs / 2, the threshold issue 40 measured at
400 runs), `pair_wilson` (pair_score forced), `deff_exact` (Clopper-Pearson on the pooled counts shrunk by the design
effect) and `half_deff` / `half_score` (the product's choice with pair_score replaced by deff_exact / score where
events reach half the pairs), `no_score` / `score_power1` (the product's choice with its score intervals replaced by
pair_score / by the score interval of variance power 1). The table's last columns: the narrowest method valid in
the cell, and the narrowest valid in every cell of its kind (share or difference: a per-run rule valid whatever
world a run comes from, issue 48 item 4 as the lead read it) with the product's median width over it. The
`carried_grants` cells are the men's rare grants with a carrier pair a 12-pair run
may not draw: their runs without one are draws of the men's 2% cell (BENCHMARKS.md, issue 48 items 1 and 4).
Valid: each tail <= 0.035 (0.025 + Monte Carlo error at 1,000 runs). The runs of a cell are drawn as numpy arrays at
once; each run's estimate is the product's estimator on its arrays. Run it under the previous code
(PYTHONPATH at a checkout of it) for the "before" column: `chosen` reads only the public estimators.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import zlib
from collections.abc import Callable

import numpy as np
from scipy.special import expit, logit
from scipy.stats import beta

from probe.analysis import differences
from probe.analysis.differences import DifferenceEstimate, difference_estimate
from probe.analysis.statistics import ShareEstimate, events, prepare_betting_intervals, share_estimate

SIZES = np.array([2.0, 40.0])
VALID_TAIL = 0.035  # 0.025 + Monte Carlo error at 1,000 runs: a method above it on either tail is not valid
Sides = list[tuple[np.ndarray, np.ndarray, np.ndarray]]  # (numerator, denominator, sizes) per side, one run
Draw = Callable[[np.random.Generator, int], list[Sides]]


def _sizes(pairs: int) -> np.ndarray:
    return np.resize(SIZES, pairs)


def carried_share(pairs: int, every: int, rate: float, background: float) -> tuple[Draw, float]:
    """bench/edges.py's pooled rate: one pair in `every` at `rate`, the rest at `background`."""
    sizes = _sizes(pairs)

    def draw(rng: np.random.Generator, runs: int) -> list[Sides]:
        rates = np.where(rng.random((runs, pairs)) < 1 / every, rate, background)
        hits = rng.binomial(sizes.astype(int), rates).astype(float)
        return [[(row, sizes, sizes)] for row in hits]

    return draw, rate / every + background * (1 - 1 / every)


def carried_difference(pairs: int, every: int, women: float, men: float, background: float) -> tuple[Draw, float]:
    """bench/edges.py's pooled difference: one pair in `every` at (women, men), the rest at background."""
    sizes = _sizes(pairs)

    def draw(rng: np.random.Generator, runs: int) -> list[Sides]:
        carries = rng.random((runs, pairs)) < 1 / every
        hits = [
            rng.binomial(sizes.astype(int), np.where(carries, rate, background)).astype(float) for rate in (women, men)
        ]
        return [[(first, sizes, sizes), (second, sizes, sizes)] for first, second in zip(*hits, strict=True)]

    return draw, (women - men) / every


def rate_difference(pairs: int, women: float, men: float, pooled: bool) -> tuple[Draw, float]:
    """bench/edges.py's women's rate minus men's in every pair, pooled or as a mean of pair values."""
    sizes = _sizes(pairs)

    def draw(rng: np.random.Generator, runs: int) -> list[Sides]:
        hits = [rng.binomial(sizes.astype(int), rate, (runs, pairs)).astype(float) for rate in (women, men)]
        if pooled:
            return [[(first, sizes, sizes), (second, sizes, sizes)] for first, second in zip(*hits, strict=True)]
        ones = np.ones(pairs)
        return [
            [(first / sizes, ones, sizes), (second / sizes, ones, sizes)] for first, second in zip(*hits, strict=True)
        ]

    return draw, women - men


def _grant_arrays(rng: np.random.Generator, runs: int, pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """Issue 29's rare grants (bench/pair_worlds.py): women 5% vs men 2%, a shared pair effect (sd 0.8), 48 answers
    per side less 0-80% refusals by pair. (hits, answered) of shape (2, runs, pairs)."""
    effect = 0.8 * rng.standard_normal((runs, pairs))
    answered = rng.binomial(48, 1 - rng.uniform(0.0, 0.8, (runs, pairs)), size=(2, runs, pairs))
    rates = np.array([0.05, 0.02])[:, None, None]
    hits = rng.binomial(answered, expit(logit(rates) + effect))
    return hits.astype(float), answered.astype(float)


def rare_grants(pairs: int, side: int | None) -> tuple[Draw, float]:
    """A side's rate (0: women, 1: men) or their difference (None) in issue 29's rare grants."""

    def draw(rng: np.random.Generator, runs: int) -> list[Sides]:
        hits, answered = _grant_arrays(rng, runs, pairs)
        chosen = [0, 1] if side is None else [side]
        return [[(hits[s, run], answered[s, run], answered[s, run]) for s in chosen] for run in range(runs)]

    hits, answered = _grant_arrays(np.random.default_rng(29), 200, 1000)
    rates = hits.sum(axis=(1, 2)) / answered.sum(axis=(1, 2))
    return draw, float(rates[0] - rates[1] if side is None else rates[side])


def carried_grants(pairs: int, every: int, rate: float) -> tuple[Draw, float]:
    """The men's side of issue 29's rare grants with one pair in `every` at `rate` instead (a carrier): at 12 pairs
    no carrier is drawn in (1 - 1 / every)^12 of runs, and those runs look like the men's 2% cell."""
    men_draw, men = rare_grants(pairs, 1)

    def draw(rng: np.random.Generator, runs: int) -> list[Sides]:
        samples = men_draw(rng, runs)
        carries = rng.random((runs, pairs)) < 1 / every
        out = []
        for sides, carried in zip(samples, carries, strict=True):
            hits, answered, _ = sides[0]
            hits = np.where(carried, rng.binomial(answered.astype(int), rate), hits).astype(float)
            out.append([(hits, answered, answered)])
        return out

    return draw, rate / every + men * (1 - 1 / every)


CELLS: dict[str, tuple[Draw, float]] = {
    "share, one pair in 24 at 0.3, background 0.01, 70 pairs": carried_share(70, 24, 0.3, 0.01),
    "share, same, background 0.005, 70 pairs": carried_share(70, 24, 0.3, 0.005),
    "share, one in 24 at 0.3, background 0.01, 20 pairs": carried_share(20, 24, 0.3, 0.01),
    "share, one in 12 at 0.5, 0.01 elsewhere, 70 pairs": carried_share(70, 12, 0.5, 0.01),
    "share, pairs all or nothing: one in 100 at 1, 70 pairs": carried_share(70, 100, 1.0, 0.0),
    "share, pairs all or nothing: one in 30 at 1, 70 pairs": carried_share(70, 30, 1.0, 0.0),
    "share, pairs all or nothing: one in 10 at 1, 20 pairs": carried_share(20, 10, 1.0, 0.0),
    "share, pairs all or nothing: one in 10 at 1, 70 pairs": carried_share(70, 10, 1.0, 0.0),
    "difference 0.3 vs 0.1 in one pair in 12, 20 pairs": carried_difference(20, 12, 0.3, 0.1, 0.01),
    "difference 8% vs 4%, 12 pairs, mean of pairs": rate_difference(12, 0.08, 0.04, pooled=False),
    "difference 8% vs 4%, 12 pairs, pooled": rate_difference(12, 0.08, 0.04, pooled=True),
    "rare grants: men's 2%, 12 pairs": rare_grants(12, 1),
    "rare grants: men's 2%, 20 pairs": rare_grants(20, 1),
    "rare grants: women's 5%, 12 pairs": rare_grants(12, 0),
    "rare grants: men's, but one pair in 12 at 0.5, 12 pairs": carried_grants(12, 12, 0.5),
    "rare grants: men's, but one pair in 8 at 0.25, 12 pairs": carried_grants(12, 8, 0.25),
    "rare grants: men's, but one pair in 6 always yes, 12 pairs": carried_grants(12, 6, 1.0),
    "share, one in 12 at 0.5, 0.02 elsewhere, 12 pairs": carried_share(12, 12, 0.5, 0.02),
    "rare grants: the gap 5% - 2%, 12 pairs": rare_grants(12, None),
    "rare grants: the gap 5% - 2%, 20 pairs": rare_grants(20, None),
}


def _forced_share(estimate: ShareEstimate, side: tuple[np.ndarray, ...], method: str) -> ShareEstimate:
    """The share with its interval forced to `method` (score, or betting on the pairs' rates)."""
    numerator, denominator, _ = side
    used = denominator > 0
    weights = denominator[used] / denominator[used].max()
    values = tuple(numerator[used] / denominator[used]) if method == "betting" else ()
    return dataclasses.replace(
        estimate, method=method, values=values, weights=tuple(weights) if values else (), betting_bounds={}
    )


@dataclasses.dataclass(frozen=True)
class DesignEffectExact:
    """Clopper-Pearson on the pooled counts shrunk by the design effect: trials = p(1-p) / the score interval's
    variance at the estimate (the spread between pairs, at least the binomial floor), events = p x trials; the
    p-value is the same exact test (the interval keeps what it does not reject)."""

    events: float
    trials: float

    @classmethod
    def of(cls, estimate: ShareEstimate) -> DesignEffectExact:
        p = estimate.value
        variance = max(estimate.variance, p * (1 - p) * estimate.floor_scale)
        trials = p * (1 - p) / variance
        return cls(p * trials, trials)

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        alpha, x, n = 1 - confidence, self.events, self.trials
        return float(beta.ppf(alpha / 2, x, n - x + 1)), float(beta.ppf(1 - alpha / 2, x + 1, n - x))

    def p_value(self, null: float) -> float:
        x, n = self.events, self.trials
        below, above = 1 - beta.cdf(null, x + 1, n - x), beta.cdf(null, x, n - x + 1)
        return float(min(1.0, 2 * min(below, above)))


SHARE_METHODS = (
    "chosen",
    "score",
    "betting",
    "half_event",
    "pair_wilson",
    "deff_exact",
    "half_deff",
    "half_score",
    "no_score",
    "score_power1",
)


@dataclasses.dataclass(frozen=True)
class PowerOneScore(ShareEstimate):
    """The score interval with the binomial's variance function p(1-p) (power 1, not 1.5) scaled to the spread
    between pairs, floored at the binomial variance: its test and interval are the same (`_variance_at`)."""

    def _variance_at(self, share: float) -> float:
        binomial = share * (1 - share)
        spread = self.variance / max(self.value * (1 - self.value), 1e-300)
        return max(spread * binomial, binomial * self.floor_scale)


def _power_one(estimate: ShareEstimate) -> ShareEstimate:
    fields = {field.name: getattr(estimate, field.name) for field in dataclasses.fields(estimate)}
    return PowerOneScore(**{**fields, "method": "score", "betting_bounds": {}})


def _share_methods(sides: Sides) -> dict[str, ShareEstimate | DesignEffectExact]:
    """The product's choice, the intervals it chooses between forced, and the alternatives tried: the design-effect
    exact interval forced; today's choice with pair_score replaced (by it or by the score interval) wherever events
    reach half the pairs; today's choice with the score interval replaced by pair_score (`no_score`) or by the score
    interval of variance power 1 (`score_power1`) wherever it chooses score."""
    side = sides[0]
    chosen = share_estimate(*side)
    if chosen.method == "no_events":
        return dict.fromkeys(SHARE_METHODS, chosen)
    forced = {method: _forced_share(chosen, side, method) for method in ("score", "betting")}
    few = events(chosen.value, *side) < chosen.pairs / 2
    exact = DesignEffectExact.of(chosen)
    replaced = chosen.method == "pair_score" and not few
    return {
        "chosen": chosen,
        **forced,
        "half_event": forced["betting" if few else "score"],
        "pair_wilson": _pair_wilson(chosen, side),
        "deff_exact": exact,
        "half_deff": exact if replaced else chosen,
        "half_score": forced["score"] if replaced else chosen,
        "no_score": _pair_wilson(chosen, side) if chosen.method == "score" else chosen,
        "score_power1": _power_one(chosen) if chosen.method == "score" else chosen,
    }


def _pair_wilson(estimate: ShareEstimate, side: tuple[np.ndarray, ...]) -> ShareEstimate:
    """The Wilson-type score interval over the pairs' effective number (Kish, of the pairs' weights) with the largest
    variance a value in [0, 1] of mean p can have, p(1-p) (Bhatia-Davis): no spread estimate at all."""
    weights = side[1][side[1] > 0]
    effective = weights.sum() ** 2 / np.sum(weights**2)
    return dataclasses.replace(estimate, method="score", variance=0.0, floor_scale=1 / effective, betting_bounds={})


def _difference_methods(sides: Sides) -> dict[str, DifferenceEstimate]:
    chosen = difference_estimate(*sides)
    if not chosen.estimable or chosen._combined():
        return dict.fromkeys(("chosen", "paired_t", "betting"), chosen)
    paired = dataclasses.replace(chosen, method="paired_t", mapped=None, scale=1.0)
    used = np.logical_or(sides[0][1] > 0, sides[1][1] > 0)
    mapped, scale = differences._mapped_differences(chosen.value, sides, used, chosen.instances)
    betting = dataclasses.replace(chosen, method="betting", mapped=mapped, scale=scale)
    return {"chosen": chosen, "paired_t": paired, "betting": betting}


def _chosen(sides: Sides) -> dict[str, ShareEstimate | DifferenceEstimate]:
    return {"chosen": share_estimate(*sides[0]) if len(sides) == 1 else difference_estimate(*sides)}


def cell_table(draw: Draw, truth: float, runs: int, seed: int, only_chosen: bool) -> dict[str, dict[str, float]]:
    """Per method: truth below / above, coverage, median width, p-value disagreements (a missing interval is a
    miss on coverage, not on either tail)."""
    samples = draw(np.random.default_rng(seed), runs)
    methods = _chosen if only_chosen else lambda s: _share_methods(s) if len(s) == 1 else _difference_methods(s)
    per_run = [methods(s) for s in samples]
    shares = [
        e if isinstance(e, ShareEstimate) else getattr(e, "mapped", None) for run in per_run for e in run.values()
    ]
    prepare_betting_intervals(e for e in shares if e is not None)
    table = {}
    for method in per_run[0]:
        below = above = missing = disagree = 0
        widths = []
        for run in per_run:
            estimate = run[method]
            interval = estimate.interval()
            if interval is None:
                missing += 1
                continue
            below += truth < interval[0] - 1e-9
            above += truth > interval[1] + 1e-9
            widths.append(interval[1] - interval[0])
            outside = not interval[0] - 1e-6 <= truth <= interval[1] + 1e-6
            inside = interval[0] + 1e-6 <= truth <= interval[1] - 1e-6
            p_value = estimate.p_value(truth)
            rejected = (1.0 if p_value is None else p_value) < 0.05
            disagree += (outside and not rejected) or (inside and rejected)
        table[method] = {
            "below": below / runs,
            "above": above / runs,
            "coverage": 1 - (below + above + missing) / runs,
            "width": float(np.median(widths)) if widths else float("nan"),
            "mean_width": float(np.mean(widths)) if widths else float("nan"),
            "disagree": disagree,
        }
    return table


def _valid(row: dict[str, float]) -> bool:
    return max(row["below"], row["above"]) <= VALID_TAIL


def _cell(row: dict[str, float]) -> str:
    return f"{row['below']:.3f} / {row['above']:.3f}, {row['width']:.3f}" + ("" if _valid(row) else " (not valid)")


def print_tables(tables: dict[str, dict[str, dict[str, float]]]) -> None:
    """Per cell and method: below / above, median width; the narrowest method valid in that cell, and the
    narrowest valid in every cell of its kind (share or difference: a per-run rule valid whatever world a run is
    from), with the product's width over it."""
    methods = list(dict.fromkeys(method for table in tables.values() for method in table))
    everywhere = {
        method: all(_valid(table[method]) for table in tables.values() if method in table) for method in methods
    }
    print("| cell | " + " | ".join(methods) + " | narrowest valid here | narrowest valid in all cells | chosen / it |")
    print("|---|" + "---:|" * (len(methods) + 3))
    for name, table in tables.items():
        cells = [_cell(table[method]) if method in table else "-" for method in methods]
        here = min((m for m in table if _valid(table[m])), key=lambda m: table[m]["width"], default="none")
        best = min((m for m in table if everywhere[m]), key=lambda m: table[m]["width"])
        ratio = table["chosen"]["width"] / table[best]["width"]
        print(f"| {name} | " + " | ".join(cells) + f" | {here} | {best} ({table[best]['width']:.3f}) | {ratio:.2f} |")
    print()
    for method in methods:
        kind = [table[method] for table in tables.values() if method in table]
        invalid, disagree = sum(not _valid(row) for row in kind), sum(row["disagree"] for row in kind)
        print(
            f"- {method}: not valid in {invalid} of {len(kind)} cells; p disagrees with the interval in {disagree} runs"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--chosen", action="store_true", help="only the product's choice (for the code before)")
    parser.add_argument("--only", default="", help="only the cells whose name contains this text")
    args = parser.parse_args()
    started = time.process_time()
    tables = {
        name: cell_table(draw, truth, args.runs, zlib.crc32(name.encode()), args.chosen)
        for name, (draw, truth) in CELLS.items()
        if args.only in name
    }
    print_tables(tables)
    print(f"\nCPU {time.process_time() - started:.0f} s")


if __name__ == "__main__":
    main()
