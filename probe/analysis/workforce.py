"""Mirror or amplify: each occupation's woman's share of single-subject picks set against the workforce's % women.

Per condition and occupation the model's share is the occupation-scope `female_share` (its value and interval as
analyze() computed them: the mean over name pairs of the pair's order-balanced share) beside the BLS share of women
(table `workforce`). Across occupations:

- `spearman` and `pearson`: the rank and linear correlations of model share and workforce share, with Fisher z
  intervals over the occupations read through the jackknife (each occupation left out in turn): centred at the
  bias-corrected z, standard error the jackknife's held between 1 and 1.5 times the formula's (Pearson
  1/sqrt(n - 3); Spearman Bonett and Wright's sqrt((1 + r^2/2)/(n - 3)), r centred at most half a rank step from
  +-1). They estimate the
  population correlations of shares measured with the run's number of pairs: pair noise lowers them (more pairs,
  higher correlations);
- `slope`: the amplification slope, b of logit(model share) = a + b logit(workforce share), fitted by quasi-binomial
  regression (logit link, one weight per occupation): 1 mirrors the workforce, above 1 exaggerates its
  segregation, 0 ignores it, below 0 reverses it. Its estimand is population-averaged: the slope of the shares
  averaged over name pairs and over both name orders, so a position effect (the first-named person picked more
  often) pulls every share towards 50% and the slope towards 0 (a model that mirrors the workforce with a 1-logit
  position effect has a slope near 0.77): "flattens" can come from position bias alone;
- `adjusted_slope` (runs over name pairs): the same slope with the position in the model, logit(share in a name
  order) = a + b logit(workforce share) + c (+1 woman named first, -1 second), fitted on each occupation's share
  within each name order: the slope a model without position bias would show.

The slopes' intervals are two-way cluster-robust (Cameron, Gelbach and Miller): the estimating equations'
contributions summed per occupation and per name pair, occupation part plus pair part minus the cell part (the pair
part floored at 0), each with its small-sample factor n / (n - 1), and Student's t with (occupations - parameters)
degrees of freedom. The occupation part carries the choice of occupations and the noise behind each point, the pair
part the name pairs shared by every occupation. No verdict below MIN_VERDICT_OCCUPATIONS occupations (the reason is
printed): there the slope is biased by a few percent and cannot tell 1.5 from 1. The two-way bootstrap used before
(issue 39) was 1.2-1.55x wider than the slope's true spread. `python -m bench --only workforce` shows coverage,
widths and power.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special, stats

from probe.analysis.binomial import CONFIDENCE
from probe.analysis.statistics import MIN_PAIRS
from probe.common.vocabulary import NAME_ORDERS  # woman named first, second: position +1, -1 in the adjusted slope

BOUNDS = (0.005, 0.995)
MIN_OCCUPATIONS = 4
MIN_VERDICT_OCCUPATIONS = 12
STATISTICS = ("spearman", "pearson", "slope", "adjusted_slope")
FIT_COLUMNS = ["condition", "statistic", "estimate", "ci_low", "ci_high", "n_occupations", "pairs", "method", "verdict"]
OCCUPATION_COLUMNS = [
    "condition",
    "occupation",
    "soc_code",
    "model_share",
    "ci_low",
    "ci_high",
    "method",
    "workforce_share",
    "departure",
    "versus",
]
SLOPE_METHOD = (
    "quasi-binomial logit fit of the model's share on the logit of the workforce share (bounded to 0.5-99.5%), "
    "population-averaged over name pairs and both name orders (position bias flattens it); two-way cluster-robust "
    "interval (occupations and name pairs), Student's t with occupations - 2 df"
)
ADJUSTED_METHOD = (
    "quasi-binomial logit fit of each name order's share on the logit of the workforce share and the position "
    "(+1 woman named first, -1 second): the slope without position bias; two-way cluster-robust interval "
    "(occupations and name pairs), Student's t with occupations - 3 df"
)
CORRELATION_METHODS = {
    "spearman": "rank correlation; Fisher z interval over occupations through their jackknife: centred at the "
    "bias-corrected z, standard error the jackknife's held between 1 and 1.5 times sqrt((1 + r^2/2)/(n - 3)) "
    "(Bonett-Wright)",
    "pearson": "linear correlation; Fisher z interval over occupations through their jackknife: centred at the "
    "bias-corrected z, standard error the jackknife's held between 1 and 1.5 times 1/sqrt(n - 3)",
}
METHODS = {**CORRELATION_METHODS, "slope": SLOPE_METHOD, "adjusted_slope": ADJUSTED_METHOD}
# Runs over name sets: the source's column for each category it has shares of (the shipped spellings). A contrast of
# two categories is set against the first's share of the two categories' workers, pct_a / (pct_a + pct_b) (BLS
# reports race of any ethnicity, and Hispanic or Latino of any race: the shares overlap, as published).
CATEGORY_SHARES = {
    ("sex", "female"): "pct_women",
    ("sex", "male"): "pct_men",
    ("race_ethnicity", "Asian"): "pct_asian",
    ("race_ethnicity", "Black"): "pct_black",
    ("race_ethnicity", "Hispanic"): "pct_hispanic",
    ("race_ethnicity", "White"): "pct_white",
}
_NEWTON_STEPS = 30
# The correlations' jackknife holds occupations^2 values a run: beyond this many occupations (a bias of O(1/n) is
# then a few percent of the interval's half-width) the formula alone
JACKKNIFE_OCCUPATIONS = 2000
# The jackknife's standard error is read up to this many times the formula's: over 8 occupations it is itself noisy
# (uncapped, 0.3-3.3% of the intervals were all of [-1, 1] at a true 0.91-0.98; BENCHMARKS.md)
JACKKNIFE_CAP = 1.5


def workforce_rows(
    order_shares: pd.DataFrame, occupation_shares: pd.DataFrame, workforce: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(fit rows, occupation rows) of every condition.

    `order_shares`: index (condition, occupation, pair_id), one column per name order (NAME_ORDERS), the pair's share of
    picks of the woman in that order (NaN where it has no valid answer); `occupation_shares`: the occupation-scope
    female_share metrics rows (condition, key, value, ci_low, ci_high, method); `workforce`: occupation, soc_code,
    share (0-1) of the run's occupations.
    """
    shares = workforce.dropna(subset=["share"]).set_index("occupation")
    fits, occupations = [], []
    for condition, group in occupation_shares.groupby("condition", sort=True):
        rows = group.set_index("key").join(shares, how="inner").dropna(subset=["value"])
        if rows.empty:
            continue
        share = rows["share"]
        occupations.append(
            pd.DataFrame(
                {
                    "condition": condition,
                    "occupation": rows.index,
                    "soc_code": rows["soc_code"],
                    "model_share": rows["value"],
                    "ci_low": rows["ci_low"],
                    "ci_high": rows["ci_high"],
                    "method": rows["method"],
                    "workforce_share": share,
                    "departure": rows["value"] - share,
                    "versus": versus_workforce(rows["ci_low"], rows["ci_high"], share),
                }
            )
        )
        fits += fit_rows(condition, order_array(order_shares.loc[condition], rows.index), share.to_numpy(float))
    occupation_frame = pd.concat(occupations, ignore_index=True) if occupations else pd.DataFrame()
    return pd.DataFrame(fits, columns=FIT_COLUMNS), occupation_frame.reindex(columns=OCCUPATION_COLUMNS)


