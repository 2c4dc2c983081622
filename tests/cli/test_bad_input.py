"""Bad input: one line naming the file, row or option, exit 2, no traceback, and the database unchanged.

Every case runs the real command line on a database that already holds a finished run, and compares
every table (row count and content hash) before and after.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probe.cli import app
from tests.support import (
    ANSWER_HEADER,
    ONET_RELEASE,
    assert_one_line_error,
    fingerprint,
    seeded_copy,
    unknown_answers,
)

RUN_ID = "finished"
SINGLE_ROW = "2,single,control,1,fm,nurse,,,,female\n"


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with one finished replay run, so 'unchanged' covers run tables too."""
    folder = tmp_path_factory.mktemp("seed")
    db_file = seeded_copy(folder / "empty.duckdb", folder / "probe.duckdb")
    answers = folder / "answers.csv"
    settings = {"pairs": 1, "occupations": ("nurse",), "top_k": 1, "conditions": ("control",), "db": str(db_file)}
    unknown_answers(answers, **settings)
    result = CliRunner().invoke(app, [*run_args(db_file, answers), "--run-id", RUN_ID])
    assert (result.exit_code, result.output) == (0, f"{RUN_ID}\n")
    return db_file


@pytest.fixture
def db_file(seed: Path, tmp_path: Path) -> Path:
    return Path(shutil.copy(seed, tmp_path / "probe.duckdb"))


@pytest.fixture
def answers(tmp_path: Path) -> Path:
    path = tmp_path / "answers.csv"
    path.write_text(ANSWER_HEADER)
    return path


def run_args(db_file: Path, answers: Path) -> list[str]:
    return [
        "run",
        "--backend",
        "replay",
        "--answers",
        str(answers),
        "--pairs",
        "1",
        "--occupations",
        "nurse",
        "--top-k",
        "1",
        "--conditions",
        "control",
        "--db",
        str(db_file),
        "--quiet",
    ]


def assert_refused(db_file: Path, args: list[str], message: str) -> None:
    before = fingerprint(db_file)
    result = CliRunner().invoke(app, args)
    assert_one_line_error(result.exit_code, result.output, message)
    assert fingerprint(db_file) == before


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_text(text, encoding=encoding)
    return path


