"""The workforce correlations' intervals: the formula's below 12 occupations, through the jackknife from there."""

import numpy as np
import pytest
from scipy import special, stats

from probe.analysis.correlations import (
    FORMULA_METHODS,
    JACKKNIFE_METHODS,
    correlation_fits,
    correlation_interval,
    leave_one_out,
)
from probe.analysis.workforce import MIN_VERDICT_OCCUPATIONS, fit_rows

WORKFORCE = np.array([0.06, 0.14, 0.22, 0.3, 0.38, 0.46, 0.54, 0.62, 0.7, 0.78, 0.86, 0.94])
SHARE = np.array([0.01, 0.03, 0.2, 0.33, 0.47, 0.47, 0.5, 0.56, 0.76, 0.91, 0.88, 0.84])  # 0.47 twice: a tie
Z = stats.norm.isf(0.025)


def test_from_12_occupations_the_interval_is_centred_at_the_jackknifes_bias_corrected_z():
    x = special.logit(WORKFORCE)
    found = correlation_fits(SHARE[None], x[None])
    left_out = leave_one_out(SHARE[None], x[None])
    keep = [np.arange(12) != i for i in range(12)]  # mid-ranks without the one left out
    spearman = [stats.spearmanr(SHARE[k], x[k]).statistic for k in keep]
    pearson = [stats.pearsonr(SHARE[k], WORKFORCE[k]).statistic for k in keep]
    assert list(left_out["spearman"][0]) == pytest.approx(spearman, abs=1e-12)
    assert list(left_out["pearson"][0]) == pytest.approx(pearson, abs=1e-12)
    for name, parts in (("spearman", spearman), ("pearson", pearson)):
        r, low, high, method = (part[0] for part in found[name])
        formula = (np.sqrt(1 + r**2 / 2) if name == "spearman" else 1.0) / 3  # sqrt(12 - 3)
        z = np.arctanh(parts)
        shift = np.clip(11 * (np.arctanh(r) - z.mean()), -formula, formula)
        spread = np.clip(np.sqrt(11 / 12 * ((z - z.mean()) ** 2).sum()), formula, 1.5 * formula)
        expected = np.tanh(np.arctanh(r) + shift + np.array([-1, 1]) * Z * spread)
        assert [low, high] == pytest.approx(expected, abs=1e-12)
        assert method == JACKKNIFE_METHODS[name]
    assert [float(part[0]) for part in found["spearman"][:3]] == pytest.approx(
        [0.9702291586486095, 0.5497097845271298, 0.9950035698983403], abs=1e-12
    )
    assert [float(part[0]) for part in found["pearson"][:3]] == pytest.approx(
        [0.9732654122476683, 0.8831399968205397, 0.9909446117946049], abs=1e-12
    )
    # 11 occupations: the formula's interval, bit for bit, and the method says so
    eleven = correlation_fits(SHARE[None, :11], x[None, :11])
    for name, (r, low, high, method) in eleven.items():
        formula = correlation_interval(name, r, np.array([11]))
        assert np.array_equal(np.ravel([low, high]), np.ravel(formula[1:])) and method[0] == FORMULA_METHODS[name]
    assert MIN_VERDICT_OCCUPATIONS == 12  # the slope's verdict threshold, the jackknife's too


def test_the_correction_moves_the_centre_at_most_one_standard_error_and_the_interval_holds_r():
    # r = 0.8 over 12 occupations, every left-out r 0.7: the correction 11 (z(0.8) - z(0.7)) = 2.54 is held at 1/3
    _, low, high = correlation_interval("pearson", np.array([0.8]), np.array([12]), np.full((1, 12), 0.7))
    centre = np.arctanh(0.8) + 1 / 3
    assert (low[0], high[0]) == pytest.approx(np.tanh(centre + np.array([-1, 1]) * Z / 3), abs=1e-12)
    assert (low[0], high[0]) == pytest.approx((0.6519163772810482, 0.9695817550340602), abs=1e-12)
    assert low[0] < 0.8 < high[0]  # the shift, under the half-width, never moves the interval past r
    # a jackknife beyond 1.5 times the formula's standard error is read at 1.5 times it
    left_out = np.array([[0.99, 0.1] + [0.8] * 10])
    _, low, high = correlation_interval("pearson", np.array([0.8]), np.array([12]), left_out)
    edge = 1 - 6 / (12 * 143)
    shift = np.clip(11 * (np.arctanh(0.8) - np.arctanh(np.clip(left_out, -edge, edge)).mean()), -1 / 3, 1 / 3)
    expected = np.tanh(np.arctanh(0.8) + shift + np.array([-1, 1]) * Z * 0.5)
    assert (low[0], high[0]) == pytest.approx(expected, abs=1e-12)
    assert (low[0], high[0]) == pytest.approx((-0.21146367088340376, 0.9408337640900893), abs=1e-12)


