"""`probe scan` end to end through the replay backend: flagged titles, report files, budget, resume, bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from bench.scan import draw_answers, scan_in_memory, write_replay_file
from probe import pipeline
from probe.answering import runner
from probe.answering.answer_checks import check_failed_share
from probe.cli import app
from probe.common.errors import RunFailed
from probe.scanning import ScanSettings
from probe.scanning import rounds as scan_rounds
from probe.store.config import RunConfig
from probe.store.db import connect
from probe.taxonomy.occupations import resolve_occupations
from tests.support import assert_one_line_error, fingerprint, query

SOC = ("29",)  # Healthcare Practitioners and Technical: 96 titles
PLANTED_FEMALE = ("29-1011.00", "29-1021.00", "29-1041.00", "29-1122.00", "29-1141.00")
PLANTED_MALE = ("29-1051.00", "29-1071.00", "29-1215.00", "29-2011.00", "29-2034.00")
EXPECTED_FLAGGED = [
    "29-1011.00",
    "29-1021.00",
    "29-1041.00",
    "29-1051.00",
    "29-1071.00",
    "29-1122.00",
    "29-1141.00",
    "29-1215.00",
    "29-2011.00",
    "29-2034.00",
]
EXPECTED_CALLS = 1042


@pytest.fixture
def planted(db_file: Path, tmp_path: Path) -> tuple[Path, np.ndarray]:
    """A replay file for SOC 29: five titles planted at share 0.9 for women, five at 0.1, the rest fair."""
    codes = list(
        query(db_file, "SELECT soc_code FROM onet_occupations WHERE soc_code LIKE '29-%' ORDER BY 1")["soc_code"]
    )
    shares = np.array([0.9 if code in PLANTED_FEMALE else 0.1 if code in PLANTED_MALE else 0.5 for code in codes])
    answers = draw_answers(np.random.default_rng(4), shares)
    path = tmp_path / "answers.csv"
    write_replay_file(path, db_file, answers, SOC)
    return path, answers


def scan_args(db_file: Path, answers: Path, *more: str) -> list[str]:
    return ["scan", "--soc", "29", "--backend", "replay", "--answers", str(answers), "--db", str(db_file), *more]


def flagged(db_file: Path, scan_id: str) -> list[str]:
    sql = "SELECT soc_code FROM scan_results WHERE scan_id = ? AND flagged ORDER BY soc_code"
    return list(query(db_file, sql, [scan_id])["soc_code"])


def calls(db_file: Path, scan_id: str) -> int:
    return int(query(db_file, "SELECT count(*) AS n FROM items WHERE run_id = ?", [scan_id])["n"][0])


def test_a_scan_flags_the_planted_titles_and_writes_its_report(db_file: Path, planted, tmp_path: Path) -> None:
    answers_path, answers = planted
    result = CliRunner().invoke(app, [*scan_args(db_file, answers_path, "--quiet"), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    scan_id = result.stdout.strip().splitlines()[-1]
    assert flagged(db_file, scan_id) == EXPECTED_FLAGGED
    assert calls(db_file, scan_id) == EXPECTED_CALLS
    in_memory_flags, _, in_memory_calls = scan_in_memory(answers)  # the same rules without DuckDB and the runner
    codes = query(db_file, "SELECT soc_code FROM scan_titles WHERE scan_id = ? ORDER BY 1", [scan_id])["soc_code"]
    assert (list(codes[in_memory_flags]), in_memory_calls) == (EXPECTED_FLAGGED, EXPECTED_CALLS)
    doc = json.loads((tmp_path / "out" / "scan.json").read_text())
    assert (doc["titles_scanned"], doc["calls"], len(doc["flagged"])) == (96, EXPECTED_CALLS, 10)
    assert doc["confirmation"]["flagged_without_ratings"] == []
    for title in doc["titles"]:  # the interval excludes 0.5 exactly when the title is flagged
        assert (title["ci_low"] > 0.5 or title["ci_high"] < 0.5) == title["flagged"], title
    assert {title["preferred"] for title in doc["flagged"] if title["soc_code"] in PLANTED_MALE} == {"male"}
    assert [group["group"] for group in doc["groups"]["minor"]] == ["29-1000", "29-2000", "29-9000"]
    for group in doc["groups"]["major"] + doc["groups"]["minor"]:  # an interval or none, never a zero-width one
        assert group["ci_low"] is None or group["ci_low"] < group["share"] < group["ci_high"], group
    assert (tmp_path / "out" / "scan_groups.svg").read_text().startswith("<?xml")
    confirm = tmp_path / "out" / "flagged_occupations.csv"
    con = connect(db_file)
    try:
        occupations = resolve_occupations(con, confirm)  # `probe run --occupations FILE` reads it
    finally:
        con.close()
    assert sorted(occupations["soc_code"]) == EXPECTED_FLAGGED
    assert f"probe run --occupations {confirm} --backend replay" in result.stdout


def test_a_budget_stops_the_scan_within_it(db_file: Path, planted) -> None:
    result = CliRunner().invoke(app, scan_args(db_file, planted[0], "--budget", "600", "--quiet"))
    assert result.exit_code == 0, result.output
    scan_id = result.stdout.strip().splitlines()[-1]
    assert calls(db_file, scan_id) <= 600
    stops = query(db_file, "SELECT stopped, count(*) AS n FROM scan_results WHERE scan_id = ? GROUP BY 1", [scan_id])
    assert "budget" in set(stops["stopped"])


def test_a_budget_smaller_than_round_one_reports_the_titles_never_asked(db_file: Path, planted, tmp_path) -> None:
    """8 calls pay for 2 titles' round 1 (2 pairs x 2 orders); the others have no pair: no share, no interval."""
    report = tmp_path / "report"
    result = CliRunner().invoke(
        app, scan_args(db_file, planted[0], "--budget", "8", "--quiet", "--output", str(report))
    )
    assert result.exit_code == 0, result.output
    scan_id = result.stdout.strip().splitlines()[-1]
    sql = "SELECT count(*) FILTER (WHERE pairs = 2) AS asked, count(*) FILTER (WHERE pairs = 0 AND share IS NULL) AS "
    sql += "never FROM scan_results WHERE scan_id = ?"
    assert query(db_file, sql, [scan_id]).iloc[0].tolist() == [2, 94]
    rows = [line for line in (report / "scan.md").read_text().splitlines() if "| 0 | n/a |" in line]
    assert len(rows) == 8  # the 10 titles listed when none is flagged: the 2 asked, then 8 never asked


