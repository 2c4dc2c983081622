"""API keys never reach the database, logs, exports or reports.

Three keys are planted: OPENAI_API_KEY in the environment, a key inside --base-url (user:key@host, which the
client sends as basic auth) and one in its query (?api-key=..., Azure-style). The fake server proves each key
was used, and echoes the Authorization header, its token and the URL in its 400 (stored per item) and 401
(ends the run) error bodies; then every output of run, analyze, report, compare and export is scanned: each
text column of each table, the raw bytes of every file written (database and WAL included), the cells of
the Parquet exports, and everything printed.
"""

from __future__ import annotations

import base64
import logging
import secrets
from collections import Counter
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from typer.testing import CliRunner

from probe.cli import app
from probe.common.errors import RunFailed
from probe.common.redact import MASK
from tests.fake_openai_server import FakeOpenAIServer, Step
from tests.support import seeded_copy

ENV_KEY = f"sk-test-PLANTED-env-{secrets.token_hex(8)}"
URL_KEY = f"sk-test-PLANTED-url-{secrets.token_hex(8)}"
QUERY_KEY = f"PLANTED-query-{secrets.token_hex(8)}"
BASIC = base64.b64encode(f"user:{URL_KEY}".encode()).decode()
FORMS = (ENV_KEY, URL_KEY, QUERY_KEY, BASIC, "PLANTED")


def echoes_keys_for_multiple_questions(prompt: str, attempt: int) -> Step | None:
    """Some items fail with a 400 that quotes the credentials, so echoed keys reach stored errors."""
    return Step.echo_credentials(400) if "Who should be" in prompt else None


def cli(*args: str, exit_code: int = 0) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == exit_code, result.output
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
    # 6 of the 36 answers fail (the multiple-choice questions): above the default 10%, so allow more.
    run_toml.write_text('constrain = "grammar"\nmax_retries = 1\nbackoff = 0.01\nmax_failed_share = 0.5\n')
    printed = []
    run_ids = ("env-key", "url-key", "query-key")
    with FakeOpenAIServer(answer_by_hash=True, fault_plan=echoes_keys_for_multiple_questions) as server:
        url_with_key = server.base_url.replace("http://", f"http://user:{URL_KEY}@")
        url_with_query_key = f"{server.base_url}?api-key={QUERY_KEY}"
        for run_id, base_url in zip(run_ids, (server.base_url, url_with_key, url_with_query_key), strict=True):
            printed.append(
                cli(
                    "run",
                    "--backend",
                    "openai",
                    "--decoding",
                    "generate",
                    "--base-url",
                    base_url,
                    "--model",
                    "fake-model",
                    "--pairs",
                    "1",
                    "--occupations",
                    "nurse",
                    "--top-k",
                    "1",
                    "--config",
                    str(run_toml),
                    "--run-id",
                    run_id,
                    "--db",
                    str(db_file),
                )
            )
        authorizations = {(served.authorization or "").split()[0]: served.authorization for served in server.served}
        query_keys = {served.path.partition("?")[2] for served in server.served[-10:]}
        served_before = len(server.served)
        server.fault_plan = lambda prompt, attempt: Step.echo_credentials(401)  # every request: the key is rejected
        printed.append(  # the error line names host:port, not the key; exit 1; no request is retried
            cli(
                "run",
                "--backend",
                "openai",
                "--decoding",
                "generate",
                "--base-url",
                url_with_key,
                "--model",
                "other-model",
                "--pairs",
                "1",
                "--occupations",
                "nurse",
                "--top-k",
                "1",
                "--run-id",
                "rejected",
                "--db",
                str(db_file),
                "--quiet",
                exit_code=1,
            )
        )
        rejected_prompts = Counter(served.body["messages"][-1]["content"] for served in server.served[served_before:])
    assert authorizations == {"Bearer": f"Bearer {ENV_KEY}", "Basic": f"Basic {BASIC}"}  # both keys were used
    assert query_keys == {f"api-key={QUERY_KEY}"}  # the query key was sent, on the right path
    host = server.base_url.removeprefix("http://").removesuffix("/v1")
    assert printed[-1] == (
        f"error: {host}: AuthenticationError: Error code: 401 - invalid request "
        "/v1/chat/completions: Authorization: ***; token=***\n"
    )
    assert set(rejected_prompts.values()) == {1}
    con = duckdb.connect(str(db_file), read_only=True)
    statuses = dict(con.execute("SELECT run_id, status FROM runs").fetchall())
    base_urls = dict(con.execute("SELECT run_id, json_extract_string(config_json, '$.base_url') FROM runs").fetchall())
    echoed_errors = con.execute("SELECT DISTINCT error FROM answers WHERE error IS NOT NULL").fetchall()
    con.close()
    assert statuses == {"env-key": "complete", "url-key": "complete", "query-key": "complete", "rejected": "failed"}
    assert base_urls["query-key"] == f"{server.base_url}?api-key=***"
    assert base_urls["url-key"] == server.base_url.replace("http://", "http://***@")
    assert sorted(error for (error,) in echoed_errors) == [
        "BadRequestError: Error code: 400 - invalid request /v1/chat/completions: Authorization: ***; token=***",
        "BadRequestError: Error code: 400 - invalid request /v1/chat/completions?api-key=*** Authorization: ***; "
        "token=***",
    ]

    for run_id in run_ids:
        printed.append(cli("analyze", run_id, "--show", "--db", str(db_file)))
        printed.append(cli("report", run_id, "--db", str(db_file), "-o", str(tmp_path / run_id / "report.html")))
        for file_format in ("csv", "parquet"):
            printed.append(
                cli("export", run_id, "--format", file_format, "-o", str(tmp_path / run_id), "--db", str(db_file))
            )
    printed.append(cli("compare", "env-key", "url-key", "--db", str(db_file), "-o", str(tmp_path / "c.html")))

    written = sorted(path for path in tmp_path.rglob("*") if path.is_file())
    names = {path.relative_to(tmp_path).as_posix() for path in written}
    for run_id in run_ids:
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
    parquet_text = "".join(pd.read_parquet(path).astype(str).to_csv() for path in written if path.suffix == ".parquet")
    assert [form for form in FORMS if form in parquet_text] == []
    assert [form for form in FORMS if form in "".join(printed)] == []


def test_a_crash_prints_its_traceback_without_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError(f"unexpected reply: {{'authorization': 'Bearer {ENV_KEY}'}}")

    monkeypatch.setattr("probe.pipeline.connect_or_snapshot", crash)
    result = CliRunner().invoke(app, ["runs", "--db", "x.duckdb"])
    assert result.exit_code == 1
    assert "Traceback (most recent call last)" in result.output
    assert result.output.endswith("RuntimeError: unexpected reply: {'authorization': '***'}\n")
    assert ENV_KEY not in result.output


def test_debug_logs_of_the_http_client_hold_no_key(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from probe.backends.base import Query
    from probe.backends.openai_api import ApiSettings, OpenAIBackend
    from tests.support import YES_NO

    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="httpx")  # a tool run in-process before may have quieted httpx (Inspect AI)
    with FakeOpenAIServer() as server:
        server.script([Step.echo_credentials(401)])
        backend = OpenAIBackend(ApiSettings(model="m", base_url=f"{server.base_url}?api-key={QUERY_KEY}"))
        try:
            backend.answer([Query("a", "binary", "Is it?", "", "", YES_NO, {})])
        except RunFailed:
            pass
        finally:
            backend.close()
    assert f"chat/completions?api-key={MASK}" in caplog.text  # httpx logged the request URL, scrubbed
    assert [form for form in FORMS if form in caplog.text] == []
