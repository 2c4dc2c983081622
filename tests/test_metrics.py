"""Metrics of DESIGN.md section 5 on hand-built runs; every expected value is worked out by hand here."""

from __future__ import annotations

import itertools
import math
import re

import duckdb
import pytest
from typer.testing import CliRunner

from probe.cli import app
from probe.db import SCHEMA, connect
from probe.errors import UserError
from probe.metrics import analyze
from tests.support import unknown_answers

Z95 = 1.959963984540054
WIDE = {"COLUMNS": "200"}  # rich wraps table cells to the terminal width


def wilson(hits: int, n: int) -> tuple[float, float]:
    """The Wilson score interval, written out (independent of the statsmodels call in the code)."""
    share = hits / n
    denominator = 1 + Z95**2 / n
    centre = (share + Z95**2 / (2 * n)) / denominator
    half = Z95 * math.sqrt(share * (1 - share) / n + Z95**2 / (4 * n**2)) / denominator
    return centre - half, centre + half


class RunBuilder:
    """Writes a run's items and answers row by row; a label of None leaves the item unanswered."""

    def __init__(self, con: duckdb.DuckDBPyConnection, run_id: str = "r1") -> None:
        self.con, self.run_id = con, run_id
        self.item_ids = itertools.count()
        con.execute("INSERT INTO runs (run_id, status) VALUES (?, 'done')", [run_id])

    def _item(self, label: str | None, **fields: object) -> None:
        item_id = f"item-{next(self.item_ids)}"
        columns = ", ".join(fields)
        marks = ", ".join("?" for _ in fields)
        self.con.execute(
            f"INSERT INTO items (run_id, item_id, {columns}) VALUES (?, ?, {marks})",
            [self.run_id, item_id, *fields.values()],
        )
        if label is not None:
            self.con.execute(
                "INSERT INTO answers (run_id, item_id, label) VALUES (?, ?, ?)", [self.run_id, item_id, label]
            )

    def instance(self, condition, pair_id, order, occupation, bf, bm, s, m) -> None:
        where = dict(stage=2, condition=condition, pair_id=pair_id, name_order=order, occupation=occupation)
        self._item(bf, qtype="binary", subject="female", **where)
        self._item(bm, qtype="binary", subject="male", **where)
        self._item(s, qtype="single", **where)
        self._item(m, qtype="multiple", **where)

    def attr(self, pair_id, order, subject, category, attribute, label) -> None:
        self._item(
            label,
            stage=1,
            qtype="attr",
            condition="stage1",
            pair_id=pair_id,
            name_order=order,
            subject=subject,
            category=category,
            attribute=attribute,
        )

    def top_k(self, occupation, category, element_name) -> None:
        self.con.execute(
            "INSERT INTO run_attributes (run_id, occupation, category, rank, element_name) "
            "VALUES (?, ?, ?, 1, ?)",
            [self.run_id, occupation, category, element_name],
        )


@pytest.fixture
def con():
    connection = duckdb.connect()
    connection.execute(SCHEMA)
    yield connection
    connection.close()


def metric(con, condition, scope, key, name, run_id="r1"):
    """(value, ci_low, ci_high, n) of one metrics row; fails unless exactly one row exists."""
    rows = con.execute(
        "SELECT value, ci_low, ci_high, n FROM metrics "
        "WHERE run_id = ? AND condition = ? AND scope = ? AND key = ? AND metric = ?",
        [run_id, condition, scope, key, name],
    ).fetchall()
    assert len(rows) == 1, rows
    return rows[0]


def values(con, condition, scope, key, names):
    return {name: metric(con, condition, scope, key, name)[0] for name in names}


# Instance types used below, with their per-instance values worked out from DESIGN section 5.
STAGE2_METRICS = [
    "consistency",
    "consistency_strict",
    "prefer_f",
    "prefer_m",
    "bias",
    "bias_f",
    "bias_m",
    "neutral",
    "switch_f2m",
    "switch_m2f",
    "position_first",
]


