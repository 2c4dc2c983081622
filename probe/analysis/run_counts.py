"""Everything analyze() reads from DuckDB for one run, read on the calling thread (the connection's only user): two
statistics start on a second thread as soon as their counts are read, the others once all are, while DuckDB stores
the per-instance rows (probe/analysis/metrics.py; DuckDB leaves the interpreter lock while it works, so the two use
both cores: issue 49).
"""

from __future__ import annotations

from concurrent.futures import Executor, Future
from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd

from probe.analysis.contrasts import contest_sets, over_name_sets
from probe.analysis.impact import impact_rows
from probe.analysis.pairs import heterogeneity
from probe.analysis.robustness import asked_wordings


@dataclass(frozen=True)
class RunCounts:
    """metrics.sql's counts of one run (each field the frame of the query of its name, unless said otherwise)."""

    pair_counts: pd.DataFrame
    # pooled_scope_counts (pooled_set_counts over name sets): (condition, scope, key, metric, hits, n), arrays
    pooled_counts: list[tuple]
    cells: pd.DataFrame  # female_choice_cells
    by_wording: pd.DataFrame  # wording_cells
    heterogeneity: Future[pd.DataFrame]  # pairs.heterogeneity of the wording cells by sex (none over name sets)
    impact_counts: pd.DataFrame
    adverse_impact: Future[pd.DataFrame]  # impact_rows of impact_counts
    sets: pd.DataFrame  # each contest's pair_id and set_id (a run over name pairs: none)
    wordings: list[str]  # the run's wordings in the order asked
    wording_grants: pd.DataFrame | None  # wording_grants (a run asked in two or more wordings)
    workforce: pd.DataFrame  # workforce_shares of `source`
    source: str
    contests: pd.DataFrame  # contrast_counts
    grants: pd.DataFrame  # grant_counts
    name_sets: bool  # the run asked name sets (its contests' people in run_contests), not name pairs
    instances: pd.DataFrame | None = None  # contrast_instances (runs over name sets)
    contest_cells: pd.DataFrame | None = None  # contrast_choice_cells (runs over name sets)
    contest_grants: pd.DataFrame | None = None  # contrast_wording_grants (runs over name sets in two or more wordings)


def read_counts(
    con: duckdb.DuckDBPyConnection, run_id: str, queries: dict[str, str], source: str, pool: Executor
) -> RunCounts:
    """The run's counts (metric_instances must exist: analyze() builds and drops it). The
    heterogeneity test between pairs (seconds of numpy's shuffles at 1M answers) and the adverse-impact table (a
    second of root searches) start on `pool` as soon as their counts are read, while DuckDB counts the rest."""
    params = {"run_id": run_id}
    name_sets = over_name_sets(con, run_id)
    by_wording = con.execute(queries["wording_cells"]).df()
    by_sex = by_wording.iloc[0:0] if name_sets else by_wording  # a run over name sets' slots are no sexes
    pairs_differ = pool.submit(heterogeneity, by_sex)
    impact_counts = _impact_counts(con, queries["impact_counts"], params)
    adverse_impact = pool.submit(impact_rows, impact_counts)
    con.execute(queries["scope_counts"], params)
    query, args = (queries["pooled_set_counts"], params) if name_sets else (queries["pooled_scope_counts"], None)
    pooled = con.execute(query, args).fetchnumpy()  # lists as arrays: 2x faster than tuples
    columns = (pooled[column] for column in ("condition", "scope", "key", "metric", "hits", "n"))
    pooled_counts = list(zip(*columns, strict=True))
    wordings = asked_wordings(con, run_id)
    several = len(wordings) > 1
    sets = contest_sets(con, run_id)
    by_wording_grants = con.execute(queries["contrast_wording_grants"], params).df()  # a run over name pairs: none
    return RunCounts(
        pair_counts=con.execute(queries["pair_counts"]).df(),
        pooled_counts=pooled_counts,
        cells=con.execute(queries["female_choice_cells"]).df(),
        by_wording=by_wording,
        heterogeneity=pairs_differ,
        impact_counts=impact_counts,
        adverse_impact=adverse_impact,
        sets=sets,
        wordings=wordings,
        wording_grants=con.execute(queries["wording_grants"], params).df() if several else None,
        workforce=con.execute(queries["workforce_shares"], {**params, "source": source}).df(),
        source=source,
        contests=con.execute(queries["contrast_counts"], params).df(),
        grants=over_wordings(by_wording_grants),
        name_sets=name_sets,
        instances=con.execute(queries["contrast_instances"], params).df() if name_sets else None,
        contest_cells=con.execute(queries["contrast_choice_cells"], params).df() if name_sets else None,
        contest_grants=by_wording_grants if name_sets and several else None,
    )


def over_wordings(grants: pd.DataFrame) -> pd.DataFrame:
    """metrics.sql `grant_counts` from `contrast_wording_grants`' frame (the same rows, read once): hits, n and
    unknown summed over the wordings per (condition, attribute, set, category), in its order."""
    keys = ["condition", "attribute", "set_id", "category"]
    if grants.empty:
        return grants.drop(columns="wording")
    return grants.groupby(keys, sort=True, dropna=False)[["hits", "n", "unknown"]].sum().reset_index()


def _impact_counts(con: duckdb.DuckDBPyConnection, query: str, params: dict[str, str]) -> pd.DataFrame:
    """metrics.sql `impact_counts` through Arrow (its ~400K rows of text at 1M answers: 0.3 s of CPU, not the
    0.8 s of `.df()`), with `.df()`'s column types: `name`, NULL in a probed run, as objects; no rows: `.df()`'s
    own frame (its text columns objects)."""
    frame = con.sql(query, params=params).to_arrow_table().to_pandas()
    if frame.empty:
        return con.execute(query, params).df()
    if frame["name"].isna().all():
        frame["name"] = np.full(len(frame), None, dtype=object)
    return frame
