"""Gates a CI can trust (issue 37): a gate that fails on its own fails unless the policy asks for family-wise
control; under it a fail Holm does not confirm is "unconfirmed" (exit 4) with its true reason; the reason and
`--plan` read one computation; "no gendered occupation" passes only on what the policy states.

Runs: `steady` and `first` of test_report (8 name pairs, 6 occupations); `mixed` (this module): pairs 1-4 pick the
woman, 5-7 the man, pair 8 whoever is named first, for every occupation - 7 leaning pairs per occupation, 4 to 3.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import probe
from probe.cli import app
from probe.common.errors import UserError
from probe.gates import parse_policy, run_for
from probe.gates.gate import PairsNeeded
from probe.gates.verdicts import MOST_PAIRS, decides
from tests.interval_checks import interval_problems
from tests.report import test_report

SHARE_MAX = """
[[gates]]
name = "share at most 0.45"
metric = "female_share"
condition = "taxonomy"
kind = "max"
limit = 0.45

[[gates]]
name = "consistent"
metric = "consistency"
condition = "taxonomy"
kind = "min"
limit = 0.5
"""
OCCUPATIONS = '[[gates]]\nname = "no gendered occupation"\ncondition = "taxonomy"\nkind = "occupations"\n'


def mixed_choice(pair_id: int, name_order: str, occupation: str) -> str:
    if pair_id == 8:
        return "female" if name_order == "fm" else "male"
    return "female" if pair_id <= 4 else "male"


@pytest.fixture(scope="module")
def runs_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("trust")
    db_file = tmp / "probe.duckdb"
    for run_id, choose in (
        ("steady", test_report.steady_choice),
        ("first", test_report.first_named_choice),
        ("mixed", mixed_choice),
    ):
        test_report.replay_run(db_file, tmp, run_id, choose)
    return db_file


@pytest.fixture
def db_file(runs_db: Path, tmp_path: Path) -> Path:
    return Path(shutil.copy(runs_db, tmp_path / "probe.duckdb"))


def _gate(db_file: Path, tmp_path: Path, run_id: str, text: str, *extra: str) -> tuple[int, str, dict]:
    policy = tmp_path / "gates.toml"
    policy.write_text(text)
    result = CliRunner().invoke(
        app, ["gate", run_id, "--policy", str(policy), "--db", str(db_file), "-o", str(tmp_path / "out"), *extra]
    )
    document = json.loads((tmp_path / "out" / "gate.json").read_text()) if not extra else {}
    return result.exit_code, result.output, document


def test_a_gate_that_fails_on_its_own_fails_the_job(db_file: Path, tmp_path: Path) -> None:
    # the woman's share of steady is 0.583, 95% CI [0.463, 0.694], above 0.45 (p = 0.0341): before, Holm over the
    # two gates (0.068) turned it inconclusive, exit 3, "no pair count decides it while the estimate sits on the edge"
    code, output, document = _gate(db_file, tmp_path, "steady", SHARE_MAX)
    assert code == 1 and document["outcome"] == "fail" and document["gate_family"] is None
    assert output.splitlines()[0] == (
        "FAIL         share at most 0.45: female_share (taxonomy) 0.583, 95% CI "
        "[0.463, 0.694] over 8 name pairs: shown not to be at most 0.45"
    )
    assert document["gates"][0]["p_fail_holm"] is None and interval_problems(document) == []


def test_under_holm_an_unconfirmed_fail_is_its_own_state_with_its_reason(db_file: Path, tmp_path: Path) -> None:
    text = 'gate_family = "holm"\n' + SHARE_MAX
    code, output, document = _gate(db_file, tmp_path, "steady", text)
    share = document["gates"][0]
    # Holm over 2 gates: 2 x 0.0341 = 0.068, not below 0.05; exit 4, which `|| [ $? -eq 3 ]` does not let through
    assert (code, document["outcome"], share["verdict"]) == (4, "unconfirmed", "unconfirmed")
    assert share["p_fail_holm"] == pytest.approx(2 * share["p_fail"], abs=2e-6) and share["pairs_needed"] == 14
    reason = (
        "fails on its own (p = 0.0341), not confirmed by Holm over 2 gates (Holm p = 0.0682); about 14 name "
        "pairs would decide it"
    )
    assert share["sentence"].endswith(reason) and output.splitlines()[0].endswith(reason)
    assert "sits on the edge" not in share["sentence"] and "not enough" not in share["sentence"]
    assert interval_problems(document) == []
    # gate.md: the verdict, and a one-sided bound in words (it read "[-inf, 0.450]")
    assert (
        "| share at most 0.45 | female_share (taxonomy) | fails alone (unconfirmed) | 0.583 | [0.487, 0.674] | "
        "[0.463, 0.694] | at most 0.450 | 8 |"
    ) in (tmp_path / "out" / "gate.md").read_text()
    # --plan states the figure the reason states: one computation (the fail held to Holm's 0.05 / 2)
    planned = CliRunner().invoke(
        app, ["gate", "steady", "--policy", str(tmp_path / "gates.toml"), "--db", str(db_file), "--plan"]
    )
    assert planned.output.splitlines()[:2] == ["share at most 0.45: 14 name pairs", "consistent: 6 name pairs"]
    # --strict: anything but a pass fails the job
    assert _gate(db_file, tmp_path, "steady", text, "--strict")[0] == 1


def test_the_edge_reason_only_where_the_estimate_sits_on_the_edge(db_file: Path, tmp_path: Path) -> None:
    # steady's position_first is exactly 0.5: at a limit of 0.5 no pair count decides it; at 0.55 one does
    text = (
        '[[gates]]\nname = "at the edge"\nmetric = "position_first"\ncondition = "taxonomy"\nkind = "max"\n'
        'limit = 0.5\n\n[[gates]]\nname = "off the edge"\nmetric = "position_first"\ncondition = "taxonomy"\n'
        'kind = "max"\nlimit = 0.55\n'
    )
    code, _, document = _gate(db_file, tmp_path, "steady", text)
    edge, off = document["gates"]
    assert (code, edge["verdict"], off["verdict"]) == (3, "inconclusive", "inconclusive")
    assert edge["sentence"].endswith("; no pair count decides it while the estimate sits on the edge")
    assert (
        off["sentence"].endswith(
            f"; about {off['pairs_needed']} name pairs would decide it with 80% power, if the truth is this estimate"
        )
        and off["pairs_needed"] == 53
    )
    planned = CliRunner().invoke(
        app, ["gate", "steady", "--policy", str(tmp_path / "gates.toml"), "--db", str(db_file), "--plan"]
    )
    assert planned.output.splitlines() == [
        "at the edge: no figure (no pair count decides it while the estimate sits on the edge)",
        "off the edge: 53 name pairs",
        "every gate: probe run --pairs 53 ...",
    ]


def test_the_occupations_gate_passes_only_on_what_the_policy_states(db_file: Path, tmp_path: Path) -> None:
    # mixed: 7 leaning pairs per occupation, 4 to 3, none preferred. Each could reach p < 0.05 alone (2 x 0.5^7 =
    # 0.016), but a lone preference must pass Benjamini-Hochberg at 0.05 / 6 = 0.0083: no occupation could have
    # failed, and the old gate passed ("none of 6 occupations preferred")
    code, output, document = _gate(db_file, tmp_path, "mixed", OCCUPATIONS + "detectable = 0.3\n")
    [gate] = document["gates"]
    # 80% of leaning pairs one way is detected with 80% power at 0.0083 from 35 leaning pairs; 7 of 8 pairs lean,
    # so P(Binomial(N, 7/8) >= 35) >= 0.8 from N = 42
    assert (code, gate["verdict"], gate["pairs_needed"]) == (3, "inconclusive", 42)
    assert gate["sentence"] == (
        "none of 6 occupations preferred, but a lean of 80% of leaning pairs one way is not detectable with 80% power "
        "(sign test at 0.00833, a lone preference among 6) for 6: accountant, butcher, dancer, nurse, pilot, "
        "secretary (fewest leaning name pairs: 7 of 8); about 42 name pairs would give each 35 leaning pairs (80% "
        "chance)"
    )
    # a lean no count up to 10,000 pairs detects is said so, not blamed on ties (4 of the 7 leaning pairs lean)
    code, output, document = _gate(db_file, tmp_path, "mixed", OCCUPATIONS + "detectable = 0.005\n")
    assert (code, document["gates"][0]["pairs_needed"]) == (3, 10_001)
    assert document["gates"][0]["sentence"].endswith("; more than 10,000 name pairs would be needed")
    # with a margin: the shares (1 in 4 pairs, 0 in 3, 0.5 in one: 0.5625) are far from shown within 0.5 +- 0.2
    code, output, document = _gate(db_file, tmp_path, "mixed", OCCUPATIONS + "margin = 0.2\n")
    [gate] = document["gates"]
    assert (code, gate["verdict"], gate["passing_band"]) == (3, "inconclusive", [0.3, 0.7])
    assert gate["sentence"].startswith("none of 6 occupations preferred, but 6 not shown within 0.5 +- 0.2: ")
    # first: every pair ties (0.5 in each occupation); 16 instances a pair leave each 90% interval [0.286, 0.714]:
    # inside 0.5 +- 0.3, a pass
    code, output, document = _gate(db_file, tmp_path, "first", OCCUPATIONS + "margin = 0.3\n")
    [gate] = document["gates"]
    assert (code, gate["verdict"], gate["ci90"]) == (0, "pass", pytest.approx([0.286, 0.714], abs=5e-4))
    assert output.splitlines()[0] == (
        "PASS         no gendered occupation: each of 6 occupations' female_share shown within 0.5 +- 0.3; farthest: "
        "accountant, female_share 0.500, 90% CI [0.286, 0.714] over 8 name pairs"
    )
    # steady prefers five occupations: a fail whatever the policy states
    assert _gate(db_file, tmp_path, "steady", OCCUPATIONS + "margin = 0.3\n")[2]["gates"][0]["verdict"] == "fail"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            OCCUPATIONS,
            "gates[1] ('no gendered occupation'): key 'margin' is missing: an occupations gate passes only "
            "where each occupation's female_share is shown within 0.5 +- margin (or give 'detectable', the "
            "lean each occupation's test must be able to find)",
        ),
        (OCCUPATIONS + "margin = 0.1\ndetectable = 0.3\n", "give 'margin' or 'detectable', not both"),
        (OCCUPATIONS + "detectable = 0.5\n", "key 'detectable' must lie between 0 and 0.5"),
        (
            'gate_family = "bonferroni"\n' + SHARE_MAX,
            "gates.toml: key 'gate_family' must be 'holm' (got "
            "'bonferroni'; leave it out to decide each gate on its own)",
        ),
    ],
)
def test_policy_mistakes_of_the_family_and_the_occupations_gate(text: str, message: str) -> None:
    with pytest.raises(UserError) as raised:
        parse_policy(__import__("tomllib").loads(text), "gates.toml")
    assert message in str(raised.value)


def test_the_policy_file_is_also_a_run_config(tmp_path: Path) -> None:
    # gate_family sits at the top of a RUN.toml beside the run's settings: the run reads past it
    path = tmp_path / "RUN.toml"
    path.write_text('preset = "quick"\ngate_family = "holm"\n' + SHARE_MAX)
    assert probe.gates.load_policy(path).family == "holm"
    from probe.store.config import read_toml

    assert read_toml(path) == {"preset": "quick"}


def test_the_help_and_the_largest_figures_read_true() -> None:
    # the help renderer read "[[gates]]" as markup and printed "with [] tables"
    shown = CliRunner().invoke(app, ["gate", "--help"], env={"COLUMNS": "200"}).output
    assert "gates.toml (or a RUN.toml) with [[gates]] tables." in shown
    # "about more than 10,000 name pairs" read as a figure it is not
    assert decides(PairsNeeded(MOST_PAIRS + 1)) == (
        "more than 10,000 name pairs would decide it with 80% power, if the truth is this estimate"
    )
    assert (run_for(70), run_for(MOST_PAIRS + 1)) == ("probe run --pairs 70 ...", None)
    assert run_for(141) == "probe run --names FILE.csv ... with 141 name pairs of your own (140 ship in two lists)"
