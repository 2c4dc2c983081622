"""A run over name sets has the set as its unit beyond the headline: its consistency-bias correlation is across its
sets and its occupation and category rows are clustered by set (a planted replay world of 8 sets of four categories,
2 contests each, whose consistency and bias vary by set and, inside a set, by contest)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pandas as pd
import pytest

import probe
from probe import pipeline
from probe.analysis.differences import difference_estimate
from probe.analysis.metric_registry import CONSISTENCY, POOLED_OVERALL_METRICS
from probe.analysis.statistics import pair_terms, paired_t_method, share_estimate
from tests.support import name_set_run, query
from tests.taxonomy.test_name_sets import GROUPS

SETS = 8
OCCUPATIONS = ("nurse", "engineer")
# Per set: its consistent and its biased instances of 8 (2 contests x 2 occupations x 2 name orders). The first
# contest takes up to 4 consistent ones and the second the rest; the biased ones go the other way round, so the
# contests' values are not their sets'.
CONSISTENT = (1, 2, 3, 4, 5, 6, 7, 8)
BIASED = (2, 1, 4, 3, 6, 5, 8, 7)
PAIR = r"\bpairs?\b"  # a unit of a run over name pairs ("paired" is no unit)
SET_R = 19 / 21  # Pearson r of CONSISTENT and BIASED: 1 - sum of squared differences / (2 x their sum of squares)


def planted_sets(
    folder: Path, db_file: Path, run_id: str = "set_units", consistent: tuple[int, ...] = CONSISTENT
) -> str:
    """The single pick is always the first-named person; the binary answer about them is yes in the set's planted
    number of instances (`consistent`; else no; the other person: yes), the multiple-choice answer names them in its
    planted number (BIASED; else both)."""

    def relabel(rows: pd.DataFrame, category: Callable[[str], pd.Series]) -> None:
        contests = category("sex").reset_index()[["pair_id"]].drop_duplicates()["pair_id"].sort_values().tolist()
        stage2 = rows[rows["stage"] == 2].sort_values(["pair_id", "occupation", "name_order"])
        first = {"fm": "female", "mf": "male"}
        for index, pair_id in enumerate(contests):
            set_index, second = divmod(index, 2)
            granted, biased = consistent[set_index], BIASED[set_index]
            yes = min(granted, 4) if not second else granted - min(granted, 4)
            named = biased - min(biased, 4) if not second else min(biased, 4)
            contest = stage2[stage2["pair_id"] == pair_id]
            instances = contest[contest["qtype"] == "single"][["occupation", "name_order"]].drop_duplicates()
            for number, (occupation, order) in enumerate(instances.itertuples(index=False)):
                chosen = first[order]
                here = contest[(contest["occupation"] == occupation) & (contest["name_order"] == order)]
                binary = here[here["qtype"] == "binary"]
                rows.loc[binary.index, "label"] = np.where(
                    binary["subject"] == chosen, "yes" if number < yes else "no", "yes"
                )
                rows.loc[here[here["qtype"] == "single"].index, "label"] = chosen
                rows.loc[here[here["qtype"] == "multiple"].index, "label"] = chosen if number < named else "both"

    return name_set_run(folder, db_file, relabel, SETS, occupations=OCCUPATIONS, run_id=run_id)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory, seeded_db: Path) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("set_units")
    db_file = folder / "probe.duckdb"
    db_file.write_bytes(seeded_db.read_bytes())
    return db_file, planted_sets(folder, db_file)


def test_the_consistency_bias_correlation_of_a_set_run_is_across_its_sets(planted) -> None:
    db_file, run_id = planted
    sets = query(
        db_file,
        "SELECT key, metric, value, n, pairs FROM metrics WHERE run_id = ? AND scope = 'set' AND condition = "
        "'taxonomy' AND metric IN ('consistency', 'bias') ORDER BY metric, try_cast(key AS INTEGER)",
        [run_id],
    )
    values = sets.pivot(index="key", columns="metric", values="value").loc[[str(s) for s in range(1, SETS + 1)]]
    assert (values["consistency"] * 8).round(12).tolist() == list(CONSISTENT)
    assert (values["bias"] * 8).round(12).tolist() == list(BIASED)
    assert set(sets["n"]) == {8} and set(sets["pairs"]) == {1}
    row = query(db_file, "SELECT across, n, r FROM correlations WHERE run_id = ? AND condition = 'taxonomy'", [run_id])
    assert row[["across", "n"]].values.tolist() == [["set", SETS]]
    assert row["r"].item() == pytest.approx(SET_R, abs=1e-12)
    contests = query(
        db_file,
        "SELECT key, metric, value FROM metrics WHERE run_id = ? AND scope = 'pair' AND condition = 'taxonomy' "
        "AND metric IN ('consistency', 'bias')",
        [run_id],
    ).pivot(index="key", columns="metric", values="value")
    assert len(contests) == 2 * SETS
    by_contest = np.corrcoef(contests["consistency"], contests["bias"])[0, 1]
    assert by_contest == pytest.approx(-1 / 43, abs=1e-12)  # what it read across the contests: no relation


def test_the_occupation_and_category_rows_of_a_set_run_are_clustered_by_set(planted) -> None:
    db_file, run_id = planted
    per_set = query(
        db_file,
        "SELECT u.occupation, c.set_id, u.metric, sum(u.hits) AS hits, sum(u.n) AS n FROM instance_metrics AS u "
        "JOIN (SELECT DISTINCT pair_id, set_id FROM run_contests WHERE run_id = ?) AS c USING (pair_id) "
        "WHERE u.run_id = ? AND u.condition = 'taxonomy' AND u.metric IN ('consistency', 'position_first') "
        "GROUP BY ALL ORDER BY ALL",
        [run_id, run_id],
    )
    stored = query(
        db_file,
        "SELECT key, metric, value, ci_low, ci_high, n, pairs, method FROM metrics WHERE run_id = ? AND "
        "scope = 'occupation' AND condition = 'taxonomy' AND metric IN ('consistency', 'position_first')",
        [run_id],
    ).set_index(["key", "metric"])
    assert len(stored) == 4 and set(stored["pairs"]) == {SETS} and set(stored["n"]) == {2 * SETS * 2}
    for (occupation, metric), group in per_set.groupby(["occupation", "metric"]):
        estimate = share_estimate(group["hits"].to_numpy(float), group["n"].to_numpy(float), group["n"].to_numpy(float))
        row = stored.loc[(occupation, metric)]
        assert row["method"] == estimate.method and row["value"] == pytest.approx(estimate.value, abs=1e-12)
        assert [row["ci_low"], row["ci_high"]] == pytest.approx(list(estimate.interval()), abs=1e-12)
    # every pick is the first-named person's: the no-event bound counts the 8 sets, not the 16 contests
    assert stored.loc[("nurse", "position_first"), "ci_low"] == pytest.approx(0.025 ** (1 / SETS), abs=1e-12)
    categories = query(db_file, "SELECT DISTINCT pairs FROM metrics WHERE run_id = ? AND scope = 'category'", [run_id])
    assert categories["pairs"].tolist() == [SETS]


@pytest.fixture(scope="module")
def compared(planted, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The planted run against one whose binary answers are yes in every instance (consistency 1 in every set)."""
    db_file, run_id = planted
    folder = tmp_path_factory.mktemp("set_compare")
    planted_sets(db_file.parent, db_file, "all_consistent", consistent=(8,) * SETS)
    pipeline.compare(db_file, [run_id, "all_consistent"], folder / "compare.html")
    return folder, json.loads((folder / "compare.json").read_text())


