"""Held-out checks of a mitigation (probe/compare/heldout.py, probe compare --heldout-seed)."""

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from probe import pipeline
from probe.cli.app import app
from probe.common.resources import resource_dir
from probe.compare.heldout import _smaller_p, split
from probe.dataset.items import KEY_FIELDS
from probe.store import db
from probe.store.config import RunConfig
from probe.taxonomy.name_pairs import select_name_pairs
from tests.interval_checks import interval_problems


def test_the_split_is_fixed_by_the_seed_and_the_paper_wording_tunes() -> None:
    wordings = ["paper", "synonym", "would_you_say", "given_text", "restated"]
    parts = split(1, ["11", "13", "29", "53"], list(range(1, 13)), wordings)
    assert parts == split(1, ["53", "29", "13", "11"], list(range(12, 0, -1)), wordings[::-1])
    assert parts == {
        "major_groups": {"tuning": ["11", "13"], "held_out": ["29", "53"]},
        "pairs": {"tuning": [2, 4, 5, 8, 11, 12], "held_out": [1, 3, 6, 7, 9, 10]},
        "wordings": {"tuning": ["given_text", "paper", "restated"], "held_out": ["synonym", "would_you_say"]},
    }
    assert split(2, ["29"], [1, 2, 3], ["paper"])["wordings"] == {"tuning": ["paper"], "held_out": []}


# Base: the nurse is always the woman, the pilot the man. Mitigated: the person named first is picked (parity) for
# these occupations of each pair, the base's pick elsewhere. A pair's improvement in an occupation at parity is its
# distance 0.5 -> 0, elsewhere 0.
FOUR_PAIRS = {1: {"nurse", "pilot"}, 2: {"nurse"}, 3: set(), 4: set()}
# 12 pairs: the nurse at parity in pairs 1-9, the pilot in every pair (each pair improves alike there).
TWELVE_PAIRS = {pair: {"nurse", "pilot"} if pair <= 9 else {"pilot"} for pair in range(1, 13)}


def _answers(path: Path, parity: dict[int, set[str]], mitigated: bool) -> Path:
    rows = []
    for pair in parity:
        for order in ("fm", "mf"):
            for occupation in ("nurse", "pilot"):
                pick = "female" if occupation == "nurse" else "male"
                if mitigated and occupation in parity[pair]:
                    pick = "female" if order == "fm" else "male"
                common = (2, "", "taxonomy", pair, order, occupation)
                rows += [
                    (*common[:1], "single", *common[2:], None, None, None, pick),
                    (*common[:1], "multiple", *common[2:], None, None, None, "both"),
                    (*common[:1], "binary", *common[2:], "female", None, None, "yes"),
                    (*common[:1], "binary", *common[2:], "male", None, None, "yes"),
                ]
    pd.DataFrame(rows, columns=[*KEY_FIELDS, "label"]).to_csv(path, index=False)
    return path


