"""The report's workforce section: does the model mirror or amplify who does each job (probe/analysis/workforce.py)?

report.json `workforce` (DESIGN.md section 12): for the reported condition the occupations (model share with its
interval beside the workforce share), n_occupations, spearman, pearson, slope and adjusted_slope (the slope with the
position in the fit; each estimate, ci_low, ci_high, method, verdict), the estimand, a sentence, the occupations
gendered most beyond the workforce, and the same per condition under `by_condition`. A run over name sets compares
each contrast the source has shares for (sex; each pair of race/ethnicity categories) by the people's own categories
under `contrasts`, its sex contrast the headline. The figure: model share against workforce share, identity line,
fitted slope with its band.
"""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np
import pandas as pd
from scipy import special

from probe.analysis.statistics import MIN_PAIRS
from probe.analysis.workforce import BOUNDS, MIN_VERDICT_OCCUPATIONS, STATISTICS
from probe.common.vocabulary import CONDITIONS
from probe.report.data import clean, order_index, records
from probe.store.snapshot import shipped_workforce

REPORTED_CONDITION = "baseline"  # no attributes: the name and the occupation alone, the closest to the census
BEYOND_SHOWN = 5
LABELLED = 5  # departures labelled in the figure
CONTRAST_KEYS = ["attribute", "category_a", "category_b"]
SEX_SPLIT = "the workforce's gender segregation"
ESTIMAND = (
    "population-averaged slope: the shares averaged over {unit} and both name orders, so position bias (the "
    "first-named person picked more often) pulls it towards 0 and can alone make it flatten; the position-adjusted "
    "slope fits the position and is the slope without it"
)
OCCUPATION_FIELDS = [
    "occupation",
    "soc_code",
    "model_share",
    "ci_low",
    "ci_high",
    "workforce_share",
    "departure",
    "versus",
]


def _statistic(rows: pd.DataFrame, name: str) -> dict[str, Any] | None:
    found = rows[rows["statistic"] == name]
    if found.empty:  # the position-adjusted slope of a scan or of a run analysed before it existed
        return None
    return {key: clean(found.iloc[0][key]) for key in ("estimate", "ci_low", "ci_high", "method", "verdict")}


def _interval(statistic: dict[str, Any]) -> str:
    if statistic["estimate"] is None:  # a correlation of shares that do not vary
        return "not defined (the model's shares do not vary)"
    if statistic["ci_low"] is None:
        return f"{statistic['estimate']:.2f}"
    return f"{statistic['estimate']:.2f} (95% CI {statistic['ci_low']:.2f} to {statistic['ci_high']:.2f})"


def _sentence(statistics: dict[str, Any], n: int, split: str, unit: str) -> str:
    """The finding: the slope and its reading, the position-adjusted slope beside it, the rank correlation."""
    slope, spearman, adjusted = statistics["slope"], statistics["spearman"], statistics.get("adjusted_slope")
    if slope["estimate"] is None:
        return f"Too few occupations with a workforce share ({n}) or {unit} for the comparison."
    if slope["ci_low"] is None:
        return (
            f"Over {n} occupations the amplification slope is {slope['estimate']:.2f} and the rank correlation "
            f"{spearman['estimate']:.2f}, with no interval and no reading: fewer than {MIN_PAIRS} {unit}."
        )
    rank = f"rank correlation {_interval(spearman)}"
    if slope["verdict"] is None:
        return (
            f"Over {n} occupations the amplification slope is {_interval(slope)}, with no reading: fewer than "
            f"{MIN_VERDICT_OCCUPATIONS} occupations (there the slope is biased upwards by a few percent and "
            f"cannot tell 1.5 from 1); {rank}."
        )
    reading = {
        "amplifies": f"the model exaggerates {split}",
        "flattens": f"the model follows {split} less than the workforce does",
        "inconclusive": "this run cannot tell mirroring from amplifying or flattening",
    }[slope["verdict"]]
    beside = f"; without position bias (the position in the fit) {_interval(adjusted)}" if adjusted else ""
    return f"Over {n} occupations the amplification slope is {_interval(slope)}: {reading}{beside}; {rank}."


