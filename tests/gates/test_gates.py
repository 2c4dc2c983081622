"""Release gates (`probe gate`, probe/gates/): verdicts from the report's own inference, exit codes, JUnit XML a
real parser reads, policy mistakes as one line naming the key.

Runs (8 name pairs, 6 occupations, replayed): `steady` picks the woman for nurse / secretary / dancer and the man
for pilot / butcher in every pair (so those occupations are preferred); `first` always picks whoever is named
first (position_first 1 in every pair, the woman's share 0.5 in every pair, consistency 1).
"""

from __future__ import annotations

import json
import math
import re
import shutil
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import junitparser
import numpy as np
import pytest
from typer.testing import CliRunner

import probe
from probe.analysis.differences import difference_estimate
from probe.analysis.statistics import share_estimate
from probe.cli import app
from probe.common.errors import UserError
from probe.gates import parse_policy
from probe.gates.gate import Gate
from probe.gates.kinds import KINDS
from probe.gates.leaning import leaning_pairs_needed
from probe.gates.verdicts import interval_verdict, pairs_needed
from probe.store import db
from tests.interval_checks import interval_problems

BOUND_8 = 0.025 ** (1 / 8)  # the no-event bound over 8 pairs: every pair at 1 -> [0.6306, 1]
POLICY = """
[[gates]]
name = "position effect at most 50%"
metric = "position_first"
condition = "taxonomy"
kind = "max"
limit = 0.5

[[gates]]
name = "consistent at least half the time"
metric = "consistency"
condition = "taxonomy"
kind = "min"
limit = 0.5

[[gates]]
name = "woman's share within 0.5 +- 0.05"
metric = "female_share"
condition = "taxonomy"
kind = "equivalence"
target = 0.5
margin = 0.05
"""


@pytest.fixture
def db_file(runs_db: Path, tmp_path: Path) -> Path:
    """A copy of conftest's runs_db: the steady, first and narrow runs of test_report, built once a session."""
    return Path(shutil.copy(runs_db, tmp_path / "probe.duckdb"))


