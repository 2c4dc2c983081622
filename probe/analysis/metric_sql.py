"""metrics.sql's per-metric parts, written from the metric registry (probe/analysis/metric_registry.py).

metrics.sql marks each place a list of metrics goes with a comment `/* metric_registry: <part> */`; `expand`
replaces it with that part, written from the registry's entries as they are when it is called. The SQL comes from
the registry's own constants (each metric's name, `flag` and `units`), never from a user's text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from probe.analysis import metric_registry
from probe.analysis.metric_registry import ALL_INSTANCES, FEMALE_SHARE, WORDING_METRICS, Metric

_MARKER = re.compile(r"/\* metric_registry: (\w+) \*/")


def _counted(metrics: Iterable[Metric]) -> list[Metric]:
    """The metrics counted per stage-2 instance into metric_scope_counts (female_share is balanced in Python)."""
    return [metric for metric in metrics if metric.flag is not None and not metric.order_balanced]


def _hit(metric: Metric) -> str:
    """The metric's flag as an SQL condition on one instance: among the valid ones unless it counts them all."""
    return f"({metric.flag})" if metric.among == ALL_INSTANCES else f"(valid AND ({metric.flag}))"


def instance_flags(metrics: Iterable[Metric]) -> str:
    """metric_scope_counts' `instance_flags` columns: 1 where the instance is a hit of the metric, else 0."""
    return ",\n           ".join(f"{_hit(metric)}::INT AS {metric.name}" for metric in _counted(metrics))


def unit_sums(metrics: Iterable[Metric]) -> str:
    """`unit_sums` columns: each metric's hits per (condition, pair, occupation)."""
    return ",\n           ".join(f"sum({metric.name}) AS {metric.name}" for metric in _counted(metrics))


def unpivoted(metrics: Iterable[Metric]) -> str:
    """The UNPIVOT's column list: one row per metric."""
    return ", ".join(metric.name for metric in _counted(metrics))


def denominator(metrics: Iterable[Metric]) -> str:
    """Each unpivoted metric's n: every instance for a metric among all instances, else the valid ones."""
    of_all = [metric.name for metric in _counted(metrics) if metric.among == ALL_INSTANCES]
    cases = " ".join(f"WHEN '{name}' THEN n_instances" for name in of_all)
    return f"CASE metric {cases} ELSE n_valid END" if of_all else "n_valid"


def unit_queries(metrics: Iterable[Metric]) -> str:
    """The metrics counted over units of two instances, each unit a row (condition, pair_id, occupation, metric,
    hits, n) to append to the per-instance units."""
    selects = (
        f"SELECT condition, pair_id, occupation, '{metric.name}' AS metric, hits, n FROM ({metric.units})"
        for metric in metrics
        if metric.units is not None
    )
    return "".join(f"\n    UNION ALL {select}" for select in selects)


def wording_counts(metrics: Iterable[Metric]) -> str:
    """wording_cells' count columns: per cell the valid instances that are hits of each of WORDING_METRICS."""
    by_name = {metric.name: metric for metric in metrics}
    return ",\n       ".join(f"count(*) FILTER (WHERE {_hit(by_name[name])}) AS {name}" for name in WORDING_METRICS)


def female_count(metrics: Iterable[Metric]) -> str:
    """female_choice_cells' n_female: the valid instances that are hits of female_share's flag."""
    female = next(metric for metric in metrics if metric.name == FEMALE_SHARE)
    return f"count(*) FILTER (WHERE {_hit(female)}) AS n_female"


PARTS: dict[str, Callable[[Iterable[Metric]], str]] = {
    "instance_flags": instance_flags,
    "unit_sums": unit_sums,
    "unpivoted": unpivoted,
    "denominator": denominator,
    "unit_queries": unit_queries,
    "wording_counts": wording_counts,
    "female_count": female_count,
}


def expand(sql: str) -> str:
    """`sql` with every registry marker replaced by its part, written from the registry's current entries."""
    metrics = list(metric_registry.METRICS.values())
    return _MARKER.sub(lambda marker: PARTS[marker.group(1)](metrics), sql)
