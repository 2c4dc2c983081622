"""Inference with wording as a second source of variation (probe/analysis/robustness.py): the crossed interval,
the wording test, the verdict, the per-(pair, wording) values."""

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import expit, logit

from probe import pipeline
from probe.analysis.robustness import (
    METHODS,
    Interval,
    cell_values,
    crossed_interval,
    pair_interval,
    robustness_rows,
    verdict,
    wording_test,
)
from probe.report.robustness import _sentence
from probe.store.config import RunConfig
from tests.support import FakeBackend

# 3 pairs x 2 wordings, pair and wording effects without interaction: residuals from the mean 0.5 are
# [[-.3, -.1], [-.1, .1], [.1, .3]].
ADDITIVE = np.array([[0.2, 0.4], [0.4, 0.6], [0.6, 0.8]])


def test_the_crossed_variance_is_pairs_plus_wordings_minus_cells() -> None:
    # V_pair = 3/2 (.16 + 0 + .16) / 36, V_wording = 2/1 (.09 + .09) / 36, V_cell = 6/5 .22 / 36: V = 0.016;
    # on the logit scale the standard error is sqrt(V) / (0.5 x 0.5), t on min(3, 2) - 1 = 1 degree of freedom
    crossed = crossed_interval(ADDITIVE, null=0.5)
    half = stats.t.ppf(0.975, 1) * math.sqrt(0.016) / 0.25
    assert crossed.value == pytest.approx(0.5)
    assert (crossed.ci_low, crossed.ci_high) == pytest.approx((expit(-half), expit(half)))
    assert crossed.p_value == pytest.approx(1.0)
    # a difference (range -1 to 1) maps onto [0, 1]: the test of 0.7 is the t of logit(0.75) - logit(0.85)
    difference = crossed_interval(ADDITIVE, null=0.7, low=-1.0)
    std_err = math.sqrt(0.016) / 2 / (0.75 * 0.25)
    assert difference.p_value == pytest.approx(2 * stats.t.sf((logit(0.85) - logit(0.75)) / std_err, 1))
    assert difference.ci_low == pytest.approx(2 * expit(logit(0.75) - stats.t.ppf(0.975, 1) * std_err) - 1)
    pairs_only = pair_interval(ADDITIVE)  # pair means .3, .5, .7: variance .04 / 3, t on 2 df
    assert pairs_only.ci_high - pairs_only.value == pytest.approx(stats.t.ppf(0.975, 2) * math.sqrt(0.04 / 3))


def test_no_spread_gives_no_interval_rather_than_a_zero_width_one() -> None:
    flat = crossed_interval(np.full((4, 3), 0.5), null=0.5)
    assert flat.value == 0.5 and math.isnan(flat.ci_low) and math.isnan(flat.p_value)


def test_the_wording_test_permutes_the_wordings_within_each_pair() -> None:
    # 3 pairs x 2 wordings: 8 arrangements. ADDITIVE's pairs all differ by +0.2 between wordings: only the observed
    # order and its mirror reach a wording mean gap of 0.2, p = 2 / 8 (3 pairs cannot show a wording effect at 5%).
    assert wording_test(ADDITIVE) == 0.25
    assert wording_test(np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])) == 1.0  # equal wording means
    # differences +0.2, 0, +0.1: |sum| 0.3 in 4 of 8 arrangements (the middle pair's swap changes nothing)
    assert wording_test(np.array([[0.3, 0.5], [0.5, 0.5], [0.55, 0.65]])) == 0.5
    # 8 pairs x 3 wordings (6^8 arrangements): 9,999 seeded ones; every pair ranks wording 3 first, then 2, then 1
    ordered = np.array([[0.1, 0.2, 0.3]] * 8) + np.arange(8)[:, None] / 10
    assert wording_test(ordered) == pytest.approx(1 / 10_000, abs=2 / 10_000)


def _at(value: float, p_value: float) -> Interval:
    return Interval(value, value - 0.1, value + 0.1, p_value)