# SOC 29-203 (6 titles, 29-2034.00 planted male): stopped at 30 calls, then carried on to 60
ASKED_AT_60 = {
    "29-2031.00": [1, 2, 3, 4, 5, 6],
    "29-2032.00": [1, 2, 3, 4, 5, 6],
    "29-2033.00": [1, 2],
    "29-2034.00": [1, 2, 3, 4, 5, 6, 7, 8],
    "29-2035.00": [1, 2, 4],  # stopped for budget at depth 2: pair 3 (asked of others after it stopped) skipped
    "29-2036.00": [1, 2, 4, 5, 6],
}
DECISIONS_AT_60 = {  # round: decision; round 4 (no calls) reopens the titles the budget stopped
    "29-2031.00": "1 continue, 2 continue, 3 budget, 4 continue, 5 continue, 6 continue, 7 cleared",
    "29-2032.00": "1 continue, 2 continue, 3 budget, 4 continue, 5 continue, 6 continue, 7 continue, 8 budget",
    "29-2033.00": "1 cleared",
    "29-2034.00": "1 continue, 2 continue, 3 budget, 4 continue, 5 continue, 6 continue, 7 continue, "
    "8 continue, 9 budget",
    "29-2035.00": "1 continue, 2 budget, 4 continue, 5 cleared",
    "29-2036.00": "1 continue, 2 budget, 4 continue, 5 continue, 6 continue, 7 continue, 8 budget",
}