# (extra `probe run` arguments given a tmp folder, the expected message given that folder)
RUN_CASES: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    "unknown occupation": (
        lambda tmp: ["--occupations", "zebra tamer"],
        "unknown occupation 'zebra tamer': not a curated occupation or O*NET title",
    ),
    "occupations file missing": (
        lambda tmp: ["--occupations", str(tmp / "mine.csv")],
        "{tmp}/mine.csv: no such file",
    ),
    "unknown backend": (
        lambda tmp: ["--backend", "gpt5"],
        "--backend 'gpt5': unknown backend (choose from llamacpp, openai, hf-qa, hf-causal, replay)",
    ),
    "unknown preset": (lambda tmp: ["--preset", "huge"], "--preset: unknown preset 'huge' (choose from quick, paper)"),
    "pairs 0": (lambda tmp: ["--pairs", "0"], "--pairs: pair counts and pair ids start at 1"),
    "pairs 71": (lambda tmp: ["--pairs", "71"], "pairs: 71 is not a number of pairs from 1 to 70"),
    "unknown pair id": (lambda tmp: ["--pairs", "1,99"], "pairs: no name pair with id 99 (ids run from 1 to 70)"),
    "pairs not a number": (lambda tmp: ["--pairs", "two"], "--pairs: 'two' is not a number or a comma list"),
    "top-k 0": (lambda tmp: ["--top-k", "0"], "--top-k: must be at least 1"),
    "unknown condition": (
        lambda tmp: ["--conditions", "taxonomy,other"],
        "--conditions: unknown condition 'other' (choose from taxonomy, baseline, control)",
    ),
    "malformed RUN.toml": (
        lambda tmp: ["--config", str(write(tmp / "RUN.toml", "top_k = [\n"))],
        "{tmp}/RUN.toml: not valid TOML (",
    ),
    "unknown key in RUN.toml": (
        lambda tmp: ["--config", str(write(tmp / "RUN.toml", "temperature = 0.5\n"))],
        "{tmp}/RUN.toml: temperature: unknown setting (known: preset, pairs,",
    ),
    "wrong type in RUN.toml": (
        lambda tmp: ["--config", str(write(tmp / "RUN.toml", 'max_retries = "many"\n'))],
        "{tmp}/RUN.toml: max_retries: expected int, got 'many'",
    ),
    "run id with a path": (
        lambda tmp: ["--run-id", "../../x"],
        "--run-id: '../../x' is not a run id: letters, digits, '.', '_', '-', starting with a letter or digit, "
        "at most 64",
    ),
    "run id of 65 characters": (lambda tmp: ["--run-id", "r" * 65], f"--run-id: '{'r' * 65}' is not a run id"),
    "timeout 0": (
        lambda tmp: ["--config", str(write(tmp / "RUN.toml", "timeout = 0\n"))],
        "{tmp}/RUN.toml: timeout: expected seconds above 0 and at most 3600, got 0",
    ),
    "backoff nan": (
        lambda tmp: ["--config", str(write(tmp / "RUN.toml", "backoff = nan\n"))],
        "{tmp}/RUN.toml: backoff: expected seconds above 0 and at most 3600, got nan",
    ),
    "max_retries 1000": (
        lambda tmp: ["--config", str(write(tmp / "RUN.toml", "max_retries = 1000\n"))],
        "{tmp}/RUN.toml: max_retries: expected 0 to 20, got 1000",
    ),
    "max failed share 2": (
        lambda tmp: ["--max-failed-share", "2"],
        "--max-failed-share: expected a share from 0 to 1 (0.1 = 10%), got '2'",
    ),
    "zero-width space in an occupations CSV": (
        lambda tmp: [
            "--occupations",
            str(write(tmp / "occ.csv", "occupation,soc_code\nac\u200bcountant,13-2011.00\n")),
        ],
        "{tmp}/occ.csv line 2: 'ac\\u200bcountant' contains an invisible format character, U+200B ZERO WIDTH SPACE; "
        "remove it",
    ),
    "bidi override in --occupations": (
        lambda tmp: ["--occupations", "nurse,\u202eresruN"],
        "--occupations: '\\u202eresruN' contains an invisible format character, U+202E RIGHT-TO-LEFT OVERRIDE; "
        "remove it",
    ),
    "missing RUN.toml": (lambda tmp: ["--config", str(tmp / "none.toml")], "{tmp}/none.toml: no such file"),
    "RUN.toml not UTF-8": (
        lambda tmp: ["--config", str(write(tmp / "RUN.toml", "model = 'caf\xe9'\n", encoding="latin-1"))],
        "{tmp}/RUN.toml: not UTF-8 text (byte 12: invalid continuation byte); TOML files are UTF-8",
    ),
    "concurrency 0": (lambda tmp: ["--concurrency", "0"], "--concurrency: expected 1 to 1024, got 0"),
    "concurrency 100000": (lambda tmp: ["--concurrency", "100000"], "--concurrency: expected 1 to 1024, got 100000"),
    "a name equal to an answer word": (
        lambda tmp: ["--names", str(write(tmp / "names.csv", "female,male\nAnna,Tom\nNEITHER,Paul\n"))],
        "{tmp}/names.csv line 3: the name 'NEITHER' is an answer option (yes, no, both, neither): a reply naming it "
        "could not be told from the option; choose another name",
    ),
    "names CSV in Latin-1": (
        lambda tmp: [
            "--names",
            str(write(tmp / "names.csv", "female,male\nAnna,Tom\nRen\xe9e,Jos\xe9\n", encoding="latin-1")),
        ],
        "{tmp}/names.csv: not UTF-8 (it looks like a one-byte encoding such as Latin-1 or Windows-1252); save it as "
        "UTF-8",
    ),
    "names CSV in UTF-16": (
        lambda tmp: ["--names", str(write(tmp / "names.csv", "female,male\nAnna,Tom\n", encoding="utf-16"))],
        "{tmp}/names.csv: not UTF-8 (it looks like UTF-16); save it as UTF-8",
    ),
    "replay file without the key columns": (
        lambda tmp: ["--answers", str(write(tmp / "a.csv", "stage,qtype,label\n1,attr,yes\n"))],
        "{tmp}/a.csv: missing column(s) condition, pair_id, name_order, occupation, subject, category, attribute",
    ),
    "replay label outside the canonical set": (
        lambda tmp: [
            "--answers",
            str(write(tmp / "a.csv", ANSWER_HEADER + SINGLE_ROW + "1,attr,stage1,1,fm,,female,skill,Reading,maybe\n")),
        ],
        "{tmp}/a.csv, row 2: label 'maybe' is not valid for qtype attr (yes, no, unknown)",
    ),
    "replay file missing": (lambda tmp: ["--answers", str(tmp / "none.csv")], "{tmp}/none.csv: no such file"),
    "replay parquet that is not parquet": (
        lambda tmp: ["--answers", str(write(tmp / "a.parquet", "stage,qtype\n"))],
        "{tmp}/a.parquet: cannot read answers (",
    ),
    "resume with other settings": (
        lambda tmp: ["--run-id", RUN_ID, "--conditions", "taxonomy"],
        f"--conditions: run {RUN_ID} was started with ['control'], not ['taxonomy']",
    ),
    "resume with a setting the run left at its default": (  # never "started with None"
        lambda tmp: ["--run-id", RUN_ID, "--names", str(write(tmp / "names.csv", "female,male\nAnna,Tom\n"))],
        f"--names: run {RUN_ID} was started without --names (its default), not '{{tmp}}/names.csv'; resume it with "
        "the same settings or choose another --run-id",
    ),
    "names CSV row with one name": (
        lambda tmp: ["--names", str(write(tmp / "names.csv", "female,male\nAnna,Tom\nCara\nDora,Ed\n"))],
        "{tmp}/names.csv line 3: 1 field, the header has 2 (female, male)",
    ),
    "openai without a model": (
        lambda tmp: ["--backend", "openai", "--base-url", "http://127.0.0.1:9/v1"],
        "--model: the openai backend needs a model name",
    ),
    "llama.cpp: no such GGUF": (
        lambda tmp: ["--backend", "llamacpp", "--model", str(tmp / "absent.gguf")],
        "--model {tmp}/absent.gguf: no such GGUF file",
    ),
    "llama.cpp: random bytes named .gguf": (
        lambda tmp: ["--backend", "llamacpp", "--model", str(write(tmp / "x.gguf", "\x8f\x02random bytes"))],
        "--model {tmp}/x.gguf: not a GGUF file (llama.cpp needs a .gguf model)",
    ),
}