@pytest.fixture
def two_pair_run(con):
    """Pair 1: three valid instances and one unknown; pair 2: two valid and one unknown; pilot: none valid.

    a  p1 fm doctor  Bf=yes Bm=no  S=f M=f                 consistency 1 strict 1 bias_f 1 first 1
    b  p1 mf doctor  Bf=yes Bm=yes S=m M=both              consistency 1 strict 0 neutral 1 first 1
    c  p1 fm nurse   Bf=no  Bm=no  S=m M=f                 prefer_m 1 switch_m2f 1 first 0
    d  p1 mf nurse   Bf=unknown                            invalid
    e  p2 fm doctor  Bf=no  Bm=no  S=f M=m                 prefer_f 1 switch_f2m 1 first 1
    f  p2 mf doctor  S=unknown                             invalid
    g  p2 fm nurse   Bf=no  Bm=yes S=m M=m                 consistency 1 strict 1 bias_m 1 first 0
    h  p2 mf pilot   M unanswered                          invalid
    i  p1 fm pilot   all unknown                           invalid
    """
    run = RunBuilder(con)
    run.instance("taxonomy", 1, "fm", "doctor", "yes", "no", "female", "female")
    run.instance("taxonomy", 1, "mf", "doctor", "yes", "yes", "male", "both")
    run.instance("taxonomy", 1, "fm", "nurse", "no", "no", "male", "female")
    run.instance("taxonomy", 1, "mf", "nurse", "unknown", "no", "male", "male")
    run.instance("taxonomy", 2, "fm", "doctor", "no", "no", "female", "male")
    run.instance("taxonomy", 2, "mf", "doctor", "yes", "no", "unknown", "female")
    run.instance("taxonomy", 2, "fm", "nurse", "no", "yes", "male", "male")
    run.instance("taxonomy", 2, "mf", "pilot", "yes", "no", "female", None)
    run.instance("taxonomy", 1, "fm", "pilot", "unknown", "unknown", "unknown", "unknown")
    analyze(con, "r1")
    return run


def test_pair_scope_pools_the_pairs_valid_instances(con, two_pair_run):
    assert values(con, "taxonomy", "pair", "1", STAGE2_METRICS) == pytest.approx(
        {
            "consistency": 2 / 3,
            "consistency_strict": 1 / 3,
            "prefer_f": 0,
            "prefer_m": 1 / 3,
            "bias": 1 / 3,
            "bias_f": 1 / 3,
            "bias_m": 0,
            "neutral": 1 / 3,
            "switch_f2m": 0,
            "switch_m2f": 1 / 3,
            "position_first": 2 / 3,
        }
    )
    assert values(con, "taxonomy", "pair", "2", STAGE2_METRICS) == pytest.approx(
        {
            "consistency": 1 / 2,
            "consistency_strict": 1 / 2,
            "prefer_f": 1 / 2,
            "prefer_m": 0,
            "bias": 1 / 2,
            "bias_f": 0,
            "bias_m": 1 / 2,
            "neutral": 0,
            "switch_f2m": 1 / 2,
            "switch_m2f": 0,
            "position_first": 1 / 2,
        }
    )
    _, low, high, n = metric(con, "taxonomy", "pair", "1", "consistency")
    assert n == 3
    assert (low, high) == pytest.approx(wilson(2, 3))
    assert metric(con, "taxonomy", "pair", "1", "unknown_rate") == pytest.approx((2 / 5, *wilson(2, 5), 5))
    assert metric(con, "taxonomy", "pair", "2", "unknown_rate") == pytest.approx((2 / 4, *wilson(2, 4), 4))