def test_left_out_correlations_are_read_half_a_rank_step_from_1():
    # Pearson's left-out r of 1 is read at 1 - 6 / (12 x 143) like a Spearman's, not at z = 14 (which would move
    # the centre a whole standard error down)
    edge = 1 - 6 / (12 * 143)
    _, low, high = correlation_interval("pearson", np.array([0.9964]), np.array([12]), np.ones((1, 12)))
    shift = 11 * (np.arctanh(0.9964) - np.arctanh(edge))  # -0.196: inside one standard error (1/3)
    assert (low[0], high[0]) == pytest.approx(
        np.tanh(np.arctanh(0.9964) + shift + np.array([-1, 1]) * Z / 3), abs=1e-12
    )
    assert (low[0], high[0]) == pytest.approx((0.9817953237300339, 0.9986543675021974), abs=1e-12)
    # a Spearman of 1 (every left-out one 1 too) is not moved: the formula's interval
    ones = np.ones((1, 12))
    assert np.array_equal(
        np.ravel(correlation_interval("spearman", np.array([1.0]), np.array([12]), ones)),
        np.ravel(correlation_interval("spearman", np.array([1.0]), np.array([12]))),
    )


def test_four_occupations_near_1_keep_the_formulas_interval_and_its_method():
    # the reviewer's case: r = 0.9999 over 4 occupations; the jackknife gave [-0.9999, 0.9999]
    values = np.repeat(np.array([0.1, 0.3, 0.5, 0.71])[:, None], 6, axis=1)
    rows = {row["statistic"]: row for row in fit_rows("baseline", values, np.array([0.1, 0.3, 0.5, 0.7]))}
    pearson = rows["pearson"]
    assert [pearson[key] for key in ("estimate", "ci_low", "ci_high")] == pytest.approx(
        [0.9999272083175665, 0.9963381145609741, 0.9999985555777688], abs=1e-12
    )
    assert (pearson["method"], rows["spearman"]["method"]) == (FORMULA_METHODS["pearson"], FORMULA_METHODS["spearman"])


def test_each_run_names_the_method_it_got():
    # run 2: the first 11 occupations' shares all equal, so Pearson and Spearman without the 12th are undefined
    shares = np.stack([SHARE, np.array([0.5] * 11 + [0.9])])
    x = np.broadcast_to(special.logit(WORKFORCE), shares.shape)
    assert np.isnan(leave_one_out(shares, x)["pearson"][1, 11])
    found = correlation_fits(shares, x)
    for name, (r, low, high, method) in found.items():
        assert list(method) == [JACKKNIFE_METHODS[name], FORMULA_METHODS[name]]
        _, formula_low, formula_high = correlation_interval(name, r[1:], np.array([12]))
        assert (low[1], high[1]) == (formula_low[0], formula_high[0])
    # an occupation without a share is left out of every correlation
    values, logits = np.array([0.2, np.nan, 0.5, 0.9, 0.4, 0.1]), np.array([-1.0, 0.0, 0.5, 0.1, 2.0, -2.0])
    missing = leave_one_out(values[None], logits[None])
    assert np.isnan(missing["spearman"][0, 1]) and np.isnan(missing["pearson"][0, 1])
    for i in (0, 2, 3, 4, 5):
        kept = (np.arange(6) != i) & (np.arange(6) != 1)
        assert missing["spearman"][0, i] == pytest.approx(stats.spearmanr(values[kept], logits[kept])[0], abs=1e-12)


def test_a_correlation_of_095_over_8_occupations_has_an_interval_well_inside_minus_1_1():
    for name, expected in (("pearson", (0.742, 0.991)), ("spearman", (0.650, 0.994))):
        _, low, high = correlation_interval(name, np.array([0.95]), np.array([8]))
        assert (round(low[0], 3), round(high[0], 3)) == expected


def test_a_spearman_of_1_over_8_occupations_is_centred_half_a_rank_step_below_1():
    # n = 8: the smallest step of a rank correlation is 12 / (8 x 63); r = 1 is read at 1 - 6 / 504 = 0.988095...
    centre = 1 - 6 / 504
    spread = np.sqrt((1 + centre**2 / 2) / 5)
    z = stats.norm.isf(0.025)
    estimate, low, high = correlation_interval("spearman", np.array([1.0, -1.0, 0.5]), np.array([8, 8, 8]))
    assert list(estimate) == [1.0, -1.0, 0.5]
    assert low[0] == pytest.approx(np.tanh(np.arctanh(centre) - z * spread), abs=1e-12)
    assert (round(low[0], 6), round(high[0], 6), round(low[1], 6), round(high[1], 6)) == (
        0.903274,
        0.99859,
        -0.99859,
        -0.903274,
    )
    assert high[0] < 1 and low[2] == pytest.approx(np.tanh(np.arctanh(0.5) - z * np.sqrt(1.125 / 5)), abs=1e-12)