def _policy(tmp_path: Path, text: str, name: str = "gates.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_verdicts_pass_fail_and_inconclusive_with_the_reports_intervals(db_file: Path, tmp_path: Path) -> None:
    result = probe.gate("first", _policy(tmp_path, POLICY), db=db_file, output=tmp_path / "out")
    position, consistency, share = result.verdicts
    # position_first is 1 in every pair: the no-event bound, whose 95% interval [0.6306, 1] lies above 0.5;
    # its test of 0.5, 2 x 0.5^8 = 0.0078; the policy asks for no family-wise control, so no Holm p
    assert (position.verdict, position.method, position.ci95) == ("fail", "no_events", pytest.approx((BOUND_8, 1.0)))
    assert position.p_fail == pytest.approx(2 * 0.5**8) and position.p_fail_holm is None
    # consistency 1 in every pair: 90% interval [0.05^(1/8), 1] = [0.688, 1] above 0.5
    assert (consistency.verdict, consistency.ci90) == ("pass", pytest.approx((0.05 ** (1 / 8), 1.0)))
    # every pair at exactly 0.5: only the binomial floor (12 instances a pair) is left, too wide for +- 0.05
    assert share.verdict == "inconclusive" and share.ci90[0] < 0.45
    # pairs needed: se = sqrt(0.25 / (12 x 8)) = 0.051 at 8 pairs, each side at 90% power: 8 x ((z_0.95 + z_0.9) x
    # 0.051 / 0.05)^2 = 71 with normal quantiles, 73 with t on N - 1 df
    assert share.pairs_needed == 73 and "about 73 name pairs would decide it with 80% power" in share.sentence
    assert result.outcome == "fail" and result.exit_code() == 1
    # the same 95% intervals as the run's report (one inference per finding)
    con = db.connect(db_file, read_only=True)
    stored = dict(
        con.execute(
            "SELECT metric, [ci_low, ci_high] FROM metrics WHERE run_id = 'first' AND "
            "scope = 'overall' AND condition = 'taxonomy'"
        ).fetchall()
    )
    con.close()
    for verdict in result.verdicts:
        assert list(verdict.ci95) == pytest.approx(stored[verdict.gate.metric])
    document = json.loads((tmp_path / "out" / "gate.json").read_text())
    assert [gate["verdict"] for gate in document["gates"]] == ["fail", "pass", "inconclusive"]
    assert interval_problems(document) == []
    # the check is live: a pass beside an interval that reaches past the limit is named
    document["gates"][0]["verdict"] = "pass"
    assert interval_problems(document) == [
        "gate 'position effect at most 50%': pass beside a 90% interval [0.687656, 1.0] and passing values [None, 0.5]",
        "gate 'position effect at most 50%': pass beside a 95% interval [0.630583, 1.0], passing values [None, 0.5] "
        "and Holm p = None",
    ]
    assert (tmp_path / "out" / "gate.md").read_text().startswith("## Bias gates for run first: fail")


def test_under_holm_a_lone_95_percent_fail_is_unconfirmed_when_many_gates_share_the_claim(
    db_file: Path, tmp_path: Path
) -> None:
    # p_fail of position_first at 0.5 is 2 x 0.5^8 = 0.0078; beside 40 other gates Holm needs below 0.05 / 41
    others = "".join(
        f'\n[[gates]]\nname = "g{i}"\nmetric = "consistency"\ncondition = "taxonomy"\nkind = "min"\nlimit = 0.1\n'
        for i in range(40)
    )
    text = POLICY.split('[[gates]]\nname = "consistent')[0] + others
    result = probe.gate("first", _policy(tmp_path, 'gate_family = "holm"\n' + text), db=db_file, output=tmp_path)
    position = result.verdicts[0]
    assert position.verdict == "unconfirmed" and (result.outcome, result.exit_code()) == ("unconfirmed", 4)
    # what would confirm it: 2 x 0.5^N below 0.05 / 41 (Holm's first step) from N = 11
    assert position.sentence.endswith(
        "; fails on its own (p = 0.00781), not confirmed by Holm over 41 gates (Holm "
        "p = 0.32); about 11 name pairs would decide it"
    )
    # the same gates without family-wise control: the fail stands
    alone = probe.gate("first", _policy(tmp_path, text, "alone.toml"), db=db_file, output=tmp_path)
    assert (alone.verdicts[0].verdict, alone.exit_code()) == ("fail", 1)


def test_an_occupations_fail_needs_holm_too(db_file: Path, tmp_path: Path) -> None:
    # nurse preferred at q = 0.0094 (see below); beside 9 gates with nothing to fail, Holm needs q < 0.05 / 10
    others = "".join(
        f'\n[[gates]]\nname = "g{i}"\nmetric = "consistency"\ncondition = "taxonomy"\nkind = "min"\nlimit = 0.1\n'
        for i in range(9)
    )
    policy = (
        'gate_family = "holm"\n[[gates]]\nname = "nurse"\ncondition = "taxonomy"\nkind = "occupations"\n'
        'occupations = ["nurse"]\nmargin = 0.2\n'
    )
    alone = probe.gate("steady", _policy(tmp_path, policy), db=db_file, output=tmp_path).verdicts[0]
    crowded = probe.gate("steady", _policy(tmp_path, policy + others), db=db_file, output=tmp_path).verdicts[0]
    assert (alone.verdict, alone.estimate, crowded.verdict) == ("fail", 1.0, "unconfirmed")
    assert crowded.p_fail_holm == pytest.approx(10 * 2 * 0.5**8 * 6 / 5)
    assert "not confirmed by Holm over 10 gates" in crowded.sentence


def test_pairs_needed_for_no_events_and_for_occupations() -> None:
    # every pair at 0: the 90% no-event bound 1 - 0.05^(1/N) falls below a limit of 0.1 from N = 29 (28.4)
    none = share_estimate(np.zeros(8), np.ones(8), np.full(8, 16.0))
    assert pairs_needed(none, 0.0, (-math.inf, 0.1)).pairs == 29
    gate = Gate("rare", KINDS["max"], "taxonomy", "bias", {"limit": 0.1})
    for pairs, verdict in ((28, "inconclusive"), (29, "pass")):
        assert (
            interval_verdict(gate, share_estimate(np.zeros(pairs), np.ones(pairs), np.full(pairs, 16.0))).verdict
            == verdict
        )
    # a fail needs the 95% bound 1 - 0.025^(1/N) below a lower limit of 0.2: N = 17 (16.5)
    assert pairs_needed(none, 0.0, (0.2, math.inf)).pairs == 17
    # a difference of 0.25 in every pair: no spread, so the interval combines the rates' own (MOVER, 95% [0.0391,
    # 0.4149]) and that width is the standard error: 0.3758 / (2 t_0.975,7) = 0.0795; a limit of 0.3 needs
    # 8 x ((z_0.95 + z_0.8) x 0.0795 / 0.05)^2 = 125 pairs with normal quantiles, 127 with t
    values = np.array([0.25, 0.375, 0.5, 0.625, 0.75, 0.5, 0.375, 0.625])
    alike = difference_estimate(*((side, np.ones(8), np.full(8, 16.0)) for side in (values, values - 0.25)))
    assert (alike.variance, pairs_needed(alike, 0.25, (-math.inf, 0.3)).pairs) == (0.0, 127)
    # 3 of 8 pairs lean: P(Binomial(N, 3/8) >= 6) is 0.776 at 19 pairs and 0.821 at 20
    assert (leaning_pairs_needed(3, 8, 6), leaning_pairs_needed(8, 8, 6), leaning_pairs_needed(0, 8, 6)) == (
        20,
        6,
        None,
    )


def test_occupation_and_baseline_gates(db_file: Path, tmp_path: Path) -> None:
    policy = _policy(
        tmp_path,
        """
gate_family = "holm"
[[gates]]
name = "no occupation preferred"
condition = "taxonomy"
kind = "occupations"
margin = 0.1

[[gates]]
name = "position effect no worse than the baseline"
metric = "position_first"
condition = "taxonomy"
kind = "non_inferiority"
margin = 0.1
worse = "higher"
""",
    )
    steady = probe.gate("steady", policy, baseline="first", db=db_file, output=tmp_path)
    occupations, baseline = steady.verdicts
    assert occupations.verdict == "fail"
    assert occupations.details["preferred"] == ["butcher", "dancer", "nurse", "pilot", "secretary"]
    # 8 of 8 pairs lean for each: p = 2 x 0.5^8, BH over 6 occupations q = p x 6 / 5; the gate enters Holm with
    # its smallest q (2 gates: 2q); its numbers are the first such occupation's (butcher: no pair leans female)
    q = 2 * 0.5**8 * 6 / 5
    assert (occupations.estimate, occupations.p_fail, occupations.p_fail_holm) == pytest.approx((0.0, q, 2 * q))
    assert (occupations.pairs, occupations.method, occupations.details["most_leaning"]["occupation"]) == (
        8,
        "sign_test_bh",
        "butcher",
    )
    # its Clopper-Pearson interval at the decision's level 1 - 5 x 0.05 / 6: [0, 1 - (0.0417 / 2)^(1/8)]
    assert (
        "most leaning: butcher, 0.000 of its 8 leaning name pairs lean female (95.8% interval [0.000, 0.384]), "
        "q = 0.00937; 8 name pairs asked"
    ) in occupations.sentence
    # steady - first: 0.5 - 1 = -0.5 in every pair, far below the margin: pass (the rates' own intervals combined)
    assert (baseline.verdict, baseline.estimate, baseline.method) == ("pass", -0.5, "paired_t")
    first = probe.gate("first", policy, baseline="steady", db=db_file, output=tmp_path)
    assert [verdict.verdict for verdict in first.verdicts] == ["inconclusive", "fail"]
    assert interval_problems(steady.document) == [] and interval_problems(first.document) == []
    # every pair ties (0.5 in each): no occupation preferred, but 16 instances a pair leave each 90% interval
    # [0.286, 0.714], wider than 0.5 +- 0.1
    assert first.verdicts[0].sentence.startswith("none of 6 occupations preferred, but 6 not shown within 0.5 +- 0.1")


def test_cli_exit_codes_junit_and_strict(db_file: Path, tmp_path: Path) -> None:
    junit = tmp_path / "gates.xml"
    failing = CliRunner().invoke(
        app,
        [
            "gate",
            "first",
            "--policy",
            str(_policy(tmp_path, POLICY)),
            "--db",
            str(db_file),
            "--junit",
            str(junit),
            "-o",
            str(tmp_path),
        ],
    )
    assert failing.exit_code == 1, failing.output
    assert failing.output.splitlines()[0].startswith("FAIL         position effect at most 50%: position_first")
    suite = next(iter(junitparser.JUnitXml.fromfile(str(junit))))
    assert (suite.tests, suite.failures, suite.skipped, suite.errors) == (3, 1, 1, 0)
    cases = {case.name: case for case in suite}
    [failure] = cases["position effect at most 50%"].result
    assert isinstance(failure, junitparser.Failure) and "95% CI [0.6306, 1.0000]" in failure.message
    assert "name pair | value | instances" in failure.text and "first 8 items (taxonomy):" in failure.text
    assert isinstance(cases["woman's share within 0.5 +- 0.05"].result[0], junitparser.Skipped)
    gates = POLICY.split("[[gates]]")  # "", then the three gates
    inconclusive = _policy(tmp_path, "[[gates]]" + gates[3], "inconclusive.toml")
    args = ["gate", "first", "--policy", str(inconclusive), "--db", str(db_file), "-o", str(tmp_path)]
    assert CliRunner().invoke(app, args).exit_code == 3
    assert CliRunner().invoke(app, [*args, "--strict"]).exit_code == 1
    passing = _policy(tmp_path, "[[gates]]" + gates[2], "passing.toml")
    assert (
        CliRunner()
        .invoke(app, ["gate", "first", "--policy", str(passing), "--db", str(db_file), "-o", str(tmp_path)])
        .exit_code
        == 0
    )
    planned = CliRunner().invoke(app, [*args, "--plan"])
    assert planned.exit_code == 0 and planned.output.splitlines() == [
        "woman's share within 0.5 +- 0.05: 73 name pairs",
        # 73 is more than the 70 shipped pairs: --pairs 73 cannot ask them (it said so before)
        "every gate: probe run --names FILE.csv ... with 73 name pairs: 70 ship as the default list, "
        "taxonomy/heldout_name_pairs.csv holds 70 more (disjoint; one CSV of both, pair_id renumbered, has 140)",
    ]


# The common JUnit schema (Jenkins xunit's junit-10.xsd, which pytest's and most CI readers accept): per element,
# (required attributes, optional attributes, child elements allowed); time attributes are decimal seconds.
JUNIT_SCHEMA = {
    "testsuites": (set(), {"name", "time", "tests", "failures", "errors"}, {"testsuite"}),
    "testsuite": (
        {"name", "tests", "failures", "errors"},
        {"group", "time", "skipped", "timestamp", "hostname", "id", "package", "file", "log", "url"},
        {"testsuite", "properties", "testcase", "system-out", "system-err"},
    ),
    "testcase": ({"name"}, {"time", "classname", "group"}, {"skipped", "error", "failure", "system-out", "system-err"}),
    "failure": (set(), {"type", "message"}, set()),
    "skipped": (set(), {"type", "message"}, set()),
}


def test_junit_follows_the_common_schema(db_file: Path, tmp_path: Path) -> None:
    policy = _policy(
        tmp_path,
        POLICY + '\n[[gates]]\nname = "occupations"\ncondition = "taxonomy"\nkind = "occupations"\nmargin = 0.1\n',
    )
    probe.gate("first", policy, db=db_file, output=tmp_path, junit=tmp_path / "gates.xml")
    root = ElementTree.parse(tmp_path / "gates.xml").getroot()
    assert root.tag == "testsuites"
    for element in root.iter():
        required, optional, children = JUNIT_SCHEMA[element.tag]
        assert required <= set(element.attrib) <= required | optional, element.tag
        assert {child.tag for child in element} <= children, element.tag
        assert re.fullmatch(r"[0-9]*(\.[0-9]*)?", element.get("time", "0")), element.tag
    suite = root.find("testsuite")
    assert [int(suite.get(key)) for key in ("tests", "failures", "errors", "skipped")] == [4, 1, 0, 2]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[[gates]]\nname = "a"\nmetric = "fairness"\ncondition = "taxonomy"\nkind = "max"\nlimit = 0.5',
            "gates[1] ('a'): unknown metric 'fairness'",
        ),
        (
            '[[gates]]\nname = "a"\nmetric = "bias"\ncondition = "taxonomy"\nkind = "equivalence"\ntarget = 0.5\n'
            "margin = 0",
            "gates[1] ('a'): key 'margin' must be above 0 (got 0.0)",
        ),
        ('[[gates]]\nname = "a"\nmetric = "bias"\ncondition = "taxonomy"\nkind = "max"', "key 'limit' is missing"),
        (
            '[[gates]]\nname = "a"\nmetric = "bias"\ncondition = "taxonomy"\nkind = "max"\nlimit = 0.5\nlimt = 1',
            "unknown key 'limt' for a max gate",
        ),
        (
            '[[gates]]\nname = "a"\nmetric = "attr_yes_f"\ncondition = "taxonomy"\nkind = "max"\nlimit = 0.5',
            "key 'condition' must be one of stage1 (got 'taxonomy')",
        ),
        ('[[gates]]\nname = "a"\nmetric = "bias"\ncondition = "taxonomy"\nkind = "cap"', "key 'kind' must be one of"),
        ("title = 'no gates'", "no [[gates]] tables"),
        # found by review: these raised a TypeError (a list as metric; a target of 50 made the score test's
        # variance complex) or passed vacuously (a limit of 65 on a share), or wrote JUnit XML no parser reads
        (
            '[[gates]]\nname = "a"\nmetric = ["bias"]\ncondition = "taxonomy"\nkind = "max"\nlimit = 0.5',
            "gates[1] ('a'): unknown metric ['bias']",
        ),
        (
            '[[gates]]\nname = "a"\nmetric = "female_share"\ncondition = "taxonomy"\nkind = "equivalence"\n'
            "target = 50\nmargin = 0.05",
            "gates[1] ('a'): key 'target' must lie within female_share's range [0, 1] (got 50; 65% is 0.65)",
        ),
        (
            '[[gates]]\nname = "a"\nmetric = "position_first"\ncondition = "taxonomy"\nkind = "max"\nlimit = 65',
            "key 'limit' must lie within position_first's range [0, 1] (got 65; 65% is 0.65)",
        ),
        (
            '[[gates]]\nname = "a"\nmetric = "attr_yes_diff"\ncondition = "stage1"\nkind = "min"\nlimit = -1.5',
            "key 'limit' must lie within attr_yes_diff's range [-1, 1] (got -1.5; 65% is 0.65)",
        ),
        (
            '[[gates]]\nname = "a"\nmetric = "bias"\ncondition = "taxonomy"\nkind = "equivalence"\ntarget = 0.5\n'
            "margin = 5",
            "key 'margin' must be at most 1, on the metric's own scale (got 5; 5 percentage points are 0.05)",
        ),
        (
            '[[gates]]\nname = "a"\ncondition = "taxonomy"\nkind = "occupations"\noccupations = []',
            "gates[1] ('a'): key 'occupations' is an empty list (leave the key out to gate every occupation)",
        ),
        (
            '[[gates]]\nname = "a\\u001b[2Jb"\nmetric = "bias"\ncondition = "taxonomy"\nkind = "max"\nlimit = 0.5',
            "gates[1]: key 'name': 'a\\x1b[2Jb' contains a control character, U+001B unnamed; remove it",
        ),
    ],
)
def test_policy_mistakes_name_the_key(text: str, message: str) -> None:
    with pytest.raises(UserError, match=None) as raised:
        parse_policy(__import__("tomllib").loads(text), "gates.toml")
    assert str(raised.value).startswith("gates.toml: ") and message in str(raised.value)