def test_a_comparison_of_set_runs_pairs_its_differences_and_ranks_by_set(compared) -> None:
    folder, document = compared
    assert document["shared"] == {
        "pairs": 2 * SETS,
        "occupations": 2,
        "conditions": ["taxonomy"],
        "instances": 2 * SETS * 4,
        "name_sets": SETS,
    }
    row = next(r for r in document["paired_differences"] if r["metric"] == "consistency")
    # each set's 8 instances: the planted run's consistent ones against all 8
    units, pooled = np.full((SETS, 1), 8.0), np.array([CONSISTENCY in POOLED_OVERALL_METRICS])
    planted_terms = pair_terms(np.array(CONSISTENT, float)[:, None], units, pooled)
    everyone = pair_terms(np.full((SETS, 1), 8.0), units, pooled)
    expected = difference_estimate(tuple(term[:, 0] for term in everyone), tuple(term[:, 0] for term in planted_terms))
    assert (row["n_pairs"], row["difference"]) == (SETS, pytest.approx(1 - 36 / 64, abs=1e-12))
    assert [row["ci_low"], row["ci_high"]] == pytest.approx(list(expected.interval()), abs=1e-12)
    assert row["p_value"] == pytest.approx(expected.p_value(0.0), abs=1e-12)
    assert row["method"] == paired_t_method("set")
    assert {rank["n_pairs"] for rank in document["ranks"]} == {SETS}
    assert document["rank_method"].startswith("each run's rank under one bootstrap over name sets (")
    assert document["leaderboard_method"].startswith("over name sets, the method chosen per estimate by what the sets")
    markdown, html = (folder / "compare.md").read_text(), (folder / "compare.html").read_text()
    assert "instances (8 name sets, 16 contests, 2 occupations, conditions taxonomy)." in markdown
    assert "## Leaderboard (taxonomy condition; estimate [95% CI: over name sets, the method chosen" in markdown
    assert "## Paired differences (run minus set_units, 95% CI: paired cluster t over name sets: " in markdown
    leaderboard = markdown.split("## Leaderboard")[1].split("## Mirror or amplify")[0]
    assert not re.search(PAIR, leaderboard) and not re.search(
        PAIR, markdown.split("## Ranks")[1].split("## Agreement")[0]
    )
    assert "when the name sets are\nresampled" in html and "over the name sets' own\ndifferences, so set-to-set" in html
    assert '<th class="num">Name sets</th><th class="num">Contests</th>' in html


