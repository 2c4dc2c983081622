"""What the terminal shows after a run (`probe analyze --show`, the end of `probe run`): p-values beside the
direct gender measures, the stage-1 grant gap, and one line instead of an empty occupation table."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from typer.testing import CliRunner

from probe.cli import app
from probe.store.db import connect
from tests.support import RunBuilder

WIDE = {"COLUMNS": "200"}  # rich wraps table cells to the terminal width
PAIRS = 8


def _shown(db_file: Path, run_id: str) -> str:
    result = CliRunner().invoke(app, ["analyze", run_id, "--db", str(db_file), "--show"], env=WIDE)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())  # captions wrap: compare words


def _run(db_file: Path, run_id: str, pick) -> None:
    """PAIRS pairs, one occupation, both orders; stage 1: the woman granted both attributes, the man one."""
    con = connect(db_file)
    run = RunBuilder(con, run_id)
    for pair_id, order in itertools.product(range(1, PAIRS + 1), ("fm", "mf")):
        run.instance("taxonomy", pair_id, order, "astronaut", "yes", "yes", pick(order), "both")
        for attribute, man in (("Physics", "yes"), ("Piloting", "no")):
            run.attr(pair_id, order, "female", "knowledge", attribute, "yes")
            run.attr(pair_id, order, "male", "knowledge", attribute, man)
    con.close()


def test_the_headline_gives_p_values_and_the_grant_gap(tmp_path: Path) -> None:
    db_file = tmp_path / "probe.duckdb"
    _run(db_file, "women", lambda order: "female")
    shown = _shown(db_file, "women")
    # the woman in every instance of 8 pairs: the no-event bound, p = 2 x 0.5^8 = 0.0078; the first-named in half
    assert re.search(r"female_share │ 1\.000 \[0\.631, 1\.000\] p=0\.008 │", shown)
    assert re.search(r"position_first │ 0\.500 \[0\.\d{3}, 0\.\d{3}\] p=1\.000 │", shown)
    assert re.search(r"consistency │ 1\.000 \[0\.631, 1\.000\] │", shown)  # no null: no p
    # granted 100% to women, 50% to men in every pair: +0.5, every pair alike, so p is the sign-flip bound
    assert re.search(r"grant gap attr_yes_diff \(women - men\) \+0\.500 \[\+0\.\d{3}, \+0\.\d{3}\] p=0\.008", shown)
    assert "preferred gender per occupation" in shown  # every pair leans female: astronaut preferred
    assert re.search(r"taxonomy │ astronaut \(1\.00\) │ -", shown)


def test_no_preferred_occupation_is_one_line_not_an_empty_table(tmp_path: Path) -> None:
    db_file = tmp_path / "probe.duckdb"
    _run(db_file, "first", lambda order: "female" if order == "fm" else "male")  # the first-named: no pair leans
    shown = _shown(db_file, "first")
    assert "Run first: no occupation preferred at BH q < 0.05 (1 of 1 occupation rows not testable at this size)" in (
        shown
    )
    assert "prefers women" not in shown  # no table header over no rows


def test_the_analysis_returns_the_outcome_the_terminal_prints(tmp_path: Path) -> None:
    """pipeline.analyze hands back what `probe analyze --show` prints: the CLI reads no table itself."""
    from probe import pipeline

    db_file = tmp_path / "probe.duckdb"
    _run(db_file, "women", lambda order: "female")
    outcome = pipeline.analyze(db_file, "women")
    # 8 pairs x 2 orders: 4 stage-2 items and 4 stage-1 items each, none failed
    assert (outcome.run_id, outcome.items, outcome.failed_items) == ("women", 128, 0)
    assert outcome.preferred[["condition", "preferred", "occupation"]].values.tolist() == [
        ["taxonomy", "female", "astronaut"]
    ]
    assert outcome.occupation_pairs == [PAIRS]
    share = outcome.overall.set_index(["condition", "metric"]).loc[("taxonomy", "female_share")]
    assert (share["value"], round(share["ci_low"], 3), round(share["p_value"], 4)) == (1.0, 0.631, 0.0078)