@pytest.mark.parametrize(
    ("per_wording", "wording_p", "pairs", "expected"),
    [
        # every wording's own test rejects, all above 0.5
        ([_at(0.58, 0.01), _at(0.65, 0.001), _at(0.6, 0.02)], 0.5, 12, "holds"),
        # was "holds" (the crossed interval excluded 0.5 and every estimate lay above it) though one wording's own
        # test does not reject: a direction holds under a wording only where that wording's test rejects
        ([_at(0.58, 0.01), _at(0.65, 0.001), _at(0.55, 0.2)], 0.5, 12, "some"),
        # issue 37: per-wording p 0.087 to 0.229 (the crossed p was 4e-8): was "holds", no wording shows it
        ([_at(0.56, 0.087), _at(0.55, 0.229), _at(0.57, 0.1)], 0.6, 6, "not_shown"),
        ([_at(0.58, 0.01), _at(0.7, 0.001), _at(0.48, 0.6)], 0.001, 12, "depends"),
        ([_at(0.45, 0.3), _at(0.72, 0.001), _at(0.42, 0.1)], 0.001, 12, "depends"),
        ([_at(0.49, 0.8), _at(0.56, 0.03), _at(0.51, 0.9)], 0.2, 12, "some"),
        ([_at(0.52, 0.4), _at(0.55, 0.1), _at(0.51, 0.9)], 0.2, 12, "not_shown"),
        ([_at(0.58, 0.01), _at(0.65, 0.001), _at(0.6, 0.02)], 0.5, 5, "not_testable"),  # below MIN_PAIRS (6)
    ],
)
def test_the_verdict_reads_each_wordings_own_test(
    per_wording: list[Interval], wording_p: float, pairs: int, expected: str
) -> None:
    assert verdict(per_wording, wording_p, null=0.5, pairs=pairs) == expected


def test_a_metric_without_a_null_is_stable_unless_the_wording_test_rejects() -> None:
    assert verdict([_at(0.6, math.nan)] * 2, 0.2, null=None, pairs=6) == "stable"
    assert verdict([_at(0.6, math.nan)] * 2, 0.01, null=None, pairs=6) == "depends"
    assert verdict([_at(0.6, math.nan)] * 2, 0.01, null=None, pairs=5) == "not_testable"


def test_cell_values_balance_female_share_over_name_order_and_difference_grants() -> None:
    cells = pd.DataFrame(
        {
            "condition": "taxonomy",
            "wording": "paper",
            "pair_id": 1,
            "name_order": ["fm", "mf"],
            "n": [4, 2],
            "female_share": [4, 0],
            "position_first": [4, 2],
            "consistency": [3, 1],
            "bias": [0, 1],
        }
    )
    grants = pd.DataFrame(
        {
            "condition": "stage1",
            "wording": "paper",
            "pair_id": 1,
            "subject": ["female", "male"],
            "yes": [3, 1],
            "n": [4, 4],
        }
    )
    values = cell_values(cells, grants).set_index("metric")
    assert values["value"].to_dict() == pytest.approx(
        {"female_share": 0.5, "position_first": 1.0, "consistency": 4 / 6, "bias": 1 / 6, "attr_yes_diff": 0.5}
    )
    # the counts behind each value: hits of n (a balanced share has none), the men's grants beside the women's
    counts = values[["hits", "n", "other_hits", "other_n"]].fillna(-1).to_dict("index")
    assert counts == {
        "female_share": {"hits": -1, "n": 6, "other_hits": -1, "other_n": -1},
        "position_first": {"hits": 6, "n": 6, "other_hits": -1, "other_n": -1},
        "consistency": {"hits": 4, "n": 6, "other_hits": -1, "other_n": -1},
        "bias": {"hits": 1, "n": 6, "other_hits": -1, "other_n": -1},
        "attr_yes_diff": {"hits": 3, "n": 4, "other_hits": 1, "other_n": 4},
    }


def _female_share_values(matrix: list) -> pd.DataFrame:
    """Robustness cell values of female_share: one row per pair of [paper, synonym] (NaN: not asked)."""
    return pd.DataFrame(
        [
            ("taxonomy", wording, pair, "female_share", value, 10)
            for pair, row in enumerate(matrix, start=1)
            for wording, value in zip(("paper", "synonym"), row, strict=True)
        ],
        columns=["condition", "wording", "pair_id", "metric", "value", "n"],
    ).dropna()


def test_rows_leave_out_pairs_missing_a_wording_and_carry_the_verdict() -> None:
    rows = robustness_rows(_female_share_values([*ADDITIVE, [0.9, np.nan]]), ["paper", "synonym"]).set_index("key")
    assert list(rows.index) == ["paper", "synonym", "all"]
    assert rows["pairs"].tolist() == [3, 3, 3]
    assert rows.loc["paper", "value"] == pytest.approx(0.4) and rows.loc["synonym", "value"] == pytest.approx(0.6)
    assert rows.loc["all", "spread"] == pytest.approx(0.2)
    # 3 pairs, fewer than the 6 every interval over pairs needs: no crossed interval, no wording test (issue 37: they
    # were given with as few as 2 pairs), and the verdict says so
    crossed = rows.loc["all"]
    assert np.isnan([crossed[column] for column in ("ci_low", "ci_high", "p_value", "wording_p", "pair_ci_low")]).all()
    assert crossed["verdict"] == "not_testable"
    six = robustness_rows(_female_share_values([*ADDITIVE, *ADDITIVE, [0.9, np.nan]]), ["paper", "synonym"])
    crossed = six.set_index("key").loc["all"]
    assert crossed["pairs"] == 6 and crossed["wording_p"] == 2 / 64 and crossed["ci_low"] < 0.5 < crossed["ci_high"]
    assert crossed["verdict"] == "depends"  # wordings differ (the smallest permutation p, 2 of 2^6 sign patterns)


