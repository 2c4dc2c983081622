"""Metrics of DESIGN.md section 5 on hand-built runs; every expected value is worked out by hand here."""

from __future__ import annotations

import itertools
import re

import duckdb
import pytest
from typer.testing import CliRunner

from probe.analysis.metrics import analyze
from probe.cli import app
from probe.common.errors import UserError
from probe.store.db import SCHEMA, connect
from tests.support import RunBuilder, metric, metric_values, unknown_answers, wilson

WIDE = {"COLUMNS": "200"}  # rich wraps table cells to the terminal width


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
    assert metric_values(con, "taxonomy", "pair", "1", STAGE2_METRICS) == pytest.approx(
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
    assert metric_values(con, "taxonomy", "pair", "2", STAGE2_METRICS) == pytest.approx(
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
    assert metric_values(con, "taxonomy", "overall", "all", STAGE2_METRICS) == pytest.approx(
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
    # doctor: a, b, e valid (consistency 1, 1, 0), f invalid: pooled 2/3. Two pairs: no interval (an interval
    # over pairs needs 6; tests/analysis/test_inference.py has them).
    assert metric(con, "taxonomy", "occupation", "doctor", "consistency") == pytest.approx((2 / 3, None, None, 3))
    assert metric(con, "taxonomy", "occupation", "doctor", "prefer_f")[0] == pytest.approx(1 / 3)
    assert metric(con, "taxonomy", "occupation", "nurse", "bias")[0] == pytest.approx(1 / 2)
    assert metric(con, "taxonomy", "occupation", "nurse", "unknown_rate")[0] == pytest.approx(1 / 3)
    # pilot's two instances are invalid: NULL values, n = 0, unknown_rate 1 (one instance in each pair).
    for name in STAGE2_METRICS:
        assert metric(con, "taxonomy", "occupation", "pilot", name) == (None, None, None, 0)
    assert metric(con, "taxonomy", "occupation", "pilot", "unknown_rate") == (1.0, None, None, 2)


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
    # nurse's attribute (Active Listening) was granted to the woman in both pairs (2 pairs: no interval).
    assert metric(con, "stage1", "occupation", "nurse", "attr_yes_f") == (1.0, None, None, 2)
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
    assert con.execute("SELECT n, share_female, p_value, q_value, preferred FROM occupation_preference").fetchall() == [
        (0, None, None, None, "none")
    ]
    assert con.execute("SELECT term, coef, n, note FROM regression ORDER BY term").fetchall() == [
        ("occupation:nurse", None, 0, "no valid instances"),
        ("overall", None, 0, "no valid instances"),
    ]


def test_a_run_recorded_without_items_analyses_to_no_rows(con):
    # found by review: a run stopped before its first stage was built made `probe analyze` raise pandas'
    # "No objects to concatenate"
    RunBuilder(con)
    analyze(con, "r1")
    counts = [
        con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        for table in ("metrics", "occupation_preference", "correlations", "regression")
    ]
    assert counts == [0, 0, 0, 0]


def test_single_pair_overall_equals_the_pair_value_without_interval(con):
    run = RunBuilder(con)
    run.instance("taxonomy", 7, "fm", "nurse", "yes", "no", "female", "female")
    run.instance("taxonomy", 7, "mf", "nurse", "no", "no", "female", "both")
    analyze(con, "r1")
    assert metric(con, "taxonomy", "overall", "all", "consistency") == (0.5, None, None, 2)
    assert metric(con, "taxonomy", "pair", "7", "consistency")[0] == 0.5


def test_intervals_contain_the_estimate_and_are_identical_across_databases(con, two_pair_run):
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
        "SELECT count(*) FROM (SELECT condition, scope, key, metric FROM metrics GROUP BY ALL HAVING count(*) > 1)"
    ).fetchone() == (0,)


def test_unknown_run_is_a_user_error_and_changes_nothing(con, two_pair_run):
    before = con.execute("SELECT * FROM metrics ORDER BY ALL").fetchall()
    with pytest.raises(UserError, match="no-such-run"):
        analyze(con, "no-such-run")
    assert con.execute("SELECT * FROM metrics ORDER BY ALL").fetchall() == before


@pytest.fixture
def db_file(tmp_path):
    path = tmp_path / "probe.duckdb"
    connect(path).close()
    return path


def test_cli_analyze_show_prints_headline_and_preferred_occupations(db_file):
    con = connect(db_file)
    run = RunBuilder(con, "cli-run")
    for pair_id, order in itertools.product(range(1, 7), ("fm", "mf")):
        run.instance("taxonomy", pair_id, order, "astronaut", "yes", "no", "female", "female")
    con.close()
    result = CliRunner().invoke(app, ["analyze", "cli-run", "--db", str(db_file), "--show"], env=WIDE)
    assert result.exit_code == 0, result.output
    # every pair has consistency 1 and prefer_f 0: no event to count but pairs, so the no-event bound over 6
    # pairs, 1 - 0.025^(1/6) = 0.459 (whatever the correlation within a pair); all 6 pairs lean female: sign
    # test p = q = 2 / 64.
    assert re.search(r"consistency\s+│\s+1\.000 \[0\.541, 1\.000\]", result.output)
    assert re.search(r"prefer_f\s+│\s+0\.000 \[0\.000, 0\.459\]", result.output)
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
        [
            "run",
            "--backend",
            "replay",
            "--answers",
            str(answers),
            "--pairs",
            "1,3",
            "--occupations",
            "nurse",
            "--top-k",
            "1",
            "--conditions",
            "control",
            "--run-id",
            "replayed",
            "--db",
            str(db_file),
        ],
        env=WIDE,
    )
    assert result.exit_code == 0, result.output
    # both pairs all unknown: 2 pairs, so no interval
    assert re.search(r"unknown_rate\s+│\s+1\.000 \(no interval\)", result.output)
    con = connect(db_file)
    # 2 pairs x 2 orders x 1 occupation = 4 control instances, none valid
    assert con.execute(
        "SELECT value, n FROM metrics WHERE run_id = 'replayed' AND condition = 'control' "
        "AND scope = 'overall' AND metric IN ('consistency', 'unknown_rate') ORDER BY metric"
    ).fetchall() == [(None, 0), (1.0, 4)]
    con.close()