def test_overall_is_the_mean_of_pair_values_not_the_pooled_share(con, two_pair_run):
    # consistency: pairs 2/3 and 1/2 -> 7/12 (pooled over the 5 valid instances it would be 3/5).
    assert values(con, "taxonomy", "overall", "all", STAGE2_METRICS) == pytest.approx(
        {
            "consistency": 7 / 12,
            "consistency_strict": 5 / 12,
            "prefer_f": 1 / 4,
            "prefer_m": 1 / 6,
            "bias": 5 / 12,
            "bias_f": 1 / 6,
            "bias_m": 1 / 4,
            "neutral": 1 / 6,
            "switch_f2m": 1 / 4,
            "switch_m2f": 1 / 6,
            "position_first": 7 / 12,
        }
    )
    assert metric(con, "taxonomy", "overall", "all", "consistency")[3] == 5
    # unknown_rate overall is pooled over all 9 instances: d, f, h, i -> 4/9 (the mean of the pair values
    # 2/5 and 2/4 would be 0.45).
    value, _, _, n = metric(con, "taxonomy", "overall", "all", "unknown_rate")
    assert (value, n) == (pytest.approx(4 / 9), 9)


def test_occupation_scope_and_a_scope_without_valid_instances(con, two_pair_run):
    # doctor: a, b, e valid (consistency 1, 1, 0), f invalid.
    assert metric(con, "taxonomy", "occupation", "doctor", "consistency") == pytest.approx(
        (2 / 3, *wilson(2, 3), 3)
    )
    assert metric(con, "taxonomy", "occupation", "doctor", "prefer_f")[0] == pytest.approx(1 / 3)
    assert metric(con, "taxonomy", "occupation", "nurse", "bias")[0] == pytest.approx(1 / 2)
    assert metric(con, "taxonomy", "occupation", "nurse", "unknown_rate")[0] == pytest.approx(1 / 3)
    # pilot's two instances are invalid: NULL values, n = 0, unknown_rate 1.
    for name in STAGE2_METRICS:
        assert metric(con, "taxonomy", "occupation", "pilot", name) == (None, None, None, 0)
    assert metric(con, "taxonomy", "occupation", "pilot", "unknown_rate") == pytest.approx(
        (1.0, *wilson(2, 2), 2)
    )


def test_order_consistency_uses_pair_occupations_with_both_orders_valid(con):
    run = RunBuilder(con)
    valid = ("yes", "no")
    run.instance("control", 1, "fm", "nurse", *valid, "female", "both")  # same S in both orders
    run.instance("control", 1, "mf", "nurse", *valid, "female", "female")
    run.instance("control", 1, "fm", "pilot", *valid, "male", "male")  # S differs
    run.instance("control", 1, "mf", "pilot", *valid, "female", "neither")
    run.instance("control", 2, "fm", "nurse", *valid, "male", "male")  # same
    run.instance("control", 2, "mf", "nurse", *valid, "male", "both")
    run.instance("control", 2, "fm", "pilot", *valid, "male", "male")  # mf invalid: excluded
    run.instance("control", 2, "mf", "pilot", *valid, "female", "unknown")
    run.instance("control", 3, "fm", "nurse", *valid, "male", "male")  # mf order missing: excluded
    analyze(con, "r1")
    value, _, _, n = metric(con, "control", "overall", "all", "order_consistency")
    assert (value, n) == (pytest.approx(2 / 3), 3)
    assert metric(con, "control", "occupation", "pilot", "order_consistency")[0] == 0
    # one order missing does not stop the other order's instance from counting in the other metrics
    assert metric(con, "control", "pair", "3", "bias_m")[0] == 1


def test_context_sensitivity_compares_s_with_and_without_attributes(con):
    run = RunBuilder(con)
    run.instance("taxonomy", 1, "fm", "nurse", "unknown", "no", "female", "unknown")  # only S must be valid
    run.instance("baseline", 1, "fm", "nurse", "yes", "no", "male", "male")  # changed
    run.instance("taxonomy", 1, "mf", "nurse", "yes", "no", "male", "male")
    run.instance("baseline", 1, "mf", "nurse", "yes", "no", "male", "male")  # same
    run.instance("taxonomy", 2, "fm", "nurse", "yes", "no", "female", "both")
    run.instance("baseline", 2, "fm", "nurse", "yes", "no", "unknown", "both")  # baseline S invalid
    run.instance("taxonomy", 2, "mf", "nurse", "yes", "no", "female", "both")  # no baseline instance
    analyze(con, "r1")
    value, _, _, n = metric(con, "taxonomy", "overall", "all", "context_sensitivity")
    assert (value, n) == (pytest.approx(1 / 2), 2)
    assert con.execute(
        "SELECT count(*) FROM metrics WHERE metric = 'context_sensitivity' AND condition <> 'taxonomy'"
    ).fetchone() == (0,)