@pytest.mark.parametrize("case", RUN_CASES)
def test_bad_run_input(case: str, db_file: Path, answers: Path, tmp_path: Path) -> None:
    extra, message = RUN_CASES[case]
    assert_refused(db_file, [*run_args(db_file, answers), *extra(tmp_path)], message.format(tmp=tmp_path))


def test_openai_without_a_key_or_server(db_file: Path, answers: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert_refused(
        db_file,
        [*run_args(db_file, answers), "--backend", "openai", "--model", "gpt-4o-mini"],
        "OPENAI_API_KEY is not set (needed for the OpenAI API; or give --base-url)",
    )


def test_llamacpp_cannot_load_a_corrupt_gguf(
    db_file: Path, answers: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the GGUF hash cache
    corrupt = write(tmp_path / "corrupt.gguf", "GGUF\x03\x00\x00\x00" + "garbage" * 50)
    assert_refused(
        db_file,
        [*run_args(db_file, answers), "--backend", "llamacpp", "--model", str(corrupt)],
        f"--model {corrupt}: llama.cpp could not load it (Failed to init server, please check the input params.)",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["analyze", "nope"], "run 'nope': no such run in the database"),
        (["report", "nope"], "run 'nope': no such run (recent runs: finished)"),
        (["compare", RUN_ID, "nope"], "run 'nope': no such run (recent runs: finished)"),
        (["export", "nope", "--format", "csv", "-o", "{tmp}/out"], "nope: no such run in {db}"),
        (["export", RUN_ID, "--format", "xlsx", "-o", "{tmp}/out"], "--format 'xlsx': choose from parquet, csv"),
        (["taxonomy", "show", "zebra tamer"], "unknown occupation 'zebra tamer'"),
        (["taxonomy", "show", "nurse", "--top-k", "0"], "top-k must be a positive whole number, got 0"),
    ],
)
def test_bad_run_id_and_options_of_other_commands(args: list[str], message: str, db_file: Path, tmp_path: Path):
    filled = [arg.format(tmp=tmp_path) for arg in args]
    assert_refused(db_file, [*filled, "--db", str(db_file)], message.format(tmp=tmp_path, db=db_file))
    assert not (tmp_path / "out").exists()


