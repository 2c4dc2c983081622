"""`probe scan` at its edges: settings numpy or the rounds cannot take, titles that read the same, flagged
titles a confirmation run cannot take."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb
import numpy as np
import pytest
from typer.testing import CliRunner, Result

from bench.scan import write_replay_file
from probe.backends.base import Query, Reply
from probe.cli import app
from probe.common.errors import UserError
from probe.common.vocabulary import COMPLETE, FAILED, UNKNOWN
from probe.scanning import ScanSettings
from tests.support import FakeBackend, assert_one_line_error, fingerprint

SOC = ("29-9",)  # six titles; 29-9021.00 and 29-9099.00 have no O*NET attribute ratings


@pytest.fixture
def every_pick_female(db_file: Path, tmp_path: Path) -> Path:
    """A replay file for SOC 29-9 in which every answer names the woman."""
    path = tmp_path / "answers.csv"
    write_replay_file(path, db_file, np.ones((6, 70, 2), dtype=bool), SOC)
    return path


def scan(db_file: Path, answers: Path, *more: str) -> Result:
    args = ["scan", "--soc", ",".join(SOC), "--backend", "replay", "--answers", str(answers), "--db", str(db_file)]
    return CliRunner().invoke(app, [*args, "--quiet", *more])


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"seed": -1}, "--seed -1: a seed is a whole number from 0 up"),
        ({"seed": "7"}, "--seed '7': a seed is a whole number from 0 up"),
        ({"budget": 0}, "--budget 0: a number of model calls from 1 up"),
        ({"budget": "100"}, "--budget '100': a number of model calls from 1 up"),
    ],
)
def test_settings_numpy_or_the_budget_cannot_take_are_refused(settings: dict[str, object], message: str) -> None:
    with pytest.raises(UserError) as refused:
        ScanSettings(**settings)
    assert str(refused.value) == message


@pytest.mark.parametrize(("soc", "message"), [(",", "--soc ','"), (" , ,", "--soc ' , ,'")])
def test_a_soc_option_of_commas_alone_is_refused(
    db_file: Path, every_pick_female: Path, soc: str, message: str
) -> None:
    """Not read as no prefix at all, which would scan every O*NET title."""
    result = CliRunner().invoke(
        app,
        [
            "scan",
            "--soc",
            soc,
            "--backend",
            "replay",
            "--answers",
            str(every_pick_female),
            "--db",
            str(db_file),
            "--dry-run",
        ],
    )
    assert_one_line_error(result.exit_code, result.output, f"{message}: no SOC code prefix in it (e.g. 29 or 29-1)\n")


@pytest.mark.parametrize("dry_run", [(), ("--dry-run",)])
def test_a_negative_seed_is_a_one_line_error(db_file: Path, every_pick_female: Path, dry_run: tuple[str, ...]) -> None:
    before = fingerprint(db_file)
    result = scan(db_file, every_pick_female, "--seed", "-1", *dry_run)
    assert_one_line_error(result.exit_code, result.output, "--seed -1: a seed is a whole number from 0 up")
    assert fingerprint(db_file) == before


def test_two_codes_with_one_title_are_refused_before_anything_is_stored(db_file: Path, every_pick_female: Path) -> None:
    """An imported release may name two codes alike; the scan's items are keyed by the title's text."""
    con = duckdb.connect(str(db_file))
    try:
        con.execute("UPDATE onet_occupations SET title = 'Athletic Trainers' WHERE soc_code = '29-9092.00'")
    finally:
        con.close()
    before = fingerprint(db_file)
    result = scan(db_file, every_pick_female)
    assert_one_line_error(
        result.exit_code,
        result.output,
        "O*NET-SOC codes 29-9091.00 and 29-9092.00 share the title 'Athletic Trainers': the scan asks by title, "
        "so leave one out (--occupations CSV or --soc)",
    )
    assert fingerprint(db_file) == before


def test_the_report_names_the_flagged_titles_left_out_of_the_confirmation_csv(
    db_file: Path, every_pick_female: Path, tmp_path: Path
) -> None:
    result = scan(db_file, every_pick_female, "-o", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("6 titles flagged after 96 model calls")
    report = (tmp_path / "out" / "scan.md").read_text().splitlines()
    assert [line for line in report if line.startswith("Not in flagged_occupations.csv")] == [
        "Not in flagged_occupations.csv (no O*NET attribute ratings, so `probe run` cannot confirm them): "
        "29-9021.00, 29-9099.00."
    ]
    confirm = (tmp_path / "out" / "flagged_occupations.csv").read_text().splitlines()
    assert [line.split(",")[1] for line in confirm[1:]] == ["29-9091.00", "29-9092.00", "29-9093.00", "29-9099.01"]


class _Mute(FakeBackend):
    """Never names either person."""

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        return [Reply(label=UNKNOWN, raw="I cannot say.") for _ in queries]


def _status(db_file: Path) -> list[tuple[str, str]]:
    con = duckdb.connect(str(db_file), read_only=True)
    try:
        return con.execute("SELECT scan_id, status FROM scans ORDER BY scan_id").fetchall()
    finally:
        con.close()


def _last_line_error(result: Result, code: int, message: str) -> None:
    """The scan's id line (stderr), then one error line; no traceback."""
    lines = result.output.splitlines()
    assert (result.exit_code, len(lines), lines[-1].startswith(f"error: {message}")) == (code, 2, True), result.output