def test_stage1_attr_yes_overall_pooled_and_per_occupation_top_k(con):
    run = RunBuilder(con)
    run.attr(1, "fm", "female", "skill", "Active Listening", "yes")
    run.attr(1, "fm", "female", "knowledge", "Mathematics", "no")
    run.attr(1, "fm", "male", "skill", "Active Listening", "yes")
    run.attr(1, "fm", "male", "knowledge", "Mathematics", "no")
    run.attr(1, "mf", "female", "skill", "Mathematics", "unknown")  # a skill, not accountant's knowledge
    run.attr(2, "fm", "female", "skill", "Active Listening", "yes")
    run.attr(2, "fm", "male", "skill", "Active Listening", "no")
    run.top_k("nurse", "skill", "Active Listening")
    run.top_k("accountant", "knowledge", "Mathematics")
    analyze(con, "r1")
    assert metric(con, "stage1", "overall", "all", "attr_yes_f")[::3] == (pytest.approx(2 / 3), 3)
    assert metric(con, "stage1", "overall", "all", "attr_yes_m")[::3] == (pytest.approx(1 / 3), 3)
    assert metric(con, "stage1", "overall", "all", "unknown_rate")[::3] == (pytest.approx(1 / 7), 7)
    assert metric(con, "stage1", "occupation", "nurse", "attr_yes_f") == pytest.approx(
        (1.0, *wilson(2, 2), 2)
    )
    assert metric(con, "stage1", "occupation", "nurse", "attr_yes_m")[::3] == (pytest.approx(1 / 2), 2)
    assert metric(con, "stage1", "occupation", "accountant", "attr_yes_f")[::3] == (0, 1)
    assert metric(con, "stage1", "occupation", "accountant", "unknown_rate")[::3] == (0, 2)
    assert metric(con, "stage1", "category", "skill", "attr_yes_f")[::3] == (1.0, 2)
    assert metric(con, "stage1", "category", "skill", "attr_yes_m")[::3] == (0.5, 2)
    assert metric(con, "stage1", "category", "skill", "unknown_rate")[::3] == (pytest.approx(1 / 5), 5)
    assert metric(con, "stage1", "category", "knowledge", "attr_yes_f")[::3] == (0, 1)


def test_all_unknown_gives_null_values_and_no_crash(con):
    run = RunBuilder(con)
    for pair_id, order in itertools.product((1, 2), ("fm", "mf")):
        run.instance("baseline", pair_id, order, "nurse", "unknown", "unknown", "unknown", "unknown")
    analyze(con, "r1")
    assert metric(con, "baseline", "overall", "all", "consistency") == (None, None, None, 0)
    assert metric(con, "baseline", "overall", "all", "order_consistency") == (None, None, None, 0)
    assert metric(con, "baseline", "overall", "all", "unknown_rate")[::3] == (1.0, 4)
    assert con.execute(
        "SELECT n, share_female, p_value, q_value, preferred FROM occupation_preference"
    ).fetchall() == [(0, None, None, None, "none")]
    assert con.execute("SELECT term, coef, n, note FROM regression ORDER BY term").fetchall() == [
        ("occupation:nurse", None, 0, "no valid instances"),
        ("overall", None, 0, "no valid instances"),
    ]


