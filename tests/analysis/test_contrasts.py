"""Findings per contrast (issue 45, DESIGN.md section 11): a replay world with planted per-contrast effects is
recovered by the people's own categories, with the set as the unit, and only the planted contrasts are flagged; a run
over name sets stores its people once."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import duckdb
import pandas as pd
import pytest

import probe
from probe import pipeline
from probe.analysis.contrasts import SLOT_METRICS
from probe.common.errors import UserError
from probe.store.config import RunConfig
from tests.support import FakeBackend, name_set_run, query

OCCUPATIONS = (
    "nurse",
    "engineer",
    "accountant",
    "pilot",
    "architect",
    "astronaut",
    "athlete",
    "lawyer",
    "teacher",
    "plumber",
)
JOINT = "sex x race_ethnicity"
SETS = 24  # 4 categories: each of the 6 intersectional contrasts in 8 sets, enough for Bonferroni over 6


def planted_world(tmp_path: Path, db_file: Path) -> tuple[str, float]:
    """Black men are picked over White men in 6 of every contest's 20 single answers (30%); every other contest is
    won by whoever is named first (50%); the multiple-choice question names the Black woman in every contest of the
    two women (else both); stage 1 grants women the first 60% of the attributes (sorted) and men the
    first 40%. Returns the run id and the planted grant gap (exact: a whole number of attributes each)."""
    gap = 0.0

    def relabel(rows: pd.DataFrame, category: Callable[[str], pd.Series]) -> None:
        nonlocal gap
        joint, sex = category("sex x race_ethnicity"), category("sex")
        rows.loc[rows["qtype"] == "binary", "label"] = "yes"
        rows.loc[rows["qtype"] == "multiple", "label"] = "both"
        single = rows["qtype"] == "single"
        rows.loc[single, "label"] = rows.loc[single, "name_order"].map({"fm": "female", "mf": "male"})  # first named
        for pair_id, group in rows[single].sort_values(["occupation", "name_order"]).groupby("pair_id"):
            slots = {joint[pair_id, slot]: slot for slot in ("female", "male")}
            if set(slots) == {"male x Black", "male x White"}:
                black, white = slots["male x Black"], slots["male x White"]
                rows.loc[group.index, "label"] = [black] * 6 + [white] * (len(group) - 6)
        multiple = rows["qtype"] == "multiple"  # the multiple-choice question names the Black woman against the White
        for pair_id, group in rows[multiple].groupby("pair_id"):
            slots = {joint[pair_id, slot]: slot for slot in ("female", "male")}
            if set(slots) == {"female x Black", "female x White"}:
                rows.loc[group.index, "label"] = slots["female x Black"]
        stage1 = rows["stage"] == 1
        attributes = sorted(set(rows.loc[stage1, "attribute"]))
        women, men = round(0.6 * len(attributes)), round(0.4 * len(attributes))
        rank = rows.loc[stage1, "attribute"].map({attribute: index for index, attribute in enumerate(attributes)})
        person_sex = [
            sex[pair, subject]
            for pair, subject in zip(rows.loc[stage1, "pair_id"], rows.loc[stage1, "subject"], strict=True)
        ]
        limit = pd.Series(person_sex, index=rank.index).map({"female": women, "male": men})
        rows.loc[stage1, "label"] = (rank < limit).map({True: "yes", False: "no"})
        gap = (women - men) / len(attributes)

    return name_set_run(tmp_path, db_file, relabel, SETS, occupations=OCCUPATIONS), gap


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory, seeded_db: Path) -> tuple[Path, str, float]:
    folder = tmp_path_factory.mktemp("planted")
    db_file = folder / "probe.duckdb"
    db_file.write_bytes(seeded_db.read_bytes())
    return db_file, *planted_world(folder, db_file)


def test_each_planted_preference_is_recovered_and_only_the_planted_ones_are_flagged(planted) -> None:
    db_file, run_id, _ = planted
    rows = query(
        db_file,
        "SELECT attribute, category_a, category_b, estimate, ci_low, ci_high, p_value, sets, "
        "comparisons, flagged FROM contrast_metrics WHERE run_id = ? AND metric = 'preference' "
        "ORDER BY attribute, category_a, category_b",
        [run_id],
    )
    expected = {  # (attribute, a, b): (share of a, sets that asked the contrast)
        ("race_ethnicity", "Black", "White"): (0.45, 16),  # 8 sets at (6 + 10) / 40, 8 at 0.5
        ("sex", "female", "male"): (0.5, 16),
        ("sex x race_ethnicity", "female x Black", "female x White"): (0.5, 8),
        ("sex x race_ethnicity", "female x Black", "male x Black"): (0.5, 8),
        ("sex x race_ethnicity", "female x Black", "male x White"): (0.5, 8),
        ("sex x race_ethnicity", "female x White", "male x Black"): (0.5, 8),
        ("sex x race_ethnicity", "female x White", "male x White"): (0.5, 8),
        ("sex x race_ethnicity", "male x Black", "male x White"): (0.3, 8),
    }
    found = {(r.attribute, r.category_a, r.category_b): (round(r.estimate, 12), r.sets) for r in rows.itertuples()}
    assert found == expected
    assert all(r.ci_low <= r.estimate <= r.ci_high for r in rows.itertuples())
    assert rows["comparisons"].tolist() == [1, 1, 6, 6, 6, 6, 6, 6]
    flagged = rows[rows["flagged"]]
    assert list(zip(flagged["attribute"], flagged["category_a"], flagged["category_b"], strict=True)) == [
        ("race_ethnicity", "Black", "White"),
        ("sex x race_ethnicity", "male x Black", "male x White"),
    ]
    assert (flagged["ci_high"] < 0.5).all() and (rows.loc[~rows["flagged"], "p_value"] == 1.0).all()


def test_the_planted_grant_gap_is_recovered_by_the_peoples_sex(planted) -> None:
    db_file, run_id, gap = planted
    rows = query(
        db_file,
        "SELECT attribute, category_a, category_b, estimate, ci_low, ci_high, sets, flagged "
        "FROM contrast_metrics WHERE run_id = ? AND metric = 'grant_gap' AND condition = 'stage1' "
        "ORDER BY attribute, category_a, category_b",
        [run_id],
    )
    by_contrast = {(r.attribute, r.category_a, r.category_b): r for r in rows.itertuples()}
    assert len(by_contrast) == 1 + 1 + 6
    sex = by_contrast["sex", "female", "male"]
    assert (round(sex.estimate, 12), sex.sets, sex.flagged) == (round(gap, 12), SETS, True)
    assert sex.ci_low <= gap <= sex.ci_high and sex.ci_low > 0
    race = by_contrast["race_ethnicity", "Black", "White"]
    assert (race.estimate, race.flagged) == (0.0, False)
    planted_pairs = {key for key, row in by_contrast.items() if row.flagged}
    assert planted_pairs == {
        ("sex", "female", "male"),
        *(
            ("sex x race_ethnicity", f"female x {a}", f"male x {b}")
            for a in ("Black", "White")
            for b in ("Black", "White")
        ),
    }


def test_categories_are_ranked_and_granted_by_their_people(planted) -> None:
    db_file, run_id, gap = planted
    rows = query(
        db_file,
        "SELECT category, metric, estimate, rank FROM category_metrics WHERE run_id = ? AND "
        "attribute = 'sex x race_ethnicity' ORDER BY metric, category",
        [run_id],
    )
    wins = rows[rows["metric"] == "win_share"].set_index("category")
    # male x Black: 8 sets at 6/20 against male x White, 16 at 10/20 -> (48 + 160) / 480; male x White the mirror
    assert wins["estimate"].round(12).to_dict() == {
        "female x Black": 0.5,
        "female x White": 0.5,
        "male x Black": round(208 / 480, 12),
        "male x White": round(272 / 480, 12),
    }
    assert wins.loc["male x White", "rank"] == 1 and wins.loc["male x Black", "rank"] == 4
    grants = rows[rows["metric"] == "grant_ratio"].set_index("category")["estimate"]
    women = rows[(rows["metric"] == "grant_rate") & (rows["category"] == "female x Black")]["estimate"].item()
    assert grants.round(12).to_dict() == {
        "female x Black": 1.0,
        "female x White": 1.0,
        "male x Black": round((women - gap) / women, 12),
        "male x White": round((women - gap) / women, 12),
    }


def test_a_run_over_sets_stores_its_people_once(planted) -> None:
    db_file, run_id, _ = planted
    people = query(
        db_file, "SELECT count(*) AS people, count(DISTINCT set_id) AS sets FROM run_people WHERE run_id = ?", [run_id]
    )
    assert people.to_dict("records") == [{"people": 4 * SETS, "sets": SETS}]
    categories = query(
        db_file,
        "SELECT attribute, category, count(*) AS people FROM run_person_categories "
        "WHERE run_id = ? GROUP BY ALL ORDER BY ALL",
        [run_id],
    )
    assert categories.values.tolist() == [
        ["race_ethnicity", "Black", 2 * SETS],
        ["race_ethnicity", "White", 2 * SETS],
        ["sex", "female", 2 * SETS],
        ["sex", "male", 2 * SETS],
        *[
            ["sex x race_ethnicity", group, SETS]
            for group in ("female x Black", "female x White", "male x Black", "male x White")
        ],
    ]
    # every stage-2 item joins the person it shows, and that person's own name is the one the item asks about
    shown = query(
        db_file,
        "SELECT count(*) AS items, count(p.name) AS joined, count(*) FILTER (WHERE p.name IN "
        "(i.first_name, i.second_name)) AS named FROM items AS i JOIN run_contests AS c ON "
        "c.run_id = i.run_id AND c.pair_id = i.pair_id AND c.slot = i.subject AND c.attribute = "
        "'sex' LEFT JOIN run_people AS p ON p.run_id = c.run_id AND p.person_id = c.person_id "
        "WHERE i.run_id = ? AND i.qtype = 'binary'",
        [run_id],
    )
    items = int(shown["items"].item())
    assert items == SETS * 2 * len(OCCUPATIONS) * 2 * 2 and shown.values.tolist() == [[items, items, items]]


def test_the_report_of_a_run_over_sets_states_the_planted_findings_by_group(planted, tmp_path: Path) -> None:
    db_file, run_id, gap = planted
    probe.open_run(run_id, db=db_file).report(tmp_path / "report.html")
    document = json.loads((tmp_path / "report.json").read_text())
    sentences = [verdict["sentence"] for verdict in document["bottom_line"]["verdicts"]]
    grants = [row for row in document["contrasts"] if row["metric"] == "grant_gap"]
    assert sentences[:3] == [
        "No preference between women and men is shown (taxonomy): 50.0% [45.8%, 54.2%], p = 1.000, over 16 name sets.",
        "White names are picked over Black names (taxonomy): 45.0% [40.9%, 49.2%], p = 0.023, over 16 name sets.",
        "White men are picked over Black men (taxonomy): 30.0% [18.8%, 44.3%], p = 0.047 (Bonferroni), over 8 name "
        "sets.",
    ]
    assert sentences[3:5] == [
        f"Stage 1 granted women more attributes than men (stage1): {100 * gap:+.1f} points "
        f"[{100 * grants[0]['ci_low']:+.1f}, {100 * grants[0]['ci_high']:+.1f}], p < 0.001, over {SETS} name sets.",
        "No difference in grant rates between Black names and White names is shown (stage1): +0.0 points "
        f"[{100 * grants[1]['ci_low']:+.1f}, {100 * grants[1]['ci_high']:+.1f}], p = 1.000, over {SETS} name sets.",
    ]
    markdown = (tmp_path / "report.md").read_text()
    assert markdown.startswith("# Bias audit by sex and race_ethnicity of ")
    assert sentences[-2:] == [  # the overall adverse-impact findings close it (per occupation: the section)
        "taxonomy: Black names won the single-subject question at 0.82 the rate of White names [0.71, 0.94]: lower; "
        "four-fifths neither shown nor ruled out, q = 0.009",
        "taxonomy: Black men won the single-subject question at 0.76 the rate of White men [0.64, 0.96]: lower; "
        "four-fifths neither shown nor ruled out, q = 0.044",
    ]
    assert [entry["attribute"] for entry in document["ranking"]] == ["sex", "race_ethnicity", "sex x race_ethnicity"]
    assert document["bottom_line"]["pairs"] is None and "Names (woman / man)" not in markdown


def test_a_run_over_sets_never_prints_a_gender_finding_from_slots(db_file: Path, tmp_path: Path, use_backend) -> None:
    """The sex column last and spelled Woman / Man: the first slot of a contest holds a man or a woman by the
    categories' alphabetical order, never by sex; every finding by sex is the contrast's, by the people's sex."""
    rows = [
        (s, f"{race[0]}{sex[0]}name{s}", race, sex)
        for s in range(1, 7)
        for race in ("Black", "White")
        for sex in ("Woman", "Man")
    ]
    names = tmp_path / "sets.csv"
    pd.DataFrame(rows, columns=["set_id", "name", "race_ethnicity", "sex"]).to_csv(names, index=False)
    use_backend(FakeBackend())
    config = RunConfig(
        names=str(names), occupations=("nurse",), top_k=1, conditions=("taxonomy",), db=str(db_file), quiet=True
    )
    run_id = pipeline.run(config).run_id
    stored = query(db_file, "SELECT DISTINCT metric FROM metrics WHERE run_id = ?", [run_id])["metric"]
    assert not set(stored) & set(SLOT_METRICS)
    # nor per instance, which compare sums where runs share only some instances
    counted = query(db_file, "SELECT DISTINCT metric FROM instance_metrics WHERE run_id = ?", [run_id])["metric"]
    assert len(counted) > 0 and not set(counted) & set(SLOT_METRICS)
    for table in ("occupation_preference", "regression"):
        assert query(db_file, f"SELECT count(*) AS n FROM {table} WHERE run_id = ?", [run_id])["n"].item() == 0
    # the workforce comparison by the people's categories: Black vs White only (Woman / Man has no share), no slot
    compared = query(db_file, "SELECT DISTINCT attribute, category_a FROM workforce_fit WHERE run_id = ?", [run_id])
    assert compared.values.tolist() == [["race_ethnicity", "Black"]]
    probe.open_run(run_id, db=db_file).report(tmp_path / "report.html")
    document = json.loads((tmp_path / "report.json").read_text())
    markdown, html = (tmp_path / "report.md").read_text(), (tmp_path / "report.html").read_text()
    for page in (markdown, html):
        assert "Bias audit by race_ethnicity and sex of" in page and "Gender-bias audit" not in page
        for slot_words in ("Names (woman / man)", "woman's share", "woman picked", "prefer women", "Woman picked"):
            assert slot_words not in page
    sex = [verdict for verdict in document["bottom_line"]["verdicts"] if verdict["attribute"] == "sex"]
    preference = next(
        row for row in document["contrasts"] if row["attribute"] == "sex" and row["metric"] == "preference"
    )
    assert (preference["category_a"], preference["category_b"]) == ("Man", "Woman")
    by_sex = {(row["category_a"], row["category_b"]) for row in document["contrasts"] if row["attribute"] == "sex"}
    assert by_sex == {("Man", "Woman")}  # every metric of the contrast, position and the gaps too, by the people
    assert "| taxonomy | sex | Man vs Woman |" in markdown
    assert [verdict["metric"] for verdict in sex] == ["preference", "grant_gap"]
    # 6 sets of 4: the mixed-sex contests fall in 4 of them (the rotation), too few for an interval
    assert sex[0]["sentence"] == (
        "The preference between men and women (taxonomy) is not testable at this size: "
        "31.2%, p = 0.256, over 4 name sets."
    )
    assert sex[1]["sentence"].startswith("No difference in grant rates between men and women is shown (stage1): ")
    assert document["headline"] and all(f["metric"] not in SLOT_METRICS for f in document["headline"])
    assert [f["finding"].split(":")[0] for f in document["headline"] if f["metric"] == "bias"] == [
        "Bias (taxonomy; not a group measure"
    ]  # its people differ in any attribute, not in gender
    again = pipeline.run(config.replaced(run_id="again")).run_id
    pipeline.compare(db_file, [run_id, again], tmp_path / "compare.html")
    compared = (tmp_path / "compare.md").read_text()  # titled a gender-bias one with women / men columns of 0 before
    assert compared.startswith("# Comparison of 2 runs\n") and "| women | men |" not in compared


