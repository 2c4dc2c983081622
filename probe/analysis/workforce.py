"""Mirror or amplify: each occupation's woman's share of single-subject picks set against the workforce's % women.

Per condition and occupation the model's share is the occupation-scope `female_share` (its value and interval as
analyze() computed them: the mean over name pairs of the pair's order-balanced share) beside the BLS share of women
(table `workforce`). Across occupations:

- `spearman` and `pearson`: the rank and linear correlations of model share and workforce share;
- `slope`: the amplification slope, b of logit(model share) = a + b logit(workforce share), fitted by quasi-binomial
  regression (logit link, one weight per occupation): 1 mirrors the workforce, above 1 exaggerates its
  segregation, 0 ignores it, below 0 reverses it. The fit's estimating equations are linear in the model's shares,
  so shares of exactly 0 or 1 need no continuity correction and the slope is unbiased however few the pairs; the
  workforce shares are bounded to [0.5%, 99.5%] (BOUNDS) so that their logit is finite.

Each interval comes from a two-way bootstrap: occupations and name pairs resampled independently (a pair is
resampled with all its occupations, an occupation with all its pairs) and every statistic refitted, so its spread
carries both the name-pair noise behind each point and the sampling of occupations. The interval is centred on the
estimate: estimate -+ z times the bootstrap standard deviation (from the interquartile range, robust to the rare
resample near separation), on Fisher's z scale for the correlations; z is the expanded critical value (Hesterberg)
for the fewer of the two units. Percentile intervals were tried and dropped: resampling pairs adds pair noise, which
lowers resampled correlations, so their percentiles sit below the estimate (coverage 0.25 at 300 occupations).
The correlations are those of shares measured with the run's number of pairs: pair
noise lowers them (more pairs, higher correlations); the slope has no such dependence. `python -m bench --workforce`
shows the coverage.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special, stats

from probe.analysis.resampling import BOOTSTRAP_REPLICATES, SEED, expanded_tail
from probe.analysis.statistics import MIN_PAIRS

BOUNDS = (0.005, 0.995)
MIN_OCCUPATIONS = 4
STATISTICS = ("spearman", "pearson", "slope")
FIT_COLUMNS = ["condition", "statistic", "estimate", "ci_low", "ci_high", "n_occupations", "pairs", "method",
               "verdict"]  # fmt: skip
OCCUPATION_COLUMNS = ["condition", "occupation", "soc_code", "model_share", "ci_low", "ci_high", "method",
                      "workforce_share", "departure", "versus"]  # fmt: skip
METHOD = (
    f"two-way bootstrap: occupations and name pairs resampled independently ({BOOTSTRAP_REPLICATES} resamples), "
    "every statistic refitted; estimate -+ z x bootstrap SD (Fisher z for correlations, z expanded for the fewer "
    "units); slope: quasi-binomial logit fit "
    "of the model's share on the logit of the workforce share (bounded to 0.5-99.5%)"
)
_IQR_PER_SD = 1.349  # the interquartile range of a normal distribution in standard deviations
_CHUNK = 250  # replicates resampled at once (memory: chunk x occupations x pairs)
_NEWTON_STEPS = 30


def workforce_rows(
    pair_shares: pd.DataFrame, occupation_shares: pd.DataFrame, workforce: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(fit rows, occupation rows) of every condition.

    `pair_shares`: index (condition, occupation), one column per pair_id, the pair's order-balanced share (NaN where
    the pair has no valid answer); `occupation_shares`: the occupation-scope female_share metrics rows (condition,
    key, value, ci_low, ci_high, method); `workforce`: occupation, soc_code, pct_women of the run's occupations.
    """
    shares = workforce.dropna(subset=["pct_women"]).set_index("occupation")
    fits, occupations = [], []
    for condition, group in occupation_shares.groupby("condition", sort=True):
        rows = group.set_index("key").join(shares, how="inner").dropna(subset=["value"])
        if rows.empty:
            continue
        share = rows["pct_women"] / 100
        occupations.append(pd.DataFrame({
            "condition": condition, "occupation": rows.index, "soc_code": rows["soc_code"],
            "model_share": rows["value"], "ci_low": rows["ci_low"], "ci_high": rows["ci_high"],
            "method": rows["method"], "workforce_share": share, "departure": rows["value"] - share,
            "versus": versus_workforce(rows["ci_low"], rows["ci_high"], share),
        }))  # fmt: skip
        matrix = pair_shares.loc[condition].reindex(rows.index)
        fits += fit_rows(condition, matrix.to_numpy(float), share.to_numpy(float))
    occupation_frame = pd.concat(occupations, ignore_index=True) if occupations else pd.DataFrame()
    return pd.DataFrame(fits, columns=FIT_COLUMNS), occupation_frame.reindex(columns=OCCUPATION_COLUMNS)


def versus_workforce(ci_low: pd.Series, ci_high: pd.Series, share: pd.Series) -> np.ndarray:
    """'more' where the interval lies beyond the workforce share on its majority's side (the model genders the job
    more than the workforce), 'less' where it lies on the other side, 'as' where it holds the workforce share."""
    female_side = share >= 0.5
    above, below = ci_low > share, ci_high < share
    more = (female_side & above) | (~female_side & below)
    less = (female_side & below) | (~female_side & above)
    return np.select([more, less], ["more", "less"], "as")


