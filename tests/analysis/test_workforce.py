"""The workforce comparison: model share vs the workforce's % women, correlations and the amplification slope."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import special, stats

import probe
from probe.analysis.correlations import FORMULA_METHODS
from probe.analysis.workforce import BOUNDS, fit_rows, versus_workforce
from probe.common.errors import UserError
from probe.compare.workforce import amplifies_most
from probe.pipeline import compare
from tests.support import FakeBackend, query

# 5 occupations x 4 pairs of order-balanced shares, one pair missing an occupation
VALUES = np.array(
    [
        [0.0, 0.5, 0.0, 0.5],
        [0.5, 0.5, 1.0, np.nan],
        [0.5, 1.0, 0.5, 0.5],
        [1.0, 1.0, 0.5, 1.0],
        [0.0, 0.0, 0.5, 0.0],
    ]
)
WORKFORCE = np.array([0.035, 0.385, 0.797, 0.879, 0.0])


def test_estimates_match_scipy_and_a_binomial_glm():
    rows = {row["statistic"]: row for row in fit_rows("baseline", VALUES, WORKFORCE)}
    share = np.nanmean(VALUES, axis=1)
    x = special.logit(np.clip(WORKFORCE, *BOUNDS))  # 0% women read as 0.5%
    assert rows["spearman"]["estimate"] == pytest.approx(stats.spearmanr(share, x).statistic, abs=1e-12)
    assert rows["pearson"]["estimate"] == pytest.approx(stats.pearsonr(share, special.expit(x)).statistic, abs=1e-12)
    glm = sm.GLM(share, sm.add_constant(x), family=sm.families.Binomial()).fit()
    assert rows["slope"]["estimate"] == pytest.approx(glm.params[1], abs=1e-8)
    assert {row["n_occupations"] for row in rows.values()} == {5}
    assert {row["pairs"] for row in rows.values()} == {4}


# 6 occupations x 6 pairs x 2 name orders (woman named first, second): 1 = the woman picked
ORDERS = np.array(
    [
        [[1, 0], [0, 0], [0, 1], [1, 1], [0, 0], [0, 0]],
        [[1, 0], [0, 0], [1, 1], [0, 0], [0, 0], [1, 1]],
        [[0, 0], [1, 1], [0, 1], [1, 1], [1, 0], [0, 1]],
        [[1, 1], [1, 0], [1, 0], [0, 1], [1, 0], [0, 0]],
        [[0, 1], [1, 1], [0, 0], [0, 1], [0, 0], [0, 1]],
        [[1, 0], [0, 0], [1, 1], [1, 1], [1, 0], [1, 1]],
    ],
    dtype=float,
)
SIX = np.array([0.035, 0.385, 0.797, 0.879, 0.12, 0.5])


def _two_way(y: np.ndarray, design: np.ndarray, occupation: np.ndarray, pair: np.ndarray) -> tuple[float, float]:
    """statsmodels' slope and its two-way variance: clustered by occupation and by pair (each x 6/5) minus HC0."""

    def fit(cov_type: str, **kwds):
        return sm.GLM(y, design, family=sm.families.Binomial()).fit(cov_type=cov_type, cov_kwds=kwds or None)

    by = [
        fit("cluster", groups=groups, use_correction=False).cov_params()[1, 1] * 6 / 5 for groups in (occupation, pair)
    ]
    cell = fit("HC0")
    return cell.params[1], by[0] + max(by[1] - cell.cov_params()[1, 1], 0)


def test_slope_intervals_are_two_way_cluster_robust_t_intervals():
    rows = {row["statistic"]: row for row in fit_rows("baseline", ORDERS, SIX)}
    x = special.logit(np.clip(SIX, *BOUNDS))
    cells = np.repeat(np.arange(6), 6), np.tile(np.arange(6), 6)  # occupation, pair of each (occupation, pair)
    slope, variance = _two_way(ORDERS.mean(axis=2).ravel(), sm.add_constant(np.repeat(x, 6)), *cells)
    half = stats.t.isf(0.025, 6 - 2) * np.sqrt(variance)
    assert [rows["slope"][key] for key in ("estimate", "ci_low", "ci_high")] == pytest.approx(
        [slope, slope - half, slope + half], abs=1e-12
    )
    assert [rows["slope"][key] for key in ("estimate", "ci_low", "ci_high")] == pytest.approx(
        [0.17028145129944655, 0.019997625583030088, 0.320565277015863], abs=1e-12
    )
    # the position in the fit: each name order's share, position +1 where the woman is named first
    design = np.column_stack([np.ones(72), np.repeat(x, 12), np.tile([1.0, -1.0], 36)])
    slope, variance = _two_way(
        ORDERS.ravel(), design, np.repeat(np.arange(6), 12), np.tile(np.repeat(np.arange(6), 2), 6)
    )
    half = stats.t.isf(0.025, 6 - 3) * np.sqrt(variance)
    assert [rows["adjusted_slope"][key] for key in ("estimate", "ci_low", "ci_high")] == pytest.approx(
        [slope, slope - half, slope + half], abs=1e-12
    )
    assert rows["adjusted_slope"]["ci_low"] == pytest.approx(-0.0007173610223289995, abs=1e-12)
    # 6 occupations, fewer than MIN_VERDICT_OCCUPATIONS: intervals, no reading of a slope
    assert (rows["slope"]["verdict"], rows["adjusted_slope"]["verdict"]) == (None, None)
    assert "cluster-robust" in rows["slope"]["method"] and "position" in rows["adjusted_slope"]["method"]


