"""The analysis step: answers turned into metrics with intervals and tests. It computes; it prints nothing.

Enters: a run's `items` and `answers`.
Leaves: the `metrics`, `occupation_preference`, `correlations`, `regression` and `adverse_impact` tables
(metrics.py with the SQL of metrics.sql, statistics.py, preference.py, regression.py, impact.py) and the counts later
steps build their intervals from (read back by stored.py); the metric registry, every metric once
(metric_registry.py).
"""
