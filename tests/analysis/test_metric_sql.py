"""metrics.sql's per-metric parts are written from the registry's entries: a flag metric becomes one flag column, one
sum and one unpivoted name; a metric over all instances is divided by every instance, the others by the valid ones."""

from __future__ import annotations

from probe.analysis import metric_sql
from probe.analysis.metric_registry import ALL_INSTANCES, FEMALE_SHARE, METRICS, Metric

CHOSE = Metric("chose", "chose", "share choosing", "higher = more", flag="chose_first")
UNREAD = Metric("unread", "unread", "share unread", "lower = better", flag="NOT valid", among=ALL_INSTANCES)
BALANCED = Metric("balanced", "balanced", "order-balanced share", "0.5 = none", flag="b_chosen", order_balanced=True)
UNITS = Metric("paired", "paired", "share of units", "higher = more", units="SELECT 1")
TOYS = (CHOSE, UNREAD, BALANCED, UNITS)


def test_flag_metrics_are_counted_among_the_valid_instances_unless_they_count_them_all() -> None:
    assert metric_sql.flagged(TOYS) == [CHOSE, UNREAD, BALANCED]
    assert metric_sql.counted(TOYS) == [CHOSE, UNREAD]  # the order-balanced one is summed in Python
    assert metric_sql.flag_columns([CHOSE, UNREAD]) == (
        "(valid AND (chose_first))::INT AS chose,\n           (NOT valid)::INT AS unread"
    )
    assert metric_sql.sum_columns([CHOSE, UNREAD]) == "sum(chose) AS chose,\n           sum(unread) AS unread"
    assert metric_sql.names([CHOSE, UNREAD]) == "chose, unread"


def test_the_denominator_is_every_instance_only_for_a_metric_among_all() -> None:
    assert metric_sql.denominator([CHOSE, UNREAD]) == "CASE metric WHEN 'unread' THEN n_instances ELSE n_valid END"
    assert metric_sql.denominator([CHOSE]) == "n_valid"


def test_a_unit_metric_is_appended_as_its_own_query() -> None:
    assert metric_sql.unit_queries(TOYS, "condition") == (
        "\n    UNION ALL SELECT condition, 'paired' AS metric, hits, n FROM (SELECT 1)"
    )
    assert metric_sql.unit_queries([CHOSE], "condition") == ""


def test_expand_replaces_each_marker_with_its_part_from_the_current_registry(monkeypatch) -> None:
    monkeypatch.setattr(metric_sql.metric_registry, "METRICS", {FEMALE_SHARE: METRICS[FEMALE_SHARE], "chose": CHOSE})
    sql = "SELECT /* metric_registry: unit_sums */ FROM t WHERE x = /* metric_registry: female_count */"
    assert metric_sql.expand(sql) == (
        "SELECT sum(chose) AS chose FROM t WHERE x = count(*) FILTER (WHERE (valid AND ("
        f"{METRICS[FEMALE_SHARE].flag}))) AS n_female"
    )
    assert metric_sql.expand("SELECT 1") == "SELECT 1"


def test_a_shared_part_is_included_without_its_comments_and_semicolon() -> None:
    queries = {"sides": "-- who is on each side\nSELECT 1 AS side;", "both": "WITH s AS (/* query: sides */) FROM s;"}
    assert metric_sql.include(queries) == queries | {"both": "WITH s AS (SELECT 1 AS side) FROM s;"}
