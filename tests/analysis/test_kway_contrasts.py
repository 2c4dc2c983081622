"""The K-way choice feeds the contrasts (issue 45): its top picks between each two categories are a preference matrix
(`kway_preference`) and a Luce fit ranks the categories (`kway_strength`), on a planted replay world."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

import probe
from probe.common.errors import UserError
from tests.support import name_set_run, query

JOINT = "sex x race_ethnicity"
SETS = 12  # 6 intersectional contrasts: an interval at 1 - 0.05 / 6 needs 8 sets
OCCUPATIONS = ("nurse", "engineer", "pilot", "teacher", "lawyer")  # x 4 orders = 20 answers per set
# Top picks per set among its 20 answers: the Black man is picked 2 times, the others 6 each, the two women trading
# one pick by set (odd sets: the Black woman 7, the White woman 5; even sets the other way round).
PICKS = {1: {"Fb": 7, "Fw": 5, "Mw": 6, "Mb": 2}, 0: {"Fb": 5, "Fw": 7, "Mw": 6, "Mb": 2}}


@pytest.fixture(scope="module")
def planted_kway(tmp_path_factory: pytest.TempPathFactory, seeded_db: Path) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("kway")
    db_file = folder / "probe.duckdb"
    db_file.write_bytes(seeded_db.read_bytes())

    def relabel(rows: pd.DataFrame, category: Callable[[str], pd.Series]) -> None:
        rows.loc[rows["stage"] == 1, "label"] = "yes"
        kway = rows[rows["qtype"] == "kway"].sort_values(["pair_id", "occupation", "name_order"])
        for set_id, items in kway.groupby("pair_id"):
            picks = [f"{person}name{set_id}" for person, count in PICKS[set_id % 2].items() for _ in range(count)]
            rows.loc[items.index, "label"] = picks

    return db_file, name_set_run(folder, db_file, relabel, SETS, occupations=OCCUPATIONS, questions=("kway",))


def test_the_top_picks_between_two_categories_are_their_preference(planted_kway) -> None:
    db_file, run_id = planted_kway
    rows = query(
        db_file,
        "SELECT attribute, category_a, category_b, estimate, ci_low, ci_high, sets, comparisons, "
        "flagged FROM contrast_metrics WHERE run_id = ? AND metric = 'kway_preference' "
        "ORDER BY attribute, category_a, category_b",
        [run_id],
    )
    found = {(r.attribute, r.category_a, r.category_b): round(r.estimate, 12) for r in rows.itertuples()}
    assert found == {  # pooled over the 12 sets: women 144 picks, the Black man 24, the White man 72 of 240
        ("race_ethnicity", "Black", "White"): 0.4,  # (72 + 24) / 240
        ("sex", "female", "male"): 0.6,  # 144 / 240
        (JOINT, "female x Black", "female x White"): 0.5,
        (JOINT, "female x Black", "male x Black"): 0.75,  # 72 / 96
        (JOINT, "female x Black", "male x White"): 0.5,
        (JOINT, "female x White", "male x Black"): 0.75,
        (JOINT, "female x White", "male x White"): 0.5,
        (JOINT, "male x Black", "male x White"): 0.25,
    }
    assert (rows["sets"] == SETS).all() and rows["comparisons"].tolist() == [1, 1, 6, 6, 6, 6, 6, 6]
    assert all(r.ci_low <= r.estimate <= r.ci_high for r in rows.itertuples())
    flagged = {(r.category_a, r.category_b) for r in rows.itertuples() if r.flagged}
    assert flagged == {
        ("Black", "White"),
        ("female", "male"),
        ("female x Black", "male x Black"),
        ("female x White", "male x Black"),
        ("male x Black", "male x White"),
    }
    # the pair questions were not asked: no contest preference
    assert (
        query(
            db_file, "SELECT count(*) AS n FROM contrast_metrics WHERE run_id = ? AND metric = 'preference'", [run_id]
        )["n"].item()
        == 0
    )


def test_a_luce_fit_ranks_the_categories_by_their_top_picks(planted_kway) -> None:
    """Every answer shows every person of the set: the Luce fit is the share of top picks (of a marginal category's
    people, over as many people of each)."""
    db_file, run_id = planted_kway
    rows = query(
        db_file,
        "SELECT attribute, category, estimate, ci_low, ci_high, sets, n, rank, method FROM "
        "category_metrics WHERE run_id = ? AND metric = 'kway_strength' ORDER BY attribute, rank",
        [run_id],
    )
    assert [(r.attribute, r.category, round(r.estimate, 12), r.rank) for r in rows.itertuples()] == [
        ("race_ethnicity", "White", 0.6, 1),
        ("race_ethnicity", "Black", 0.4, 2),
        ("sex", "female", 0.6, 1),
        ("sex", "male", 0.4, 2),
        (JOINT, "female x Black", 0.3, 1),
        (JOINT, "female x White", 0.3, 2),
        (JOINT, "male x White", 0.3, 3),
        (JOINT, "male x Black", 0.1, 4),
    ]
    assert (rows["sets"] == SETS).all() and (rows["n"] == SETS * 20).all() and set(rows["method"]) == {"luce sandwich"}
    assert all(r.ci_low <= r.estimate <= r.ci_high for r in rows.itertuples())
    black_man = rows[rows["category"] == "male x Black"].iloc[0]
    assert black_man["ci_high"] < 0.25  # below 1 / K: shown


def test_the_report_shows_the_k_way_matrix_and_ranking(planted_kway, tmp_path: Path) -> None:
    db_file, run_id = planted_kway
    probe.open_run(run_id, db=db_file).report(tmp_path / "report.html")
    document = json.loads((tmp_path / "report.json").read_text())
    assert [(entry["attribute"], entry["question"]) for entry in document["ranking"]] == [
        ("sex", "kway"),
        ("race_ethnicity", "kway"),
        (JOINT, "kway"),
    ]
    matrix = next(entry for entry in document["groups"]["matrices"] if entry["attribute"] == JOINT)
    assert (matrix["metric"], matrix["categories"][-1]) == ("kway_preference", "male x Black")
    assert [cell["text"][:5] for cell in matrix["rows"][-1][:3]] == ["25.0%", "25.0%", "25.0%"]
    markdown = (tmp_path / "report.md").read_text()
    assert "**Preference matrix from the K-way choice, sex x race_ethnicity (taxonomy)**" in markdown
    assert "**Ranking, sex x race_ethnicity (taxonomy, K-way choice)**" in markdown


def test_a_contrast_gate_reads_the_k_way_choice_when_asked(planted_kway, tmp_path: Path) -> None:
    db_file, run_id = planted_kway
    policy = tmp_path / "gates.toml"
    policy.write_text(
        '[[gates]]\nname = "men"\nkind = "contrast"\ncondition = "taxonomy"\nquestion = "kway"\n'
        'contrast = ["male x White", "male x Black"]\n'
        '[[gates]]\nname = "women"\nkind = "contrast"\ncondition = "taxonomy"\nquestion = "kway"\n'
        'contrast = ["female x White", "female x Black"]\n'
    )
    result = probe.gate(run_id, policy, db=db_file, output=tmp_path / "out")
    assert [(verdict.gate.name, verdict.verdict) for verdict in result.verdicts] == [("men", "fail"), ("women", "pass")]
    assert result.verdicts[0].sentence.startswith(
        "kway_preference male x Black vs male x White (sex x race_ethnicity, taxonomy) is shown not to be a K-way "
        "preference within 0.5 +- 0.1: estimate 0.2500"
    )
    policy.write_text('[[gates]]\nname = "men"\nkind = "contrast"\ncondition = "taxonomy"\nattribute = "sex"\n')
    with pytest.raises(UserError, match=r"has no contrast 'sex' in condition taxonomy"):  # no pair questions asked
        probe.gate(run_id, policy, db=db_file, output=tmp_path / "out")
    policy.write_text(
        '[[gates]]\nname = "men"\nkind = "contrast"\ncondition = "taxonomy"\nattribute = "sex"\nquestion = "ranked"\n'
    )
    with pytest.raises(UserError, match=r"key 'question' must be one of pairs, kway \(got 'ranked'\)$"):
        probe.gate(run_id, policy, db=db_file, output=tmp_path / "out")