def contrast_shares(workforce: pd.DataFrame, attribute: str, category_a: str, category_b: str) -> pd.DataFrame | None:
    """occupation, soc_code and share: category_a's share of the two categories' workers (metrics.sql
    `workforce_shares` rows); None where the source has no column for either category."""
    columns = [CATEGORY_SHARES.get((attribute, category)) for category in (category_a, category_b)]
    if None in columns:
        return None
    table = workforce.assign(pct_men=100 - workforce["pct_women"])
    first, total = table[columns[0]], table[columns[0]] + table[columns[1]]
    return table[["occupation", "soc_code"]].assign(share=(first / total).where(total > 0))


def order_array(order_shares: pd.DataFrame, occupations: pd.Index) -> np.ndarray:
    """occupations x pairs x name orders (NAME_ORDERS) of one condition's `order_shares` (NaN where none)."""
    wide = order_shares.reindex(columns=list(NAME_ORDERS)).unstack("pair_id").reindex(occupations)
    pairs = wide.columns.get_level_values("pair_id").unique()
    return np.stack([wide[order].reindex(columns=pairs).to_numpy(float) for order in NAME_ORDERS], axis=2)


def versus_workforce(ci_low: pd.Series, ci_high: pd.Series, share: pd.Series) -> np.ndarray:
    """'more' where the interval lies beyond the workforce share on its majority's side (the model genders the job
    more than the workforce), 'less' where it lies on the other side, 'as' where it holds the workforce share."""
    female_side = share >= 0.5
    above, below = ci_low > share, ci_high < share
    more = (female_side & above) | (~female_side & below)
    less = (female_side & below) | (~female_side & above)
    return np.select([more, less], ["more", "less"], "as")