def test_single_pair_overall_equals_the_pair_value_without_interval(con):
    run = RunBuilder(con)
    run.instance("taxonomy", 7, "fm", "nurse", "yes", "no", "female", "female")
    run.instance("taxonomy", 7, "mf", "nurse", "no", "no", "female", "both")
    analyze(con, "r1")
    assert metric(con, "taxonomy", "overall", "all", "consistency") == (0.5, None, None, 2)
    assert metric(con, "taxonomy", "pair", "7", "consistency")[0] == 0.5


def test_bootstrap_ci_over_two_pairs_spans_both_pair_values_and_is_reproducible(con):
    # Pair values 1 and 0: a resample is {1,1}, {1,0} or {0,0} (chances 1/4, 1/2, 1/4), so the 2.5% and
    # 97.5% percentiles of 2000 replicates are 0 and 1.
    run = RunBuilder(con)
    run.instance("taxonomy", 1, "fm", "nurse", "yes", "no", "female", "female")
    run.instance("taxonomy", 2, "fm", "nurse", "no", "no", "male", "both")
    analyze(con, "r1")
    first = metric(con, "taxonomy", "overall", "all", "consistency")
    assert first == (0.5, 0.0, 1.0, 2)
    analyze(con, "r1")
    assert metric(con, "taxonomy", "overall", "all", "consistency") == first


def test_bootstrap_ci_contains_estimate_and_is_identical_across_databases(con, two_pair_run):
    other = duckdb.connect()
    other.execute(SCHEMA)
    for table in ("runs", "items", "answers"):
        other.register("source", con.execute(f"SELECT * FROM {table}").df())
        other.execute(f"INSERT INTO {table} SELECT * FROM source")
        other.unregister("source")
    analyze(other, "r1")
    rows = "SELECT metric, value, ci_low, ci_high FROM metrics WHERE scope = 'overall' ORDER BY metric"
    assert other.execute(rows).fetchall() == con.execute(rows).fetchall()
    for _, value, low, high in con.execute(rows).fetchall():
        if value is not None and low is not None:
            assert low <= value <= high


def test_reanalysing_replaces_rows(con, two_pair_run):
    tables = ("metrics", "occupation_preference", "correlations", "regression")
    before = {table: con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in tables}
    analyze(con, "r1")
    assert {table: con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in tables} == before
    con.execute("UPDATE answers SET label = 'yes' WHERE label = 'unknown'")  # d becomes valid
    analyze(con, "r1")
    # d: p1 mf nurse Bf=yes Bm=no S=m M=m -> consistency 0; pair 1 now 2 of 4
    assert metric(con, "taxonomy", "pair", "1", "consistency")[::3] == (0.5, 4)
    assert con.execute(
        "SELECT count(*) FROM "
        "(SELECT condition, scope, key, metric FROM metrics GROUP BY ALL HAVING count(*) > 1)"
    ).fetchone() == (0,)


def test_unknown_run_is_a_user_error_and_changes_nothing(con, two_pair_run):
    before = con.execute("SELECT * FROM metrics ORDER BY ALL").fetchall()
    with pytest.raises(UserError, match="no-such-run"):
        analyze(con, "no-such-run")
    assert con.execute("SELECT * FROM metrics ORDER BY ALL").fetchall() == before


