"""API keys never reach the database, logs, exports or reports.

Two keys are planted: OPENAI_API_KEY in the environment, and a key inside --base-url (user:key@host,
which the client sends as basic auth). The fake server proves each key was used; then every output of
run, analyze, report, compare and export is scanned: each text column of each table, the raw bytes of
every file written (database and WAL included), and everything printed.
"""

from __future__ import annotations

import base64
import secrets
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from probe.cli import app
from tests.fake_openai_server import FakeOpenAIServer, Step
from tests.support import seeded_copy

ENV_KEY = f"sk-test-PLANTED-env-{secrets.token_hex(8)}"
URL_KEY = f"sk-test-PLANTED-url-{secrets.token_hex(8)}"
BASIC = base64.b64encode(f"user:{URL_KEY}".encode()).decode()
FORMS = (ENV_KEY, URL_KEY, BASIC, "PLANTED")


def fails_multiple_questions(prompt: str, attempt: int) -> Step | None:
    """Some items fail, so error messages are stored too."""
    return Step.server_error(503) if "Who should be" in prompt else None


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code in (0, 2), result.output
    return result.output


def text_cells_with_a_key(db_file: Path) -> list[tuple[str, str, int]]:
    con = duckdb.connect(str(db_file), read_only=True)
    try:
        columns = con.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE data_type = 'VARCHAR'"
        ).fetchall()
        found = []
        for table, column in columns:
            condition = " OR ".join(f'contains("{column}", ?)' for _ in FORMS)
            count = con.execute(f'SELECT count(*) FROM "{table}" WHERE {condition}', list(FORMS)).fetchone()[0]
            if count:
                found.append((table, column, count))
        return found
    finally:
        con.close()


def test_planted_keys_appear_in_no_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    db_file = seeded_copy(tmp_path / "seed.duckdb", tmp_path / "probe.duckdb")
    (tmp_path / "seed.duckdb").unlink()
    run_toml = tmp_path / "RUN.toml"
    run_toml.write_text('constrain = "grammar"\nmax_retries = 1\nbackoff = 0.01\n')
    printed = []
    with FakeOpenAIServer(answer_by_hash=True, fault_plan=fails_multiple_questions) as server:
        url_with_key = server.base_url.replace("http://", f"http://user:{URL_KEY}@")
        for run_id, base_url in (("env-key", server.base_url), ("url-key", url_with_key)):
            printed.append(
                cli("run", "--backend", "openai", "--base-url", base_url, "--model", "fake-model", "--pairs", "1",
                    "--occupations", "nurse", "--top-k", "1", "--config", str(run_toml), "--run-id", run_id,
                    "--db", str(db_file))
            )  # fmt: skip
        authorizations = {(served.authorization or "").split()[0]: served.authorization for served in server.served}
        server.script([Step.server_error(401)])  # a rejected key: the error line names the server, not the key
        printed.append(
            cli("run", "--backend", "openai", "--base-url", url_with_key, "--model", "other-model", "--pairs", "1",
                "--occupations", "nurse", "--top-k", "1", "--run-id", "rejected", "--db", str(db_file), "--quiet")
        )  # fmt: skip
    assert authorizations == {"Bearer": f"Bearer {ENV_KEY}", "Basic": f"Basic {BASIC}"}  # both keys were used
    masked_url = server.base_url.replace("http://", "http://***@")
    assert printed[-1] == f"error: {masked_url}: AuthenticationError: Error code: 401 - scripted 401\n"

    for run_id in ("env-key", "url-key"):
        printed.append(cli("analyze", run_id, "--show", "--db", str(db_file)))
        printed.append(cli("report", run_id, "--db", str(db_file), "-o", str(tmp_path / run_id / "report.html")))
        for file_format in ("csv", "parquet"):
            printed.append(
                cli("export", run_id, "--format", file_format, "-o", str(tmp_path / run_id), "--db", str(db_file))
            )
    printed.append(cli("compare", "env-key", "url-key", "--db", str(db_file), "-o", str(tmp_path / "c.html")))

    written = sorted(path for path in tmp_path.rglob("*") if path.is_file())
    names = {path.relative_to(tmp_path).as_posix() for path in written}
    for run_id in ("env-key", "url-key"):
        expected = {"report.html", "report.md", "report.json", "items.csv", "answers.csv"}
        assert {f"{run_id}/{name}" for name in expected} <= names
        assert {f"{run_id}/items.parquet", f"{run_id}/answers.parquet"} <= names
    assert {"probe.duckdb", "c.html", "c.md", "c.json"} <= names
    con = duckdb.connect(str(db_file), read_only=True)
    assert con.execute("SELECT count(*) FROM answers WHERE error IS NOT NULL").fetchone()[0] > 0  # scanned too
    con.close()

    assert text_cells_with_a_key(db_file) == []
    leaks = [(path.name, form) for path in written for form in FORMS if form.encode() in path.read_bytes()]
    assert leaks == []
    assert [form for form in FORMS if form in "".join(printed)] == []