def _condition_entry(fit: pd.DataFrame, occupations: pd.DataFrame, split: str, unit: str) -> dict[str, Any]:
    statistics = {name: _statistic(fit, name) for name in STATISTICS}
    n = int(fit["n_occupations"].iloc[0])
    beyond = occupations[occupations["versus"] == "more"]
    beyond = beyond.assign(size=-beyond["departure"].abs()).sort_values(["size", "occupation"])
    return {
        "occupations": records(occupations[OCCUPATION_FIELDS]),
        "n_occupations": n,
        "pairs": int(fit["pairs"].iloc[0]),
        **statistics,
        "estimand": ESTIMAND.format(unit=unit),
        "min_verdict_occupations": MIN_VERDICT_OCCUPATIONS,
        "finding": _sentence(statistics, n, split, unit),
        "beyond": records(beyond[OCCUPATION_FIELDS].head(BEYOND_SHOWN)),
    }


def _comparison(fit: pd.DataFrame, occupations: pd.DataFrame, split: str, unit: str) -> dict[str, Any]:
    """The reported condition's entry with every condition's under `by_condition` (`unit`: what the pairs count)."""
    conditions = sorted(set(fit["condition"]), key=lambda c: order_index(CONDITIONS, c))
    by_condition = {
        condition: _condition_entry(
            fit[fit["condition"] == condition], occupations[occupations["condition"] == condition], split, unit
        )
        for condition in conditions
    }
    reported = REPORTED_CONDITION if REPORTED_CONDITION in by_condition else conditions[0]
    return {"condition": reported, **by_condition[reported], "by_condition": by_condition}


def main_comparison(fit: pd.DataFrame) -> pd.Series:
    """The rows of a run's headline comparison: the woman's share (a run over name pairs: attribute NULL; a run over
    name sets: its sex contrast, else its first contrast)."""
    if fit["attribute"].isna().all():
        return fit["attribute"].isna()
    keys = fit[CONTRAST_KEYS].drop_duplicates().sort_values(CONTRAST_KEYS)
    sex = keys[keys["attribute"] == "sex"]
    first = (sex if not sex.empty else keys).iloc[0]
    return (fit[CONTRAST_KEYS] == first).all(axis=1)


def workforce_section(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any] | None:
    """report.json's `workforce`: None where the run has no comparison (analysed before it existed). A run over name
    sets has one comparison per contrast the source has shares for (`contrasts`); the headline is its sex contrast."""
    fit = con.execute("SELECT * EXCLUDE (run_id) FROM workforce_fit WHERE run_id = ?", [run_id]).df()
    if fit.empty:
        return None
    occupations = con.execute(
        "SELECT * EXCLUDE (run_id) FROM workforce_occupations WHERE run_id = ? ORDER BY occupation", [run_id]
    ).df()
    source = fit["source"].dropna().iloc[0] if fit["source"].notna().any() else shipped_workforce()["source"]
    if fit["attribute"].isna().all():
        return {**_comparison(fit, occupations, SEX_SPLIT, "name pairs"), "source": citation(con, source)}
    contrasts = []
    for key, rows in fit.groupby(CONTRAST_KEYS, sort=True):
        labels = dict(zip(CONTRAST_KEYS, key, strict=True))
        own = (occupations[CONTRAST_KEYS] == pd.Series(labels)).all(axis=1)
        split = f"the workforce's split between {labels['category_a']} and {labels['category_b']} workers"
        contrasts.append({**labels, **_comparison(rows, occupations[own], split, "name sets")})
    main = fit[main_comparison(fit)].iloc[0]
    headline = next(entry for entry in contrasts if all(entry[k] == main[k] for k in CONTRAST_KEYS))
    return {**headline, "source": citation(con, source), "contrasts": contrasts}