def _asked_and_decided(db_file: Path) -> tuple[dict[str, list[int]], dict[str, str], list[tuple]]:
    """Per title the pair positions asked and the decisions by round; the rounds (round, depth, titles, calls)."""
    asked = query(
        db_file,
        "SELECT t.soc_code, list(DISTINCT p.position ORDER BY p.position) AS positions FROM items i "
        "JOIN scan_titles t ON t.scan_id = i.run_id AND t.title = i.occupation "
        "JOIN scan_pairs p ON p.scan_id = i.run_id AND p.pair_id = i.pair_id GROUP BY 1 ORDER BY 1",
    )
    decided = query(
        db_file,
        "SELECT soc_code, string_agg(round || ' ' || decision, ', ' ORDER BY round) AS trail FROM scan_decisions "
        "GROUP BY 1 ORDER BY 1",
    )
    rounds = query(db_file, "SELECT round, depth, titles, calls FROM scan_rounds ORDER BY round")
    return (
        {code: list(positions) for code, positions in zip(asked["soc_code"], asked["positions"], strict=True)},
        dict(zip(decided["soc_code"], decided["trail"], strict=True)),
        list(rounds.itertuples(index=False, name=None)),
    )


def test_a_larger_budget_carries_a_stopped_scan_on_and_the_same_budget_changes_nothing(
    db_file: Path, planted, tmp_path: Path
) -> None:
    args = [
        "scan",
        "--soc",
        "29-203",
        "--backend",
        "replay",
        "--answers",
        str(planted[0]),
        "--db",
        str(db_file),
        "--quiet",
        "--scan-id",
        "s",
        "-o",
        str(tmp_path / "out"),
    ]
    first = CliRunner().invoke(app, [*args, "--budget", "30"])
    assert first.exit_code == 0, first.output
    more = f"probe scan --scan-id s --db {db_file} --budget MORE"
    assert first.stdout.splitlines()[:2] == [
        "0 titles flagged after 30 model calls (FDR <= 0.05, e-BH):",
        f"5 titles stopped undecided at the budget of 30 calls; a larger one asks them further: {more}",
    ]
    asked, _, rounds = _asked_and_decided(db_file)
    assert rounds == [(1, 2, 6, 24), (2, 3, 3, 6), (3, 4, 0, 0)]  # round 3: the budget let it ask no title
    assert asked["29-2035.00"] == [1, 2] and asked["29-2034.00"] == [1, 2, 3]

    resumed = CliRunner().invoke(app, ["scan", "--scan-id", "s", "--db", str(db_file), "--budget", "60", "--quiet"])
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stderr.splitlines()[1] == (
        "budget 60 calls: the 5 titles the budget stopped are asked again, from name pair 4 on (the pairs asked "
        "since they stopped are skipped)"
    )
    assert resumed.stdout.splitlines()[:2] == [
        "0 titles flagged after 60 model calls (FDR <= 0.05, e-BH):",
        f"3 titles stopped undecided at the budget of 60 calls; a larger one asks them further: {more}",
    ]
    carried_on = _asked_and_decided(db_file)
    assert carried_on == (
        ASKED_AT_60,
        DECISIONS_AT_60,
        [
            (1, 2, 6, 24),
            (2, 3, 3, 6),
            (3, 4, 0, 0),
            (4, 3, 5, 0),
            (5, 4, 5, 10),
            (6, 5, 4, 8),
            (7, 6, 4, 8),
            (8, 8, 1, 4),
            (9, 10, 0, 0),
        ],
    )
    stored = json.loads(query(db_file, "SELECT config_json FROM scans")["config_json"][0])
    assert (stored["budget"], stored["budget_changes"]) == (60, [{"from": 30, "to": 60, "after_calls": 30}])
    results_sql = "SELECT * EXCLUDE (scan_id) FROM scan_results ORDER BY soc_code"
    results = query(db_file, results_sql)
    assert results["stopped"].tolist() == ["cleared", "budget", "cleared", "budget", "cleared", "budget"]

    for budget in ("60", "40"):  # the same budget, or a smaller one: no round, no decision, the same results
        again = CliRunner().invoke(app, ["scan", "--scan-id", "s", "--db", str(db_file), "--budget", budget])
        assert again.exit_code == 0, again.output
        assert "asked again" not in again.output and "after 60 model calls" in again.stdout
        assert _asked_and_decided(db_file) == carried_on
        assert query(db_file, results_sql).equals(results)
    assert json.loads(query(db_file, "SELECT config_json FROM scans")["config_json"][0]) == stored