def test_a_scan_whose_every_answer_is_unknown_fails_instead_of_flagging_nothing(db_file: Path, use_backend) -> None:
    use_backend(_Mute())
    result = CliRunner().invoke(app, ["scan", "--soc", "29-9", "--db", str(db_file), "--scan-id", "mute", "--quiet"])
    _last_line_error(result, 1, "all 24 stage-2 answers are unknown: no reply named an option")
    assert _status(db_file) == [("mute", FAILED)]


def test_a_replay_file_matching_none_of_the_scans_items_is_an_error(db_file: Path, tmp_path: Path) -> None:
    answers = tmp_path / "answers.csv"
    write_replay_file(answers, db_file, np.ones((6, 70, 2), dtype=bool), SOC)
    args = ["scan", "--soc", "11-1", "--backend", "replay", "--answers", str(answers), "--db", str(db_file)]
    result = CliRunner().invoke(app, [*args, "--scan-id", "elsewhere", "--quiet"])
    _last_line_error(result, 2, f"{answers}: matches none of the 16 items of this run")
    assert _status(db_file) == [("elsewhere", FAILED)]


class _Recording(FakeBackend):
    """Picks by a hash of the prompt (FakeBackend) and keeps every prompt it is asked."""

    def __init__(self) -> None:
        super().__init__()
        self.prompts: list[str] = []

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        self.prompts += [query.prompt for query in queries]
        return super().answer(queries)


class _OneTitleFails(_Recording):
    """As _Recording, but never answers the prompts about athletic trainers."""

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        replies = super().answer(queries)
        return [
            Reply(label=UNKNOWN, raw="", error="timed out") if "athletic trainer" in query.prompt else reply
            for query, reply in zip(queries, replies, strict=True)
        ]