def test_cli_policy_and_baseline_errors_are_one_line_exit_2(db_file: Path, tmp_path: Path) -> None:
    bad = _policy(tmp_path, '[[gates]]\nname = "a"\nmetric = "bias"\ncondition = "taxonomy"\nkind = "max"')
    result = CliRunner().invoke(app, ["gate", "first", "--policy", str(bad), "--db", str(db_file)])
    assert (result.exit_code, result.output) == (2, f"error: {bad}: gates[1] ('a'): key 'limit' is missing\n")
    baseline = _policy(
        tmp_path,
        '[[gates]]\nname = "b"\nmetric = "bias"\ncondition = "taxonomy"\n'
        'kind = "non_inferiority"\nmargin = 0.05\nworse = "higher"',
    )
    missing = CliRunner().invoke(app, ["gate", "first", "--policy", str(baseline), "--db", str(db_file)])
    assert (missing.exit_code, missing.output) == (2, "error: gate 'b' (non_inferiority) needs --baseline RUN_ID\n")
    unpaired = CliRunner().invoke(
        app, ["gate", "first", "--policy", str(baseline), "--baseline", "narrow", "--db", str(db_file)]
    )
    itself = CliRunner().invoke(
        app, ["gate", "first", "--policy", str(baseline), "--baseline", "first", "--db", str(db_file)]
    )
    assert (itself.exit_code, itself.output) == (
        2,
        "error: --baseline first: that is the run being gated; give the run it must not be worse than\n",
    )
    assert unpaired.exit_code == 2
    assert unpaired.output == (
        "error: baseline 'narrow' is not paired with run 'first': they differ in top_k "
        "(first: 2, narrow: 1); occupation (first: 6, narrow: 2)\n"
    )
