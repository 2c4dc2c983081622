"""The scan's workforce section (scan.json `workforce`, DESIGN.md section 12): over hundreds of O*NET titles the
correlations with the BLS workforce and the amplification slope get their power.

Each title's model share and interval are the scan's own (scan_results: its confidence sequence at the scan's
level); the fit is probe/analysis/workforce.py's over the titles that have a workforce share, from the scan's
order-balanced pair shares. The scan stops asking a title once it is decided, so titles differ in their pairs: the
bootstrap resamples the pairs each title has.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from probe.analysis.workforce import fit_rows, versus_workforce
from probe.report.data import clean, records
from probe.report.workforce import OCCUPATION_FIELDS
from probe.report.workforce import REPORTED_CONDITION as CONDITION  # the scan asks the baseline question only
from probe.store.snapshot import shipped_workforce


def scan_workforce(con: duckdb.DuckDBPyConnection, results: pd.DataFrame, observed: np.ndarray) -> dict | None:
    """scan.json's `workforce`; None where no scanned title has a workforce share. `results` (scan_results rows) and
    `observed` (titles x pairs) are both in soc_code order."""
    shares = con.execute(
        "SELECT soc_code, pct_women FROM workforce WHERE source = ? AND pct_women IS NOT NULL",
        [shipped_workforce()["source"]],
    ).df()
    joined = results.reset_index(drop=True).merge(shares, on="soc_code", how="left")
    has = joined["pct_women"].notna().to_numpy() & ~np.isnan(observed).all(axis=1)
    if not has.any():
        return None
    rows = joined[has]
    workforce = rows["pct_women"].to_numpy(float) / 100
    titles = pd.DataFrame(
        {
            "occupation": rows["title"],
            "soc_code": rows["soc_code"],
            "model_share": rows["share"],
            "ci_low": rows["ci_low"],
            "ci_high": rows["ci_high"],
            "workforce_share": workforce,
            "departure": rows["share"] - workforce,
            "versus": versus_workforce(rows["ci_low"], rows["ci_high"], pd.Series(workforce, index=rows.index)),
        }
    )
    fit = {row["statistic"]: row for row in fit_rows(CONDITION, observed[has], workforce)}
    occupations = records(titles[OCCUPATION_FIELDS])
    section = {"condition": CONDITION, "occupations": occupations, "n_occupations": int(has.sum())}
    for name, row in fit.items():
        section[name] = {key: clean(row[key]) for key in ("estimate", "ci_low", "ci_high", "method", "verdict")}
    return section