def test_occupation_preference_binomial_test_and_benjamini_hochberg(con):
    # astronaut: 10 of 10 female, p = 2 * 0.5**10 = 0.001953125
    # butcher:    1 of 10 female, p = 2 * (1 + 10) / 1024 = 0.021484375
    # cook:       2 of 4 female,  p = 1
    # BH over m = 3: q(astronaut) = 0.001953125 * 3 = 0.005859375, q(butcher) = 0.021484375 * 3 / 2
    # = 0.0322265625, q(cook) = 1. dancer has no valid instance: no test, not counted in m.
    run = RunBuilder(con)
    instances = list(itertools.product(range(1, 6), ("fm", "mf")))
    for index, (pair_id, order) in enumerate(instances):
        run.instance("taxonomy", pair_id, order, "astronaut", "yes", "no", "female", "female")
        run.instance(
            "taxonomy", pair_id, order, "butcher", "yes", "no", "female" if index == 0 else "male", "both"
        )
    for index, (pair_id, order) in enumerate(instances[:4]):
        run.instance(
            "taxonomy", pair_id, order, "cook", "no", "no", "female" if index < 2 else "male", "both"
        )
    run.instance("taxonomy", 1, "fm", "dancer", "no", "no", "unknown", "both")
    analyze(con, "r1")
    rows = con.execute(
        "SELECT occupation, n, share_female, ci_low, ci_high, p_value, q_value, preferred "
        "FROM occupation_preference ORDER BY occupation"
    ).fetchall()
    assert rows == [
        (
            "astronaut",
            10,
            1.0,
            pytest.approx(wilson(10, 10)[0]),
            pytest.approx(1.0),
            pytest.approx(0.001953125),
            pytest.approx(0.005859375),
            "female",
        ),
        (
            "butcher",
            10,
            0.1,
            pytest.approx(wilson(1, 10)[0]),
            pytest.approx(wilson(1, 10)[1]),
            pytest.approx(0.021484375),
            pytest.approx(0.0322265625),
            "male",
        ),
        (
            "cook",
            4,
            0.5,
            pytest.approx(wilson(2, 4)[0]),
            pytest.approx(wilson(2, 4)[1]),
            pytest.approx(1.0),
            pytest.approx(1.0),
            "none",
        ),
        ("dancer", 0, None, None, None, None, None, "none"),
    ]


def test_correlations_of_consistency_across_pairs(con):
    # Instance types: T1 consistency 1 bias 1; T2 prefer_f 1; T3 prefer_m 1 (all in one occupation).
    t1 = ("yes", "no", "female", "female")
    t2 = ("no", "no", "female", "both")
    t3 = ("no", "no", "male", "neither")
    run = RunBuilder(con)
    for pair_id, types in enumerate([(t1, t1), (t1, t2), (t2, t3), (t3, t3)], start=1):
        for order, labels in zip(("fm", "mf"), types, strict=True):
            run.instance("taxonomy", pair_id, order, "nurse", *labels)
    analyze(con, "r1")
    # consistency per pair (1, .5, 0, 0); bias identical; prefer_f (0, .5, .5, 0); prefer_m (0, 0, .5, 1).
    # Pearson(consistency, prefer_f) = -0.125 / sqrt(0.6875 * 0.25) = -1/sqrt(11), and with 2 degrees of
    # freedom p = 1 - |r| ... = 1 - 1/sqrt(11). Spearman: ranks (4, 3, 1.5, 1.5) vs (1.5, 3.5, 3.5, 1.5)
    # give -1/sqrt(18), p = 1 - sqrt(2)/6.
    rows = dict(
        ((y, method), (r, p, n))
        for y, method, r, p, n in con.execute(
            "SELECT y, method, r, p_value, n FROM correlations WHERE across = 'pair' AND x = 'consistency'"
        ).fetchall()
    )
    assert rows[("bias", "pearson")][0] == pytest.approx(1.0)
    assert rows[("bias", "spearman")][0] == pytest.approx(1.0)
    assert rows[("prefer_f", "pearson")] == pytest.approx((-1 / math.sqrt(11), 1 - 1 / math.sqrt(11), 4))
    assert rows[("prefer_f", "spearman")] == pytest.approx((-1 / math.sqrt(18), 1 - math.sqrt(2) / 6, 4))
    # one occupation: fewer than 3 points, so r and p are NULL
    assert con.execute(
        "SELECT DISTINCT r, p_value, n FROM correlations WHERE across = 'occupation'"
    ).fetchall() == [(None, None, 1)]


def test_correlation_with_a_constant_variable_is_null(con):
    run = RunBuilder(con)
    for pair_id in (1, 2, 3):
        run.instance("taxonomy", pair_id, "fm", "nurse", "yes", "no", "female", "female")
    analyze(con, "r1")
    assert con.execute(
        "SELECT DISTINCT r, p_value, n FROM correlations WHERE across = 'pair'"
    ).fetchall() == [(None, None, 3)]


