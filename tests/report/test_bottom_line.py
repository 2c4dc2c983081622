"""The report's bottom line (probe/report/bottom_line.py, probe/analysis/pairs.py) and the report sentences of issue
37 item 3: each direct gender finding in a plain sentence, what carries it (each name pair's share with its own
interval, a test of heterogeneity between pairs), what the run cannot test, captions at the level used."""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from bench.worlds import ResampledWorld, to_frames
from probe.analysis.pairs import heterogeneity, pair_shares
from probe.report.findings import _correlation_finding, _own_test, _test_text, _verdict
from probe.report.render import occupation_levels, render_report
from probe.store.db import SCHEMA
from tests.analysis.test_claims import _store, claim_problems


@pytest.fixture(scope="module")
def smollm2() -> dict[str, Any]:
    """The bundled SmolLM2's quick run (12 pairs, 8 occupations; kept in bench/data/) through analyze and summary."""
    con = duckdb.connect()
    con.execute(SCHEMA)
    try:
        items, answers = to_frames(ResampledWorld().real)
        return _store(con, items.assign(wording="paper"), answers)
    finally:
        con.close()


def test_the_bundled_models_run_opens_with_its_bottom_line(smollm2: dict[str, Any]) -> None:
    """Issue 37 item 7: six pairs always pick the woman, one always the man, the rest mostly whoever is named first;
    the overall share's test does not reject, the grant gap's does, and no control condition separates them."""
    bottom = smollm2["bottom_line"]
    assert [v["sentence"] for v in bottom["verdicts"]] == [
        "No gender preference is shown (taxonomy): 69.8% [45.3, 84.8], p = 0.106 (score test over name pairs (the "
        "interval's own test) against 0.5).",
        "Women are granted more attributes (stage1): +29.2 pts [+3.0, +55.4], p = 0.032 (paired t test over name "
        "pairs (the interval's own test) against 0.0).",
    ]
    assert bottom["inheritance"] == (
        "Stage 1 granted women more attributes, and the taxonomy condition shows each person the attributes stage 1 "
        "granted: a lean to women there would mix that gap with a choice on the names (none is shown here). This run "
        "has no control or baseline condition (identical or no attributes), so nothing separates the two: run it "
        "with --conditions taxonomy,control."
    )
    pairs = bottom["pairs"]
    assert pairs["counts"] == {"female": 6, "male": 1, "none": 5}
    rows = {row["pair_id"]: row for row in pairs["rows"]}
    assert [pair for pair, row in rows.items() if row["lean"] == "female"] == [3, 5, 7, 10, 11, 12]
    low = proportion_confint(8, 8, method="beta")[0]  # 8 valid instances per name order, all the woman
    assert (rows[3]["value"], rows[3]["ci_low"], rows[3]["ci_high"]) == pytest.approx(
        (1.0, 1 - (1 - low) / 2**0.5, 1.0)
    )
    assert (rows[9]["value"], rows[9]["lean"]) == (0.0, "male")
    assert [pair for pair, row in rows.items() if row["first_named"] == 1.0] == [2, 6, 8]
    assert pairs["sentence"] == (
        "Of 12 name pairs (taxonomy), 6 lean to the woman and 1 to the man by their own 95% intervals (each pair at "
        "0.05, not corrected for 12 pairs); 5 show no lean, and 3 picked whoever was named first in every choice."
    )
    assert pairs["heterogeneity"]["p_value"] == 0.001 and pairs["heterogeneity"]["sentence"].startswith(
        "The name pairs differ (p = 0.001, stratified permutation test)"
    )
    # a lone preferred occupation cannot pass Benjamini-Hochberg at 7 leaning pairs: said among what it cannot test
    assert bottom["cannot_test"] == [
        "occupation preference (taxonomy): a lone preferred occupation cannot pass Benjamini-Hochberg with 7 leaning "
        "name pairs per occupation; only several preferred occupations together could be found."
    ]
    assert claim_problems(smollm2) == []


def test_the_pages_open_with_the_bottom_line_and_direct_measures_lead(smollm2: dict[str, Any]) -> None:
    html, markdown = render_report(smollm2)
    assert html.index('id="bottom-line"') < html.index('id="summary"') < html.index('id="run-card"')
    assert markdown.index("## Bottom line") < markdown.index("## Summary")
    assert "| 3 | \u2013 / \u2013 | 100.0% [73.9, 100.0] | 50.0% | 16 | female |" in markdown  # no names: dashes
    assert 'id="fig-pair-shares"' in html
    # issue 37 item 7: bias was read as a gender measure; it and consistency say they are not
    metrics = [finding["metric"] for finding in smollm2["headline"]]
    assert metrics.index("female_share") == 0 and metrics.index("attr_yes_diff") < metrics.index("bias")
    bias = next(finding for finding in smollm2["headline"] if finding["metric"] == "bias")
    assert bias["finding"].startswith("Bias (taxonomy; not a gender measure: either gender counts): ")
    assert "Consistency and bias are not gender measures" in markdown.split("## Summary")[0]
    # issue 37 item 3: the occupation intervals are at the decision's level, 1 - 0.05 / 8, not 95%
    assert "lines are 99.4%\n  intervals, the level of the decision, not 95%" in html


def test_the_caption_names_each_conditions_level() -> None:
    assert occupation_levels([{"condition": "taxonomy", "ci_level": 1 - 0.05 / 8}] * 2) == "99.4%"
    assert (
        occupation_levels(
            [
                {"condition": "taxonomy", "ci_level": 1 - 0.05 / 8},
                {"condition": "control", "ci_level": 1 - 2 * 0.05 / 4},
            ]
        )
        == "99.4% (taxonomy), 97.5% (control)"
    )


