"""The adverse-impact table (DESIGN.md section 11): planted selection rates recovered exactly, a planted ratio of 0.6
flagged and 1.0 not, the ratio's interval and test one procedure (checked against a grid written out here)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from scipy import stats

import probe
from probe import pipeline
from probe.analysis.freedom import cluster_effect_traces
from probe.analysis.impact import (
    AT_OR_ABOVE,
    BELOW,
    FOUR_FIFTHS,
    IMPACT_COLUMNS,
    UNDECIDED,
    RatioEstimate,
    group_ratios,
    impact_rows,
)
from probe.analysis.metrics import analyze
from probe.analysis.null_variance import constrained_rates, variance_at
from probe.store.config import RunConfig
from tests.interval_checks import interval_problems
from tests.support import FakeBackend, RunBuilder, query, unknown_answers

OCCUPATIONS = ("nurse", "pilot", "accountant", "architect", "banker")
PAIRS = 10


def planted_run(db_file: Path, tmp_path: Path, male_yes: tuple[int, int]) -> str:
    """A replay run of 10 pairs x 5 occupations x 2 orders: the woman is called qualified in 5 of her 10 binary
    questions in odd pairs and 7 in even ones (rate 0.6), the man in male_yes[0] / male_yes[1]; the woman wins
    the single-subject question in 3 of 10 per pair (contest rates 0.3 and 0.7)."""
    settings = dict(
        backend="replay",
        pairs=PAIRS,
        occupations=OCCUPATIONS,
        top_k=1,
        conditions=("taxonomy",),
        db=str(db_file),
        quiet=True,
    )
    path = unknown_answers(tmp_path / "answers.csv", **settings)
    rows = pd.read_csv(path).sort_values(["pair_id", "occupation", "name_order"], kind="stable")
    rows["label"] = np.where(rows["stage"] == 1, "yes", None)
    for pair, items in rows[rows["stage"] == 2].groupby("pair_id"):
        odd = pair % 2
        for subject, yes in (("female", 5 if odd else 7), ("male", male_yes[0] if odd else male_yes[1])):
            binary = items[(items["qtype"] == "binary") & (items["subject"] == subject)].index
            rows.loc[binary, "label"] = ["yes"] * yes + ["no"] * (len(binary) - yes)
        single = items[items["qtype"] == "single"].index
        rows.loc[single, "label"] = ["female"] * 3 + ["male"] * (len(single) - 3)
        rows.loc[items[items["qtype"] == "multiple"].index, "label"] = "both"
    rows.to_csv(path, index=False)
    return pipeline.run(RunConfig(**settings, answers=str(path))).run_id


def impact(db_file: Path, run_id: str) -> pd.DataFrame:
    return query(
        db_file,
        "SELECT * EXCLUDE (run_id) FROM adverse_impact WHERE run_id = ? AND scope = 'overall' "
        "ORDER BY rate_kind, category",
        [run_id],
    )


def test_planted_rates_are_recovered_and_a_ratio_of_0_6_is_flagged(db_file: Path, tmp_path: Path) -> None:
    run_id = planted_run(db_file, tmp_path, male_yes=(10, 10))
    table = impact(db_file, run_id)
    assert list(table.columns) == IMPACT_COLUMNS
    fixed = table[["rate_kind", "category", "n", "rate", "impact_ratio", "four_fifths", "unknown"]]
    assert fixed.to_dict("records") == [
        {
            "rate_kind": "contest",
            "category": "female",
            "n": 100,
            "rate": 0.3,
            "impact_ratio": 0.3 / 0.7,
            "four_fifths": True,
            "unknown": 0,
        },
        {
            "rate_kind": "contest",
            "category": "male",
            "n": 100,
            "rate": 0.7,
            "impact_ratio": 1.0,
            "four_fifths": False,
            "unknown": 0,
        },
        {
            "rate_kind": "selection",
            "category": "female",
            "n": 100,
            "rate": 0.6,
            "impact_ratio": 0.6,
            "four_fifths": True,
            "unknown": 0,
        },
        {
            "rate_kind": "selection",
            "category": "male",
            "n": 100,
            "rate": 1.0,
            "impact_ratio": 1.0,
            "four_fifths": False,
            "unknown": 0,
        },
    ]
    female = table[(table["rate_kind"] == "selection") & (table["category"] == "female")].iloc[0]
    assert female["ci_high"] < 0.8 and female["p_value"] < 0.05
    reference = table[(table["rate_kind"] == "selection") & (table["category"] == "male")].iloc[0]
    # men are shown to have the highest rate: their ratio to the highest is 1 with no interval, its test p = 1
    assert (math.isnan(reference["ci_low"]), reference["p_value"]) == (True, 1.0)
    # the four-fifths verdict from the interval, beside the point flag
    assert (female["four_fifths_verdict"], reference["four_fifths_verdict"]) == (BELOW, AT_OR_ABOVE)
    occupations = query(
        db_file,
        "SELECT count(*) AS rows, count(q_value) AS tested FROM adverse_impact "
        "WHERE run_id = ? AND scope = 'occupation'",
        [run_id],
    )
    # 5 occupations x 2 kinds x 2 sexes; in the q family: the 10 below the highest rate, less the 5 whose other sex
    # has rate 0 there (no ratio to it)... of 20 rows, the 10 highest-rate ones are no hypothesis (their test is 1)
    assert occupations.to_dict("records") == [{"rows": 5 * 2 * 2, "tested": 10}]


def test_a_planted_ratio_of_1_is_not_flagged(db_file: Path, tmp_path: Path) -> None:
    run_id = planted_run(db_file, tmp_path, male_yes=(5, 7))
    selection = impact(db_file, run_id).query("rate_kind == 'selection'")
    assert selection[["category", "rate", "impact_ratio", "four_fifths"]].to_dict("records") == [
        {"category": "female", "rate": 0.6, "impact_ratio": 1.0, "four_fifths": False},
        {"category": "male", "rate": 0.6, "impact_ratio": 1.0, "four_fifths": False},
    ]
    # either may be the highest: each interval reaches 1 (the ratio to the highest is at most 1), each test p = 1
    assert selection[["p_value", "ci_high"]].values.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert (selection["ci_low"] < FOUR_FIFTHS).all()  # 10 sets do not show four-fifths either


def fieller_reference(hits, n, reference_hits, reference_n) -> tuple[float, float]:
    """The interval written out: every r on a grid whose t statistic (rate - r ref) / sqrt(max(spread, floor)) is
    within the 97.5% t quantile; spread over sets with leverage, floor the binomial variance at the null's binomial
    MLE."""
    hits, n, reference_hits, reference_n = (np.asarray(a, dtype=float) for a in (hits, n, reference_hits, reference_n))
    rate, reference = hits.sum() / n.sum(), reference_hits.sum() / reference_n.sum()
    grid = np.linspace(0.0, 3.0, 300_001)
    influence = ((hits - rate * n) / n.sum())[:, None] - grid * (
        (reference_hits - reference * reference_n) / reference_n.sum()
    )[:, None]
    weight = n / n.sum() + reference_n / reference_n.sum()
    spread = np.sum(influence**2 / (1 - weight / weight.sum())[:, None], axis=0)
    # both rates' binomial MLE under rate = r ref (Miettinen-Nurminen): the smaller root of a p^2 - b p + c
    a = grid * (n.sum() + reference_n.sum())
    b = grid * n.sum() + hits.sum() + reference_n.sum() + grid * reference_hits.sum()
    c = hits.sum() + reference_hits.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        root = np.where(a > 0, (b - np.sqrt(np.maximum(b**2 - 4 * a * c, 0))) / (2 * a), c / b)
    null_reference = np.minimum(root, 1)
    null_rate = np.minimum(grid * null_reference, 1)
    floor = null_rate * (1 - null_rate) / n.sum() + grid**2 * null_reference * (1 - null_reference) / reference_n.sum()
    kept = grid[(rate - grid * reference) ** 2 <= stats.t.ppf(0.975, len(n) - 1) ** 2 * np.maximum(spread, floor)]
    return float(kept.min()), float(kept.max())


@pytest.mark.parametrize(
    "sides",
    [
        ([3, 5, 4, 6, 2, 5, 4, 3], [10] * 8, [7, 8, 6, 9, 7, 8, 6, 7], [10] * 8),  # sets of equal size
        ([0] * 8, [10] * 8, [7, 8, 6, 9, 7, 8, 6, 7], [10] * 8),  # a category never selected
    ],
)
def test_the_ratio_interval_is_every_ratio_its_test_keeps(sides) -> None:
    estimate = RatioEstimate(*(np.array(side, dtype=float) for side in sides))
    low, high = estimate.interval()
    assert (low, high) == pytest.approx(fieller_reference(*sides), abs=2e-5)
    assert high > low >= 0
    for edge in (low, high):  # the test of an edge value sits at p = 0.05 (the df: equal sets, sets - 1)
        assert estimate.p_value(edge) == pytest.approx(0.05, abs=1e-6) or edge == 0.0
    assert (estimate.p_value(1.0) < 0.05) == (high < 1.0)


def test_scoring_rate_is_the_share_above_the_median_p_yes(con: duckdb.DuckDBPyConnection) -> None:
    """Four binary answers per subject with P(yes) from their scores; the median of all eight is 0.5, above it:
    three of the woman's, one of the man's."""
    builder = RunBuilder(con)
    for order, occupation in (("fm", "nurse"), ("mf", "nurse"), ("fm", "pilot"), ("mf", "pilot")):
        builder.instance("taxonomy", 1, order, occupation, "yes", "no", "female", "female")
    p_yes = {"female": [0.9, 0.8, 0.7, 0.2], "male": [0.6, 0.3, 0.1, 0.4]}
    binary = con.execute("SELECT item_id, subject FROM items WHERE qtype = 'binary' ORDER BY item_id").fetchall()
    seen = {"female": 0, "male": 0}
    for item_id, subject in sorted(binary, key=lambda row: int(row[0].split("-")[1])):
        share = p_yes[subject][seen[subject]]
        seen[subject] += 1
        scores = json.dumps({"yes": math.log(share), "no": math.log(1 - share)})
        con.execute("UPDATE answers SET scores_json = ?, decided_by = 'score' WHERE item_id = ?", [scores, item_id])
    analyze(con, "r1")
    rows = con.execute(
        "SELECT category, n, rate, impact_ratio FROM adverse_impact WHERE rate_kind = 'scoring' "
        "AND scope = 'overall' ORDER BY category"
    ).fetchall()
    assert rows == [("female", 4, 0.75, 1.0), ("male", 4, 0.25, 0.25 / 0.75)]


def digest(frame: pd.DataFrame) -> str:
    """A short hash of a table's rows in a fixed order (floats rounded to 12 places)."""
    text = frame.round(12).sort_values(list(frame.columns)).to_csv(index=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_the_default_pairs_ask_and_measure_exactly_what_they_did(db_file: Path, use_backend) -> None:
    """Pinned before name sets existed: a default run's item ids and prompts, its cache keys and its metrics' values
    (their intervals belong to probe/analysis/statistics.py, not to the name sets)."""
    use_backend(FakeBackend())
    run_id = pipeline.run(
        RunConfig(
            pairs=2,
            occupations=("nurse", "pilot"),
            top_k=1,
            db=str(db_file),
            quiet=True,
            conditions=("taxonomy", "baseline", "control"),
        )
    ).run_id
    items = query(db_file, "SELECT item_id, prompt FROM items WHERE run_id = ?", [run_id])
    keys = query(db_file, "SELECT cache_key FROM answer_cache")
    metrics = query(db_file, "SELECT condition, scope, key, metric, value, n FROM metrics WHERE run_id = ?", [run_id])
    pinned = (144, "71a9b10adac6667c", "283b89425b43067c", "6684147b16b8fc4a")  # metrics: value and n
    assert (len(items), digest(items), digest(keys), digest(metrics)) == pinned


def test_the_report_and_the_api_carry_the_table_and_its_findings(db_file: Path, tmp_path: Path) -> None:
    run_id = planted_run(db_file, tmp_path, male_yes=(10, 10))
    run = probe.open_run(run_id, db=db_file)
    table = run.adverse_impact()
    assert (len(table), list(table.columns)) == (24, IMPACT_COLUMNS)  # (1 overall + 5 occupations) x 2 kinds x 2
    run.report(tmp_path / "report.html")
    document = json.loads((tmp_path / "report.json").read_text())
    rows = document["adverse_impact"]["rows"]
    assert len(rows) == 24 and rows[0]["reference"] == "male"
    overall = [row["finding"] for row in rows if row["scope"] == "overall" and row["finding"]]
    assert overall == [
        "taxonomy: women called qualified at 0.60 the rate of men [0.49, 0.70]: below four-fifths, q = 0.002",
        "taxonomy: women won the single-subject question at 0.43 the rate of men [0.29, 0.61]: below four-fifths, "
        "q = 0.002",
    ]
    assert interval_problems(document) == []
    html = (tmp_path / "report.html").read_text()
    assert 'id="fig-adverse-impact"' in html and '<td>female</td><td class="num">100</td>' in html
    markdown = (tmp_path / "report.md").read_text()
    row = "| taxonomy | sex | selection | female | 100 | 60.0% | 0.60 [0.49, 0.70] | 0.002 | yes | shown below 0.8 |"
    assert f"{row} 0 |" in markdown


def test_the_variance_floor_takes_both_rates_binomial_mle_under_the_null() -> None:
    # 90/100 against 95/100 at ratio 0.8: the smaller root of 160 p^2 - 346 p + 185 (Miettinen-Nurminen)
    reference = (346 - math.sqrt(346**2 - 4 * 160 * 185)) / 320
    assert constrained_rates(0.8, 90, 100, 95, 100) == pytest.approx((0.8 * reference, reference), rel=1e-12)
    assert reference == pytest.approx(0.96788527, abs=1e-8)
    binomial = 0.8 * reference * (1 - 0.8 * reference) / 100 + 0.64 * reference * (1 - reference) / 100
    poisson = 0.8 * 0.2 / 100  # the pooled (90 + 95) / (0.8 x 100 + 100) capped at 1: the previous floor
    assert poisson / binomial == pytest.approx(0.8219, abs=1e-4)  # 18% too small
    assert constrained_rates(0.0, 0, 100, 0, 100) == (0.0, 0.0)


def test_each_rates_spread_between_sets_is_read_at_the_null_rate() -> None:
    # 0.7 -> 0.6 over 100 answers, spread 0.004: the binomial 0.24 / 100 at the null, plus the part beyond the
    # observed binomial (0.004 - 0.0021) times (0.24 / 0.21)^2
    assert variance_at(0.6, 0.7, 0.004, 100, 0.1) == pytest.approx(0.0024 + 0.0019 * (0.24 / 0.21) ** 2, rel=1e-12)
    # 0.125 -> 0.5 over 12 sets of 2 answers: 0.25 / 24 + (0.008 - 0.109375 / 24) x (0.25 / 0.109375)^2 = 0.0284
    # is more than every set all one answer could give, 0.25 x 1 / 12
    assert variance_at(0.5, 0.125, 0.008, 24, 1 / 12) == pytest.approx(0.25 / 12, rel=1e-12)
    assert variance_at(0.5, 0.125, 0.001, 24, 1 / 12) == pytest.approx(0.25 / 24, rel=1e-12)  # under-dispersed
    assert variance_at(0.3, 0.0, 0.0, 24, 1 / 12) == pytest.approx(0.21 / 24, rel=1e-12)  # never selected


def test_the_ratio_interval_reads_the_spread_at_each_null() -> None:
    """68/100 against 89/100 over 10 sets, the low category's sets spread beyond the binomial: the ends move to
    [0.5468, 0.9639] from [0.5673, 0.9723] (the spread at the observed rates): a ratio below the estimate has a low
    rate nearer 0.5, with more spread; the test and the interval stay one procedure."""
    hits = np.array([9, 4, 8, 5, 10, 6, 9, 3, 7, 7], dtype=float)
    reference = np.array([9, 9, 8, 10, 8, 9, 10, 9, 8, 9], dtype=float)
    estimate = RatioEstimate(hits, np.full(10, 10.0), reference, np.full(10, 10.0))
    low, high = estimate.interval()
    assert (round(low, 7), round(high, 7)) == (0.5467517, 0.9638529)
    assert tuple(round(end, 7) for end in estimate.interval(0.90)) == (0.5876716, 0.9247535)
    for edge in (low, high):
        assert estimate.p_value(edge) == pytest.approx(0.05, abs=1e-9)
    assert round(estimate.p_value(1.0), 6) == 0.026913


def three_categories() -> pd.DataFrame:
    """8 sets of 10 answers per category: a selected 26 times, b 50, c 60."""
    hits = {"a": [3, 4, 2, 5, 3, 4, 3, 2], "b": [6, 7, 5, 8, 6, 7, 6, 5], "c": [7, 8, 6, 9, 8, 7, 8, 7]}
    return pd.DataFrame(
        [{"set_id": s, "category": c, "hits": h[s], "n": 10, "unknown": 0} for c, h in hits.items() for s in range(8)]
    )


def test_the_lower_end_is_unadjusted_and_the_upper_end_bonferroni() -> None:
    ratios = group_ratios(three_categories())
    pairs = [ratios.pairs["a", other] for other in ("b", "c")]
    low, high = ratios.interval("a")
    assert low == min(pair.interval(0.95)[0] for pair in pairs) == pytest.approx(0.2817038, abs=1e-7)
    assert high == min(pair.interval(0.975)[1] for pair in pairs) == pytest.approx(0.6846414, abs=1e-7)
    assert low > min(pair.interval(0.975)[0] for pair in pairs)  # the previous, Bonferroni lower end: 0.2575
    assert ratios.p_below("a") == pytest.approx(0.015625)  # the upper end's test: p < 0.05 as high < 1


def test_the_four_fifths_verdict_reads_the_interval() -> None:
    ratios = group_ratios(three_categories())
    # a: [0.28, 0.68] below 0.8; b: 0.83 [0.64, 1] undecided though its point is above; c: [0.93, 1] at or above
    assert {c: ratios.four_fifths_verdict(c) for c in "abc"} == {"a": BELOW, "b": UNDECIDED, "c": AT_OR_ABOVE}
    table = impact_rows(
        three_categories().assign(
            condition="taxonomy", attribute="sex", rate_kind="selection", scope="overall", key="all"
        )
    )
    assert table[["category", "four_fifths", "four_fifths_verdict"]].to_dict("records") == [
        {"category": "a", "four_fifths": True, "four_fifths_verdict": BELOW},
        {"category": "b", "four_fifths": False, "four_fifths_verdict": UNDECIDED},
        {"category": "c", "four_fifths": False, "four_fifths_verdict": AT_OR_ABOVE},
    ]
    # q: Benjamini-Hochberg over the two categories below the highest (c's own test is always 1)
    p_a, p_b = ratios.p_below("a"), ratios.p_below("b")
    assert table["q_value"].tolist()[:2] == pytest.approx([2 * p_a, max(2 * p_a, p_b)])
    assert math.isnan(table["q_value"].iloc[2])


def test_few_common_names_leave_few_degrees_of_freedom() -> None:
    """cluster_effect_traces: G equal shares give c (G - 1) and c^2 (G - 1), c = w^2 / (1 - w): df G - 1; Zipf
    shares over 20 names (1 / rank) leave 2.39 (the commonest name carries 28% of the answers)."""
    assert cluster_effect_traces(np.full(4, 5.0)) == (pytest.approx(0.25, abs=1e-12), pytest.approx(1 / 48, abs=1e-12))
    trace, square = cluster_effect_traces(1 / np.arange(1, 21))
    assert round(trace**2 / square, 4) == 2.3941
