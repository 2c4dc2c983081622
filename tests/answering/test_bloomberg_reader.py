"""The reader of Bloomberg's GPT resume-ranking files (probe/answering/bloomberg.py) on a small fixture written here in
their format: their notebook's rule for a reply (first mention ranks first, unnamed names last in shown order), a
reply naming nobody as unknown, categories from demo_order, `oversampled/` ignored; and, where their repository is
on disk, the 64 published rows reproduced exactly (bench/bloomberg.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.bloomberg import DEFAULT_DIR, reproduce
from probe.answering.bloomberg import read_bloomberg, reply_ranking
from probe.cli import app
from tests.support import assert_one_line_error, query

CODES = ["W_M", "W_W", "B_M", "B_W", "A_M", "A_W", "H_M", "H_W"]
NAMES = ["TOM KLEIN", "AMY KLEIN", "DARNELL BANKS", "LATOYA BANKS", "KEVIN WU", "SARA WU", "JOSE LOPEZ", "ANA LOPEZ"]


def write_ranking(folder: Path, job: str, index: int, order: list[int], reply: str | None = None) -> None:
    """One of their files: the names shown in `order` (indexes into NAMES), the reply listing them as shown unless
    `reply` is given."""
    shown = [NAMES[i] for i in order]
    text = reply if reply is not None else "\n".join(f"{rank}. {name.title()}" for rank, name in enumerate(shown, 1))
    record = {
        "choices": [{"message": {"content": text}}],
        "created": 1700687555 + index,
        "context": {"job": job, "default_order": shown, "demo_order": [CODES[i] for i in order]},
    }
    path = folder / "data" / "intermediary" / "resume_ranking" / "gpt-x" / job / "1121" / f"run_{index}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))


@pytest.fixture
def study(tmp_path: Path) -> Path:
    """Six nurse rankings: 4 list the names as shown (first shown: W_M, W_M, W_W, W_W), one names Sara Wu (A_W)
    first, one names nobody; an oversampled file that must not count."""
    folder = tmp_path / "study"
    for index in range(4):
        write_ranking(folder, "nurse", index, [(index // 2 + k) % 8 for k in range(8)])
    write_ranking(folder, "nurse", 4, list(range(8)), reply="I would pick Sara Wu, then maybe Kevin Wu.")
    write_ranking(folder, "nurse", 5, list(range(8)), reply="I cannot rank these candidates.")
    oversampled = folder / "data" / "intermediary" / "resume_ranking" / "gpt-x" / "nurse" / "1121" / "oversampled"
    oversampled.mkdir()
    (oversampled / "run_9.json").write_text("not even json")
    return folder


def test_the_notebook_rule_ranks_by_first_mention_and_a_reply_naming_nobody_is_unknown() -> None:
    shown = ["ANN LEE", "BO LEE", "CY WU"]
    assert reply_ranking("1. Cy Wu\n2. Ann Lee\n3. Bo Lee", shown) == [2, 3, 1]
    assert reply_ranking("Best: cy wu; also ann lee", shown) == [2, 3, 1]  # Bo Lee, unnamed, last
    assert reply_ranking("Bo Lee.", shown) == [2, 1, 3]  # unnamed ones keep the shown order
    assert reply_ranking("None of them.", shown) is None


def test_a_study_folder_imports_with_categories_from_demo_order(study: Path, tmp_path: Path) -> None:
    decisions = read_bloomberg(study, "gpt-x")
    assert len(decisions.people) == 48 and decisions.people["set_id"].nunique() == 6
    assert decisions.period == "2023-11-22"
    categories = decisions.categories.pivot(index="person_id", columns="attribute", values="category")
    first = categories.loc[decisions.people.loc[decisions.people["name"] == "DARNELL BANKS", "person_id"].iloc[0]]
    assert first.to_dict() == {"race_ethnicity": "Black", "sex": "male", "sex x race_ethnicity": "male x Black"}
    db_file = tmp_path / "b.duckdb"
    result = CliRunner().invoke(app, ["import", "bloomberg", str(study), "--db", str(db_file)])
    assert result.exit_code == 0, result.output
    rows = query(
        db_file,
        "SELECT category, n, rate, unknown FROM adverse_impact WHERE run_id = 'bloomberg-gpt-x' "
        "AND attribute = 'sex x race_ethnicity' AND scope = 'job' ORDER BY category",
    )
    picked = {"male x White": 2, "female x White": 2, "female x Asian": 1}  # the tops of the 5 replies naming anyone
    assert rows.to_dict("records") == [
        {"category": category, "n": 5, "rate": picked.get(category, 0) / 5, "unknown": 1}
        for category in sorted(rows["category"])
    ]


def test_a_folder_without_rankings_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["import", "bloomberg", str(tmp_path), "--db", str(tmp_path / "b.duckdb")])
    assert_one_line_error(result.exit_code, result.output, f"{tmp_path}: no MODEL/JOB/1121/*.json rankings")


def test_their_published_table_is_matched_row_by_row(study: Path, tmp_path: Path) -> None:
    """bench/bloomberg.py's check on the fixture, against a table written as their notebook computes it over the
    five replies naming anyone (their notebook would count the sixth, naming nobody, as a pick of the first name
    shown; their real files have no such reply, so their denominators are ours)."""
    output = study / "data" / "output"
    output.mkdir(parents=True)
    lines = ["demo,top,top_og,selection_rate,disparate_impact_ratio,job,model,rank"]
    for code, top in (("W_M", 2), ("W_W", 2), ("A_W", 1)):
        lines.append(f"{code},{top},0,{top / 5},{(top / 5) / (2 / 5)},nurse,gpt-x,1")
    (output / "performance_ranking.csv").write_text("\n".join(lines) + "\n")
    merged = reproduce(study, tmp_path / "r.duckdb")
    assert merged["equal"].tolist() == [True] * 3


@pytest.mark.slow
@pytest.mark.skipif(
    not (DEFAULT_DIR / "data" / "output" / "performance_ranking.csv").is_file(),
    reason=f"Bloomberg's repository not at {DEFAULT_DIR}",
)
def test_the_real_study_reproduces_all_64_published_rows(tmp_path: Path) -> None:
    merged = reproduce(DEFAULT_DIR, tmp_path / "bloomberg.duckdb")
    assert (len(merged), int(merged["equal"].sum())) == (64, 64)


@pytest.mark.parametrize("field", ["default_order", "demo_order", "content"])
def test_a_value_that_is_not_text_is_one_line(tmp_path: Path, field: str) -> None:
    """A name, group code or reply that is a number or a list is the file's error, not an AttributeError."""
    write_ranking(tmp_path, "nurse", 0, list(range(8)))
    path = tmp_path / "data" / "intermediary" / "resume_ranking" / "gpt-x" / "nurse" / "1121" / "run_0.json"
    record = json.loads(path.read_text())
    if field == "content":
        record["choices"][0]["message"]["content"] = 5
    else:
        record["context"][field][0] = [1]
    path.write_text(json.dumps(record))
    result = CliRunner().invoke(app, ["import", "bloomberg", str(tmp_path), "--db", str(tmp_path / "b.duckdb")])
    message = f"{path}: not a ranking file of the study (names, groups and the reply must be text)"
    assert_one_line_error(result.exit_code, result.output, message)
