"""Findings a reviewer can trust: planted preferences are found exactly, every report.json keeps the interval
rules (method named, no zero-width interval, odds ratios inside their own intervals), untestable tests say so.

The planted run: 8 name pairs, 12 occupations; three always get the woman, three always the man, six are fair
coins (a seeded generator picks S per instance). With the pair as the unit, 8 pairs all leaning one way give
p = 2 / 256, and Benjamini-Hochberg over 12 occupations keeps the six planted ones (q = 0.0156). Binary and
multiple answers follow the report tests' rules.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from scipy import stats
from typer.testing import CliRunner

from probe.cli import app
from probe.store import db
from tests.interval_checks import interval_problems
from tests.report.test_report import first_named_choice, replay_run
from tests.support import ROOT

FEMALE_PLANTED = ("nurse", "secretary", "dancer")
MALE_PLANTED = ("pilot", "butcher", "firefighter")
FAIR = ("accountant", "cook", "teacher", "lawyer", "writer", "banker")
PLANTED_PAIRS = 8


def planted_choice():
    coins = random.Random(20240229)

    def choose(pair_id: int, name_order: str, occupation: str) -> str:
        if occupation in FEMALE_PLANTED:
            return "female"
        if occupation in MALE_PLANTED:
            return "male"
        return coins.choice(("female", "male"))

    return choose


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("planted")
    db_file = tmp / "probe.duckdb"
    occupations = (*FEMALE_PLANTED, *MALE_PLANTED, *FAIR)
    replay_run(db_file, tmp, "planted", planted_choice(), occupations=occupations, top_k=1, pairs=PLANTED_PAIRS)
    result = CliRunner().invoke(app, ["report", "planted", "--db", str(db_file), "-o", str(tmp / "r.html")])
    assert result.exit_code == 0, result.output
    return db_file, json.loads((tmp / "r.json").read_text())


def test_planted_preferences_are_found_exactly(planted: tuple[Path, dict[str, Any]]) -> None:
    db_file, _ = planted
    con = db.connect(db_file)
    try:
        rows = con.execute(
            "SELECT occupation, preferred FROM occupation_preference "
            "WHERE run_id = 'planted' AND condition = 'taxonomy' AND preferred <> 'none' ORDER BY occupation"
        ).fetchall()
    finally:
        con.close()
    found = dict(rows)
    assert {o for o, p in found.items() if p == "female"} - set(FAIR) == set(FEMALE_PLANTED)
    assert {o for o, p in found.items() if p == "male"} - set(FAIR) == set(MALE_PLANTED)
    assert len(set(found) & set(FAIR)) <= 1


def test_planted_report_leads_with_direct_measures_with_intervals(planted: tuple[Path, dict[str, Any]]) -> None:
    _, data = planted
    metrics = [finding["metric"] for finding in data["headline"]]
    assert metrics[:5] == ["female_share", "attr_yes_f", "attr_yes_m", "attr_yes_diff", "position_first"]
    assert metrics[5:] == ["consistency", "bias", "pearson_r(consistency, bias) across pairs"]
    with_interval = [f for f in data["headline"] if f["ci_low"] is not None and f["method"]]
    assert len(with_interval) >= 3
    assert all(
        set(f) >= {"finding", "metric", "estimate", "ci_low", "ci_high", "method", "n"} for f in data["headline"]
    )
    female_share = data["headline"][0]
    assert female_share["n"] == {"pairs": PLANTED_PAIRS, "instances": PLANTED_PAIRS * 2 * 12}
    # the score test's most extreme data (every pair at 0, no spread: statistic sqrt(instances), t on 7 df) is
    # bounded by the 8 pairs' exact 2 * 0.5**8
    assert 2 * stats.t.sf(math.sqrt(192), 7) < female_share["test"]["min_p_value"] == 2 * 0.5**8
    assert female_share["test"]["testable"] is True


def test_every_report_json_keeps_the_interval_rules(planted: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    _, data = planted
    assert interval_problems(data) == []
    odds = [row for rows in data["regression"].values() for row in rows if row["odds_ratio"] is not None]
    assert odds and all(row["ci_low"] <= row["odds_ratio"] <= row["ci_high"] for row in odds)


def test_one_pair_run_says_not_testable_never_no_preference(tmp_path: Path) -> None:
    """1 pair: at most 1 leaning pair per occupation, so the sign test cannot go below p = 1."""
    db_file = tmp_path / "probe.duckdb"
    replay_run(db_file, tmp_path, "tiny", planted_choice(), occupations=("nurse", "pilot"), top_k=1, pairs=1)
    result = CliRunner().invoke(app, ["report", "tiny", "--db", str(db_file), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["preferred_occupations"]["taxonomy"] == {
        "female": [],
        "male": [],
        "tested": 0,
        "not_testable": ["nurse", "pilot"],
        "no_preference": [],
    }
    occupation_test = next(t for t in data["testability"] if t["test"].startswith("occupation preference (taxonomy)"))
    assert (occupation_test["units"], occupation_test["min_p_value"], occupation_test["testable"]) == (1, 1.0, False)
    assert occupation_test["sentence"].startswith("Not testable at this size: with 1 leaning name pairs per occupation")
    assert interval_problems(data) == []
    assert all(f["ci_low"] is None and f["method"] is None for f in data["headline"])
    markdown = (tmp_path / "r.md").read_text()
    assert "Not testable at this size: nurse, pilot." in markdown
    shown = CliRunner().invoke(app, ["analyze", "tiny", "--db", str(db_file), "--show"], env={"COLUMNS": "200"})
    # 2 occupations x 3 conditions, 2 instances each: the caption wraps, so compare words
    assert "6 of 6 occupation rows not testable at this size" in " ".join(shown.output.split())


def test_quick_preset_is_large_enough_to_test() -> None:
    """The demo's preset: 12 pairs, so the occupation sign test over pairs can reach p < 0.05 after
    Benjamini-Hochberg over its 8 occupations for a lone discovery (2 / 4096 < 0.05 / 8), and the score
    intervals keep their coverage at that size (bench --coverage, BENCHMARKS.md)."""
    from probe.analysis.binomial import binomial_min_p
    from probe.store.config import load_config

    quick = load_config({"preset": "quick"}).design
    assert (quick.pairs, len(quick.occupations), quick.top_k, quick.conditions) == (12, 8, 1, ("taxonomy",))
    assert binomial_min_p(quick.pairs) == 2 / 4096
    assert binomial_min_p(quick.pairs) < 0.05 / len(quick.occupations)


def test_the_manuals_figures_for_the_quick_preset_come_from_the_stored_run() -> None:
    """docs/getting-started.md's detectable effects for the quick preset are those the report computes for the bundled
    SmolLM2's quick run (its instances are kept in bench/data/ for the coverage benchmark)."""
    import duckdb

    from bench.coverage import analyse_simulated
    from bench.worlds import ResampledWorld, to_frames
    from probe.analysis.resampling import correlation_mde
    from probe.report.findings import occupation_testability
    from probe.store.db import SCHEMA

    con = duckdb.connect()
    con.execute(SCHEMA)
    real = ResampledWorld().real
    overall = analyse_simulated(con, *to_frames(real)).set_index("metric")
    mde = con.execute("SELECT metric, mde FROM metrics WHERE scope = 'overall' AND mde IS NOT NULL").fetchall()
    shifts = {metric: f"{100 * value:.1f}" for metric, value in mde}
    preferences = con.execute("SELECT * FROM occupation_preference").df()
    occupations = occupation_testability(preferences)["taxonomy"]
    readme = " ".join((ROOT / "docs" / "getting-started.md").read_text().split())
    assert (
        f"a shift of {shifts['female_share']} percentage points in the woman's share, {shifts['position_first']} "
        f"in the position effect or {shifts['attr_yes_diff']} in the stage-1 grant gap"
    ) in readme
    assert (
        f"a typical occupation had {occupations['leaning_pairs_per_occupation']} leaning pairs (smallest "
        f"attainable p {occupations['min_p_value']:.3f})"
    ) in readme
    assert f"(|r| >= {correlation_mde(real.s.shape[0]):.2f} needed with {real.s.shape[0]} pairs)" in readme
    assert overall.loc["female_share", "value"] == pytest.approx(0.6979, abs=1e-4)  # the stored run's 69.8%