def workforce_words(section: dict[str, Any] | None) -> dict[str, str]:
    """The words the section's captions use for its headline comparison: the woman and the share of women on a run
    over name pairs or a sex contrast, the contrast's own categories on another contrast; the unit its pairs count."""
    unit = "name sets" if section and section.get("category_a") else "name pairs"
    if not section or section.get("attribute") in (None, "sex"):
        return {
            "unit": unit,
            "picked": "the woman",
            "workers": "the share of women among those who do the job",
            "exaggerates": "which jobs are women's or men's",
            "beyond": "Gendered more than the workforce",
        }
    a, b = section["category_a"], section["category_b"]
    return {
        "unit": unit,
        "picked": f"the {a} person",
        "workers": f"the share of {a} workers among the job's {a} and {b} workers",
        "exaggerates": f"which jobs are {a} workers' or {b} workers'",
        "beyond": f"Split between {a} and {b} workers more than the workforce",
    }


def citation(con: duckdb.DuckDBPyConnection, source: str) -> str:
    """The citation of labour-statistics source `source`, as the database holds it (workforce_sources)."""
    [(text,)] = con.execute("SELECT citation FROM workforce_sources WHERE source = ?", [source]).fetchall()
    return text


def figure_workforce(section: dict[str, Any] | None) -> str | None:
    """Model share against workforce share: identity line, the fitted slope with its band, departures labelled."""
    if not section or not section["occupations"] or section["slope"]["estimate"] is None:
        return None
    from probe.report.figures import _figure_uri, new_figure

    rows = pd.DataFrame(section["occupations"])
    fig = new_figure(6.0, 5.0)
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], color="#8C8C8C", linestyle="--", linewidth=1, label="mirrors the workforce")
    grid = np.linspace(*BOUNDS, 200)
    x, share = special.logit(grid), rows["model_share"].to_numpy(float)
    intercept = _intercept(
        share, special.logit(np.clip(rows["workforce_share"].to_numpy(float), *BOUNDS)), section["slope"]["estimate"]
    )
    slope = section["slope"]
    if slope["ci_low"] is not None:  # no band below MIN_PAIRS name pairs
        band = [special.expit(intercept + b * x) for b in (slope["ci_low"], slope["ci_high"])]
        ax.fill_between(grid, np.minimum(*band), np.maximum(*band), color="#D55E00", alpha=0.15, linewidth=0)
    ax.plot(grid, special.expit(intercept + slope["estimate"] * x), color="#D55E00", label="fitted slope")
    below = (share - rows["ci_low"].fillna(rows["model_share"])).clip(lower=0)
    above = (rows["ci_high"].fillna(rows["model_share"]) - share).clip(lower=0)
    ax.errorbar(
        rows["workforce_share"],
        share,
        yerr=[below, above],
        fmt="o",
        color="#0072B2",
        markersize=4,
        elinewidth=0.8,
        alpha=0.8,
    )
    for row in rows.assign(size=-rows["departure"].abs()).sort_values("size").head(LABELLED).itertuples():
        ax.annotate(
            row.occupation,
            (row.workforce_share, row.model_share),
            fontsize=8,
            xytext=(4, 4),
            textcoords="offset points",
        )
    labels = ("women in the workforce (BLS 2022)", "woman picked")
    if section.get("category_a") and section.get("attribute") != "sex":  # a run over name sets without a sex contrast
        a, b = section["category_a"], section["category_b"]
        labels = (f"{a} among {a} and {b} workers", f"{a} person picked")
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel=labels[0], ylabel=f"{labels[1]} by the model ({section['condition']})")
    ax.legend(loc="upper left", frameon=False, fontsize=8)
    return _figure_uri(fig)


def _intercept(share: np.ndarray, x: np.ndarray, slope: float) -> float:
    """The intercept of the quasi-binomial fit at the given slope (its estimating equation in a by bisection)."""
    low, high = -20.0, 20.0
    for _ in range(60):
        middle = (low + high) / 2
        if np.nansum(share - special.expit(middle + slope * x)) > 0:
            low = middle
        else:
            high = middle
    return (low + high) / 2