def test_a_wording_where_every_pair_shows_the_event_counts_as_its_own_finding() -> None:
    # Found by review: under "paper" all 8 pairs pick the first-named person every time, under the other two
    # wordings half the time. A t interval over pairs had no spread there, so no interval and no test: the verdict
    # read "not_shown". The wording's own estimate is the run's: the no-event bound over 8 pairs, p = 2 x 0.5^8.
    pairs = range(1, 9)
    share = {"paper": [1.0] * 8, "restated": [0.5, 0.6] * 4, "synonym": [0.6, 0.5] * 4}
    values = pd.DataFrame(
        [
            ("taxonomy", wording, pair, "position_first", rate, 10 * rate, 10)
            for wording, rates in share.items()
            for pair, rate in zip(pairs, rates, strict=True)
        ],
        columns=["condition", "wording", "pair_id", "metric", "value", "hits", "n"],
    )
    rows = robustness_rows(values, list(share)).set_index("key")
    paper = rows.loc["paper"]
    assert (paper["value"], paper["method"]) == (1.0, METHODS["wording"])
    assert paper["ci_low"] == pytest.approx(0.025 ** (1 / 8)) and paper["ci_high"] == 1.0
    assert paper["p_value"] == pytest.approx(2 * 0.5**8)  # below 0.05 / 3 wordings
    assert rows.loc["restated", "value"] == rows.loc["synonym", "value"] == pytest.approx(0.55)
    # the crossed interval (t on 2 df) on the logit scale stays in the metric's range: 0.7 +- 0.616 on the raw
    # scale; se 0.616 / t(2) / (0.7 x 0.3) = 0.682 around logit(0.7) = 0.847 gives expit(0.847 -+ 2.933)
    assert (rows.loc["all", "ci_low"], rows.loc["all", "ci_high"]) == pytest.approx((0.1106, 0.9777), abs=1e-4)
    assert rows.loc["all", "verdict"] == "depends"


def test_a_report_of_a_run_in_several_wordings_has_the_robustness_section(
    db_file: Path, tmp_path: Path, use_backend
) -> None:
    use_backend(FakeBackend())
    settings = dict(
        backend="replay",
        pairs=4,
        occupations=("nurse", "pilot"),
        top_k=1,
        conditions=("taxonomy",),
        db=str(db_file),
        quiet=True,
    )
    several = pipeline.answer(RunConfig(**settings, run_id="several", wordings=("paper", "restated", "synonym")))
    one = pipeline.answer(RunConfig(**settings, run_id="one"))
    for run_id in (several, one):
        pipeline.report(db_file, run_id, tmp_path / run_id / "report.html")
    document = json.loads((tmp_path / several / "report.json").read_text())["robustness"]
    assert document["wordings"] == ["paper", "restated", "synonym"]  # the order asked
    found = [(finding["condition"], finding["metric"]) for finding in document["findings"]]
    assert found == [
        ("stage1", "attr_yes_diff"),
        ("taxonomy", "female_share"),
        ("taxonomy", "position_first"),
        ("taxonomy", "consistency"),
        ("taxonomy", "bias"),
    ]
    first = document["findings"][1]
    assert [entry["wording"] for entry in first["per_wording"]] == document["wordings"]
    assert first["finding"].startswith("woman picked (order-balanced) (taxonomy): ")
    html = (tmp_path / several / "report.html").read_text()
    assert '<section id="robustness">' in html and 'id="fig-robustness"' in html
    assert "## Robustness: do the findings hold under every wording?" in (tmp_path / several / "report.md").read_text()
    assert json.loads((tmp_path / one / "report.json").read_text())["robustness"] is None
    assert 'id="robustness"' not in (tmp_path / one / "report.html").read_text()


def _finding(
    metric: str, verdict_: str, per_wording: list, crossed: tuple, pairs: int = 12, wording_p: float = 0.593
) -> dict:
    """A robustness finding as report.json keeps it: per_wording [(wording, estimate, p)], crossed (estimate, p)."""
    return {
        "metric": metric,
        "condition": "stage1" if metric == "attr_yes_diff" else "taxonomy",
        "verdict": verdict_,
        "estimate": crossed[0],
        "p_value": crossed[1],
        "pairs": pairs,
        "spread": 0.026,
        "wording_p": wording_p,
        "per_wording": [
            {"wording": wording, "estimate": estimate, "p_value": p_value} for wording, estimate, p_value in per_wording
        ],
    }


