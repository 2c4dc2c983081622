"""Issue 48's 1,000-run tables of the impact ratio: K 2/4/8 x 7/12/20/50 sets x top rates 0.05-0.9.

    .venv/bin/python -m bench.impact_tables --runs 1000

Worlds of bench/impact.py (set and name effects, sd 0.5 each; 10 binary questions a person, 90% usable): category 0
at a population ratio of exactly 0.8 to the others, which sit at the top rate. The runs of a cell are drawn at once
and every pairwise Fieller interval of RatioEstimate is solved for all runs and pairs together (bisection on the
same test: the spread between sets as moments A, B, C (Var, Cov, Var), the binomial constrained MLE of
`constrained_rates`, Bell-McCaffrey df); `check` compares `product` with the product's `group_ratios` on runs of
every K. Methods for the low category (lower ends at 95%, upper ends at Bonferroni but for `before`):
- `product`: the variance read at the null (`null_variance`: each rate's binomial part at its null rate, the part
  beyond it x (null p(1-p) / observed p(1-p))^2, capped at every set all one answer; the covariance x the geometric
  mean of the two ratios), at least the binomial variance under the null;
- `observed`: the spread A - 2rB + r^2 C read at the observed rates, at least that binomial floor (issue 48's code
  until stats5);
- `correlated` (tried): `product` with the two sides' correlation kept (B / sqrt(AC)) instead of the covariance
  scaled: stricter on contest rates, whose binomial floor then doubles at r = 1;
- `split` (tried): `product` without the cap; `deff` (tried): each side's whole spread x its ratio (power 1, a
  constant design effect);
- `scaled` (tried): the whole spread x (floor / the binomial variance at the observed rates)^1.5;
- `power2` (tried): `product` with the covariance x both ratios (power 2, as set effects alone would scale it) and
  at most sqrt(V1 V2) of the two moved sides; `capped` (tried): `product` with that cap alone;
- `before`: both ends at Bonferroni and the Poisson floor (the code before issue 48);
- `katz`: the log ratio's delta-method interval with the same spread (CR2) and df, no floor (an alternative).
Per cell: truth below / above each method's interval, median width, and for K = 2 the impact_ratio gate's pass rate
at its limit (90% lower end, one comparison, above 0.8; <= 0.05 promised). `--methods` picks methods, `--sets` and
`--tops` cells; `--counts 2 --runs 40000` gives the K = 2 cells alone at a Monte Carlo error of +-0.0011 on the gate;
`--contests` the contest-rate worlds (`contest_cell`: product, observed, correlated, power2, capped).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pandas as pd
from scipy import special, stats

from bench.impact import ANSWERS, NAME_SD, SET_SD
from bench.impact_verdicts import low_rate
from probe.analysis.binomial import CONFIDENCE
from probe.analysis.impact import FOUR_FIFTHS, MIN_PAIRS, group_ratios

BISECTIONS = 60
METHODS = ("product", "observed", "correlated", "split", "deff", "scaled", "before", "katz", "power2", "capped")
# `scaled` (tried, not the product): the spread moved to the null's rates by (floor / the binomial variance at the
# observed rates)^SPREAD_POWER, the score interval's variance function of statistics.py
SPREAD_POWER = 1.5
CONTEST_METHODS = ("product", "observed", "correlated", "power2", "capped")
LARGEST = 1e6


def simulate(rng: np.random.Generator, runs: int, sets: int, rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hits, n) of shape (runs, K, sets), drawn as bench/impact.py's `simulate` draws one run."""
    size = len(rates)
    effects = rng.normal(0, SET_SD, (runs, 1, sets)) + rng.normal(0, NAME_SD, (runs, size, sets))
    chance = special.expit(special.logit(rates)[None, :, None] + effects)
    n = rng.binomial(ANSWERS, 0.9, (runs, size, sets))
    return rng.binomial(n, chance).astype(float), n.astype(float)


