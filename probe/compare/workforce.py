"""`probe compare`'s workforce section: each run's correlations with the BLS workforce and its amplification slope
(probe/analysis/workforce.py, stored by analyze()) with its occupations beside the workforce (report.json's fields,
DESIGN.md section 12), and which model amplifies most.

"Amplifies most" is said only where the largest slope exceeds the next largest by more than chance: the difference
of the two slopes with the interval of their standard errors added in quadrature (each from its own 95% two-way
bootstrap interval). Runs over the same occupations and name pairs have positively correlated slopes, so that
interval is conservative: a difference it shows is there, one it misses may still be.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import duckdb
import pandas as pd
from scipy import stats

from probe.analysis.binomial import CONFIDENCE
from probe.analysis.statistics import MIN_PAIRS
from probe.analysis.workforce import MIN_VERDICT_OCCUPATIONS
from probe.common.vocabulary import CONDITIONS
from probe.report.data import clean, records, run_record
from probe.report.workforce import OCCUPATION_FIELDS, REPORTED_CONDITION, main_comparison

STATISTICS = ("slope", "spearman", "pearson")
DIFFERENCE_METHOD = (
    "difference of two runs' slopes, standard errors (from each 95% interval) "
    "added in quadrature: conservative where the runs share occupations and {unit}"
)


def workforce_comparison(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str]) -> dict[str, Any] | None:
    """compare.json's `workforce`: None where no run has the comparison (analysed before it existed)."""
    placeholders = ", ".join("?" for _ in run_ids)
    fit = con.execute(f"SELECT * FROM workforce_fit WHERE run_id IN ({placeholders})", list(run_ids)).df()
    if fit.empty:
        return None
    fit = fit[pd.concat([main_comparison(own) for _, own in fit.groupby("run_id")]).reindex(fit.index)]  # sets: sex
    shared = set.intersection(*(set(fit.loc[fit["run_id"] == run_id, "condition"]) for run_id in run_ids))
    if not shared:
        return None
    condition = REPORTED_CONDITION if REPORTED_CONDITION in shared else min(shared, key=CONDITIONS.index)
    rows = fit[fit["condition"] == condition]
    runs = []
    for run_id in run_ids:
        own = rows[rows["run_id"] == run_id].set_index("statistic")
        entry = {
            "run_id": run_id,
            "model": run_record(con, run_id)["model"],
            "n_occupations": int(own["n_occupations"].iloc[0]),
            "pairs": int(own["pairs"].iloc[0]),
        }
        for name in STATISTICS:
            entry[name] = {
                key: clean(own.loc[name, key]) for key in ("estimate", "ci_low", "ci_high", "method", "verdict")
            }
        # the run's headline contrast (none for a run over name pairs: the woman's share); its occupations alone
        contrast = [clean(own[key].iloc[0]) for key in ("attribute", "category_a", "category_b")]
        entry["contrast"] = contrast if contrast[0] is not None else None
        occupations = con.execute(
            f"SELECT {', '.join(OCCUPATION_FIELDS)} FROM workforce_occupations WHERE run_id = ? AND condition = ? "
            "AND attribute IS NOT DISTINCT FROM ? AND category_a IS NOT DISTINCT FROM ? "
            "AND category_b IS NOT DISTINCT FROM ? ORDER BY occupation",
            [run_id, condition, *contrast],
        ).df()
        entry["occupations"] = records(occupations)
        runs.append(entry)
    over_sets = {run["contrast"] is not None for run in runs}  # a run over name sets' unit is its sets
    unit = "name pairs or sets" if len(over_sets) > 1 else "name sets" if True in over_sets else "name pairs"
    method = DIFFERENCE_METHOD.format(unit=unit)
    return {"condition": condition, "runs": runs, **amplifies_most(runs), "difference_method": method}


def amplifies_most(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the largest slope, its difference from the next largest with an interval, and a sentence."""
    # a slope without an interval (fewer than MIN_PAIRS name pairs) or below the occupations a reading needs cannot
    # be compared; nor slopes of different contrasts (a run over name sets without a sex contrast)
    fitted = sorted(
        (
            run
            for run in runs
            if run["slope"]["ci_low"] is not None and run.get("n_occupations", 0) >= MIN_VERDICT_OCCUPATIONS
        ),
        key=lambda run: -run["slope"]["estimate"],
    )
    if len(fitted) < 2:
        return {
            "amplifies_most": None,
            "difference": None,
            "finding": f"Fewer than two runs have a slope with an interval over {MIN_VERDICT_OCCUPATIONS} or more "
            f"occupations ({MIN_PAIRS} or more name pairs or sets).",
        }
    if len({str(run.get("contrast")) for run in fitted}) > 1:
        return {
            "amplifies_most": None,
            "difference": None,
            "finding": "The runs' workforce comparisons are of different contrasts: their slopes are not compared.",
        }
    first, second = fitted[:2]
    z = stats.norm.isf((1 - CONFIDENCE) / 2)
    errors = [(run["slope"]["ci_high"] - run["slope"]["ci_low"]) / (2 * z) for run in (first, second)]
    difference = first["slope"]["estimate"] - second["slope"]["estimate"]
    half = z * math.hypot(*errors)
    shown = difference - half > 0
    finding = (
        f"{first['run_id']} ({first['model']}) amplifies most: its slope exceeds {second['run_id']}'s by "
        f"{difference:.2f} (95% CI {difference - half:.2f} to {difference + half:.2f})"
        if shown
        else f"No run is shown to amplify more than the rest: the largest slope, {first['run_id']}'s, exceeds "
        f"{second['run_id']}'s by {difference:.2f} (95% CI {difference - half:.2f} to {difference + half:.2f})"
    )
    return {
        "amplifies_most": first["run_id"] if shown else None,
        "finding": finding + ".",
        "difference": {
            "estimate": difference,
            "ci_low": difference - half,
            "ci_high": difference + half,
            "versus": second["run_id"],
        },
    }