def fit_rows(condition: str, values: np.ndarray, workforce_share: np.ndarray) -> list[dict]:
    """The statistics of one condition with their intervals and verdicts. `values`: occupations x pairs of
    order-balanced shares, or occupations x pairs x name orders (NAME_ORDERS), which adds the position-adjusted slope.
    No estimate below MIN_OCCUPATIONS occupations or 2 pairs; no interval below MIN_PAIRS pairs; no verdict on a
    slope below MIN_VERDICT_OCCUPATIONS occupations."""
    occupations, pairs = values.shape[:2]
    names = STATISTICS if values.ndim == 3 else STATISTICS[:3]
    base = {"condition": condition, "n_occupations": occupations, "pairs": pairs}
    x = special.logit(np.clip(workforce_share, *BOUNDS))
    if occupations < MIN_OCCUPATIONS or pairs < 2 or np.ptp(x) == 0:
        return [
            base
            | {
                "statistic": name,
                "estimate": np.nan,
                "ci_low": np.nan,
                "ci_high": np.nan,
                "method": METHODS[name],
                "verdict": None,
            }
            for name in names
        ]
    found = fits(values[None], x[None])
    rows = []
    for name in names:
        estimate, low, high = (float(part[0]) for part in found[name])
        if pairs < MIN_PAIRS:  # the project's one minimum of pairs for an interval: the estimates alone
            low = high = np.nan
        rows.append(
            base
            | {
                "statistic": name,
                "estimate": estimate,
                "ci_low": low,
                "ci_high": high,
                "method": METHODS[name],
                "verdict": verdict(name, low, high, occupations),
            }
        )
    return rows


def verdict(name: str, low: float, high: float, occupations: int) -> str | None:
    """What the interval shows against its null (a slope 1: mirrors; a correlation 0: unrelated); None without an
    interval, or for a slope over fewer than MIN_VERDICT_OCCUPATIONS occupations."""
    slope = name.endswith("slope")
    if np.isnan(low) or (slope and occupations < MIN_VERDICT_OCCUPATIONS):
        return None
    null = 1.0 if slope else 0.0
    if low > null:
        return "amplifies" if slope else "positive"
    if high < null:
        return "flattens" if slope else "negative"
    return "inconclusive"