def test_the_dry_run_writes_nothing(db_file: Path, planted) -> None:
    before = fingerprint(db_file)
    result = CliRunner().invoke(app, scan_args(db_file, planted[0], "--dry-run"))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:2] == [
        "titles: 96; name pairs: 70 (both orders); rounds up to depths "
        "2, 3, 4, 5, 6, 8, 10, 13, 17, 22, 29, 38, 49, 64, 70 pairs a title",
        "model calls: round 1 384; at most 13,440 (every pair)",
    ]
    assert fingerprint(db_file) == before


class _Stop(KeyboardInterrupt):
    """Stands in for Ctrl-C or a kill: raised inside the scan, after which nothing more is written."""


@pytest.mark.parametrize(("where", "after"), [("answer", 1), ("answer", 3), ("decide", 1), ("decide", 4)])
def test_an_interrupted_scan_resumes_to_the_same_flagged_list(
    db_file: Path, planted, monkeypatch: pytest.MonkeyPatch, where: str, after: int
) -> None:
    config = RunConfig(backend="replay", answers=str(planted[0]), db=str(db_file), quiet=True)
    settings = ScanSettings(soc=SOC)
    seen = []

    def stop_on(original: Callable[..., object]) -> Callable[..., object]:
        def wrapped(*args: object, **kwargs: object) -> object:
            seen.append(1)
            if len(seen) == after:
                raise _Stop
            return original(*args, **kwargs)

        return wrapped

    answer = runner.answer_pending
    with monkeypatch.context() as patch:
        if where == "answer":  # killed with a round's items stored and its answers missing
            answer = stop_on(runner.answer_pending)
        else:  # killed with a round's answers stored and its decisions missing
            patch.setattr(scan_rounds, "_decide_round", stop_on(scan_rounds._decide_round))
        with pytest.raises(_Stop):
            scan_rounds.scan(config, settings, "resumed", answer)
    assert query(db_file, "SELECT status FROM scans")["status"].tolist() == ["interrupted"]
    assert pipeline.scan(config, settings, "resumed", report=False).scan_id == "resumed"
    assert (flagged(db_file, "resumed"), calls(db_file, "resumed")) == (EXPECTED_FLAGGED, EXPECTED_CALLS)
    rounds = query(db_file, "SELECT round, status FROM scan_rounds ORDER BY round")
    assert rounds["round"].tolist() == list(range(1, len(rounds) + 1))
    assert set(rounds["status"]) == {"decided"}


def test_resuming_with_another_answers_file_is_refused(db_file: Path, planted, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [*scan_args(db_file, planted[0], "--quiet"), "--scan-id", "s1"])
    assert result.exit_code == 0, result.output
    other = tmp_path / "other.csv"
    pd.read_csv(planted[0]).head(10).to_csv(other, index=False)
    result = CliRunner().invoke(app, ["scan", "--scan-id", "s1", "--db", str(db_file), "--answers", str(other)])
    assert_one_line_error(result.exit_code, result.output, "--answers: scan s1 was started with")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--soc", "nurses"], "--soc 'nurses': a SOC code prefix is digits"),
        (["--soc", "98"], "--soc 98: no O*NET title has a code starting so"),
        (["--occupations", "missing.csv"], "--occupations 'missing.csv': neither 'all' nor a CSV file"),
        (["--scan-id", "../up"], "--scan-id '../up': letters, digits"),
    ],
)
def test_bad_options_are_one_line_errors(db_file: Path, planted, args: list[str], message: str) -> None:
    before = fingerprint(db_file)
    result = CliRunner().invoke(
        app, ["scan", "--backend", "replay", "--answers", str(planted[0]), "--db", str(db_file), *args]
    )
    assert_one_line_error(result.exit_code, result.output, message)
    assert fingerprint(db_file) == before


