"""metrics.sql's queries by name, with their per-metric parts written from the metric registry
(probe/analysis/metric_registry.py), and analyze()'s first step, which needs nothing else: the run's instances built
in DuckDB (`build_instances`; no statistics stack imported, so `probe analyze` builds them while it imports one).

metrics.sql marks each place a list of metrics goes with a comment `/* metric_registry: <part> */`; `expand`
replaces it with that part, written from the registry's entries as they are when it is called. The SQL comes from
the registry's own constants (each metric's name, `flag` and `units`), never from a user's text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path

import duckdb

from probe.analysis import metric_registry
from probe.analysis.metric_registry import ALL_INSTANCES, FEMALE_SHARE, WORDING_METRICS, Metric
from probe.common.errors import UserError

_MARKER = re.compile(r"/\* metric_registry: (\w+) \*/")
_INCLUDED = re.compile(r"/\* query: (\w+) \*/")
# the columns of a unit of two instances: the first instance's key and the other's condition and name order
UNIT_KEYS = "condition, pair_id, occupation, wording, name_order, other_condition, other_name_order"
_SQL_FILE = Path(__file__).with_name("metrics.sql")


@cache
def _sql_file_queries() -> dict[str, str]:
    """The named queries of metrics.sql as written (each introduced by a `-- name: <query>` line), with the parts
    they include (`include`)."""
    parts = re.split(r"^-- name: (\w+)\s*$", _SQL_FILE.read_text(), flags=re.MULTILINE)
    return include({name: body.strip() for name, body in zip(parts[1::2], parts[2::2], strict=True)})


def metric_queries() -> dict[str, str]:
    """The named queries of metrics.sql with their per-metric parts written from the metric registry as it is now."""
    return {name: expand(query) for name, query in _sql_file_queries().items()}


def require_run(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """A UserError naming `run_id` where the database has no such run."""
    if con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run_id]).fetchone()[0] == 0:
        raise UserError(f"run {run_id!r}: no such run in the database")


def build_instances(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """analyze()'s first step (a UserError where there is no such run): the temp table metric_instances of the
    run (metrics.sql `instances`), which analyze() reads and drops."""
    require_run(con, run_id)
    con.execute(metric_queries()["instances"], {"run_id": run_id})


def flagged(metrics: Sequence[Metric]) -> list[Metric]:
    """The metrics counted per stage-2 instance by their flag (stored per instance in instance_metrics)."""
    return [metric for metric in metrics if metric.flag is not None]


def counted(metrics: Sequence[Metric]) -> list[Metric]:
    """The flag metrics metric_scope_counts sums (female_share is balanced over the name orders in Python)."""
    return [metric for metric in flagged(metrics) if not metric.order_balanced]


def _hit(metric: Metric) -> str:
    """The metric's flag as an SQL condition on one instance: among the valid ones unless it counts them all."""
    return f"({metric.flag})" if metric.among == ALL_INSTANCES else f"(valid AND ({metric.flag}))"


def flag_columns(metrics: Sequence[Metric]) -> str:
    """One column per metric: 1 where the instance is a hit of the metric, else 0."""
    return ",\n           ".join(f"{_hit(metric)}::INT AS {metric.name}" for metric in metrics)


def sum_columns(metrics: Sequence[Metric]) -> str:
    """One column per metric: its hits summed over the group."""
    return ",\n           ".join(f"sum({metric.name}) AS {metric.name}" for metric in metrics)


def names(metrics: Sequence[Metric]) -> str:
    """An UNPIVOT's column list: one row per metric."""
    return ", ".join(metric.name for metric in metrics)


def denominator(metrics: Sequence[Metric]) -> str:
    """Each unpivoted metric's n: every instance for a metric among all instances, else the valid ones."""
    of_all = [metric.name for metric in metrics if metric.among == ALL_INSTANCES]
    cases = " ".join(f"WHEN '{name}' THEN n_instances" for name in of_all)
    return f"CASE metric {cases} ELSE n_valid END" if of_all else "n_valid"


def unit_queries(metrics: Sequence[Metric], columns: str) -> str:
    """The metrics counted over units of two instances, each unit a row of `columns` (read from the registry's
    `units` query: the unit's keys, hits and n) with its metric, to append to the per-instance rows."""
    selects = (
        f"SELECT {columns}, '{metric.name}' AS metric, hits, n FROM ({metric.units})"
        for metric in metrics
        if metric.units is not None
    )
    return "".join(f"\n    UNION ALL {select}" for select in selects)


def wording_counts(metrics: Sequence[Metric]) -> str:
    """wording_cells' count columns: per cell the valid instances that are hits of each of WORDING_METRICS."""
    by_name = {metric.name: metric for metric in metrics}
    return ",\n       ".join(f"count(*) FILTER (WHERE {_hit(by_name[name])}) AS {name}" for name in WORDING_METRICS)


def female_count(metrics: Sequence[Metric]) -> str:
    """female_choice_cells' n_female: the valid instances that are hits of female_share's flag."""
    female = next(metric for metric in metrics if metric.name == FEMALE_SHARE)
    return f"count(*) FILTER (WHERE {_hit(female)}) AS n_female"


PARTS: dict[str, Callable[[Sequence[Metric]], str]] = {
    # metric_scope_counts: per (condition, pair, occupation) the hits of each summed metric
    "instance_flags": lambda metrics: flag_columns(counted(metrics)),
    "unit_sums": lambda metrics: sum_columns(counted(metrics)),
    "unpivoted": lambda metrics: names(counted(metrics)),
    "denominator": lambda metrics: denominator(counted(metrics)),
    "unit_queries": lambda metrics: unit_queries(metrics, "condition, pair_id, occupation"),
    # instance_units: per instance (and unit of two) every flag and unit metric
    "stored_flags": lambda metrics: flag_columns(flagged(metrics)),
    "stored_unpivoted": lambda metrics: names(flagged(metrics)),
    "stored_denominator": lambda metrics: denominator(flagged(metrics)),
    "stored_unit_queries": lambda metrics: unit_queries(metrics, UNIT_KEYS),
    "wording_counts": wording_counts,
    "female_count": female_count,
}


def expand(sql: str) -> str:
    """`sql` with every registry marker replaced by its part, written from the registry's current entries."""
    metrics = list(metric_registry.METRICS.values())
    return _MARKER.sub(lambda marker: PARTS[marker.group(1)](metrics), sql)


def include(queries: dict[str, str]) -> dict[str, str]:
    """metrics.sql's named queries with each marker `/* query: <name> */` replaced by that query, without its comment
    lines and semicolon: a part several queries share (the contests' sides) is written once."""

    def body(name: str) -> str:
        lines = (line for line in queries[name].splitlines() if not line.startswith("--"))
        return "\n".join(lines).strip().rstrip(";")

    return {name: _INCLUDED.sub(lambda marker: body(marker.group(1)), query) for name, query in queries.items()}