def test_correlation_intervals_are_fisher_z_over_occupations():
    rows = {row["statistic"]: row for row in fit_rows("baseline", ORDERS, SIX)}
    z = stats.norm.isf(0.025)
    for name, spread in (("spearman", np.sqrt(1 + 0.753702346348183**2 / 2)), ("pearson", 1.0)):
        r = rows[name]["estimate"]
        expected = np.tanh(np.arctanh(r) + np.array([-1, 1]) * z * spread / np.sqrt(6 - 3))
        assert [rows[name]["ci_low"], rows[name]["ci_high"]] == pytest.approx(expected, abs=1e-12)
        assert rows[name]["method"] == FORMULA_METHODS[name]  # 6 occupations: the formula alone, and it says so
    assert [rows["spearman"][key] for key in ("estimate", "ci_low", "ci_high", "verdict")] == pytest.approx(
        [0.753702346348183, -0.2920325473570046, 0.9786149676566027, "inconclusive"], abs=1e-12
    )


def test_a_slope_is_read_from_twelve_occupations_and_position_bias_alone_flattens_it():
    # a model that mirrors the workforce exactly in each name order, with the first-named person's logit +1
    share = np.linspace(0.05, 0.95, 12)
    x = special.logit(share)
    orders = np.stack([special.expit(x + 1), special.expit(x - 1)], axis=1)[:, None, :].repeat(6, axis=1)
    rows = {row["statistic"]: row for row in fit_rows("baseline", orders, share)}
    assert rows["adjusted_slope"]["estimate"] == pytest.approx(1.0, abs=1e-9)
    balanced = sm.GLM(orders.mean(axis=(1, 2)), sm.add_constant(x), family=sm.families.Binomial()).fit()
    assert rows["slope"]["estimate"] == pytest.approx(balanced.params[1], abs=1e-9)  # the population-averaged slope
    assert rows["slope"]["estimate"] == pytest.approx(0.835864, abs=1e-6)
    assert (rows["slope"]["verdict"], rows["adjusted_slope"]["verdict"]) == ("flattens", "inconclusive")
    assert fit_rows("baseline", orders[:11], share[:11])[2]["verdict"] is None  # 11 occupations: no reading


def test_too_few_occupations_or_pairs_get_no_estimate():
    for values, share in ((VALUES[:3], WORKFORCE[:3]), (VALUES[:, :1], WORKFORCE)):
        rows = fit_rows("baseline", values, share)
        assert all(np.isnan(row["estimate"]) and row["verdict"] is None for row in rows)
    # 4 pairs, fewer than the 6 every interval over pairs needs: the estimates, no interval, no verdict
    rows = fit_rows("baseline", VALUES, WORKFORCE)
    assert all(np.isfinite(row["estimate"]) and np.isnan(row["ci_low"]) and row["verdict"] is None for row in rows)


def test_versus_the_workforce_reads_the_majority_side():
    share = pd.Series([0.879, 0.879, 0.879, 0.092, 0.092])
    low = pd.Series([0.90, 0.30, 0.80, 0.01, 0.20])
    high = pd.Series([0.99, 0.60, 0.95, 0.05, 0.60])
    assert versus_workforce(low, high, share).tolist() == ["more", "less", "as", "more", "less"]