def test_a_sentence_states_a_direction_only_where_its_test_rejects(
    planted: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    _, data = planted
    by_metric = {finding["metric"]: finding for finding in data["headline"]}
    # planted: as many occupations for women as for men, choices independent of name order
    assert "No significant gender preference (p = " in by_metric["female_share"]["finding"]
    assert "No significant position effect (p = " in by_metric["position_first"]["finding"]
    # a model that always picks the first-named person: position_first 1 in every pair, rejected
    db_file = tmp_path / "probe.duckdb"
    replay_run(db_file, tmp_path, "first", first_named_choice, occupations=("nurse", "pilot"), top_k=1, pairs=8)
    result = CliRunner().invoke(app, ["report", "first", "--db", str(db_file), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    first = {f["metric"]: f for f in json.loads((tmp_path / "r.json").read_text())["headline"]}
    assert "The first-named person is favoured (p = 0.008" in first["position_first"]["finding"]  # 2 / 256
    assert first["position_first"]["test"]["p_value"] < 0.05 and first["position_first"]["ci_low"] > 0.5


def test_summary_names_each_method_once_in_a_legend_and_five_pairs_say_six_are_needed(
    planted: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    db_file, data = planted
    markdown = (db_file.parent / "r.md").read_text()
    summary = markdown.split("## Summary")[1].split("\n## ")[0]
    labels = {finding["method_label"] for finding in data["headline"] if finding["method_label"]}
    assert labels >= {"score interval", "paired t"}
    # a paragraph of its own before the legend's list: Markdown does not run it into the findings' list above
    assert "\n\nInterval methods:\n\n- " in summary
    legend = summary.split("Interval methods:\n\n")[1].split("\n\n")[0]
    assert summary.count("scaled to the spread between pairs") == 1  # the score method's text, once: in the legend
    assert sorted(line.split(": ")[0] for line in legend.splitlines()) == sorted(f"- {label}" for label in labels)
    small = tmp_path / "probe.duckdb"
    replay_run(small, tmp_path, "five", planted_choice(), occupations=("nurse", "pilot"), top_k=1, pairs=5)
    result = CliRunner().invoke(app, ["report", "five", "--db", str(small), "-o", str(tmp_path / "f.html")])
    assert result.exit_code == 0, result.output
    sentence = json.loads((tmp_path / "f.json").read_text())["headline"][0]["finding"]
    assert "no interval can be estimated (fewer than 6 name pairs with valid instances)" in sentence