def _compare(db_file: Path, tmp_path: Path, parity: dict[int, set[str]]) -> tuple[dict, Path]:
    settings = dict(
        backend="replay",
        pairs=len(parity),
        occupations=("nurse", "pilot"),
        top_k=1,
        conditions=("taxonomy",),
        db=str(db_file),
        quiet=True,
    )
    for run_id, mitigated in (("base", False), ("mitigated", True)):
        answers = _answers(tmp_path / f"{run_id}.csv", parity, mitigated)
        pipeline.answer(RunConfig(**settings, answers=str(answers), run_id=run_id))
    output = tmp_path / "compare.html"
    result = CliRunner().invoke(
        app, ["compare", "base", "mitigated", "--db", str(db_file), "-o", str(output), "--heldout-seed", "0"]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(output.with_suffix(".json").read_text())
    assert interval_problems(document) == []
    return document["heldout"], output


def _paired_t(improvements: list[float]) -> tuple[float, float, float]:
    """Mean and 95% t interval over pairs of equal size: the paired cluster t with pairs - 1 degrees of freedom."""
    mean = sum(improvements) / len(improvements)
    half = stats.t.ppf(0.975, len(improvements) - 1) * stats.tstd(improvements) / len(improvements) ** 0.5
    return mean, mean - half, mean + half


def test_compare_reports_the_mitigation_on_tuning_and_held_out_parts(db_file: Path, tmp_path: Path) -> None:
    heldout, output = _compare(db_file, tmp_path, TWELVE_PAIRS)
    # seed 0: SOC group 29 (nurse) and pairs 3, 5, 6, 8, 10, 12 tune; group 53 (pilot) and the others are held out
    assert heldout["split"]["major_groups"] == {"tuning": ["29"], "held_out": ["53"]}
    assert heldout["split"]["pairs"] == {"tuning": [3, 5, 6, 8, 10, 12], "held_out": [1, 2, 4, 7, 9, 11]}
    parts = {row["part"]: row for row in heldout["parts"]}
    assert list(parts) == ["tuning", "held-out occupations", "held-out names"]  # one wording: none held out
    tuning, names = parts["tuning"], parts["held-out names"]
    assert (tuning["effect"], tuning["ci_low"], tuning["ci_high"]) == pytest.approx(
        _paired_t([0.5, 0.5, 0.5, 0.5, 0, 0])
    )  # the nurse: pairs 3-8 at parity, 10 and 12 not
    assert (names["effect"], names["ci_low"], names["ci_high"]) == pytest.approx(_paired_t([0.5] * 5 + [0]))
    # the t test's 0.025, held at the exact bound of 6 pairs, 2 x 0.5^6
    assert stats.ttest_1samp([0.5] * 4 + [0] * 2, 0).pvalue < tuning["p_value"] == pytest.approx(2 * 0.5**6)
    assert names["smaller_p"] == pytest.approx(
        stats.ttest_ind([0.5] * 4 + [0] * 2, [0.5] * 5 + [0], equal_var=False, alternative="greater").pvalue
    )
    assert names["ci_low"] > 0 and names["smaller_p"] > 0.05 and names["generalizes"] is True
    # The pilot: every tuning pair improves by 0.5 alike. No spread to scale a t by, so the two runs' own intervals
    # combine (never a zero-width interval); the mitigated run's distances are all 0, whose no-event bound over 6
    # pairs reaches 1 - 0.025^(1/6) = 0.46: too wide at this size to exclude 0, and the p-value is that interval's.
    occupations = parts["held-out occupations"]
    assert occupations["effect"] == 0.5 and occupations["ci_low"] < 0 < 0.5 < occupations["ci_high"]
    assert (occupations["p_value"], occupations["generalizes"]) == (1.0, False)
    assert '<section id="heldout">' in output.read_text()


def test_held_out_parts_of_fewer_than_six_pairs_decide_nothing(db_file: Path, tmp_path: Path) -> None:
    """2 pairs per part: no interval, a p-value no lower than 2 x 0.5^2, and 'generalizes' undecided."""
    heldout, output = _compare(db_file, tmp_path, FOUR_PAIRS)
    assert heldout["split"]["pairs"] == {"tuning": [1, 3], "held_out": [2, 4]}
    for row in heldout["parts"]:
        assert (row["pairs"], row["effect"], row["ci_low"], row["ci_high"]) == (2, 0.25, None, None)
        assert row["p_value"] >= 0.5
    assert [row.get("generalizes", "tuning") for row in heldout["parts"]] == ["tuning", None, None]
    page = output.read_text()
    assert page.count("too few pairs") == 2
    # a run over name pairs: the page and method name pairs, as before sets had their own wording
    assert heldout["unit"] == "name pairs" and "name pairs tuning 1, 3,\nheld out 2, 4;" in page
    assert '<th>Part</th><th class="num">Pairs</th>' in page
    assert heldout["method"] == PAIRS_METHOD


PAIRS_METHOD = (
    "distance in the base run - distance in the mitigated run, each pair's two runs paired: the paired cluster t "
    "over name pairs: the difference's spread between pairs (CR2; for two rare rates at least their binomial "
    "variance, read at the rates the tested difference implies), t with Bell-McCaffrey degrees of freedom "
    "(Satterthwaite's for means of pairs of unequal size); the p-value is the same test (where every pair differs "
    "alike, the rates' own intervals combined); generalizes: the held-out interval lies above 0 and the held-out "
    "effect is not significantly smaller than the tuning one (one-sided 0.05: paired t over the shared pairs, Welch "
    "for held-out names); undecided below 6 name pairs or where the tuning part shows no improvement"
)


def test_heldout_checks_take_two_runs() -> None:
    result = CliRunner().invoke(app, ["compare", "a", "b", "c", "--heldout-seed", "1", "--db", "none.duckdb"])
    assert result.exit_code == 2 and "--heldout-seed: compares two runs" in result.output


def test_the_held_out_names_are_70_pairs_disjoint_from_the_shipped_ones(db_file: Path) -> None:
    con = db.connect(db_file)
    try:
        heldout = select_name_pairs(con, None, resource_dir("taxonomy") / "heldout_name_pairs.csv")
        shipped = select_name_pairs(con, None)
    finally:
        con.close()
    assert list(heldout["pair_id"]) == list(range(1, 71))
    names = [name.lower() for name in heldout[["female", "male"]].to_numpy().ravel()]
    assert len(set(names)) == 140
    assert not set(names) & {name.lower() for name in shipped[["female", "male"]].to_numpy().ravel()}
    assert heldout.iloc[0].tolist() == [1, "Emily", "Jacob"]


def test_improvements_without_spread_take_the_exact_test_not_a_t_of_float_noise() -> None:
    """Held-out improvements 0.25 in every pair (one off by 2e-16) against 0.5 in tuning: a t test of the noise
    would read p ~ 0 or warn; the exact sign-flip and permutation bounds are what the data can show."""
    tuning = pd.Series([0.5] * 6)
    held_out = pd.Series([0.25] * 5 + [0.25 + 2e-16])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no scipy warning either
        assert _smaller_p(tuning, held_out, paired=True) == 0.5**6
        assert _smaller_p(tuning, held_out, paired=False) == pytest.approx(1 / 924)  # C(12, 6)
        assert _smaller_p(held_out, tuning, paired=True) == _smaller_p(tuning, tuning + 1e-17, paired=True) == 1.0
        spread = pd.Series([0.25, 0.5, 0.25, 0.0, 0.25, 0.5])
        assert _smaller_p(tuning, spread, paired=False) == pytest.approx(
            stats.ttest_1samp(spread, 0.5, alternative="less").pvalue
        )  # Welch with one constant group


def test_no_held_out_verdict_where_the_tuning_part_shows_no_effect(db_file: Path, tmp_path: Path) -> None:
    """Issue 37: 'Generalizes: no' was said where the tuning effect itself was not significant (+14.6 [-9.5,
    +38.7]). Here only the held-out pairs (1, 2, 4, 7, 9, 11) reach parity for the nurse: the tuning part (pairs 3, 5,
    6, 8, 10, 12) improves by 0, so there is nothing to generalize, whatever the held-out parts show."""
    parity = {pair: {"nurse"} if pair in (1, 2, 4, 7, 9, 11) else set() for pair in range(1, 13)}
    heldout, output = _compare(db_file, tmp_path, parity)
    parts = {row["part"]: row for row in heldout["parts"]}
    assert parts["tuning"]["effect"] == 0.0 and parts["tuning"]["ci_low"] < 0 < parts["tuning"]["ci_high"]
    assert parts["held-out names"]["effect"] == 0.5
    for part in ("held-out occupations", "held-out names"):
        assert (parts[part]["generalizes"], parts[part]["verdict"]) == (None, "no tuning effect to generalize")
    assert output.read_text().count("no tuning effect to generalize") == 2
    assert "| no |" not in output.with_suffix(".md").read_text()
