"""The report's workforce section: does the model mirror or amplify who does each job (probe/analysis/workforce.py)?

report.json `workforce` (DESIGN.md section 12): for the reported condition the occupations (model share with its
interval beside the workforce share), n_occupations, spearman, pearson and slope (each estimate, ci_low, ci_high,
method, verdict), a sentence, the occupations gendered most beyond the workforce, and the same per condition under
`by_condition`. The figure: model share against workforce share, identity line, fitted slope with its band.
"""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np
import pandas as pd
from scipy import special

from probe.analysis.statistics import MIN_PAIRS
from probe.analysis.workforce import BOUNDS
from probe.common.vocabulary import CONDITIONS
from probe.report.data import clean, order_index, records
from probe.store.snapshot import shipped_workforce

REPORTED_CONDITION = "baseline"  # no attributes: the name and the occupation alone, the closest to the census
BEYOND_SHOWN = 5
LABELLED = 5  # departures labelled in the figure
OCCUPATION_FIELDS = ["occupation", "soc_code", "model_share", "ci_low", "ci_high", "workforce_share", "departure",
                     "versus"]  # fmt: skip


def _statistic(rows: pd.DataFrame, name: str) -> dict[str, Any]:
    row = rows[rows["statistic"] == name].iloc[0]
    return {key: clean(row[key]) for key in ("estimate", "ci_low", "ci_high", "method", "verdict")}


def _sentence(slope: dict[str, Any], spearman: dict[str, Any], n: int) -> str:
    if slope["estimate"] is None:
        return f"Too few occupations with a workforce share ({n}) or name pairs for the comparison."
    if slope["ci_low"] is None:
        return (f"Over {n} occupations the amplification slope is {slope['estimate']:.2f} and the rank correlation "
                f"{spearman['estimate']:.2f}, with no interval and no reading: fewer than {MIN_PAIRS} name pairs.")
    interval = f"{slope['estimate']:.2f} (95% CI {slope['ci_low']:.2f} to {slope['ci_high']:.2f})"
    reading = {
        "amplifies": "the model exaggerates the workforce's gender segregation",
        "flattens": "the model genders occupations less than the workforce does",
        "inconclusive": "this run cannot tell mirroring from amplifying or flattening",
    }[slope["verdict"]]
    rank = f"rank correlation {spearman['estimate']:.2f} ({spearman['ci_low']:.2f} to {spearman['ci_high']:.2f})"
    return f"Over {n} occupations the amplification slope is {interval}: {reading}; {rank}."


def _condition_entry(fit: pd.DataFrame, occupations: pd.DataFrame) -> dict[str, Any]:
    statistics = {name: _statistic(fit, name) for name in ("spearman", "pearson", "slope")}
    n = int(fit["n_occupations"].iloc[0])
    beyond = occupations[occupations["versus"] == "more"]
    beyond = beyond.assign(size=-beyond["departure"].abs()).sort_values(["size", "occupation"])
    return {
        "occupations": records(occupations[OCCUPATION_FIELDS]),
        "n_occupations": n,
        "pairs": int(fit["pairs"].iloc[0]),
        **statistics,
        "finding": _sentence(statistics["slope"], statistics["spearman"], n),
        "beyond": records(beyond[OCCUPATION_FIELDS].head(BEYOND_SHOWN)),
    }


def workforce_section(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any] | None:
    """report.json's `workforce`: None where the run has no comparison (analysed before it existed)."""
    fit = con.execute("SELECT * EXCLUDE (run_id) FROM workforce_fit WHERE run_id = ?", [run_id]).df()
    if fit.empty:
        return None
    occupations = con.execute(
        "SELECT * EXCLUDE (run_id) FROM workforce_occupations WHERE run_id = ? ORDER BY occupation", [run_id]
    ).df()
    conditions = sorted(set(fit["condition"]), key=lambda c: order_index(CONDITIONS, c))
    by_condition = {
        condition: _condition_entry(fit[fit["condition"] == condition],
                                    occupations[occupations["condition"] == condition])
        for condition in conditions
    }  # fmt: skip
    reported = REPORTED_CONDITION if REPORTED_CONDITION in by_condition else conditions[0]
    source = fit["source"].dropna().iloc[0] if fit["source"].notna().any() else shipped_workforce()["source"]
    section = {"condition": reported, **by_condition[reported], "source": citation(con, source)}
    return {**section, "by_condition": by_condition}


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
    intercept = _intercept(share, special.logit(np.clip(rows["workforce_share"].to_numpy(float), *BOUNDS)),
                           section["slope"]["estimate"])  # fmt: skip
    slope = section["slope"]
    if slope["ci_low"] is not None:  # no band below MIN_PAIRS name pairs
        band = [special.expit(intercept + b * x) for b in (slope["ci_low"], slope["ci_high"])]
        ax.fill_between(grid, np.minimum(*band), np.maximum(*band), color="#D55E00", alpha=0.15, linewidth=0)
    ax.plot(grid, special.expit(intercept + slope["estimate"] * x), color="#D55E00", label="fitted slope")
    below = (share - rows["ci_low"].fillna(rows["model_share"])).clip(lower=0)
    above = (rows["ci_high"].fillna(rows["model_share"]) - share).clip(lower=0)
    ax.errorbar(rows["workforce_share"], share, yerr=[below, above], fmt="o", color="#0072B2", markersize=4,
                elinewidth=0.8, alpha=0.8)  # fmt: skip
    for row in rows.assign(size=-rows["departure"].abs()).sort_values("size").head(LABELLED).itertuples():
        ax.annotate(row.occupation, (row.workforce_share, row.model_share), fontsize=8, xytext=(4, 4),
                    textcoords="offset points")  # fmt: skip
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="women in the workforce (BLS 2022)",
           ylabel=f"woman picked by the model ({section['condition']})")  # fmt: skip
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