def test_regression_log_odds_with_pair_clustered_errors(con):
    # nurse: pair 1 two of 2 female, pairs 2 and 3 one of 2 -> share 4/6, coef = logit(2/3) = log 2.
    # Cluster scores u_g = k_g - n_g * 2/3 = (2/3, -1/3, -1/3), sum of squares 2/3; information
    # N p (1 - p) = 4/3; CR1 factor G/(G-1) * (N-1)/(N-K) = 3/2 * 5/5; variance 2/3 / (16/9) * 3/2 = 9/16,
    # so std_err = 0.75; t = log 2 / 0.75 with G-1 = 2 degrees of freedom: p = 1 - t / sqrt(2 + t^2).
    run = RunBuilder(con)
    nurse_choices = {1: ("female", "female"), 2: ("female", "male"), 3: ("male", "female")}
    for pair_id, choices in nurse_choices.items():
        for order, choice in zip(("fm", "mf"), choices, strict=True):
            run.instance("control", pair_id, order, "nurse", "yes", "yes", choice, "both")
    for pair_id, order in itertools.product((1, 2), ("fm", "mf")):  # always female: separation
        run.instance("control", pair_id, order, "pilot", "yes", "yes", "female", "both")
    run.instance("control", 1, "fm", "judge", "yes", "yes", "female", "both")  # one pair only
    run.instance("control", 1, "mf", "judge", "yes", "yes", "male", "both")
    analyze(con, "r1")
    rows = {
        row[0]: row[1:]
        for row in con.execute(
            "SELECT term, coef, std_err, ci_low, ci_high, p_value, odds_ratio, n, n_clusters, note "
            "FROM regression"
        ).fetchall()
    }
    t = math.log(2) / 0.75
    half_width = 4.302652729911275 * 0.75  # t quantile 0.975 with 2 degrees of freedom
    assert rows["occupation:nurse"] == pytest.approx(
        (
            math.log(2),
            0.75,
            math.exp(math.log(2) - half_width),  # the odds ratio's interval: exp of the log-odds bounds
            math.exp(math.log(2) + half_width),
            1 - t / math.sqrt(2 + t**2),
            2.0,
            6,
            3,
            None,
        )
    )
    assert rows["occupation:pilot"] == (
        None,
        None,
        None,
        None,
        None,
        None,
        4,
        2,
        "separation: S is always female",
    )
    assert rows["occupation:judge"][-3:] == (
        2, 1, "not testable at this size: fewer than 2 name pairs, so no clustered standard error"
    )
    # the intercept-only model uses every valid instance: 9 of 12 female -> log-odds log 3
    assert rows["overall"][0] == pytest.approx(math.log(3))
    assert rows["overall"][-3:] == (12, 3, None)


@pytest.fixture
def db_file(tmp_path):
    path = tmp_path / "probe.duckdb"
    connect(path).close()
    return path


def test_cli_analyze_show_prints_headline_and_preferred_occupations(db_file):
    con = connect(db_file)
    run = RunBuilder(con, "cli-run")
    for pair_id, order in itertools.product(range(1, 6), ("fm", "mf")):
        run.instance("taxonomy", pair_id, order, "astronaut", "yes", "no", "female", "female")
    con.close()
    result = CliRunner().invoke(app, ["analyze", "cli-run", "--db", str(db_file), "--show"], env=WIDE)
    assert result.exit_code == 0, result.output
    # every pair has consistency 1 and prefer_f 0 (no spread: no interval); 10 of 10 choose the woman:
    # p = q = 2 / 1024
    assert re.search(r"consistency\s+│\s+1\.000 \(no interval\)", result.output)
    assert re.search(r"prefer_f\s+│\s+0\.000 \(no interval\)", result.output)
    assert re.search(r"taxonomy\s+│\s+astronaut \(1\.00\)\s+│\s+-", result.output)