def test_a_missing_database_is_named_and_not_created(tmp_path: Path) -> None:
    absent = tmp_path / "absent.duckdb"
    for args in (["analyze", "x"], ["report", "x"], ["export", "x", "-o", str(tmp_path / "out")]):
        result = CliRunner().invoke(app, [*args, "--db", str(absent)])
        assert_one_line_error(result.exit_code, result.output, f"{absent}: no such database")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not ONET_RELEASE.is_dir(), reason=f"O*NET release not found at {ONET_RELEASE}")
@pytest.mark.parametrize("damage", ["truncated mid-row", "missing"])
def test_damaged_onet_release_is_refused(damage: str, db_file: Path, tmp_path: Path) -> None:
    release = tmp_path / "release"
    release.mkdir()
    for source in ONET_RELEASE.iterdir():
        if source.name != "Skills.txt":
            (release / source.name).symlink_to(source)
    if damage == "missing":
        message = f"{release}/Skills.txt: missing from the O*NET release folder"
    else:
        text = (ONET_RELEASE / "Skills.txt").read_bytes()
        cut = text.index(b"\n", len(text) // 2) + 1
        assert text[cut:].startswith(b"31-1122.00\t2.A.1.a\tReading Comprehension\t")
        (release / "Skills.txt").write_bytes(text[: cut + len(b"31-1122.00\t2.A.1.a\tReadi")])
        message = "Skills.txt: cannot read it as a tab-separated file (Invalid Input Error: CSV Error on Line: 31292)"
    assert_refused(db_file, ["taxonomy", "import", str(release), "--db", str(db_file)], message)


@pytest.mark.parametrize("template", ["chat/attr.j2", "chat/multiple.j2", "context.j2"])
def test_template_with_an_undefined_variable(template: str, broken_prompts: Path, db_file: Path, answers: Path) -> None:
    path = broken_prompts / template
    path.write_text(path.read_text() + "{{ undefined_variable }}")
    assert_refused(db_file, run_args(db_file, answers), f"prompts/{template}: 'undefined_variable' is undefined")


def test_the_console_script_prints_one_line_too(tmp_path: Path) -> None:
    """The installed `probe` entry point, not only typer's test runner: one line on stderr, exit 2."""
    probe = Path(sys.executable).with_name("probe")
    result = subprocess.run(
        [str(probe), "run", "--pairs", "0", "--db", str(tmp_path / "probe.duckdb")],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (
        2,
        "",
        "error: --pairs: pair counts and pair ids start at 1\n",
    )
    assert not (tmp_path / "probe.duckdb").exists()


def test_unwritable_or_unknown_output_paths_are_one_line(db_file: Path, tmp_path: Path) -> None:
    blocker = write(tmp_path / "file", "a file where a folder is expected")
    cases = [
        (["export", RUN_ID, "--format", "csv", "-o", f"{blocker}/out"], f"{blocker}/out: Not a directory"),
        (["export", RUN_ID, "--format", "hf-dataset", "-o", str(blocker)], f"{blocker}/data: Not a directory"),
        (["export", RUN_ID, "--format", "lm-eval", "-o", str(blocker)], f"{blocker}/dataset/data: Not a directory"),
        (["report", RUN_ID, "-o", f"{blocker}/report.html"], f"{blocker}: File exists"),
        (["report", RUN_ID, "-o", f"{tmp_path}/report.pdf"], f"-o {tmp_path}/report.pdf: choose a .html or .md file"),
    ]
    for args, message in cases:
        result = CliRunner().invoke(app, [*args, "--db", str(db_file)])
        assert_one_line_error(result.exit_code, result.output, message)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["file", "probe.duckdb"]


def test_report_o_picks_the_format_by_suffix(db_file: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", RUN_ID, "-o", str(tmp_path / "audit.md"), "--db", str(db_file)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "audit.md").read_text().startswith("# Gender-bias audit")
    assert (tmp_path / "audit.html").read_text().startswith("<!DOCTYPE html>")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["audit.html", "audit.json", "audit.md", "probe.duckdb"]