def fit_rows(condition: str, values: np.ndarray, workforce_share: np.ndarray) -> list[dict]:
    """The three statistics of one condition with their two-way bootstrap intervals (no estimate below
    MIN_OCCUPATIONS occupations or 2 pairs; no interval or verdict below MIN_PAIRS pairs)."""
    occupations, pairs = values.shape
    base = {"condition": condition, "n_occupations": occupations, "pairs": pairs, "method": METHOD}
    x = special.logit(np.clip(workforce_share, *BOUNDS))
    model_share = np.nanmean(values, axis=1)
    if occupations < MIN_OCCUPATIONS or pairs < 2 or np.ptp(x) == 0:
        return [base | {"statistic": name, "estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                        "verdict": None} for name in STATISTICS]  # fmt: skip
    estimates = statistics(model_share[None, :], x[None, :])
    if pairs < MIN_PAIRS:  # the project's one minimum of pairs for an interval: the estimates alone
        return [base | {"statistic": name, "estimate": float(estimates[name][0]), "ci_low": np.nan,
                        "ci_high": np.nan, "verdict": None} for name in STATISTICS]  # fmt: skip
    replicates = two_way_bootstrap(values, x)
    critical = stats.norm.isf(expanded_tail(min(occupations, pairs)) / 100)
    rows = []
    for name in STATISTICS:
        scale, back = (_identity, _identity) if name == "slope" else (_fisher_z, np.tanh)
        draws = scale(replicates[name][np.isfinite(replicates[name])])
        centre = scale(estimates[name][0])
        spread = np.subtract(*np.percentile(draws, [75, 25])) / _IQR_PER_SD if len(draws) else np.nan
        low, high = back(centre - critical * spread), back(centre + critical * spread)
        null = 1.0 if name == "slope" else 0.0
        rows.append(base | {"statistic": name, "estimate": float(estimates[name][0]), "ci_low": float(low),
                            "ci_high": float(high), "verdict": verdict(name, low, high, null)})  # fmt: skip
    return rows


def _identity(value):
    return value


def _fisher_z(r):
    return np.arctanh(np.clip(r, -1 + 1e-9, 1 - 1e-9))


def verdict(name: str, low: float, high: float, null: float) -> str:
    """What the interval shows against its null (slope 1: mirrors; a correlation 0: unrelated)."""
    above = "amplifies" if name == "slope" else "positive"
    below = "flattens" if name == "slope" else "negative"
    if low > null:
        return above
    if high < null:
        return below
    return "inconclusive"


def two_way_bootstrap(values: np.ndarray, x: np.ndarray, replicates: int = BOOTSTRAP_REPLICATES) -> dict:
    """Each statistic over `replicates` resamples of occupations and pairs, drawn independently from a fixed seed."""
    occupations, pairs = values.shape
    rng = np.random.default_rng(SEED)
    filled, present = np.nan_to_num(values), (~np.isnan(values)).astype(float)
    results: dict[str, list[np.ndarray]] = {name: [] for name in STATISTICS}
    for start in range(0, replicates, _CHUNK):
        size = min(_CHUNK, replicates - start)
        rows = rng.integers(0, occupations, size=(size, occupations))
        weights = rng.multinomial(pairs, np.full(pairs, 1 / pairs), size=size).astype(float)
        total = np.einsum("bop,bp->bo", filled[rows], weights)
        count = np.einsum("bop,bp->bo", present[rows], weights)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = total / count
        for name, value in statistics(share, x[rows]).items():
            results[name].append(value)
    return {name: np.concatenate(parts) for name, parts in results.items()}


def statistics(share: np.ndarray, x: np.ndarray) -> dict[str, np.ndarray]:
    """Spearman, Pearson and the amplification slope of each row (occupations with a NaN share left out)."""
    used = ~np.isnan(share)
    return {
        "spearman": _pearson(stats.rankdata(share, axis=1, nan_policy="omit"),
                             stats.rankdata(np.where(used, x, np.nan), axis=1, nan_policy="omit"), used),
        "pearson": _pearson(share, special.expit(x), used),
        "slope": _logit_slope(share, x, used),
    }  # fmt: skip


def _pearson(a: np.ndarray, b: np.ndarray, used: np.ndarray) -> np.ndarray:
    weight = used.astype(float)
    a, b = np.where(used, a, 0.0), np.where(used, b, 0.0)
    n = weight.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):  # a row without occupations: NaN
        ac = (a - (a * weight).sum(axis=1, keepdims=True) / n) * weight
        bc = (b - (b * weight).sum(axis=1, keepdims=True) / n) * weight
        return (ac * bc).sum(axis=1) / np.sqrt((ac**2).sum(axis=1) * (bc**2).sum(axis=1))


def _logit_slope(share: np.ndarray, x: np.ndarray, used: np.ndarray) -> np.ndarray:
    """b of the quasi-binomial fit logit(E share) = a + b x per row, by Newton's method (steps capped for rows
    near separation, whose slope then grows large rather than failing)."""
    weight = used.astype(float)
    y = np.where(used, share, 0.0)
    a = np.zeros(len(share))
    b = np.zeros(len(share))
    for _ in range(_NEWTON_STEPS):
        mu = special.expit(a[:, None] + b[:, None] * x)
        residual, curvature = weight * (y - mu), weight * mu * (1 - mu)
        g0, g1 = residual.sum(axis=1), (residual * x).sum(axis=1)
        h00, h01, h11 = curvature.sum(axis=1), (curvature * x).sum(axis=1), (curvature * x * x).sum(axis=1)
        det = h00 * h11 - h01**2
        with np.errstate(invalid="ignore", divide="ignore"):
            step_a, step_b = (h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det
        a += np.clip(np.nan_to_num(step_a), -2, 2)
        b += np.clip(np.nan_to_num(step_b), -2, 2)
    return np.where(weight.sum(axis=1) >= 2, b, np.nan)