def fits(values: np.ndarray, x: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(estimate, ci_low, ci_high) of each statistic for each of R runs at once (the bench draws thousands).

    `values`: R x occupations x pairs (order-balanced shares) or R x occupations x pairs x name orders; `x`: R x
    occupations, the logit workforce shares. Every occupation has at least one share.
    """
    orders = values if values.ndim == 4 else None
    balanced = _mean_present(values, axis=3) if orders is not None else values
    share = _mean_present(balanced, axis=2)
    n = np.isfinite(share).sum(axis=1)
    left_out = leave_one_out(share, x) if share.shape[1] <= JACKKNIFE_OCCUPATIONS else {}
    found = {
        name: correlation_interval(name, value, n, left_out.get(name)) for name, value in correlations(share, x).items()
    }
    design = np.stack([np.ones_like(x), x], axis=-1)[:, :, None, :]
    found["slope"] = slope_interval(balanced[..., None], design, n)
    if orders is not None:
        position = np.broadcast_to(np.array([1.0, -1.0])[None, None, :, None], (*x.shape, 2, 1))
        design = np.concatenate([np.broadcast_to(design, (*x.shape, 2, 2)), position], axis=-1)
        found["adjusted_slope"] = slope_interval(orders, design, n)
    return found


def _mean_present(values: np.ndarray, axis: int) -> np.ndarray:
    """The mean over `axis` of the values present (NaN where none is)."""
    count = (~np.isnan(values)).sum(axis=axis)
    return np.where(count > 0, np.nansum(values, axis=axis) / np.maximum(count, 1), np.nan)


def correlations(share: np.ndarray, x: np.ndarray) -> dict[str, np.ndarray]:
    """Spearman and Pearson of each row (occupations with a NaN share left out)."""
    used = ~np.isnan(share)
    return {
        "spearman": _pearson(
            stats.rankdata(share, axis=1, nan_policy="omit"),
            stats.rankdata(np.where(used, x, np.nan), axis=1, nan_policy="omit"),
            used,
        ),
        "pearson": _pearson(share, special.expit(x), used),
    }


def leave_one_out(share: np.ndarray, x: np.ndarray) -> dict[str, np.ndarray]:
    """Spearman and Pearson of each row with each occupation left out in turn: R x occupations (NaN where that
    occupation has no share). A rank left out moves the others' ranks: those above it by 1, those tied with it by
    1/2 (mid-ranks)."""
    used = ~np.isnan(share)
    occupations = share.shape[1]
    others = used[:, None, :] & ~np.eye(occupations, dtype=bool)[None]  # R x left out x kept
    ranks = {}
    for label, values in (("share", share), ("x", np.where(used, x, np.nan))):
        rank = stats.rankdata(values, axis=1, nan_policy="omit")
        above = (values[:, :, None] < values[:, None, :]) + 0.5 * (values[:, :, None] == values[:, None, :])
        ranks[label] = rank[:, None, :] - above
    wide = (len(share) * occupations, occupations)
    found = {
        "spearman": _pearson(ranks["share"].reshape(wide), ranks["x"].reshape(wide), others.reshape(wide)),
        "pearson": _pearson(
            np.broadcast_to(share[:, None, :], others.shape).reshape(wide),
            np.broadcast_to(special.expit(x)[:, None, :], others.shape).reshape(wide),
            others.reshape(wide),
        ),
    }
    return {name: np.where(used, value.reshape(share.shape), np.nan) for name, value in found.items()}


def correlation_interval(
    name: str, r: np.ndarray, n: np.ndarray, left_out: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """r with its Fisher z interval over n occupations. Without `left_out` (R x occupations, `leave_one_out`): at
    z(r), standard error 1/sqrt(n - 3) (Spearman: Bonett-Wright's sqrt((1 + r^2/2)/(n - 3)), r first moved at most
    half its smallest step from +-1, `spearman_centre`). With it, the jackknife over occupations: centred at the
    bias-corrected n z(r) - (n - 1) mean(z(r without one)), standard error the jackknife's sqrt((n - 1)/n
    sum (z(r without one) - their mean)^2) held between that one and JACKKNIFE_CAP times it (every z read at most
    half a rank step from +-1 for Spearman), and stretched to hold r where the correction moves past it (every
    interval holds its estimate); the formula alone where a correlation without one occupation is undefined. Why:
    the shares are not bivariate normal; at a true 0.95-0.98 a rank correlation is biased low by O(1/n) and a linear
    one high, and the formula's intervals missed on one side in up to 7.6% of runs (BENCHMARKS.md)."""
    centre = spearman_centre(r, n) if name == "spearman" else np.clip(r, -1 + 1e-12, 1 - 1e-12)
    spread = np.sqrt((1 + centre**2 / 2) if name == "spearman" else 1.0) / np.sqrt(np.maximum(n - 3, 1))
    z = np.arctanh(centre)
    if left_out is not None:
        edge = spearman_centre(np.ones_like(r), n) if name == "spearman" else np.full_like(r, 1 - 1e-12)
        parts = np.arctanh(np.clip(left_out, -edge[:, None], edge[:, None]))
        present = ~np.isnan(left_out)
        m = present.sum(axis=1)
        known = np.isfinite(z) & (m == n) & np.all(np.isfinite(parts) | ~present, axis=1) & (m > 1)
        mean = np.where(present, parts, 0.0).sum(axis=1) / np.maximum(m, 1)
        squares = np.where(present, parts - mean[:, None], 0.0) ** 2
        jackknife = np.sqrt((m - 1) / np.maximum(m, 1) * squares.sum(axis=1))
        z = np.where(known, m * z - (m - 1) * mean, z)
        spread = np.where(known, np.clip(jackknife, spread, JACKKNIFE_CAP * spread), spread)
    half = stats.norm.isf((1 - CONFIDENCE) / 2) * spread
    low, high = np.tanh(z - half), np.tanh(z + half)
    if left_out is None:
        return r, low, high
    return r, np.where(known, np.minimum(low, r), low), np.where(known, np.maximum(high, r), high)


def slope_df(occupations: np.ndarray | int, parameters: int = 2) -> np.ndarray | int:
    """The degrees of freedom of a slope's t interval: occupations - the fit's parameters (2 for the slope, 3 for
    the position-adjusted one), at least 1; a reader of the stored interval rescales it with the same t."""
    return np.maximum(occupations - parameters, 1)