def test_a_run_stores_the_comparison_beside_its_occupation_shares(db_file: Path, use_backend, tmp_path: Path):
    use_backend(FakeBackend())
    occupations = ["nurse", "pilot", "secretary", "carpenter", "teacher", "athlete"]
    probe.run(pairs=4, occupations=occupations, top_k=1, db=db_file, run_id="w", conditions=["baseline"])
    rows = query(db_file, "SELECT * FROM workforce_occupations WHERE run_id = 'w' ORDER BY occupation")
    shares = query(
        db_file,
        "SELECT key AS occupation, value, ci_low, ci_high, method FROM metrics WHERE run_id = 'w' "
        "AND scope = 'occupation' AND metric = 'female_share' AND key <> 'athlete' ORDER BY key",
    )
    # the occupation's female_share row as analyze() stored it; athlete has no BLS share and no row
    assert rows["occupation"].tolist() == ["carpenter", "nurse", "pilot", "secretary", "teacher"]
    stored = rows[["model_share", "ci_low", "ci_high", "method"]].set_axis(
        ["value", "ci_low", "ci_high", "method"], axis=1
    )
    pd.testing.assert_frame_equal(stored, shares.iloc[:, 1:])
    assert rows["workforce_share"].tolist() == pytest.approx([0.035, 0.879, 0.092, 0.925, 0.797])
    fit = query(db_file, "SELECT statistic, n_occupations, pairs FROM workforce_fit WHERE run_id = 'w'")
    assert fit.values.tolist() == [["spearman", 5, 4], ["pearson", 5, 4], ["slope", 5, 4], ["adjusted_slope", 5, 4]]
    run = probe.open_run("w", db=db_file)  # the API reads the same rows
    assert run.workforce()["occupation"].tolist() == rows["occupation"].tolist()
    assert run.workforce_fit()["statistic"].tolist() == ["adjusted_slope", "pearson", "slope", "spearman"]
    # 4 name pairs, under the 6 every interval needs: the report and compare give the estimates, no interval
    report = json.loads(run.report(tmp_path / "r.html").with_suffix(".json").read_text())["workforce"]
    assert report["slope"]["ci_low"] is None and report["finding"].endswith(
        "with no interval and no reading: fewer than 6 name pairs."
    )
    slopes = [{"run_id": name, "model": "m", "slope": report["slope"]} for name in ("a", "b")]
    finding = amplifies_most(slopes)["finding"]
    assert finding == (
        "Fewer than two runs have a slope with an interval over 12 or more occupations (6 or more name pairs or sets)."
    )


def _slope_run(name: str, estimate: float, occupations: int, contrast: list[str] | None = None) -> dict:
    slope = {"estimate": estimate, "ci_low": estimate - 0.2, "ci_high": estimate + 0.2}
    return {"run_id": name, "model": "m", "n_occupations": occupations, "contrast": contrast, "slope": slope}


def test_amplifies_most_needs_the_occupations_a_reading_needs_and_one_contrast() -> None:
    """Two slopes 1.0 apart with intervals of +-0.2: shown, over 12 occupations and the same contrast; below 12
    occupations (the slope is biased there) or over different contrasts (sex against Asian vs Black), not compared."""
    shown = amplifies_most([_slope_run("a", 2.0, 12), _slope_run("b", 1.0, 12)])
    assert shown["amplifies_most"] == "a" and shown["difference"]["estimate"] == pytest.approx(1.0)
    few = amplifies_most([_slope_run("a", 2.0, 8), _slope_run("b", 1.0, 12)])
    assert few["amplifies_most"] is None and few["finding"].startswith("Fewer than two runs have a slope")
    sex, race = ["sex", "female", "male"], ["race_ethnicity", "Asian", "Black"]
    mixed = amplifies_most([_slope_run("a", 2.0, 12, sex), _slope_run("b", 1.0, 12, race)])
    assert mixed == {
        "amplifies_most": None,
        "difference": None,
        "finding": "The runs' workforce comparisons are of different contrasts: their slopes are not compared.",
    }


