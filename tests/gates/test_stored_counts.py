"""The gates and the LL144 summary read what analyze() stored (issue 47: no step after analyze() recounts answers):
stored counts altered in a copy of the database change their verdicts and rates while the answers stay as they were.
Were a gate to recount the answers, its verdict would not move."""

from __future__ import annotations

from pathlib import Path

import duckdb

import probe
from probe.analysis.stored import stored_counts
from probe.report.ll144 import ll144_rows
from tests.analysis.test_adverse_impact import planted_run
from tests.analysis.test_contrasts import planted_world

OCCUPATIONS = '[[gates]]\nname = "no gendered occupation"\ncondition = "taxonomy"\nkind = "occupations"\n'


def verdicts(db_file: Path, tmp_path: Path, run_id: str, policy: str) -> list[tuple[str, str, float | None]]:
    path = tmp_path / "gates.toml"
    path.write_text(policy)
    result = probe.gate(run_id, path, db=db_file, output=tmp_path / "out")
    return [(v.gate.name, v.verdict, None if v.estimate is None else round(v.estimate, 12)) for v in result.verdicts]


def alter(db_file: Path, sql: str, params: list[object]) -> None:
    con = duckdb.connect(str(db_file))
    try:
        con.execute(sql, params)
    finally:
        con.close()


def female_selection(db_file: Path, run_id: str) -> float:
    con = duckdb.connect(str(db_file), read_only=True)
    try:
        table = ll144_rows(con, run_id)[0]
    finally:
        con.close()
    return float(table.set_index(["rate_kind", "category"]).loc[("selection", "female"), "rate"])


def test_the_impact_gate_and_the_ll144_summary_read_the_stored_counts(db_file: Path, tmp_path: Path) -> None:
    run_id = planted_run(db_file, tmp_path, male_yes=(10, 10))
    policy = '[[gates]]\nname = "four-fifths"\nkind = "impact_ratio"\ncondition = "taxonomy"\nattribute = "sex"\n'
    assert verdicts(db_file, tmp_path, run_id, policy) == [("four-fifths", "fail", 0.6)]
    assert female_selection(db_file, run_id) == 0.6
    alter(db_file, "UPDATE impact_counts SET hits = n WHERE run_id = ? AND category = 'female'", [run_id])
    assert verdicts(db_file, tmp_path, run_id, policy)[0][1:] == ("pass", 1.0)
    assert female_selection(db_file, run_id) == 1.0


def test_the_occupations_gate_reads_the_stored_instance_counts(runs_db_file: Path, tmp_path: Path) -> None:
    """`first` picks whoever is named first: every occupation's share is 0.5, shown within 0.5 +- 0.3; stored counts
    that say nurses were always the woman leave the gate undecided."""
    policy = OCCUPATIONS + "margin = 0.3\n"
    assert verdicts(runs_db_file, tmp_path, "first", policy) == [("no gendered occupation", "pass", 0.5)]
    alter(
        runs_db_file,
        "UPDATE instance_metrics SET hits = n WHERE run_id = 'first' AND metric = 'female_share' "
        "AND occupation = 'nurse'",
        [],
    )
    assert verdicts(runs_db_file, tmp_path, "first", policy) == [("no gendered occupation", "inconclusive", 1.0)]


def test_the_contrast_gate_reads_the_stored_contest_and_grant_counts(db_file: Path, tmp_path: Path) -> None:
    run_id, _ = planted_world(tmp_path, db_file)
    policy = (
        '[[gates]]\nname = "men by race"\nkind = "contrast"\ncondition = "taxonomy"\n'
        'contrast = ["male x White", "male x Black"]\nmargin = 0.05\n'
        '[[gates]]\nname = "sex grants"\nkind = "contrast"\ncondition = "stage1"\nattribute = "sex"\n'
    )
    before = verdicts(db_file, tmp_path, run_id, policy)
    assert [(name, verdict) for name, verdict, _ in before] == [("men by race", "fail"), ("sex grants", "fail")]
    with duckdb.connect(str(db_file), read_only=True) as con:
        stored = stored_counts(con, run_id, "contrast_counts")
    # a contest: 10 occupations x 2 name orders; a marginal contrast (Black vs White) meets twice a set
    assert set(stored["n"]) == {20, 40}
    alter(db_file, "UPDATE contrast_counts SET hits = n // 2 WHERE run_id = ?", [run_id])
    alter(db_file, "UPDATE grant_counts SET hits = n // 2 WHERE run_id = ?", [run_id])
    after = verdicts(db_file, tmp_path, run_id, policy)
    assert [(name, estimate) for name, _, estimate in after] == [("men by race", 0.5), ("sex grants", 0.0)]
    assert all(verdict != "fail" for _, verdict, _ in after)
