"""Gate kinds as objects in one registry (probe/gates/kinds/): a kind is one module plus one registry line, and no
module outside its own compares a kind's name.

Runs as in test_gates.py: `first` always picks whoever is named first (8 name pairs, 6 occupations, replayed).
"""

from __future__ import annotations

import ast
import json
import math
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pytest

import probe
from probe.analysis.statistics import share_estimate
from probe.common.errors import UserError
from probe.gates import load_policy, plan
from probe.gates.gate import Gate
from probe.gates.keys import Key, number
from probe.gates.kinds import KINDS
from probe.gates.verdicts import IntervalKind, interval_verdict
from tests.support import ROOT

GATES = ROOT / "probe" / "gates"


@pytest.fixture
def db_file(runs_db: Path, tmp_path: Path) -> Path:
    return Path(shutil.copy(runs_db, tmp_path / "probe.duckdb"))


class Around(IntervalKind):
    """A kind written as a newcomer would: the metric within `spread` of 0.5, `spread` a key of its own."""

    name = "around_half"
    keys = (Key("spread", lambda value, metric, where: number(value, "spread", where)),)

    def band(self, gate: Gate) -> tuple[float, float]:
        return 0.5 - gate.settings["spread"], 0.5 + gate.settings["spread"]

    def requirement(self, gate: Gate) -> str:
        return f"within {gate.settings['spread']:g} of one half"


def test_a_new_kind_is_one_class_and_one_registry_line(
    db_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(KINDS, Around.name, Around())
    policy = tmp_path / "gates.toml"
    policy.write_text(
        '[[gates]]\nname = "share near half"\nmetric = "female_share"\ncondition = "taxonomy"\n'
        'kind = "around_half"\nspread = 0.3\n'
    )
    result = probe.gate("first", policy, db=db_file, output=tmp_path / "out")
    [verdict] = result.verdicts
    # every pair at exactly 0.5 (test_gates: 90% CI [0.4051, 0.5949]) lies inside 0.5 +- 0.3: pass, exit 0
    assert (verdict.verdict, verdict.band, result.exit_code()) == ("pass", (0.2, 0.8), 0)
    assert verdict.sentence.startswith("female_share (taxonomy) is shown within 0.3 of one half: estimate 0.5000")
    [entry] = json.loads((tmp_path / "out" / "gate.json").read_text())["gates"]
    assert (entry["kind"], entry["spread"], entry["passing_band"]) == ("around_half", 0.3, [0.2, 0.8])
    # its --plan figure is the one its verdict states
    con = duckdb.connect(str(db_file), read_only=True)
    try:
        [row] = plan(con, "first", load_policy(policy), None)
    finally:
        con.close()
    assert (row["gate"], row["pairs_needed"], row["note"]) == ("share near half", verdict.needed.pairs, None)
    # the policy reader knows its key: a misspelt one is named with the kind's own keys
    policy.write_text(policy.read_text().replace("spread", "sprad"))
    with pytest.raises(
        UserError, match="unknown key 'sprad' for a around_half gate \\(keys: condition, kind, metric, name, spread\\)"
    ):
        load_policy(policy)


def _compared_strings(path: Path) -> set[str]:
    """String constants a module compares with (==, !=, in, not in)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                elements = operand.elts if isinstance(operand, ast.Tuple | ast.List | ast.Set) else [operand]
                found |= {e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return found


def test_no_module_outside_a_kinds_own_compares_its_name() -> None:
    # the issue: kind strings were compared in 13 places over 4 files, the dispatch written twice
    modules = [*GATES.glob("*.py"), *(GATES / "kinds").glob("*.py"), GATES.parents[0] / "cli" / "gate_cmd.py"]
    compared = {path.name: _compared_strings(path) & set(KINDS) for path in modules}
    assert {name: names for name, names in compared.items() if names} == {}
    # the registry holds every kind docs/gates.md documents, each under its own name
    assert {name: kind.name for name, kind in KINDS.items()} == {
        "equivalence": "equivalence",
        "max": "max",
        "min": "min",
        "non_inferiority": "non_inferiority",
        "occupations": "occupations",
        "workforce_slope": "workforce_slope",
        "impact_ratio": "impact_ratio",
        "contrast": "contrast",
    }
    # the non-inferiority sign is written once, by its kind
    worse_lower = Gate("w", KINDS["non_inferiority"], "taxonomy", "bias", {"margin": 0.05, "worse": "lower"})
    assert (KINDS["non_inferiority"].sign(worse_lower), KINDS["non_inferiority"].band(worse_lower)) == (
        -1.0,
        (-math.inf, 0.05),
    )


def test_under_six_pairs_a_gate_says_so_on_every_output() -> None:
    # the terminal's line was empty here (the short line was written only beside an interval)
    gate = Gate("few", KINDS["max"], "taxonomy", "bias", {"limit": 0.5})
    verdict = interval_verdict(gate, share_estimate(np.full(4, 0.25), np.ones(4), np.full(4, 16.0)))
    assert (verdict.verdict, verdict.summary, verdict.sentence) == (
        "inconclusive",
        "bias (taxonomy): no interval from 4 name pairs (6 or more)",
        "bias (taxonomy): no interval from 4 name pairs (6 or more)",
    )
    assert verdict.needed == (None, "4 name pairs: a plan needs a run of 6 or more")
