"""The occupations gate on a run over name sets (probe/gates/kinds/set_occupations.py): it reads the report's
occupation lists per contrast (contrast_occupations), fails where one lists an occupation, and passes only on what
the policy states (`detectable`; `margin` needs name pairs)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

import probe
from probe.gates.gate import Gate
from probe.gates.kinds import KINDS
from probe.gates.kinds.set_occupations import MARGIN_NOTE, set_verdict
from probe.gates.leaning import leaning_plan
from tests.analysis.test_contrast_findings import planted  # noqa: F401 (the planted run over 24 name sets)

SIGN_P = 2 * 0.5**8  # engineer and pilot: all 8 leaning sets to the White man; BH over 2 tested occupations: q = p


def _gate(db_file: Path, run_id: str, folder: Path, keys: str) -> tuple[int, dict]:
    policy = folder / "gates.toml"
    policy.write_text(f'[[gates]]\nname = "o"\ncondition = "taxonomy"\nkind = "occupations"\n{keys}\n')
    result = probe.gate(run_id, policy, db=db_file, output=folder / "out")
    return result.exit_code(), json.loads((folder / "out" / "gate.json").read_text())["gates"][0]


def test_an_occupation_listed_for_any_contrast_fails_the_gate(planted, tmp_path: Path) -> None:  # noqa: F811
    db_file, run_id = planted
    code, entry = _gate(db_file, run_id, tmp_path, "detectable = 0.3")
    assert (code, entry["verdict"], entry["unit"], entry["n"]["pairs"]) == (1, "fail", "name sets", 8)
    assert entry["sentence"] == (
        "4 occupations listed in 2 of 8 contrasts: engineer (to White, q = 0.00781), pilot (to White, q = 0.00781), "
        "engineer (to male x White, q = 0.00781), pilot (to male x White, q = 0.00781); most leaning: engineer in "
        "Black vs White (race_ethnicity), 0.000 of its 8 leaning name sets lean to Black (95.0% interval [0.000, "
        "0.369]), q = 0.00781; 24 name sets asked"
    )
    # its fail p for the family's Holm step: the smallest q times the 2 contrasts with a tested occupation
    assert entry["p_fail"] == pytest.approx(2 * SIGN_P)
    assert entry["details"]["preferred"] == ["engineer", "pilot"]
    assert [(row["contrast"], row["occupation"], row["preferred"]) for row in entry["details"]["listed"]] == [
        ("Black vs White (race_ethnicity)", "engineer", "White"),
        ("Black vs White (race_ethnicity)", "pilot", "White"),
        ("male x Black vs male x White (sex x race_ethnicity)", "engineer", "male x White"),
        ("male x Black vs male x White (sex x race_ethnicity)", "pilot", "male x White"),
    ]
    # the gate on name pairs read occupation_preference, empty here: it passed ("none of 0 occupations preferred")
    # with `detectable` and raised a traceback with `margin`; a margin gate fails on the lists too
    assert _gate(db_file, run_id, tmp_path, "margin = 0.3")[1]["verdict"] == "fail"
    code, nurse = _gate(db_file, run_id, tmp_path, 'margin = 0.3\noccupations = ["nurse"]')
    assert (code, nurse["verdict"], nurse["pairs_needed"]) == (3, "inconclusive", None)
    assert nurse["sentence"] == f"no occupation listed in 8 contrasts; {MARGIN_NOTE}"


def _lists(sets: dict[tuple[str, str, str], dict[str, int]], asked: int) -> duckdb.DuckDBPyConnection:
    """contrast_occupations rows of a run over `asked` sets: per contrast and occupation its leaning sets, split
    evenly (q = 1, none listed)."""
    con = duckdb.connect()
    con.execute("CREATE TABLE run_contests AS SELECT 'r' AS run_id, range + 1 AS set_id FROM range(?)", [asked])
    con.execute(
        "CREATE TABLE contrast_occupations (run_id VARCHAR, condition VARCHAR, attribute VARCHAR, category_a VARCHAR, "
        "category_b VARCHAR, occupation VARCHAR, sets BIGINT, lean_a DOUBLE, ci_low DOUBLE, ci_high DOUBLE, "
        "ci_level DOUBLE, q_value DOUBLE, preferred VARCHAR)"
    )
    for (attribute, a, b), occupations in sets.items():
        for occupation, leaning in occupations.items():
            con.execute(
                "INSERT INTO contrast_occupations VALUES ('r', 'taxonomy', ?, ?, ?, ?, ?, 0.5, 0.2, 0.8, 0.95, 1.0, "
                "NULL)",
                [attribute, a, b, occupation, leaning],
            )
    return con


def test_detectable_passes_only_where_every_contrasts_occupations_could_be_listed() -> None:
    gate = Gate("o", KINDS["occupations"], "taxonomy", None, {"occupations": (), "margin": None, "detectable": 0.3})
    race = ("race_ethnicity", "Black", "White")
    # BH over 2 occupations: a lone listing at 0.025, where 24 leaning sets detect a lean of 80% with 80% power
    passing = set_verdict(_lists({race: {"nurse": 30, "pilot": 24}}, 30), "r", gate)
    assert (passing.verdict, passing.unit, passing.needed.pairs) == ("pass", "name sets", 30)
    assert passing.summary == "none listed in 1 contrast; a lean of 80% of leaning sets one way detectable in each"
    # the sex contrast's pilot has 12 leaning sets of 30: 27 are needed, which about 76 sets give with 80% chance
    sex = ("sex", "female", "male")
    short = set_verdict(_lists({race: {"nurse": 30, "pilot": 24}, sex: {"nurse": 30, "pilot": 12}}, 30), "r", gate)
    assert (short.verdict, short.details["not_detectable"]) == ("inconclusive", ["pilot (female vs male (sex))"])
    assert short.needed == leaning_plan(12, 30, 27, "name sets")[0] == (76, None)
    assert short.sentence == (
        "no occupation listed in 2 contrasts, but a lean of 80% of leaning sets one way is not detectable with 80% "
        "power (sign test at 0.05 / the contrast's tested occupations) for 1: pilot (female vs male (sex)) (fewest "
        "leaning name sets: 12 of 30); about 76 name sets would give each 27 leaning sets (80% chance)"
    )
