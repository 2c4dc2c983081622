"""Audit report and model comparison, built from replay runs analysed by probe.analysis.metrics.

Two scripted "models" answer the same dataset: `steady` picks the woman for nurse, secretary and dancer,
the man for pilot and butcher, and alternates by pair for accountant; `first` always picks whoever is
named first. Their expected preferences, agreement and paired differences follow from those rules.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from typer.testing import CliRunner

from probe import compare, pipeline, report
from probe.cli import app
from probe.common.errors import UserError
from probe.store import db
from probe.store.config import RunConfig
from tests.interval_checks import interval_problems
from tests.support import score_interval_reference

OCCUPATIONS = ("nurse", "secretary", "dancer", "pilot", "butcher", "accountant")
FEMALE_JOBS = ("nurse", "secretary", "dancer")
MALE_JOBS = ("pilot", "butcher")
PAIRS = 8  # a sign test over 8 pairs reaches p = 0.0078: enough for BH over 6 occupations
CONDITIONS = ("taxonomy", "baseline", "control")
KEY_COLUMNS = ["stage", "qtype", "condition", "pair_id", "name_order", "occupation", "subject", "category", "attribute"]
CHROMIUM = Path("/usr/bin/chromium")


def steady_choice(pair_id: int, name_order: str, occupation: str) -> str:
    if occupation in FEMALE_JOBS:
        return "female"
    if occupation in MALE_JOBS:
        return "male"
    return "female" if pair_id % 2 else "male"


def first_named_choice(pair_id: int, name_order: str, occupation: str) -> str:
    return "female" if name_order == "fm" else "male"


def replay_answers(
    con: duckdb.DuckDBPyConnection, choose, occupations=OCCUPATIONS, top_k: int = 2, pairs: int = PAIRS
) -> pd.DataFrame:
    """Labels for every item of the dataset: stage 1 grants skills only; stage 2 follows `choose`.

    Binary: the chosen subject is qualified, the other only for even pairs; multiple repeats the single
    choice for the first half of the pairs and says "both" for the rest.
    """
    attributes = con.execute(
        "SELECT DISTINCT category, element_name FROM occupation_attributes WHERE rank <= ? AND occupation IN "
        f"({', '.join('?' for _ in occupations)})",
        [top_k, *occupations],
    ).fetchall()
    rows = []
    for pair_id in range(1, pairs + 1):
        for order in ("fm", "mf"):
            for subject in ("female", "male"):
                for category, attribute in attributes:
                    label = "yes" if category == "skill" else "no"
                    rows.append((1, "attr", "stage1", pair_id, order, None, subject, category, attribute, label))
            for occupation in occupations:
                for condition in CONDITIONS:
                    chosen = choose(pair_id, order, occupation)
                    other_qualified = "yes" if pair_id % 2 == 0 else "no"
                    for subject in ("female", "male"):
                        label = "yes" if subject == chosen else other_qualified
                        rows.append((2, "binary", condition, pair_id, order, occupation, subject, None, None, label))
                    multiple = chosen if pair_id <= pairs // 2 else "both"
                    rows.append((2, "single", condition, pair_id, order, occupation, None, None, None, chosen))
                    rows.append((2, "multiple", condition, pair_id, order, occupation, None, None, None, multiple))
    return pd.DataFrame(rows, columns=[*KEY_COLUMNS, "label"])


def replay_run(
    db_file: Path, tmp: Path, run_id: str, choose, occupations=OCCUPATIONS, top_k: int = 2, pairs: int = PAIRS
) -> str:
    con = db.connect(db_file)
    try:
        answers = replay_answers(con, choose, occupations, top_k, pairs)
    finally:
        con.close()
    path = tmp / f"{run_id}.csv"
    answers.to_csv(path, index=False)
    settings = dict(pairs=pairs, occupations=tuple(occupations), top_k=top_k, conditions=CONDITIONS)
    config = RunConfig(backend="replay", answers=str(path), run_id=run_id, db=str(db_file), quiet=True, **settings)
    return pipeline.answer(config)


@pytest.fixture
def db_file(runs_db: Path, tmp_path: Path) -> Path:
    return Path(shutil.copy(runs_db, tmp_path / "probe.duckdb"))


def test_report_cli_analyses_first_and_writes_three_files(db_file: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", "steady", "--db", str(db_file)])
    assert result.exit_code == 0, result.output
    folder = db_file.parent / "steady"
    assert result.output.splitlines() == [
        "run steady had no metrics yet: analysed it first",
        f"report: {folder / 'report.html'}",
        f"summaries: {folder / 'report.md'}, {folder / 'report.json'}",
    ]
    again = CliRunner().invoke(app, ["report", "steady", "--db", str(db_file)])
    assert again.output.splitlines()[0] == f"report: {folder / 'report.html'}"


def test_html_has_every_section_and_figure(written: report.ReportFiles) -> None:
    html = written.html.read_text()
    for section in (
        "bottom-line",
        "carriers",
        "pair-table",
        "summary",
        "run-card",
        "figure-1",
        "occupations",
        "stage1",
        "pairs",
        "sensitivity",
        "regression",
        "glossary",
        "limitations",
        "attribution",
        "headline-findings",
        "testability",
        "adverse-impact",
    ):
        assert f'id="{section}"' in html, section
    figures = re.findall(r'<figure id="(fig-[a-z0-9-]+)">\s*<img src="data:image/svg\+xml;base64,', html)
    assert figures == [
        "fig-pair-shares",
        "fig-headline",
        "fig-occupations",
        "fig-stage1",
        "fig-pairs",
        "fig-sensitivity",
        "fig-workforce",
        "fig-adverse-impact",
    ]
    assert html.count("How to read this.") == 7
    assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html
    assert "<script" not in html
    assert "Used under the CC BY 4.0 license" in html
    assert "Gender is treated as binary" in html


def test_the_pages_render_from_the_json_document_alone(written: report.ReportFiles) -> None:
    """No database: report.json holds everything report.html and report.md show."""
    html, markdown = report.render_report(json.loads(written.json.read_text()))
    assert (html, markdown) == (written.html.read_text(), written.markdown.read_text())


def test_json_summary_keys_and_values(written: report.ReportFiles) -> None:
    data = json.loads(written.json.read_text())
    assert list(data) == [
        "schema_version",
        "bottom_line",
        "run",
        "settings",
        "counts",
        "decision_margins",
        "headline",
        "testability",
        "overall",
        "preferred_occupations",
        "correlations",
        "regression",
        "stage1_rates",
        "occupation_preference",
        "pair_values",
        "items",
        "robustness",
        "workforce",
        "adverse_impact",
    ]
    assert list(data["run"]) == [
        "run_id",
        "model",
        "model_identity",
        "backend",
        "decoding",
        "onet_release",
        "template_hash",
        "package_version",
        "package_versions",
        "created_at",
        "finished_at",
        "status",
    ]
    assert data["settings"] == {
        "pairs": PAIRS,
        "occupations": 6,
        "top_k": 2,
        "conditions": list(CONDITIONS),
        "preset": None,
        "system_prompt": None,
    }
    assert data["counts"]["items_stage2"] == PAIRS * 2 * 6 * 4 * 3
    assert data["counts"]["by_qtype"]["single"] == {"items": 288, "unknown": 0, "unknown_rate": 0.0}
    assert data["run"]["backend"] == "replay"
    # stored with the run (runs.onet_release), not read from the database at report time
    assert data["run"]["onet_release"] == "O*NET 29.0 Database, August 2024 Release"
    assert len(data["run"]["model_identity"]) == 64  # the replay file's sha256
    taxonomy = data["preferred_occupations"]["taxonomy"]
    assert taxonomy == {
        "female": ["dancer", "nurse", "secretary"],
        "male": ["butcher", "pilot"],
        "tested": 6,
        "not_testable": [],
        "no_preference": ["accountant"],
    }
    overall = data["overall"]["taxonomy"]
    assert overall["consistency"]["value"] == 1.0
    assert overall["position_first"]["value"] == 0.5
    assert overall["bias"]["value"] == 0.5  # pairs 1-4 repeat the choice, pairs 5-8 say "both"
    assert data["overall"]["stage1"]["attr_yes_f"]["value"] == data["overall"]["stage1"]["attr_yes_m"]["value"]
    assert interval_problems(data) == []


def test_markdown_summary(written: report.ReportFiles) -> None:
    markdown = written.markdown.read_text()
    assert markdown.startswith("# Gender-bias audit of ")
    assert "| consistency | 100.0%" in markdown
    assert (
        "- **taxonomy** (6 testable occupations): for women: dancer, nurse, secretary; for men: butcher, pilot."
        in markdown
    )
    bullets = [line.partition(")")[0] for line in markdown.splitlines() if "testable occupations)" in line]
    assert bullets == [f"- **{condition}** (6 testable occupations" for condition in CONDITIONS]  # a line each
    assert "Used under the CC BY 4.0 license" in markdown


def test_unknown_run_is_a_user_error(db_file: Path) -> None:
    result = CliRunner().invoke(app, ["report", "nope", "--db", str(db_file)])
    assert result.exit_code == 2
    assert "run 'nope': no such run (recent runs:" in result.output


def test_missing_database_is_a_user_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", "x", "--db", str(tmp_path / "none.duckdb")])
    assert (result.exit_code, result.output.strip()) == (
        2,
        f"error: {tmp_path / 'none.duckdb'}: no such database",
    )
    assert not (tmp_path / "none.duckdb").exists()


def test_compare_paired_differences_and_agreement(compared: Path) -> None:
    out = compared
    data = json.loads(out.with_suffix(".json").read_text())
    assert list(data) == [
        "schema_version",
        "runs",
        "differences_in_settings",
        "setting_differences",
        "paired",
        "conditions",
        "paired_conditions",
        "shared",
        "reference",
        "women_and_men",
        "leaderboard",
        "leaderboard_method",
        "overall",
        "paired_differences",
        "ranks",
        "rank_order",
        "rank_by",
        "rank_method",
        "preference_agreement",
        "adverse_impact",
        "per_contrast",
        "workforce",
    ]
    assert data["women_and_men"] is True  # two runs over name pairs: the women / men columns are theirs
    assert (data["per_contrast"]["shared_sets"], data["per_contrast"]["differences"]) == ([], [])  # no name sets
    # Each replay file is its own "model": the only differences, and what the comparison measures.
    assert [(d["setting"], d["effect"]) for d in data["setting_differences"]] == [
        ("model", "measured"),
        ("model_identity", "measured"),
    ]
    assert data["paired"] is True
    assert data["shared"] == {"pairs": 8, "occupations": 6, "conditions": list(CONDITIONS), "instances": 288}
    assert interval_problems(data) == []
    data["paired_differences"][0]["p_value"] = 0.9  # the check is live (female_share: its interval excludes 0)
    row = data["paired_differences"][0]
    assert interval_problems(data) == [
        f"difference first - steady {row['condition']} {row['metric']}: p = 0.9 "
        f"disagrees with [{row['ci_low']}, {row['ci_high']}] about 0.0"
    ]
    position = next(
        row for row in data["paired_differences"] if (row["condition"], row["metric"]) == ("taxonomy", "position_first")
    )
    # steady picks the first-named person in exactly half of each pair's instances, first always does.
    assert (position["value_a"], position["value_b"], position["difference"]) == (0.5, 1.0, 0.5)
    # The same difference in every pair: no spread, so the two rates' own intervals combine (MOVER): first's
    # no-event bound over 8 pairs [0.025^(1/8), 1] and steady's score interval at 0.5 (binomial floor, 96
    # instances, t on 7 df); never a zero-width interval.
    steady_low, steady_high = score_interval_reference(0.5, 0.0, 8, 96)
    first_low = 0.025 ** (1 / 8)
    assert (position["ci_low"], position["ci_high"], position["n_pairs"]) == (
        pytest.approx(0.5 - math.hypot(1 - first_low, steady_high - 0.5)),
        pytest.approx(1 - steady_low),
        8,
    )
    assert position["p_value"] == 2 * 0.5**8 and position["note"] is None
    agreement = data["preference_agreement"][0]
    # steady: 3 female, 2 male, 1 none; first: none everywhere -> agree on accountant only, kappa 0.
    assert agreement == {
        "condition": "taxonomy",
        "run_a": "steady",
        "run_b": "first",
        "occupations": 6,
        "same_preferred": 1 / 6,
        "kappa": 0.0,
    }
    assert [row["run_id"] for row in data["leaderboard"]] == ["steady", "first"]
    assert [row["preferred_female"] for row in data["leaderboard"]] == [3, 0]
    html = out.read_text()
    for section in ("runs", "scope", "leaderboard", "ranks", "side-by-side", "differences", "agreement"):
        assert f'id="{section}"' in html, section
    assert html.count('<img src="data:image/svg+xml;base64,') == 2
    assert 'class="sortable"' in html
    assert out.with_suffix(".md").read_text().startswith("# Gender-bias comparison of 2 runs")


def test_compare_runs_with_other_settings_says_so(db_file: Path, tmp_path: Path) -> None:
    data, *_ = (compare.compare_summary(con := db.connect(db_file), ["steady", "narrow"]),)
    con.close()
    assert data["shared"]["occupations"] == 2
    assert [(d["setting"], d["effect"]) for d in data["setting_differences"]] == [
        ("model", "measured"),
        ("model_identity", "measured"),
        ("top_k", "unpaired"),
        ("occupation", "restricted"),
    ]
    assert data["differences_in_settings"][2:] == [
        "The runs use different top-k (steady: 2, narrow: 1); the same instance was asked with different prompts "
        "or attributes, so the comparison is unpaired: no paired differences are computed, each run's own values "
        "are shown side by side.",
        "The runs cover different occupations (steady: 6, narrow: 2); paired differences use only the 2 "
        "occupations they share.",
    ]
    assert (data["paired"], data["paired_differences"]) == (False, [])


def test_compare_needs_two_distinct_runs(db_file: Path) -> None:
    con = db.connect(db_file)
    try:
        with pytest.raises(UserError, match="at least two run ids"):
            compare.compare_summary(con, ["steady"])
        with pytest.raises(UserError, match="run ids repeat"):
            compare.compare_summary(con, ["steady", "steady"])
    finally:
        con.close()
