"""Say what you detected (issue 45): a run over name sets prints the attributes, categories, sets and contests its
file holds and warns, before any model call, about a header or category spelled unlike the shipped list's; a
`--pairs` below the sets an interval needs is refused as such a file is."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from probe.common.errors import UserError
from probe.common.resources import resource_dir
from probe.taxonomy.name_sets import found_lines, read_name_sets, select_sets, spelling_warnings
from tests.support import assert_one_line_error, invoke


def misspelled_file(path: Path, sets: int = 7) -> Path:
    """`sets` sets of four people, the race column spelled `race_ethnicty` before a sex column spelled Woman / Man."""
    rows = [
        f"{s},{race[0]}{sex[0]}name{s},{race},{sex}"
        for s in range(1, sets + 1)
        for race in ("Black", "White")
        for sex in ("Woman", "Man")
    ]
    path.write_text("set_id,name,race_ethnicty,sex\n" + "\n".join(rows) + "\n")
    return path


def test_what_a_file_holds_is_said_in_its_words(tmp_path: Path) -> None:
    path = misspelled_file(tmp_path / "sets.csv")
    sets = read_name_sets(duckdb.connect(), path)
    assert found_lines(sets, select_sets(sets, 6), path) == [
        f"name sets in {path}: attributes race_ethnicty (Black, White); sex (Man, Woman), and their intersection "
        "race_ethnicty x sex",
        "4 categories; 6 of the file's 7 sets asked (24 people)",
        "12 contests: 2 per set (the rotation: every two categories meet once every 3 sets)",
    ]


def test_spellings_unlike_the_shipped_list_are_warned_about(tmp_path: Path) -> None:
    path = misspelled_file(tmp_path / "sets.csv")
    con = duckdb.connect()
    shipped = read_name_sets(con, resource_dir("taxonomy") / "name_sets.csv")
    assert spelling_warnings(read_name_sets(con, path), shipped, path) == [
        f"{path}: column 'race_ethnicty' looks like the shipped attribute 'race_ethnicity'; it is read as an attribute "
        "of its own",
        f"{path}: sex category 'Man' looks like the shipped category 'male'; it is read as a category of its own "
        "(spell it as shipped to compare with shipped runs)",
        f"{path}: sex category 'Woman' looks like the shipped category 'female'; it is read as a category of its own "
        "(spell it as shipped to compare with shipped runs)",
    ]
    assert spelling_warnings(shipped, shipped, path) == []  # the shipped spellings: nothing to say


def test_the_dry_run_says_what_it_found_before_the_plan(tmp_path: Path) -> None:
    path = misspelled_file(tmp_path / "sets.csv")
    code, output = invoke(
        "run",
        "--names",
        str(path),
        "--occupations",
        "nurse",
        "--top-k",
        "1",
        "--conditions",
        "taxonomy",
        "--dry-run",
        "--db",
        str(tmp_path / "probe.duckdb"),
    )
    assert code == 0
    lines = output.splitlines()
    assert lines[1:3] == [
        "4 categories; 7 of the file's 7 sets asked (28 people)",
        "14 contests: 2 per set (the rotation: every two categories meet once every 3 sets)",
    ]
    assert [line.split(": ")[2].split(" looks")[0] for line in lines[3:6]] == [
        "column 'race_ethnicty'",
        "sex category 'Man'",
        "sex category 'Woman'",
    ]
    assert lines[6].startswith("stage 1: ")


@pytest.mark.parametrize("pairs", ["4", "1,2,3"])
def test_fewer_sets_than_an_interval_needs_are_refused(tmp_path: Path, pairs: str) -> None:
    path = misspelled_file(tmp_path / "sets.csv")
    with pytest.raises(UserError, match=r"^pairs: \d name sets chosen; a run over name sets needs at least 6"):
        select_sets(
            read_name_sets(duckdb.connect(), path), [int(p) for p in pairs.split(",")] if "," in pairs else int(pairs)
        )
    code, output = invoke(
        "run",
        "--names",
        str(path),
        "--pairs",
        pairs,
        "--occupations",
        "nurse",
        "--dry-run",
        "--db",
        str(tmp_path / "probe.duckdb"),
    )
    assert_one_line_error(code, output, "pairs: ")


def test_a_run_over_sets_ends_with_its_contrasts(tmp_path: Path, db_file: Path, use_backend) -> None:
    from tests.support import FakeBackend

    path = misspelled_file(tmp_path / "sets.csv", sets=6)
    use_backend(FakeBackend())
    code, output = invoke(
        "run",
        "--names",
        str(path),
        "--occupations",
        "nurse",
        "--top-k",
        "1",
        "--conditions",
        "taxonomy",
        "--yes",
        "--db",
        str(db_file),
    )
    assert code == 0, output
    assert output.index("warning: ") < output.index("contrasts by the")
    assert output.count("Man vs") == 2 and "preferred gender" not in output  # sex: preference and grant gap


def test_a_categorys_markup_is_printed_as_typed_in_the_groups_section(
    tmp_path: Path, db_file: Path, use_backend
) -> None:
    import json

    import probe
    from tests.support import FakeBackend

    rows = [f"{s},N{s}{g},{g}" for s in range(1, 7) for g in ("<script>x</script>", "a|b*c*")]
    path = tmp_path / "sets.csv"
    path.write_text("set_id,name,group\n" + "\n".join(rows) + "\n")
    use_backend(FakeBackend())
    run_id = probe.run(names=str(path), occupations=("nurse",), top_k=1, conditions=("taxonomy",), db=db_file).run_id
    probe.open_run(run_id, db=db_file).report(tmp_path / "report.html")
    html, markdown = (tmp_path / "report.html").read_text(), (tmp_path / "report.md").read_text()
    assert "<script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html
    assert re.search(r"(?<!\\)<script>", markdown) is None and "| a\\|b\\*c\\* |" in markdown  # escaped
    assert json.loads((tmp_path / "report.json").read_text())["groups"]["attributes"] == ["group"]


def test_a_held_out_check_of_the_womans_share_is_refused_for_runs_over_sets(
    tmp_path: Path, db_file: Path, use_backend
) -> None:
    from tests.support import FakeBackend

    path = misspelled_file(tmp_path / "sets.csv", sets=6)
    use_backend(FakeBackend())
    for run_id in ("base", "mitigated"):
        code, _ = invoke(
            "run",
            "--names",
            str(path),
            "--occupations",
            "nurse",
            "--top-k",
            "1",
            "--conditions",
            "taxonomy",
            "--yes",
            "--quiet",
            "--run-id",
            run_id,
            "--db",
            str(db_file),
        )
        assert code == 0
    code, output = invoke(
        "compare",
        "base",
        "mitigated",
        "--heldout-seed",
        "0",
        "--db",
        str(db_file),
        "--output",
        str(tmp_path / "compare.html"),
    )
    assert_one_line_error(code, output, "--heldout-metric female_share: run base asked name sets")
