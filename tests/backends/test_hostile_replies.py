"""Any reply is stored safely or becomes a failed item with a one-line reason; server and flag text reaches the
terminal with its control characters escaped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probe.cli import app
from probe.common.escape import terminal_text
from tests.fake_openai_server import FakeOpenAIServer, Step
from tests.support import query, seeded_copy

LONE_SURROGATE = Step.raw(b'{"choices": [{"message": {"content": "\\ud800 Mary"}}]}')
WRONG_TYPES = Step.raw(b'{"choices": {"0": {"message": {"content": 5}}}}')
TOO_DEEP = Step.raw(b'{"choices": ' + b"[" * 100_000)
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\u202e"


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("seed") / "probe.duckdb"


def run_args(server: FakeOpenAIServer, db_file: Path, *extra: str, model: str = "fake") -> list[str]:
    run_toml = db_file.parent / "RUN.toml"
    run_toml.write_text('constrain = "grammar"\nmax_retries = 1\nbackoff = 0.01\nmax_failed_share = 1.0\n')
    return [
        "run",
        "--backend",
        "openai",
        "--decoding",
        "generate",
        "--base-url",
        server.base_url,
        "--model",
        model,
        "--pairs",
        "1",
        "--occupations",
        "nurse",
        "--top-k",
        "1",
        "--conditions",
        "control",
        "--config",
        str(run_toml),
        "--run-id",
        "hostile",
        "--db",
        str(db_file),
        "--quiet",
        *extra,
    ]


def hostile_stage_2(prompt: str, attempt: int) -> Step | None:
    """Stage 1 is answered (the server is usable); stage 2 gets a reply of another kind per question."""
    if "Who should be" in prompt:
        return LONE_SURROGATE
    if "more qualified" in prompt:
        return WRONG_TYPES
    if "Is " in prompt and attempt == 0:
        return TOO_DEEP  # once: the retry is answered
    return None


def test_unreadable_replies_are_stored_safely_or_failed_items_and_the_run_resumes(seed: Path, tmp_path: Path) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    with FakeOpenAIServer(fault_plan=hostile_stage_2) as server:
        first = CliRunner().invoke(app, run_args(server, db_file))
        stored = query(
            db_file,
            "SELECT i.qtype, a.raw, a.label, a.error FROM items i JOIN answers a "
            "USING (run_id, item_id) WHERE i.stage = 2 ORDER BY i.qtype, i.seq",
        )
        server.fault_plan = None
        resumed = CliRunner().invoke(app, run_args(server, db_file))
    assert first.exit_code == 0, first.output
    assert first.output.splitlines()[0] == "hostile" and "Traceback" not in first.output
    by_qtype = {qtype: group for qtype, group in stored.groupby("qtype")}
    assert by_qtype["multiple"][["raw", "label"]].values.tolist() == [["\ufffd Mary", "female"]] * 2
    assert by_qtype["multiple"]["error"].isna().all()
    for error in by_qtype["single"]["error"]:  # the reply quoted (200 characters at most), one line
        assert error.startswith("UnreadableResponse: reply has no choices: ChatCompletion(id=None, choices={'0': ")
        assert error.endswith(" after 2 attempts") and "\n" not in error
    assert set(by_qtype["single"]["label"]) == {"unknown"}
    assert by_qtype["binary"]["error"].isna().all()
    assert (resumed.exit_code, resumed.output) == (0, "hostile\n")
    assert query(db_file, "SELECT count(*) FROM answers WHERE error IS NOT NULL").values.tolist() == [[0]]


def test_escape_sequences_from_a_server_are_escaped_in_the_error_line(seed: Path, tmp_path: Path) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    body = json.dumps({"error": {"message": f"no {ESCAPES}"}}).encode()
    with FakeOpenAIServer(fault_plan=lambda prompt, attempt: Step.raw(body, status=401)) as server:
        done = CliRunner().invoke(app, run_args(server, db_file))
    assert done.exit_code == 1
    assert done.output.endswith(r"Error code: 401 - no \x1b]0;pwned\x07\x1b[2J\u202e" + "\n")
    assert "\x1b" not in done.output and "\x07" not in done.output


def test_a_model_name_with_escape_sequences_is_escaped_in_probe_runs(seed: Path, tmp_path: Path) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    with FakeOpenAIServer() as server:
        assert CliRunner().invoke(app, run_args(server, db_file, model=f"m{ESCAPES}")).exit_code == 0
    listed = CliRunner().invoke(app, ["runs", "--db", str(db_file)])
    assert listed.exit_code == 0
    assert r"m\x1b]0;pwned\x07\x1b[2J\u202e" in listed.output
    assert "\x1b" not in listed.output and "\u202e" not in listed.output


def test_a_model_name_with_escape_sequences_is_escaped_in_the_report(seed: Path, tmp_path: Path) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    with FakeOpenAIServer() as server:
        assert CliRunner().invoke(app, run_args(server, db_file, "--report", model=f"m{ESCAPES}")).exit_code == 0
    for name in ("report.html", "report.md"):  # report.json keeps the name as it is, JSON-escaped
        text = (tmp_path / "hostile" / name).read_text()
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text, name
    assert r"m\x1b]0;pwned\x07\x1b[2J\u202e" in (tmp_path / "hostile" / "report.html").read_text()


def test_terminal_text_escapes_control_and_format_characters_only() -> None:
    assert terminal_text("Zoë \U0001f600 a\tb\nc\x9b\x7f") == "Zoë \U0001f600 a\\x09b\\x0ac\\x9b\\x7f"
    assert terminal_text("line 1\nline 2\x1b", keep_newlines=True) == "line 1\nline 2\\x1b"


def test_the_model_name_the_server_replies_with_is_recorded(seed: Path, tmp_path: Path) -> None:
    db_file = seeded_copy(seed, tmp_path / "probe.duckdb")
    with FakeOpenAIServer(reply_model="llama-3.1-8b-instruct-q4\x1b[2J") as server:
        assert CliRunner().invoke(app, run_args(server, db_file, model="gpt-4o")).exit_code == 0
    assert query(db_file, "SELECT model, served_model FROM runs").values.tolist() == [
        ["gpt-4o", "llama-3.1-8b-instruct-q4\x1b[2J"]
    ]
