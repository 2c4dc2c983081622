"""A run over name sets has the set as its unit beyond the headline: its consistency-bias correlation is across its
sets and its occupation and category rows are clustered by set (a planted replay world of 8 sets of four categories,
2 contests each, whose consistency and bias vary by set and, inside a set, by contest)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from probe.analysis.statistics import share_estimate
from tests.support import name_set_run, query

SETS = 8
OCCUPATIONS = ("nurse", "engineer")
# Per set: its consistent and its biased instances of 8 (2 contests x 2 occupations x 2 name orders). The first
# contest takes up to 4 consistent ones and the second the rest; the biased ones go the other way round, so the
# contests' values are not their sets'.
CONSISTENT = (1, 2, 3, 4, 5, 6, 7, 8)
BIASED = (2, 1, 4, 3, 6, 5, 8, 7)
SET_R = 19 / 21  # Pearson r of CONSISTENT and BIASED: 1 - sum of squared differences / (2 x their sum of squares)


def planted_sets(folder: Path, db_file: Path, run_id: str = "set_units") -> str:
    """The single pick is always the first-named person; the binary answer about them is yes in the set's planted
    number of instances (else no; the other person: yes), the multiple-choice answer names them in its planted
    number (else both)."""

    def relabel(rows: pd.DataFrame, category: Callable[[str], pd.Series]) -> None:
        contests = category("sex").reset_index()[["pair_id"]].drop_duplicates()["pair_id"].sort_values().tolist()
        stage2 = rows[rows["stage"] == 2].sort_values(["pair_id", "occupation", "name_order"])
        first = {"fm": "female", "mf": "male"}
        for index, pair_id in enumerate(contests):
            set_index, second = divmod(index, 2)
            consistent, biased = CONSISTENT[set_index], BIASED[set_index]
            yes = min(consistent, 4) if not second else consistent - min(consistent, 4)
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