def test_failed_answers_are_not_asked_again_in_every_round(db_file: Path, use_backend) -> None:
    """A prompt the server never answers costs its timeout and retries once, not again in each later round."""
    failing = use_backend(_OneTitleFails())
    args = ["scan", "--soc", "29-9", "--db", str(db_file), "--scan-id", "s", "--quiet", "--max-failed-share", "0.5"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rounds = duckdb.connect(str(db_file), read_only=True).execute("SELECT count(*) FROM scan_rounds").fetchone()[0]
    assert (rounds, sum("athletic trainer" in prompt for prompt in failing.prompts)) == (6, 4)


@pytest.mark.parametrize(
    ("more", "message"),
    [
        (["--db", ":memory:"], "--db :memory:: a scan is stored to be resumed and reported; give a database file"),
        (["--threads", "-1"], "--threads: expected a number of CPU threads from 1 up, got -1"),
        (["--max-failed-share", "2"], "--max-failed-share: expected a share from 0 to 1 (0.1 = 10%), got '2'"),
    ],
)
def test_settings_a_scan_cannot_take_are_one_line_errors(
    db_file: Path, every_pick_female: Path, more: list[str], message: str
) -> None:
    before = fingerprint(db_file)
    result = CliRunner().invoke(
        app,
        ["scan", "--soc", "29-9", "--backend", "replay", "--answers", str(every_pick_female), *more]
        + (["--db", str(db_file)] if "--db" not in more else []),
    )
    assert_one_line_error(result.exit_code, result.output, message)
    assert fingerprint(db_file) == before


def test_a_report_folder_that_cannot_be_made_is_refused_before_the_model_is_asked(
    db_file: Path, every_pick_female: Path, tmp_path: Path
) -> None:
    occupied = tmp_path / "a-file"
    occupied.write_text("")
    before = fingerprint(db_file)
    result = scan(db_file, every_pick_female, "-o", str(occupied))
    assert_one_line_error(result.exit_code, result.output, f"-o {occupied}: cannot be the report folder (File exists)")
    assert fingerprint(db_file) == before


def test_a_run_cannot_take_a_scans_id(db_file: Path, every_pick_female: Path) -> None:
    """Its items would be stored under the scan's id and mixed into the scan's answers."""
    assert scan(db_file, every_pick_female, "--scan-id", "shared").exit_code == 0
    before = fingerprint(db_file)
    run = ["run", "--run-id", "shared", "--occupations", "Athletic Trainers", "--pairs", "2", "--backend", "replay"]
    result = CliRunner().invoke(app, [*run, "--answers", str(every_pick_female), "--db", str(db_file)])
    assert_one_line_error(result.exit_code, result.output, "--run-id shared: a scan has this id; choose another")
    assert fingerprint(db_file) == before


def test_an_empty_row_in_the_titles_csv_is_named(db_file: Path, every_pick_female: Path, tmp_path: Path) -> None:
    codes = tmp_path / "codes.csv"
    codes.write_text("soc_code\n29-9091.00\n,\n")
    result = scan(db_file, every_pick_female, "--occupations", str(codes), "--dry-run")
    assert_one_line_error(result.exit_code, result.output, f"{codes} line 3: no soc_code (an empty row?)")


def test_a_resumed_scan_asks_its_failed_answers_again(db_file: Path, use_backend) -> None:
    """Stopped by --max-failed-share 0 after round 1, resumed with a server that answers: its 4 failed items
    (one title, 2 pairs x 2 orders) are asked again, once, and the scan completes."""
    args = ["scan", "--soc", "29-9", "--db", str(db_file), "--scan-id", "s", "--quiet"]
    use_backend(_OneTitleFails())
    failed = CliRunner().invoke(app, [*args, "--max-failed-share", "0"])
    assert failed.exit_code == 1 and "4 of 24 answers of s failed" in failed.output, failed.output
    answering = use_backend(_Recording())
    resumed = CliRunner().invoke(app, [*args, "--max-failed-share", "0.1"])
    assert resumed.exit_code == 0, resumed.output
    assert sum("athletic trainer" in prompt for prompt in answering.prompts) == 4
    assert _status(db_file) == [("s", COMPLETE)]


def test_no_larger_budget_is_suggested_once_every_pair_was_asked(db_file: Path, every_pick_female: Path) -> None:
    """3 pairs: round 1 asks 2 of every title (24 calls), round 2 the last pair of the one title 2 calls pay for;
    the other 5 stop for budget but have no pair left, so no budget could ask them further."""
    result = scan(db_file, every_pick_female, "--pairs", "3", "--budget", "26", "--scan-id", "short")
    assert result.exit_code == 0, result.output
    stops = (
        duckdb.connect(str(db_file), read_only=True)
        .execute("SELECT stopped, count(*) FROM scan_results WHERE scan_id = 'short' GROUP BY 1 ORDER BY 1")
        .fetchall()
    )
    assert stops == [("budget", 5), ("exhausted", 1)]
    assert "a larger one asks them further" not in result.output