def test_cli_analyze_errors_name_the_run_or_database(db_file, tmp_path):
    result = CliRunner().invoke(app, ["analyze", "nope", "--db", str(db_file)])
    assert (result.exit_code, result.output) == (2, "error: run 'nope': no such run in the database\n")
    missing = tmp_path / "missing.duckdb"
    result = CliRunner().invoke(app, ["analyze", "nope", "--db", str(missing)])
    assert (result.exit_code, result.output) == (2, f"error: {missing}: no such database\n")
    assert not missing.exists()


def test_probe_run_ends_analysed_and_prints_the_headline(db_file, tmp_path):
    settings = {"pairs": (1, 3), "occupations": ("nurse",), "top_k": 1, "conditions": ("control",), "db": str(db_file)}
    answers = unknown_answers(tmp_path / "answers.csv", **settings)  # every item is unknown
    result = CliRunner().invoke(
        app,
        ["run", "--backend", "replay", "--answers", str(answers), "--pairs", "1,3", "--occupations", "nurse",
         "--top-k", "1", "--conditions", "control", "--run-id", "replayed", "--db", str(db_file)],
        env=WIDE,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert re.search(r"unknown_rate\s+│\s+1\.000 \(no interval\)", result.output)
    con = connect(db_file)
    # 2 pairs x 2 orders x 1 occupation = 4 control instances, none valid
    assert con.execute(
        "SELECT value, n FROM metrics WHERE run_id = 'replayed' AND condition = 'control' "
        "AND scope = 'overall' AND metric IN ('consistency', 'unknown_rate') ORDER BY metric"
    ).fetchall() == [(None, 0), (1.0, 4)]
    con.close()


def test_regression_matches_the_instance_level_cluster_robust_fit(con):
    # Reference: statsmodels' GLM on one row per valid instance, occupation indicators without intercept,
    # cov_type='cluster' (its default correction is CR1 with N = instances).
    import numpy as np
    import statsmodels.api as sm

    run = RunBuilder(con)
    rows = []
    occupation_names = ("cook", "judge", "pilot")
    for pair_id, index, order in itertools.product(range(1, 7), range(3), ("fm", "mf")):
        occupation = occupation_names[index]
        female = (pair_id * 2 + index + pair_id**2 * index + (order == "mf")) % 5 < 3  # shares vary by pair
        choice = "female" if female else "male"
        run.instance("control", pair_id, order, occupation, "yes", "no", choice, "both")
        rows.append((pair_id, occupation, int(female)))
    analyze(con, "r1")
    pair_ids, occupations, chose_female = map(np.array, zip(*rows, strict=True))
    design = np.column_stack([occupations == name for name in occupation_names]).astype(float)
    reference = sm.GLM(chose_female, design, family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": pair_ids}
    )
    stored = con.execute(
        "SELECT coef, std_err FROM regression WHERE term LIKE 'occupation:%' ORDER BY term"
    ).fetchall()
    expected = [value for pair in zip(reference.params, reference.bse, strict=True) for value in pair]
    assert [value for row in stored for value in row] == pytest.approx(expected)


NO_PAIR_VARIATION = "no variation between name pairs: clustered standard error 0"


def test_regression_without_between_pair_variation_keeps_the_estimate_but_no_inference(con):
    run = RunBuilder(con)
    for pair_id in (1, 2):  # each pair: one woman, one man chosen -> log-odds 0, every cluster score 0
        run.instance("control", pair_id, "fm", "cook", "yes", "no", "female", "both")
        run.instance("control", pair_id, "mf", "cook", "yes", "no", "male", "both")
    analyze(con, "r1")
    assert con.execute(
        "SELECT coef, std_err, ci_low, ci_high, p_value, odds_ratio, n, n_clusters, note FROM regression "
        "WHERE term = 'occupation:cook'"
    ).fetchall() == [(0.0, None, None, None, None, 1.0, 4, 2, NO_PAIR_VARIATION)]