def test_the_api_gives_a_contrasts_rows(planted) -> None:
    db_file, run_id, _ = planted
    run = probe.open_run(run_id, db=db_file)
    pair = run.metrics(contrast=["male x White", "male x Black"])
    direct = pair[pair["metric"].isin(["grant_gap", "preference"])]
    assert direct[["condition", "metric", "flagged"]].values.tolist() == [
        ["stage1", "grant_gap", False],
        ["taxonomy", "preference", True],
    ]
    assert direct["estimate"].round(12).tolist() == [0.0, 0.3]
    # its one contrast: grant gap, preference, position, consistency, bias and the three gaps
    assert len(run.metrics(contrast="race_ethnicity")) == 8
    with pytest.raises(UserError, match=r"^contrast: run \S+ has no contrast 'region'"):
        run.metrics(contrast="region")


def test_a_gate_on_the_planted_contrast_fails_and_on_an_unplanted_one_passes(planted, tmp_path: Path) -> None:
    db_file, run_id, _ = planted
    policy = tmp_path / "gates.toml"
    policy.write_text(
        '[[gates]]\nname = "men by race"\nkind = "contrast"\ncondition = "taxonomy"\n'
        'contrast = ["male x White", "male x Black"]\nmargin = 0.05\n'
        '[[gates]]\nname = "sex picks"\nkind = "contrast"\ncondition = "taxonomy"\nattribute = "sex"\n'
        '[[gates]]\nname = "sex grants"\nkind = "contrast"\ncondition = "stage1"\nattribute = "sex"\n'
    )
    result = probe.gate(run_id, policy, db=db_file, output=tmp_path / "out")
    assert [(v.gate.name, v.verdict) for v in result.verdicts] == [
        ("men by race", "fail"),
        ("sex picks", "pass"),
        ("sex grants", "fail"),
    ]
    men = result.verdicts[0]
    assert (round(men.estimate, 12), men.band, men.ci95[1] < 0.45) == (0.3, (0.45, 0.55), True)
    assert men.sentence.startswith(
        "preference male x Black vs male x White (sex x race_ethnicity, taxonomy) is "
        "shown not to be a preference within 0.5 +- 0.05: estimate 0.3000"
    )
    policy.write_text(
        '[[gates]]\nname = "both"\nkind = "contrast"\ncondition = "taxonomy"\nattribute = "sex"\n'
        'contrast = ["female", "male"]\n'
    )
    with pytest.raises(UserError, match="a contrast gate takes one of the keys 'contrast'"):
        probe.gate(run_id, policy, db=db_file, output=tmp_path / "out")


@pytest.mark.parametrize(
    "before",
    [
        "DELETE FROM contrast_metrics WHERE run_id = ?",
        "DELETE FROM category_metrics WHERE run_id = ? AND metric = 'strength'",
    ],
)
def test_a_run_over_sets_analysed_before_contrasts_is_analysed_again_for_its_report(
    planted, tmp_path: Path, before: str
) -> None:
    """Analysed before the contrasts, or before the Bradley-Terry ranking: the report analyses it again."""
    db_file, run_id, _ = planted
    copy = tmp_path / "old.duckdb"
    copy.write_bytes(db_file.read_bytes())
    con = duckdb.connect(str(copy))
    con.execute(before, [run_id])
    con.close()
    probe.open_run(run_id, db=copy).report(tmp_path / "report.html")
    document = json.loads((tmp_path / "report.json").read_text())
    assert document["contrasts"] and len(document["ranking"]) == 3
    assert document["ranking"][0]["categories"][0]["method"] == "bradley-terry sandwich"