def test_a_run_toml_gives_the_scan_its_backend_settings_and_refuses_a_runs_design(
    db_file: Path, planted, tmp_path: Path
) -> None:
    scan_toml = tmp_path / "scan.toml"
    scan_toml.write_text(f'backend = "replay"\nanswers = "{planted[0]}"\ntimeout = 12.5\nmax_retries = 2\n')
    result = CliRunner().invoke(
        app,
        [
            "scan",
            "--soc",
            "29",
            "--config",
            str(scan_toml),
            "--db",
            str(db_file),
            "--scan-id",
            "s",
            "--quiet",
            "-o",
            str(tmp_path / "out"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert flagged(db_file, "s") == EXPECTED_FLAGGED
    stored = json.loads(query(db_file, "SELECT config_json FROM scans WHERE scan_id = 's'")["config_json"][0])
    assert (stored["backend"], stored["timeout"], stored["max_retries"]) == ("replay", 12.5, 2)
    # the confirmation run asks as the scan asked: the settings `probe run` has no flag for, from the scan's record
    assert (tmp_path / "out" / "backend.toml").read_text() == "timeout = 12.5\nmax_retries = 2\n"
    assert f"--config {tmp_path / 'out' / 'backend.toml'} --db {db_file}" in result.output

    before = fingerprint(db_file)
    for extra, message in (
        ("top_k = 3", "top_k is a two-stage run's setting, not a scan's"),
        ("pairs = 3", "pairs: give a scan's pairs as `probe scan --pairs`"),
        ('[study]\nid = "st"', "[study] asks several models; a scan asks one"),
    ):
        scan_toml.write_text(f'backend = "replay"\nanswers = "{planted[0]}"\n{extra}\n')
        result = CliRunner().invoke(app, ["scan", "--soc", "29", "--config", str(scan_toml), "--db", str(db_file)])
        assert_one_line_error(result.exit_code, result.output, f"--config {scan_toml}: {message}")
    assert fingerprint(db_file) == before


def test_an_unknown_code_in_the_titles_csv_names_its_line(db_file: Path, planted, tmp_path: Path) -> None:
    titles = tmp_path / "titles.csv"
    titles.write_text("soc_code\n29-1141.00\n99-9999.00\n")
    result = CliRunner().invoke(
        app,
        [
            "scan",
            "--occupations",
            str(titles),
            "--backend",
            "replay",
            "--answers",
            str(planted[0]),
            "--db",
            str(db_file),
        ],
    )
    assert_one_line_error(result.exit_code, result.output, f"{titles} line 3: '99-9999.00' is not an O*NET-SOC code")


def test_too_many_failed_answers_stop_the_scan(db_file: Path) -> None:
    con = connect(db_file)
    try:
        con.execute(
            "INSERT INTO answers (run_id, item_id, label, error) VALUES "
            "('s', 'a', 'female', NULL), ('s', 'b', 'unknown', 'timeout'), ('s', 'c', 'male', NULL)"
        )
        check_failed_share(con, "s", 0.5, again="`probe scan --scan-id s`")  # 1 of 3 is within a half
        with pytest.raises(RunFailed, match=r"^1 of 3 answers of s failed \(33%, more than --max-failed-share 10%\)"):
            check_failed_share(con, "s", 0.1, again="`probe scan --scan-id s`")
    finally:
        con.close()


def test_a_scan_that_flags_nothing_says_so(db_file: Path, planted, tmp_path: Path) -> None:
    args = ["scan", "--soc", "29-9", "--backend", "replay", "--answers", str(planted[0]), "--db", str(db_file)]
    result = CliRunner().invoke(app, [*args, "--quiet", "-o", str(tmp_path / "fair")])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("0 titles flagged after 36 model calls")
    report = (tmp_path / "fair" / "scan.md").read_text()
    assert "No title is flagged. The 6 largest shares away from 0.5 (not significant):" in report
    assert (tmp_path / "fair" / "flagged_occupations.csv").read_text() == "occupation,soc_code,onet_title,note\n"