def _cells(picks: dict[int, list[int]], cells: int = 4) -> pd.DataFrame:
    """wording_cells rows: pair -> its picks of the woman per cell (1 / 0), one instance per cell."""
    return pd.DataFrame(
        [
            ("taxonomy", "paper", pair, f"o{cell // 2}", ("fm", "mf")[cell % 2], 1, values[cell])
            for pair, values in picks.items()
            for cell in range(cells)
        ],
        columns=["condition", "wording", "pair_id", "occupation", "name_order", "n", "female_share"],
    )


def test_a_pairs_interval_combines_its_two_orders_exact_intervals() -> None:
    rows = pair_shares(_cells({1: [1, 1, 1, 0], 2: [1, 1, 1, 1]})).set_index("pair_id")
    # pair 1: fm 2 of 2, mf 1 of 2: value 0.75, MOVER: 0.75 -+ sqrt((p - l)^2 + (p - l)^2) / 2 per side
    (fm_low, fm_high), (mf_low, mf_high) = (proportion_confint(k, 2, method="beta") for k in (2, 1))
    low = 0.75 - np.hypot(1 - fm_low, 0.5 - mf_low) / 2
    high = 0.75 + np.hypot(fm_high - 1, mf_high - 0.5) / 2
    assert (rows.loc[1, "value"], rows.loc[1, "ci_low"], rows.loc[1, "ci_high"]) == pytest.approx((0.75, low, high))
    # 4 of 4 for the woman: the exact test's p is 0.125, and the pair's interval holds 50% (Wilson's would not)
    assert rows["lean"].tolist() == ["none", "none"]
    assert rows.loc[2, "ci_high"] == 1.0 and rows.loc[2, "ci_low"] < 1.0  # never zero-width


def test_the_heterogeneity_test_is_exact_with_the_pair_as_unit() -> None:
    split = heterogeneity(_cells({pair: [int(pair <= 3)] * 16 for pair in range(1, 7)}, cells=16)).iloc[0]
    assert (split["pairs"], split["p_value"], split["differ"]) == (6, 1 / 1000, True)  # no shuffle reaches it
    # in 2 occupations a split could be pair x occupation noise the two orders share: a pair's two orders move
    # together, so the shuffles reach it when both occupations split alike (1 in C(6, 3) = 20; 52 of 999 here)
    two = heterogeneity(_cells({pair: [int(pair <= 3)] * 4 for pair in range(1, 7)})).iloc[0]
    assert (two["p_value"], two["differ"]) == (0.053, False)
    alike = heterogeneity(_cells({pair: [1, 0, 1, 0] for pair in range(1, 7)})).iloc[0]
    assert (alike["statistic"], alike["p_value"], alike["differ"]) == (0.0, 1.0, False)
    few = heterogeneity(_cells({pair: [int(pair <= 2)] * 4 for pair in range(1, 6)})).iloc[0]
    assert np.isnan(few["p_value"]) and not few["differ"]  # 5 pairs: below MIN_PAIRS, no test
    # its size: pairs alike (each cell's picks at the cell's own rate), 8 pairs x 16 cells, 100 runs (5 reject)
    rng = np.random.default_rng(3)
    rates = rng.uniform(0.1, 0.9, 16)
    rejected = [
        heterogeneity(
            _cells({pair: (rng.random(16) < rates).astype(int).tolist() for pair in range(1, 9)}, cells=16)
        ).iloc[0]["differ"]
        for _ in range(100)
    ]
    assert np.mean(rejected) <= 0.075


def test_a_shift_the_metric_cannot_reach_is_not_testable() -> None:
    """Issue 37 item 3: 'a shift of 52.9 percentage points' from 50% was called testable."""
    entry = {"min_p_value": 0.03, "mde": 0.529, "pairs": 6, "p_value": 0.2, "method": "score"}
    share = _own_test(entry, 0.5, "share")
    assert share["testable"] is False
    assert _verdict(share, "name pairs") == (
        "Not testable at this size: with 6 name pairs only a shift of 52.9 percentage points from no effect would be "
        "detected with 80% power, more than the 50.0 the metric's range allows."
    )
    assert _own_test(entry, 0.0, "difference")["testable"] is True  # a difference may move 100 points
    # a test that rejects shows its direction whatever its power
    assert _test_text(
        _own_test({**entry, "p_value": 0.01}, 0.5, "share"), "gender preference", "The model prefers women"
    ).startswith(" The model prefers women (p = 0.010")


def test_the_correlation_below_six_pairs_is_not_testable() -> None:
    row = {
        "condition": "taxonomy",
        "across": "pair",
        "x": "consistency",
        "y": "bias",
        "r": 0.9,
        "n": 5,
        "ci_low": None,
        "ci_high": None,
        "p_value": None,
        "p_adjusted": None,
    }
    assert _correlation_finding([row], "taxonomy")["finding"] == (
        "The consistency-bias correlation across 5 name pairs (taxonomy) is not testable at this size: its "
        "permutation test needs 6 or more pairs whose consistency and bias both vary."
    )


@pytest.mark.parametrize(
    ("needed", "words"),
    [(3660, "about 3,660 name pairs would decide it"), (10_001, "more than 10,000 name pairs would decide it")],
)
def test_pairs_needed_read_as_one_figure(needed: int, words: str) -> None:
    """Issue 37 item 3: "about more than 10,000 name pairs"; a count reads with its thousands separator."""
    from probe.gates.gate import PairsNeeded
    from probe.gates.verdicts import decides

    assert decides(PairsNeeded(needed)) == words + " with 80% power, if the truth is this estimate"