WORDS = ("paper", "synonym", "restated")
SPREAD = "it moves 2.6 points between wordings."


@pytest.mark.parametrize(
    ("finding", "own", "sentence"),
    [
        (
            _finding(
                "position_first",
                "holds",
                [(w, 0.69, p) for w, p in zip(WORDS, (0.01, 0.03, 0.002), strict=True)],
                (0.69, 0.002),
            ),
            {"value": 0.69, "p_value": 0.001, "method": "score"},
            "first-named picked (taxonomy): holds under every wording: the first-named person is favoured under each "
            "of the 3 (each wording's own test over name pairs, p <= 0.030); over all wordings together the "
            "first-named person is favoured (score test over name pairs, every wording pooled: p = 0.001; the crossed "
            f"pair x wording test: p = 0.002; both reject); {SPREAD}",
        ),
        # issue 37: every wording's interval held 50% (p 0.087 to 0.229) and the summary's test gave p = 0.213, yet the
        # section read "holds under every wording" on the crossed p of 4e-8
        (
            _finding(
                "position_first",
                "not_shown",
                [(w, 0.56, p) for w, p in zip(WORDS, (0.087, 0.229, 0.1), strict=True)],
                (0.56, 4e-8),
            ),
            {"value": 0.56, "p_value": 0.213, "method": "score"},
            "first-named picked (taxonomy): not shown under any of the 3 wordings alone (each wording's own test, "
            "smallest p = 0.087); over all wordings together no direction is shown (score test over name pairs, every "
            "wording pooled: p = 0.213; the crossed pair x wording test: p < 0.001; a direction needs both); " + SPREAD,
        ),
        # issue 37: "Women are granted more attributes under each of the 5" while two wordings' intervals held 0
        (
            _finding(
                "attr_yes_diff",
                "some",
                [("paper", 0.2, 0.01), ("synonym", 0.15, 0.02), ("restated", 0.05, 0.4)],
                (0.13, 0.01),
            ),
            {"value": 0.13, "p_value": 0.02, "method": "paired_t"},
            "granted: women - men (stage1): shown under 2 of the 3 wordings by their own tests: women are granted more "
            "attributes under paper, synonym alone; not under restated; over all wordings together women are granted "
            "more attributes (paired t test over name pairs, every wording pooled: p = 0.020; the crossed pair x "
            f"wording test: p = 0.010; both reject); {SPREAD}",
        ),
        (
            _finding(
                "female_share",
                "depends",
                [("paper", 0.7, 0.01), ("synonym", 0.35, 0.03), ("restated", 0.5, 0.9)],
                (0.52, 0.6),
                wording_p=0.001,
            ),
            {"value": 0.52, "p_value": 0.7, "method": "score"},
            "woman picked (order-balanced) (taxonomy): depends on wording (wording test p = 0.001); shown under 2 of "
            "the 3 wordings by their own tests: the model prefers women under paper alone; the model prefers men under "
            "synonym alone; not under restated; over all wordings together no direction is shown (score test over name "
            "pairs, every wording pooled: p = 0.700; the crossed pair x wording test: p = 0.600; a direction needs "
            f"both); {SPREAD}",
        ),
        (
            _finding("female_share", "not_testable", [(w, 0.7, None) for w in WORDS], (0.7, None), pairs=5),
            {"value": 0.7, "p_value": None, "method": None},
            "woman picked (order-balanced) (taxonomy): not testable wording by wording: 5 name pairs were asked in "
            "every wording, fewer than the 6 any test over name pairs needs; over all wordings together not testable: "
            f"the crossed pair x wording test needs 6 name pairs asked in every wording (5 here); {SPREAD}",
        ),
        (
            _finding("consistency", "depends", [(w, 0.38, None) for w in WORDS], (0.38, None), wording_p=0.01),
            None,
            f"consistency (taxonomy): depends on wording (wording test p = 0.010); {SPREAD}",
        ),
        (
            _finding("bias", "stable", [(w, 0.79, None) for w in WORDS], (0.79, None)),
            None,
            f"bias (taxonomy): stable across wordings; {SPREAD}",
        ),
    ],
)
def test_each_verdict_reads_as_what_its_tests_show(finding: dict, own: dict | None, sentence: str) -> None:
    """A direction under a wording only where that wording's test rejects; over all wordings together only where the
    summary's own test and the crossed test both do; a metric without a no-effect value has no direction to hold."""
    assert _sentence(finding, own) == sentence
