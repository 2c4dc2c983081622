"""Mirror or amplify: each occupation's woman's share of single-subject picks set against the workforce's % women.

Per condition and occupation the model's share is the occupation-scope `female_share` (its value and interval as
analyze() computed them: the mean over name pairs of the pair's order-balanced share) beside the BLS share of women
(table `workforce`). Across occupations:

- `spearman` and `pearson`: the rank and linear correlations of model share and workforce share, with Fisher z
  intervals over the occupations (probe/analysis/correlations.py: the formula's, read through the jackknife from 12
  occupations). They estimate the population correlations of shares measured with the run's number of pairs: pair
  noise lowers them (more pairs, higher correlations);
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
from probe.analysis.correlations import FORMULA_METHODS, correlation_fits, correlations
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
METHODS = {**FORMULA_METHODS, "slope": SLOPE_METHOD, "adjusted_slope": ADJUSTED_METHOD}
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
        estimate, low, high = (float(part[0]) for part in found[name][:3])
        if pairs < MIN_PAIRS:  # the project's one minimum of pairs for an interval: the estimates alone
            low = high = np.nan
        rows.append(
            base
            | {
                "statistic": name,
                "estimate": estimate,
                "ci_low": low,
                "ci_high": high,
                "method": str(found[name][3][0]),
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


def fits(values: np.ndarray, x: np.ndarray) -> dict[str, tuple[np.ndarray, ...]]:
    """(estimate, ci_low, ci_high, method) of each statistic for each of R runs at once (the bench draws thousands):
    a correlation's method says per run whether its interval went through the jackknife.

    `values`: R x occupations x pairs (order-balanced shares) or R x occupations x pairs x name orders; `x`: R x
    occupations, the logit workforce shares. Every occupation has at least one share.
    """
    orders = values if values.ndim == 4 else None
    balanced = _mean_present(values, axis=3) if orders is not None else values
    share = _mean_present(balanced, axis=2)
    n = np.isfinite(share).sum(axis=1)
    found = correlation_fits(share, x)
    design = np.stack([np.ones_like(x), x], axis=-1)[:, :, None, :]
    found["slope"] = (*slope_interval(balanced[..., None], design, n), np.full(len(n), SLOPE_METHOD))
    if orders is not None:
        position = np.broadcast_to(np.array([1.0, -1.0])[None, None, :, None], (*x.shape, 2, 1))
        design = np.concatenate([np.broadcast_to(design, (*x.shape, 2, 2)), position], axis=-1)
        found["adjusted_slope"] = (*slope_interval(orders, design, n), np.full(len(n), ADJUSTED_METHOD))
    return found


def _mean_present(values: np.ndarray, axis: int) -> np.ndarray:
    """The mean over `axis` of the values present (NaN where none is)."""
    count = (~np.isnan(values)).sum(axis=axis)
    return np.where(count > 0, np.nansum(values, axis=axis) / np.maximum(count, 1), np.nan)


def slope_df(occupations: np.ndarray | int, parameters: int = 2) -> np.ndarray | int:
    """The degrees of freedom of a slope's t interval: occupations - the fit's parameters (2 for the slope, 3 for
    the position-adjusted one), at least 1; a reader of the stored interval rescales it with the same t."""
    return np.maximum(occupations - parameters, 1)


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