def test_gate_workforce_slope_reads_the_stored_slope(db_file: Path, use_backend, tmp_path: Path):
    use_backend(FakeBackend())
    occupations = [
        "nurse",
        "pilot",
        "secretary",
        "carpenter",
        "teacher",
        "lawyer",
        "engineer",
        "accountant",
        "architect",
        "plumber",
        "cashier",
        "dentist",
    ]
    probe.run(pairs=6, occupations=occupations, top_k=1, db=db_file, run_id="w", conditions=["baseline"])
    low, high = query(db_file, "SELECT ci_low, ci_high FROM workforce_fit WHERE statistic = 'slope'").iloc[0]
    policy = tmp_path / "gates.toml"
    for limit, outcome in ((high + 0.01, "pass"), (low - 0.01, "fail"), ((low + high) / 2, "inconclusive")):
        policy.write_text(
            f'[[gates]]\nname = "mirror"\nkind = "workforce_slope"\ncondition = "baseline"\nlimit = {limit}\n'
        )
        result = probe.gate("w", policy, db=db_file, output=tmp_path / "out")
        assert (result.outcome, result.verdicts[0].ci95) == (outcome, (low, high))
    # the 90% interval: the stored 95% t interval (12 occupations - 2 = 10 df) rescaled with t at the same df
    middle, half = (low + high) / 2, (high - low) / 2 * stats.t.isf(0.05, 10) / stats.t.isf(0.025, 10)
    assert result.verdicts[0].ci90 == pytest.approx((middle - half, middle + half), rel=0, abs=1e-12)
    assert "12 occupations, 6 name pairs;" in result.verdicts[0].sentence
    policy.write_text('[[gates]]\nname = "mirror"\nkind = "workforce_slope"\ncondition = "baseline"\nlimit = "1.2"\n')
    with pytest.raises(UserError, match="key 'limit' must be a number"):
        probe.gate("w", policy, db=db_file, output=tmp_path / "out")
    # 6 occupations, fewer than the 12 a reading of the slope needs: inconclusive, the reason said
    probe.run(pairs=6, occupations=occupations[:6], top_k=1, db=db_file, run_id="six", conditions=["baseline"])
    policy.write_text('[[gates]]\nname = "mirror"\nkind = "workforce_slope"\ncondition = "baseline"\nlimit = 9\n')
    result = probe.gate("six", policy, db=db_file, output=tmp_path / "out")
    assert (result.outcome, result.verdicts[0].sentence) == (
        "inconclusive",
        (
            "run 'six' compares 6 occupations with the workforce, fewer than the 12 a reading of the slope needs "
            "(there it is biased and cannot tell 1.5 from 1)"
        ),
    )


def test_compare_lists_each_runs_slope_and_says_none_amplifies_most_when_they_tie(db_file, use_backend, tmp_path):
    use_backend(FakeBackend())
    occupations = ["nurse", "pilot", "secretary", "carpenter", "teacher", "lawyer", "engineer", "accountant"]
    occupations += ["architect", "plumber", "cashier", "dentist"]  # 12: the occupations a reading of slopes needs
    for run_id in ("a", "b"):  # the same deterministic backend: the same slopes
        probe.run(pairs=6, occupations=occupations, top_k=1, db=db_file, run_id=run_id, conditions=["baseline"])
    compare(db_file, ["a", "b"], tmp_path / "compare.html")
    section = json.loads((tmp_path / "compare.json").read_text())["workforce"]
    slope = (
        query(db_file, "SELECT estimate, ci_low, ci_high FROM workforce_fit WHERE run_id = 'a' AND statistic = 'slope'")
        .iloc[0]
        .tolist()
    )
    assert [run["run_id"] for run in section["runs"]] == ["a", "b"]
    assert [run["slope"]["estimate"] for run in section["runs"]] == [slope[0], slope[0]]
    assert [len(run["occupations"]) for run in section["runs"]] == [12, 12]
    assert (section["condition"], section["amplifies_most"], section["difference"]["estimate"]) == (
        "baseline",
        None,
        0.0,
    )
    assert section["finding"].startswith("No run is shown to amplify more than the rest")
    assert "Mirror or amplify" in (tmp_path / "compare.md").read_text()


def test_the_scan_report_sets_its_titles_against_the_workforce(db_file: Path, tmp_path: Path):
    from bench.scan import draw_answers, write_replay_file

    answers = tmp_path / "answers.csv"
    shares = np.linspace(0.2, 0.8, 6)
    write_replay_file(answers, db_file, draw_answers(np.random.default_rng(5), shares), ("29-203",))
    scan = probe.scan(soc="29-203", backend="replay", answers=answers, budget=30, scan_id="s", db=db_file)
    scan.report(tmp_path / "scan")
    section = json.loads((tmp_path / "scan" / "scan.json").read_text())["workforce"]
    # of the six titles BLS gives a share of women for three: sonographers, radiologic and MRI technologists
    assert [o["soc_code"] for o in section["occupations"]] == ["29-2032.00", "29-2034.00", "29-2035.00"]
    assert [o["workforce_share"] for o in section["occupations"]] == pytest.approx([0.75, 0.714, 0.646])
    results = scan.results().set_index("soc_code")
    assert [o["model_share"] for o in section["occupations"]] == results.loc[
        ["29-2032.00", "29-2034.00", "29-2035.00"], "share"
    ].tolist()
    assert (section["n_occupations"], section["slope"]["estimate"]) == (3, None)  # too few titles for a fit