def test_the_report_of_a_set_run_states_its_correlation_across_sets(planted, tmp_path: Path) -> None:
    db_file, run_id = planted
    probe.open_run(run_id, db=db_file).report(tmp_path / "report.html")
    document = json.loads((tmp_path / "report.json").read_text())
    markdown, html = (tmp_path / "report.md").read_text(), (tmp_path / "report.html").read_text()
    finding = next(f for f in document["headline"] if f["kind"] == "correlation")
    assert (finding["metric"], finding["n"]["pairs"]) == ("pearson_r(consistency, bias) across sets", SETS)
    assert finding["finding"].startswith("Across 8 name sets (taxonomy), bias rises with consistency: Pearson r = 0.90")
    assert (
        "the paper's consistency-bias relation). | r = 0.90 [0.54, 0.98] | permutation-calibrated Fisher z | 8 sets |"
        in (markdown)
    )
    assert "| taxonomy | set | consistency | bias | pearson | 0.905 |" in markdown
    assert (
        "- **consistency-bias correlation across name sets (permutation test)**: With 8 name sets a correlation of "
        "|r| >= 0.85 is detected"
    ) in markdown
    assert "<h2>Consistency versus bias across name sets</h2>" in html and "One dot per name set and condition" in html
    plotted = {(row["scope"], row["metric"]) for row in document["pair_values"]}
    assert plotted == {("set", "consistency"), ("set", "bias")} and len(document["pair_values"]) == 2 * SETS
    assert "## Figure 1 metrics (mean over name sets, 95% CI: over name sets, the method chosen" in markdown
    assert "name pair" not in markdown.split("## Summary")[1].split("## Run card")[0]  # "each pair of categories" is


def test_a_failing_gate_on_a_set_run_lists_its_sets_in_junit(planted, tmp_path: Path) -> None:
    db_file, run_id = planted
    policy = tmp_path / "gates.toml"
    policy.write_text(
        '[[gates]]\nname = "c"\nkind = "max"\nmetric = "consistency"\ncondition = "taxonomy"\nlimit = 0.2\n'
    )
    result = probe.gate(run_id, policy, db=db_file, output=tmp_path / "out", junit=tmp_path / "junit.xml")
    assert [verdict.verdict for verdict in result.verdicts] == ["fail"]
    failure = ElementTree.parse(tmp_path / "junit.xml").getroot().find("testsuite/testcase/failure")
    lines = failure.text.split("\n")
    table = lines[lines.index("name set | value | instances") :][: SETS + 1]
    people = "/".join(f"{sex[0].upper()}{race[0].lower()}name{{}}" for sex, race in GROUPS)
    assert table[1:] == [f"{s} {people.format(*[s] * 4)} | {x / 8:.3f} | 8" for s, x in enumerate(CONSISTENT, start=1)]
    assert "over name sets" in failure.get("message") and "name pair" not in failure.text
    assert "- engineer contest 1 fm binary: yes" in lines
