"""What analyze() stored, read back for the steps after it (the gates, the LL144 summary): they build their estimates
at the levels a policy or the 2% exclusion asks from the counts analyze() stored, never from the answers, so a gate
or a summary cannot disagree with the analysis it reads (issue 47: no step after analyze() recounts answers).
"""

from __future__ import annotations

import duckdb
import pandas as pd

from probe.analysis.metric_registry import FEMALE_SHARE
from probe.analysis.metrics import occupation_estimates
from probe.analysis.statistics import ShareEstimate

# Each stored count table (metrics.sql's query of the same name; impact_counts of the overall scope only) and the
# order analyze() wrote it in (its query's ORDER BY): read back in it, every sum over its rows is the same
COUNT_TABLES = {
    "impact_counts": "condition, attribute, rate_kind, scope, key, category, set_id, name",
    "contrast_counts": "condition, attribute, set_id, category_a, category_b",
    "grant_counts": "condition, attribute, set_id, category",
}


def stored_counts(con: duckdb.DuckDBPyConnection, run_id: str, table: str) -> pd.DataFrame:
    """A run's rows of one stored count table (COUNT_TABLES), without run_id, in the order analyze() wrote them."""
    order = COUNT_TABLES[table]  # a constant of this module, never a user's text
    rows = con.execute(f"SELECT * EXCLUDE (run_id) FROM {table} WHERE run_id = ? ORDER BY {order}", [run_id])
    return rows.df()


def occupation_shares(con: duckdb.DuckDBPyConnection, run_id: str, condition: str) -> dict[str, ShareEstimate]:
    """An analysed run's female_share per occupation of one condition, estimated as its occupation rows are, for
    readers that need more than the stored 95% interval (probe gate's occupations margin): from the per-instance
    counts analyze() stored (instance_metrics), summed over wordings into metrics.sql's female_choice_cells."""
    cells = con.execute(
        "SELECT occupation, pair_id, name_order, sum(n) AS n, sum(hits) AS n_female FROM instance_metrics "
        "WHERE run_id = ? AND condition = ? AND metric = ? GROUP BY occupation, pair_id, name_order "
        "ORDER BY occupation, pair_id, name_order",
        [run_id, condition, FEMALE_SHARE],
    ).df()
    return occupation_estimates(cells)