class Pairs:
    """Every run's pairwise ratio tests (category c over k) as arrays of shape (runs, pairs)."""

    def __init__(self, hits: np.ndarray, n: np.ndarray, first: np.ndarray, second: np.ndarray) -> None:
        h, m, hk, mk = hits[:, first], n[:, first], hits[:, second], n[:, second]  # (runs, pairs, sets)
        self.H, self.N, self.Hk, self.Nk = h.sum(-1), m.sum(-1), hk.sum(-1), mk.sum(-1)
        self.p, self.q = self.H / self.N, self.Hk / self.Nk
        used = (m > 0) | (mk > 0)
        self.sets = used.sum(-1)
        combined = np.where(used, m / self.N[..., None] + mk / self.Nk[..., None], 0.0)
        own = np.where(used, (h - self.p[..., None] * m) / self.N[..., None], 0.0)
        other = np.where(used, (hk - self.q[..., None] * mk) / self.Nk[..., None], 0.0)
        inflation = 1 / (1 - combined / combined.sum(-1, keepdims=True))
        self.A, self.B, self.C = ((x * y * inflation).sum(-1) for x, y in ((own, own), (own, other), (other, other)))
        self.clustered = (
            (np.where(used, m / self.N[..., None], 0.0) ** 2 * inflation).sum(-1),
            (np.where(used, mk / self.Nk[..., None], 0.0) ** 2 * inflation).sum(-1),
        )
        total = combined.sum(-1)
        leverage = combined / total[..., None]
        weight = np.where(used, 1 / (total[..., None] ** 2 * (1 - leverage)), 0.0)
        squares = (weight**2 * combined**2).sum(-1) - 2 * (weight**2 * combined**3).sum(-1) / total
        squares += (weight * combined**2).sum(-1) ** 2 / total**2
        self.df = (1 / total) ** 2 / squares
        with np.errstate(divide="ignore", invalid="ignore"):
            self.value = self.p / self.q

    def constrained(self, ratio: np.ndarray, binomial: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Both rates under rate = ratio x reference rate: the binomial constrained MLE (`constrained_rates`), or the
        Poisson one (before issue 48)."""
        c = self.H + self.Hk
        if binomial:
            a, b = ratio * (self.N + self.Nk), ratio * self.N + self.H + self.Nk + ratio * self.Hk
            root = 2 * c / (b + np.sqrt(np.maximum(b * b - 4 * a * c, 0.0)))
            reference = np.where(c > 0, np.minimum(root, 1.0), 0.0)
        else:
            reference = c / (ratio * self.N + self.Nk)
        return np.minimum(ratio * reference, 1.0), reference

    def variance(self, ratio: np.ndarray, method: str) -> np.ndarray:
        """Var(rate - ratio x reference rate) under `method` (see the module's docstring)."""
        rate, reference = self.constrained(ratio, method != "before")
        own_null, other_null = rate * (1 - rate) / self.N, reference * (1 - reference) / self.Nk
        floor = own_null + ratio**2 * other_null
        spread = self.A - 2 * ratio * self.B + ratio**2 * self.C
        if method in ("observed", "before"):
            return np.maximum(spread, floor)
        own, other = self.p * (1 - self.p) / self.N, self.q * (1 - self.q) / self.Nk
        with np.errstate(divide="ignore", invalid="ignore"):
            g_own = np.where(own > 0, own_null / own, 0.0)
            g_other = np.where(other > 0, other_null / other, 0.0)
            if method == "scaled":
                both = own + ratio**2 * other
                return np.maximum(np.where(both > 0, spread * (floor / both) ** SPREAD_POWER, spread), floor)
            if method == "deff":
                null = self.A * g_own - 2 * ratio * self.B * np.sqrt(g_own * g_other) + ratio**2 * self.C * g_other
                return np.maximum(null, floor)
            own_side = own_null + np.maximum(self.A - own, 0.0) * g_own**2
            other_side = other_null + np.maximum(self.C - other, 0.0) * g_other**2
            if method == "split":  # no cap: the overdispersion moved without bound
                covariance = self.B * np.sqrt(g_own * g_other)
            else:  # product (`variance_at`): at most every set all one answer
                own_side = np.maximum(own_null, np.minimum(own_side, rate * (1 - rate) * self.clustered[0]))
                other_side = np.maximum(
                    other_null, np.minimum(other_side, reference * (1 - reference) * self.clustered[1])
                )
                covariance = self.B * np.sqrt(g_own * g_other)
                if method == "correlated":  # the two sides' correlation kept instead
                    correlation = np.where(self.A * self.C > 0, self.B / np.sqrt(self.A * self.C), 0.0)
                    covariance = correlation * np.sqrt(own_side * other_side)
                if method == "power2":  # set effects' covariance: x both ratios (power 2), at most sqrt(V1 V2)
                    covariance = self.B * g_own * g_other
                if method in ("power2", "capped"):
                    bound = np.sqrt(own_side * other_side)
                    covariance = np.clip(covariance, -bound, bound)
        return np.maximum(own_side - 2 * ratio * covariance + ratio**2 * other_side, floor)

    def _excess(self, ratio: np.ndarray, critical: np.ndarray, method: str) -> np.ndarray:
        return (self.p - ratio * self.q) ** 2 - critical**2 * self.variance(ratio, method)

    def interval(self, confidence: float, method: str = "product") -> tuple[np.ndarray, np.ndarray]:
        """RatioEstimate.interval for every run and pair (NaN where it gives none)."""
        critical = stats.t.ppf(1 - (1 - confidence) / 2, self.df)
        step = 1e-9 * np.maximum(self.value, 1.0)
        inner = np.full(self.value.shape, np.nan)
        for candidate in (self.value - step, self.value + step, self.value):  # the first that holds wins
            holds = (candidate >= 0) & (self._excess(candidate, critical, method) < 0)
            inner = np.where(holds, candidate, inner)
        valid = (self.sets >= MIN_PAIRS) & (2 * 0.5**self.sets < 1 - confidence) & np.isfinite(self.value)
        valid &= np.isfinite(inner)
        inner = np.where(valid, inner, 1.0)
        zero_kept = self._excess(np.zeros_like(inner), critical, method) <= 0
        low = self._bisect(np.zeros_like(inner), inner, critical, method, rising=False)
        low = np.where(zero_kept, 0.0, low)
        high = np.maximum(inner, 1.0)
        for _ in range(21):  # doubling to LARGEST, as the product's search
            grow = self._excess(high, critical, method) <= 0
            high = np.where(grow, high * 2, high)
        unbounded = high > LARGEST
        high = self._bisect(inner, np.minimum(high, LARGEST * 2), critical, method, rising=True)
        high = np.where(unbounded, np.inf, high)
        return np.where(valid, low, np.nan), np.where(valid, high, np.nan)

    def _bisect(self, low: np.ndarray, high: np.ndarray, critical: np.ndarray, method: str, rising: bool) -> np.ndarray:
        """The root of the excess between low and high (kept inside at `high` when falling, at `low` when rising)."""
        for _ in range(BISECTIONS):
            middle = (low + high) / 2
            kept = self._excess(middle, critical, method) < 0
            if rising:
                low, high = np.where(kept, middle, low), np.where(kept, high, middle)
            else:
                low, high = np.where(kept, low, middle), np.where(kept, middle, high)
        return (low + high) / 2

    def katz(self, confidence: float) -> tuple[np.ndarray, np.ndarray]:
        """exp(log ratio -+ t se), se from the same spread between sets (the delta method), no floor."""
        with np.errstate(divide="ignore", invalid="ignore"):
            variance = self.A / self.p**2 - 2 * self.B / (self.p * self.q) + self.C / self.q**2
            half = stats.t.ppf(1 - (1 - confidence) / 2, self.df) * np.sqrt(variance)
            return self.value * np.exp(-half), self.value * np.exp(half)


def low_category(pairs: Pairs, count: int, method: str) -> tuple[np.ndarray, np.ndarray]:
    """The low category's (category 0, pairs 0..K-2) impact-ratio interval per run: min of the pairs' lower ends,
    min(1, the pairs' upper ends); NaN where a pair has none."""
    upper_level = 1 - (1 - CONFIDENCE) / (count - 1)
    if method == "katz":
        low, _ = pairs.katz(CONFIDENCE)
        _, high = pairs.katz(upper_level)
    else:
        low, _ = pairs.interval(upper_level if method == "before" else CONFIDENCE, method)
        _, high = pairs.interval(upper_level, method)
    own = slice(0, count - 1)
    lower, upper = low[:, own].min(axis=1), np.minimum(1.0, high[:, own].min(axis=1))
    missing = np.isnan(lower) | np.isnan(upper) | (lower >= upper)
    return np.where(missing, np.nan, lower), np.where(missing, np.nan, upper)


def pair_indices(count: int) -> tuple[np.ndarray, np.ndarray]:
    """(c, k) for c != k, category 0's pairs first."""
    pairs = [(c, k) for c in range(count) for k in range(count) if c != k]
    return np.array([c for c, _ in pairs]), np.array([k for _, k in pairs])


def cell(
    rng: np.random.Generator, count: int, sets: int, top: float, runs: int, draws: np.ndarray, methods: tuple
) -> dict:
    rates = np.array([low_rate(top, FOUR_FIFTHS, draws), *[top] * (count - 1)])
    hits, n = simulate(rng, runs, sets, rates)
    pairs = Pairs(hits, n, *pair_indices(count))
    figures = {}
    for method in methods:
        low, high = low_category(pairs, count, method)
        shown = ~np.isnan(low)
        figures[method] = {
            "below": float(np.mean(shown & (low > FOUR_FIFTHS))),
            "above": float(np.mean(shown & (high < FOUR_FIFTHS))),
            "missing": float(np.mean(~shown)),
            "width": float(np.median(np.where(shown, high - low, np.nan)[shown])) if shown.any() else math.nan,
        }
    if count == 2:
        for method in methods:
            if method != "katz":
                gate_low, _ = pairs.interval(0.90, method)
                figures[method]["gate"] = float(np.mean(gate_low[:, 0] > FOUR_FIFTHS))
    return figures


def contest_cell(rng: np.random.Generator, sets: int, contests: int, sd: float, rate: float, runs: int) -> dict:
    """Contest rates: two categories whose wins are complementary within a set (one won = the other lost), `contests`
    a set, a set effect of sd `sd` on the logit scale; per method the tails and median width of the 95% interval of
    the first category's ratio to the second (truth: the population rates' ratio, capped at 1)."""
    chance = special.expit(special.logit(rate) + rng.normal(0, sd, 400_000)).mean()
    truth = min(chance / (1 - chance), 1.0)
    won = rng.binomial(contests, special.expit(special.logit(rate) + rng.normal(0, sd, (runs, sets)))).astype(float)
    pairs = Pairs(np.stack([won, contests - won], axis=1), np.full((runs, 2, sets), float(contests)), *pair_indices(2))
    figures = {}
    for method in CONTEST_METHODS:
        low, high = low_category(pairs, 2, method)
        shown = ~np.isnan(low)
        figures[method] = {
            "below": float(np.mean(shown & (low > truth + 1e-12))),
            "above": float(np.mean(shown & (high < truth - 1e-12))),
            "width": float(np.median((high - low)[shown])) if shown.any() else math.nan,
        }
    return figures


def contests(runs: int, seed: int) -> None:
    """`--contests`: contest_cell over 6/12/20 sets x 2/6 contests a set x set sd 0.5/1.5 x rates 0.15/0.35/0.5."""
    rng = np.random.default_rng(seed)
    print(f"| sets | contests a set | set sd | rate | runs | {' | '.join(CONTEST_METHODS)} |")
    print("|---:|---:|---:|---:|---:|" + "---:|" * len(CONTEST_METHODS))
    for sets in (6, 12, 20):
        for per_set in (2, 6):
            for sd in (0.5, 1.5):
                for rate in (0.15, 0.35, 0.5):
                    f = contest_cell(rng, sets, per_set, sd, rate, runs)
                    parts = [f"{f[m]['below']:.3f} / {f[m]['above']:.3f}, {f[m]['width']:.3f}" for m in f]
                    print(f"| {sets} | {per_set} | {sd} | {rate} | {runs} | {' | '.join(parts)} |", flush=True)


def check(runs: int = 20) -> tuple[float, int]:
    """The largest difference between these intervals and the product's group_ratios on the same runs, and the
    runs whose product p-value of ratio = 1 (`p_below`) reads across 0.05 from its interval's upper end."""
    rng = np.random.default_rng(7)
    worst, disagree = 0.0, 0
    for count, sets in ((2, 12), (4, 7), (8, 20)):
        hits, n = simulate(rng, runs, sets, np.array([0.3, *[0.5] * (count - 1)]))
        low, high = low_category(Pairs(hits, n, *pair_indices(count)), count, "product")
        for run in range(runs):
            frame = pd.DataFrame(
                {
                    "set_id": np.tile(np.arange(sets), count),
                    "category": np.repeat(np.arange(count), sets).astype(str),
                    "hits": hits[run].ravel(),
                    "n": n[run].ravel(),
                    "unknown": 0.0,
                }
            )
            ratios = group_ratios(frame)
            interval = ratios.interval("0") if ratios.reference != "0" else None
            if interval is None:
                continue
            worst = max(worst, abs(interval[0] - low[run]), abs(interval[1] - high[run]))
            disagree += (ratios.p_below("0") < 0.05) != (interval[1] < 1.0)
    return worst, disagree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--counts", type=int, nargs="+", default=[2, 4, 8], help="K values (categories) to run")
    parser.add_argument("--sets", type=int, nargs="+", default=[7, 12, 20, 50], help="name sets per run")
    parser.add_argument("--tops", type=float, nargs="+", default=[0.05, 0.2, 0.5, 0.9], help="the top rates")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--seed", type=int, default=4848)
    parser.add_argument("--contests", action="store_true", help="the contest-rate worlds instead (contest_cell)")
    args = parser.parse_args()
    started = time.process_time()
    if args.contests:
        contests(args.runs, args.seed)
        print(f"\nCPU {time.process_time() - started:.0f} s")
        return
    worst, disagree = check()
    print(f"largest difference from the product's intervals (60 runs): {worst:.2e}; p disagrees: {disagree}\n")
    rng = np.random.default_rng(args.seed)
    draws = rng.normal(0, math.hypot(SET_SD, NAME_SD), 200_000)
    heads = " | ".join(f"{m}: below / above, width | gate" for m in args.methods)
    print(f"| K | sets | top rate | runs | {heads} |")
    print("|---|---:|---:|---:|" + "---:|" * len(args.methods))
    for count in args.counts:
        for sets in args.sets:
            for top in args.tops:
                f = cell(rng, count, sets, top, args.runs, draws, tuple(args.methods))
                parts = [
                    f"{f[m]['below']:.4f} / {f[m]['above']:.4f}, {f[m]['width']:.3f} | {f[m].get('gate', math.nan):.4f}"
                    for m in args.methods
                ]
                print(f"| {count} | {sets} | {top} | {args.runs} | {' | '.join(parts)} |", flush=True)
    print(f"\nCPU {time.process_time() - started:.0f} s")


if __name__ == "__main__":
    main()
