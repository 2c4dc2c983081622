"""The gender run's occupation lists (Benjamini-Hochberg over occupations) and robustness verdicts across wordings,
per contrast of a run over name sets (issue 45 item 2): a replay world in two wordings with a planted occupation
effect recovers exactly the planted occupations for the contrasts that hold it, and the planted findings hold in
every wording."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import duckdb
import pandas as pd
import pytest

import probe
from probe import pipeline
from probe.analysis.contrast_findings import contrast_occupation_rows
from probe.analysis.preference import occupation_preference_rows
from probe.analysis.robustness import robustness_methods
from probe.store.config import RunConfig
from probe.taxonomy.name_sets import contests, read_name_sets
from tests.support import query, unknown_answers
from tests.taxonomy.test_name_sets import sets_file

OCCUPATIONS = ("nurse", "engineer", "accountant", "pilot", "architect", "teacher")
PLANTED = ("engineer", "pilot")  # the White man picked in both name orders against the Black man
SETS = 24  # 4 categories, 3 rounds: each intersectional contrast in 8 sets
WORDINGS = ("paper", "synonym")


def men_contest(categories: set[str]) -> str | None:
    """The planted pick: the White man in contests between the Black and the White man, else none."""
    return "male x White" if categories == {"male x Black", "male x White"} else None


def planted_run(
    tmp_path: Path,
    db_file: Path,
    winner: Callable[[set[str]], str | None] = men_contest,
    occupations: tuple[str, ...] = PLANTED,
    run_id: str | None = None,
) -> str:
    """`winner`'s category picked in `occupations` (default: the White man against the Black man in PLANTED), in
    both name orders and every wording; every other single answer names the first-named person (each set's
    order-balanced share 0.5: no lean). Stage 1 grants women the first 60% of the attributes (sorted) and men the
    first 40%, in every wording."""
    names = sets_file(tmp_path / "sets.csv", sets=SETS)
    settings = dict(
        backend="replay",
        names=str(names),
        occupations=OCCUPATIONS,
        top_k=1,
        conditions=("taxonomy",),
        wordings=WORDINGS,
        db=str(db_file),
        quiet=True,
    )
    answers = unknown_answers(tmp_path / f"{run_id or 'answers'}.csv", **settings)
    mapping = contests(read_name_sets(duckdb.connect(), names))[1]
    joint = mapping[mapping["attribute"] == "sex x race_ethnicity"].set_index(["pair_id", "slot"])["category"]
    sex = mapping[mapping["attribute"] == "sex"].set_index(["pair_id", "slot"])["category"]
    rows = pd.read_csv(answers, dtype={"label": object})
    rows.loc[rows["qtype"] == "binary", "label"] = "yes"
    rows.loc[rows["qtype"] == "multiple", "label"] = "both"
    single = rows["qtype"] == "single"
    rows.loc[single, "label"] = rows.loc[single, "name_order"].map({"fm": "female", "mf": "male"})  # first named
    slots = {pair: {joint[pair, slot]: slot for slot in ("female", "male")} for pair in set(rows["pair_id"])}
    won = pd.Series([slots[pair].get(winner(set(slots[pair]))) for pair in rows["pair_id"]], index=rows.index)
    planted = single & rows["occupation"].isin(occupations) & won.notna()
    rows.loc[planted, "label"] = won[planted]
    stage1 = rows["stage"] == 1
    attributes = sorted(set(rows.loc[stage1, "attribute"]))
    rank = rows.loc[stage1, "attribute"].map({attribute: index for index, attribute in enumerate(attributes)})
    person_sex = [
        sex[pair, subject] for pair, subject in zip(rows["pair_id"][stage1], rows["subject"][stage1], strict=True)
    ]
    limit = pd.Series(person_sex, index=rank.index).map(
        {"female": round(0.6 * len(attributes)), "male": round(0.4 * len(attributes))}
    )
    rows.loc[stage1, "label"] = (rank < limit).map({True: "yes", False: "no"})
    rows = rows.drop_duplicates()  # the preview lists each item once per wording, without its wording
    pd.concat([rows.assign(wording=wording) for wording in WORDINGS]).to_csv(answers, index=False)
    return pipeline.run(RunConfig(**settings, answers=str(answers), run_id=run_id)).run_id


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory, seeded_db: Path) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("occupations")
    db_file = folder / "probe.duckdb"
    db_file.write_bytes(seeded_db.read_bytes())
    return db_file, planted_run(folder, db_file)


SIGN_P = 2 * 0.5**8  # all 8 leaning sets lean one way: the exact sign test's two-sided p


def test_exactly_the_planted_occupations_are_listed_for_the_contrasts_that_hold_them(planted) -> None:
    db_file, run_id = planted
    rows = query(
        db_file,
        "SELECT attribute, category_a, category_b, occupation, sets, sets_a, sets_b, share_a, p_value, q_value, "
        "ci_level, preferred FROM contrast_occupations WHERE run_id = ? AND preferred IS NOT NULL "
        "ORDER BY attribute, category_a, occupation",
        [run_id],
    )
    # Black vs White pools each set's contests between a Black and a White person: a set holding the two men's
    # contest also holds the two women's (one round), whose first-named pick makes its share (0 + 1) / 2 in one name
    # order and (0 + 0) / 2 in the other: 0.25; the 8 sets of the other round stay at 0.5 (no lean)
    expected = [
        ("race_ethnicity", "Black", "White", "engineer", 8, 0, 8, 0.375, "White"),
        ("race_ethnicity", "Black", "White", "pilot", 8, 0, 8, 0.375, "White"),
        ("sex x race_ethnicity", "male x Black", "male x White", "engineer", 8, 0, 8, 0.0, "male x White"),
        ("sex x race_ethnicity", "male x Black", "male x White", "pilot", 8, 0, 8, 0.0, "male x White"),
    ]
    found = [
        (r.attribute, r.category_a, r.category_b, r.occupation, r.sets, r.sets_a, r.sets_b, r.share_a, r.preferred)
        for r in rows.itertuples()
    ]
    assert found == expected
    # BH over the 2 occupations with a leaning set: q = p; the interval's level 1 - 2 x 0.05 / 2
    assert rows["p_value"].tolist() == pytest.approx([SIGN_P] * 4, abs=1e-15)
    assert rows["q_value"].tolist() == pytest.approx([SIGN_P] * 4, abs=1e-15)
    assert rows["ci_level"].tolist() == [0.95] * 4
    every = query(db_file, "SELECT * FROM contrast_occupations WHERE run_id = ?", [run_id])
    assert len(every) == 8 * len(OCCUPATIONS)  # 8 contrasts (1 race, 1 sex, 6 intersectional) x 6 occupations
    assert set(every.loc[every["preferred"].isna() & (every["sets"] > 0), "occupation"]) == set()


def test_the_occupation_list_is_the_gender_runs_procedure_with_the_set_for_the_pair() -> None:
    cells = pd.DataFrame(
        [
            ("taxonomy", "race", "Black", "White", "pilot", set_id, order, wording, 1, hit)
            for set_id in range(1, 9)
            for order, hit in (("fm", int(set_id > 7)), ("mf", 0))
            for wording in WORDINGS
        ],
        columns=[
            "condition",
            "attribute",
            "category_a",
            "category_b",
            "occupation",
            "pair_id",
            "name_order",
            "wording",
            "n",
            "n_female",
        ],
    )
    rows = contrast_occupation_rows(cells)
    gender = occupation_preference_rows(cells)
    assert rows[["sets", "sets_a", "sets_b", "p_value"]].values.tolist() == [[7, 0, 7, 2 * 0.5**7]]
    assert rows["p_value"].tolist() == gender["p_value"].tolist()
    assert rows["preferred"].tolist() == ["White"]  # set 8 is at 0.5: no lean


def test_planted_findings_hold_in_every_wording_and_nothing_else_does(planted) -> None:
    db_file, run_id = planted
    crossed = query(
        db_file,
        "SELECT condition, attribute, category_a, category_b, metric, value, sets, wordings, spread, verdict "
        "FROM contrast_robustness WHERE run_id = ? AND scope = 'crossed' ORDER BY ALL",
        [run_id],
    )
    holds = crossed[crossed["verdict"] == "holds"]
    assert [(r.attribute, r.category_a, r.category_b, r.metric) for r in holds.itertuples()] == [
        ("sex", "female", "male", "grant_gap"),  # women granted 60% of the attributes, men 40%
        ("sex x race_ethnicity", "female x Black", "male x Black", "grant_gap"),
        ("sex x race_ethnicity", "female x Black", "male x White", "grant_gap"),
        ("sex x race_ethnicity", "female x White", "male x Black", "grant_gap"),
        ("sex x race_ethnicity", "female x White", "male x White", "grant_gap"),
        ("sex x race_ethnicity", "male x Black", "male x White", "preference"),  # 2 of 6 occupations at 0
    ]
    assert set(crossed.loc[crossed["verdict"] != "holds", "verdict"]) == {"not_shown"}
    assert holds["value"].tolist() == pytest.approx([0.2] * 5 + [1 / 3], abs=1e-12)
    assert holds["sets"].tolist() == [24] * 5 + [8]
    assert holds["spread"].tolist() == pytest.approx([0.0] * 6, abs=1e-12)
    assert set(crossed["wordings"]) == {2}
    per_wording = query(
        db_file,
        "SELECT key, value, p_value FROM contrast_robustness WHERE run_id = ? AND scope = 'wording' "
        "AND category_a = 'male x Black' AND category_b = 'male x White' AND metric = 'preference' ORDER BY key",
        [run_id],
    )
    assert per_wording["key"].tolist() == list(WORDINGS)
    assert per_wording["value"].tolist() == pytest.approx([1 / 3] * 2, abs=1e-12)
    assert (per_wording["p_value"] < 0.05).all()


def test_the_stored_methods_name_sets_where_the_gender_run_names_pairs(planted) -> None:
    db_file, run_id = planted
    methods = query(
        db_file, "SELECT DISTINCT scope, method FROM contrast_robustness WHERE run_id = ? ORDER BY 1", [run_id]
    )
    assert methods.values.tolist() == [
        [
            "crossed",
            "two-way cluster-robust interval over name sets and wordings (Cameron-Gelbach-Miller: V = V_set + "
            "V_wording - V_set x wording), t with min(sets, wordings) - 1 degrees of freedom on the logit scale of the "
            "metric's range (delta method); the p-value is the same test",
        ],
        [
            "wording",
            "as a run asked in this wording alone reports the metric: its interval over name sets, the method chosen "
            "by what the sets show (score interval, no-event bound, betting interval; paired cluster t for a "
            "difference); the p-value is the same test",
        ],
    ]


def test_the_report_api_and_export_give_them(planted, tmp_path: Path) -> None:
    db_file, run_id = planted
    run = probe.open_run(run_id, db=str(db_file))
    listed = run.occupations(["male x White", "male x Black"])
    assert listed.loc[listed["preferred"].notna(), "occupation"].tolist() == ["engineer", "pilot"]
    assert set(run.occupations("race_ethnicity")["category_a"]) == {"Black"}
    assert run.robustness("sex")["verdict"].dropna().tolist() == ["holds", "not_shown"]  # grant gap, preference
    html = run.report(tmp_path / "report.html")
    document = json.loads(html.with_name("report.json").read_text())
    lists = {
        (entry["category_a"], entry["category_b"]): [row["occupation"] for row in entry["preferred"]]
        for entry in document["groups"]["occupations"]
    }
    assert lists[("male x Black", "male x White")] == lists[("Black", "White")] == ["engineer", "pilot"]
    assert sum(map(len, lists.values())) == 4
    # the bottom line names them per contrast (it said nothing of occupations for a run over name sets)
    listed = (
        "Occupations (taxonomy) listed per contrast (sign test over name sets, Benjamini-Hochberg q < 0.05 within "
        "each contrast): Black vs White (race_ethnicity), to White: engineer, pilot; male x Black vs male x White "
        "(sex x race_ethnicity), to male x White: engineer, pilot; none in the other 6 of 8 contrasts."
    )
    assert document["bottom_line"]["occupations"] == listed
    assert f'<p id="listed-occupations">{listed.replace("<", "&lt;")}</p>' in html.read_text()
    verdicts = [row["verdict"] for row in document["groups"]["robustness"]]
    assert verdicts.count("holds") == 6
    markdown = run.report(tmp_path / "report.md").read_text()
    assert f"\n\n{listed}\n" in markdown.split("## Summary")[0]
    row = (
        "| taxonomy | sex x race_ethnicity | male x Black vs male x White | engineer | male x White | 0 / 8 "
        "| 0.008 (2) |"
    )
    assert row.replace(" | engineer | ", " | pilot | ") in markdown
    assert row in markdown
    assert "none preferred (0 occupations with a leaning set)" in html.read_text()
    written = {path.name for path in run.export("csv", tmp_path / "export")}
    assert {"contrast_occupations.csv", "contrast_robustness.csv"} <= written


def test_the_runs_own_wording_rows_count_sets_and_say_so(planted, tmp_path: Path) -> None:
    """The slot-free metrics' robustness rows of a run over name sets (position, consistency, bias): each set's two
    contests summed, the 24 sets the unit of their intervals (they were the 48 contests), their methods and the
    report's section naming sets."""
    db_file, run_id = planted
    crossed = query(
        db_file, "SELECT metric, pairs, method FROM robustness WHERE run_id = ? AND scope = 'crossed'", [run_id]
    )
    assert crossed["metric"].tolist() == ["bias", "consistency", "position_first"]
    assert set(crossed["pairs"]) == {24}
    assert set(crossed["method"]) == {robustness_methods("set")["crossed"]}
    html = probe.open_run(run_id, db=str(db_file)).report(tmp_path / "report.html")
    section = json.loads(html.with_name("report.json").read_text())["robustness"]
    methods = [section[key] for key in ("method", "per_wording_method", "pairs_only_method", "wording_test")]
    assert methods == [robustness_methods("set")[key] for key in ("crossed", "wording", "pairs", "wording_test")]
    assert section["findings"][0]["finding"] == (
        "first-named picked (taxonomy): holds under every wording: the first-named person is favoured under each of "
        "the 2 (each wording's own test over name sets, p < 0.001); over all wordings together the first-named "
        "person is favoured (score test over name sets, every wording pooled: p < 0.001; the crossed set x wording "
        "test: p = 0.039; both reject); it moves 0.0 points between wordings."
    )
    assert '<th class="num">Sets only</th>' in html.read_text()