def spearman_centre(r: np.ndarray, n: np.ndarray) -> np.ndarray:
    """r moved at most to 1 - 6 / (n (n^2 - 1)) from +-1: half the smallest step of a rank correlation (the sum of
    squared rank differences moves by 2). Over 8 occupations every rank agrees in many runs (r = 1: z infinite, the
    interval [1, 1]); that half step gives them a real interval (coverage 0.899-0.920 -> 0.969, BENCHMARKS.md)."""
    edge = 1 - 6 / np.maximum(n * (n**2 - 1), 6.000001)
    return np.clip(r, -edge, edge)


def slope_interval(values: np.ndarray, design: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, ...]:
    """The slope (design column 1) with its two-way cluster-robust t interval (occupations - parameters df)."""
    coefficients, occupation_part, pair_part = logit_fit(values, design)
    variance = np.maximum(occupation_part[:, 1, 1], 0) + np.maximum(pair_part[:, 1, 1], 0)  # rounding below 0
    slope = coefficients[:, 1]
    half = stats.t.isf((1 - CONFIDENCE) / 2, slope_df(n, design.shape[-1])) * np.sqrt(variance)
    return slope, slope - half, slope + half


def logit_fit(values: np.ndarray, design: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The quasi-binomial fit logit(E mean share) = design . b of each run, with its sandwich's occupation part and
    pair part (pair minus cell).

    `values`: R x occupations x pairs x K shares (K observations per occupation and pair: 1, or one per name order;
    NaN where none); `design`: R x occupations x K x parameters. Each (occupation, k) is fitted on its mean over
    pairs, one weight each; Newton's method with capped steps (rows near separation grow large, not fail).
    """
    present = ~np.isnan(values)
    count = present.sum(axis=2)
    weight = (count > 0).astype(float)
    mean = np.where(count > 0, np.where(present, values, 0).sum(axis=2) / np.maximum(count, 1), 0.0)
    coefficients = np.zeros((values.shape[0], design.shape[-1]))
    for _ in range(_NEWTON_STEPS):
        mu = special.expit(np.einsum("rokj,rj->rok", design, coefficients))
        score = np.einsum("rok,rokj->rj", weight * (mean - mu), design)
        bread = np.linalg.pinv(np.einsum("rok,roki,rokj->rij", weight * mu * (1 - mu), design, design))
        coefficients += np.clip(np.nan_to_num(np.einsum("rij,rj->ri", bread, score)), -2, 2)
    mu = special.expit(np.einsum("rokj,rj->rok", design, coefficients))
    bread = np.linalg.pinv(np.einsum("rok,roki,rokj->rij", weight * mu * (1 - mu), design, design))
    residual = np.where(present, values - mu[:, :, None, :], 0.0) / np.maximum(count, 1)[:, :, None, :]
    cell = np.einsum("ropk,rokj->ropj", residual, design)  # each (occupation, pair)'s part of the score
    occupations, pairs = weight.any(axis=2).sum(axis=1), present.any(axis=(1, 3)).sum(axis=1)
    occupation_meat = _outer(cell.sum(axis=2)) * _small_sample(occupations)
    pair_meat = _outer(cell.sum(axis=1)) * _small_sample(pairs) - _outer(cell.reshape(len(cell), -1, cell.shape[-1]))
    return coefficients, bread @ occupation_meat @ bread, bread @ pair_meat @ bread


def _outer(parts: np.ndarray) -> np.ndarray:
    """Sum over units of each unit's outer product: R x units x p -> R x p x p."""
    return np.einsum("rui,ruj->rij", parts, parts)


def _small_sample(units: np.ndarray) -> np.ndarray:
    return (units / np.maximum(units - 1, 1))[:, None, None]


def statistics(share: np.ndarray, x: np.ndarray) -> dict[str, np.ndarray]:
    """Spearman, Pearson and the amplification slope of each row of shares (R x occupations), no interval."""
    design = np.stack([np.ones_like(x), x], axis=-1)[:, :, None, :]
    return {**correlations(share, x), "slope": logit_fit(share[:, :, None, None], design)[0][:, 1]}


def _pearson(a: np.ndarray, b: np.ndarray, used: np.ndarray) -> np.ndarray:
    weight = used.astype(float)
    a, b = np.where(used, a, 0.0), np.where(used, b, 0.0)
    n = weight.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):  # a row without occupations: NaN
        ac = (a - (a * weight).sum(axis=1, keepdims=True) / n) * weight
        bc = (b - (b * weight).sum(axis=1, keepdims=True) / n) * weight
        return (ac * bc).sum(axis=1) / np.sqrt((ac**2).sum(axis=1) * (bc**2).sum(axis=1))
