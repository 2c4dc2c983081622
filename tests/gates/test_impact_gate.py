"""Gate kind `impact_ratio` (DESIGN.md section 11) on the planted runs of test_adverse_impact.py: a planted ratio of
0.6 fails the four-fifths gate, a planted 1.0 passes a gate at 0.5 and is undecided at 0.8."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import probe
from probe import pipeline
from probe.common.errors import UserError
from probe.gates import load_policy
from probe.gates.outputs import markdown_summary
from tests.analysis.test_adverse_impact import planted_run
from tests.interval_checks import interval_problems


def gate(db_file: Path, tmp_path: Path, run_id: str, **keys: object) -> dict:
    lines = [
        "[[gates]]",
        'name = "four-fifths"',
        'kind = "impact_ratio"',
        'condition = "taxonomy"',
        *(f"{key} = {json.dumps(value)}" for key, value in keys.items()),
    ]
    policy = tmp_path / "gates.toml"
    policy.write_text("\n".join(lines) + "\n")
    probe.gate(run_id, policy, db=db_file, output=tmp_path / "out")
    document = json.loads((tmp_path / "out" / "gate.json").read_text())
    assert interval_problems(document) == []
    return document["gates"][0]


def test_a_planted_ratio_of_0_6_fails_four_fifths(db_file: Path, tmp_path: Path) -> None:
    run_id = planted_run(db_file, tmp_path, male_yes=(10, 10))
    entry = gate(db_file, tmp_path, run_id, attribute="sex")
    assert (entry["verdict"], entry["estimate"], entry["limit"], entry["rate_kind"]) == ("fail", 0.6, 0.8, "selection")
    assert entry["ci95"][1] < 0.8 and entry["details"]["highest"] == "male"
    assert entry["unit"] == "name sets"  # gate.md headed the count "Pairs"
    summary = (tmp_path / "out" / "gate.md").read_text()
    assert "| 95% CI | Passing values | Name sets |" in summary and "| Pairs |" not in summary
    verdicts = {c: row["four_fifths_verdict"] for c, row in entry["details"]["categories"].items()}
    assert verdicts == {"female": "shown below 0.8", "male": "shown at or above 0.8"}
    assert entry["sentence"].startswith(
        "sex (taxonomy) is shown not to be every sex category's selection rate "
        "at least 0.8 of the highest: female at 0.600 of the highest rate "
        "(male"
    )


def test_a_planted_ratio_of_1_passes_a_low_limit_and_states_the_sets_needed_at_a_close_one(
    db_file: Path, tmp_path: Path
) -> None:
    run_id = planted_run(db_file, tmp_path, male_yes=(5, 7))
    assert gate(db_file, tmp_path, run_id, attribute="sex", limit=0.5)["verdict"] == "pass"
    close = gate(db_file, tmp_path, run_id, attribute="sex", limit=0.95)
    assert (close["verdict"], close["estimate"]) == ("inconclusive", 1.0)
    assert close["pairs_needed"] > 10


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ('attribute = "sex"\nrate_kind = "hired"', r"key 'rate_kind' must be one of selection, contest, scoring"),
        ('attribute = "sex"\nlimit = 1.5', r"key 'limit' must lie in \(0, 1\]"),
        ("limit = 0.8", r"attribute"),
    ],
)
def test_bad_keys_are_one_line_errors(tmp_path: Path, keys: str, message: str) -> None:
    policy = tmp_path / "gates.toml"
    policy.write_text(f'[[gates]]\nname = "g"\nkind = "impact_ratio"\ncondition = "taxonomy"\n{keys}\n')
    with pytest.raises(UserError, match=message):
        load_policy(policy)


def test_an_attribute_the_run_lacks_is_named(db_file: Path, tmp_path: Path) -> None:
    run_id = planted_run(db_file, tmp_path, male_yes=(10, 10))
    with pytest.raises(
        UserError,
        match=r"has no 'race_ethnicity' categories in condition taxonomy \(its attributes: "
        r"sex\)",
    ):
        gate(db_file, tmp_path, run_id, attribute="race_ethnicity")


def test_probe_compare_sets_the_runs_ratios_side_by_side(db_file: Path, tmp_path: Path) -> None:
    flagged = planted_run(db_file, tmp_path, male_yes=(10, 10))
    level = planted_run(db_file, tmp_path, male_yes=(5, 7))
    pipeline.compare(db_file, [flagged, level], tmp_path / "compare.html")
    document = json.loads((tmp_path / "compare.json").read_text())
    women = next(
        row for row in document["adverse_impact"] if (row["rate_kind"], row["category"]) == ("selection", "female")
    )
    assert (women["runs"][flagged]["impact_ratio"], women["runs"][level]["impact_ratio"]) == (0.6, 1.0)
    assert "| taxonomy | sex | selection | female | 0.60 [" in (tmp_path / "compare.md").read_text()


def test_gate_md_names_each_count_s_unit_where_the_gates_count_different_units() -> None:
    gates = [
        {
            "name": name,
            "kind": kind,
            "metric": None,
            "condition": "taxonomy",
            "verdict": "pass",
            "estimate": 0.9,
            "ci90": None,
            "ci95": None,
            "passing_band": None,
            "n": {"pairs": pairs, "instances": 0},
            "unit": unit,
            "sentence": ".",
        }
        for name, kind, pairs, unit in (
            ("ratio", "impact_ratio", 7, "name sets"),
            ("share", "interval", 28, "name pairs"),
        )
    ]
    summary = markdown_summary({"run_id": "r", "baseline": None, "outcome": "pass", "gates": gates, "family": "F"})
    assert "| Passing values | Name pairs or sets |" in summary
    assert summary.count("| - | 7 name sets |") == 1 and summary.count("| - | 28 name pairs |") == 1
