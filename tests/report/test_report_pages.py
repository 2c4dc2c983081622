"""The report's pages in headless Chromium, user strings escaped in HTML, and an analysis stored before the report's
tables redone once (kappa's worked example: tests/compare/test_agreement.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest

from probe import compare, report
from probe.pipeline.analysed import ensure_analysed
from probe.store import db
from tests.report.test_report import CHROMIUM, CONDITIONS, PAIRS


def _chromium(html: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            "--enable-logging=stderr",
            "--v=0",
            *extra,
            html.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.skipif(not CHROMIUM.exists(), reason="headless Chromium not installed (apt-get install chromium)")
def test_pages_render_in_headless_chromium_without_console_errors(
    written: report.ReportFiles, compared: Path, tmp_path: Path
) -> None:
    for page in (written.html, compared):
        shot = tmp_path / f"{page.stem}.png"
        rendered = _chromium(page, tmp_path, "--window-size=1280,2400", f"--screenshot={shot}")
        assert rendered.returncode == 0, rendered.stderr[-2000:]
        assert shot.stat().st_size > 50_000  # a blank page is a few kB
        console_errors = [line for line in rendered.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
        assert console_errors == []
        dom = _chromium(page, tmp_path, "--dump-dom")
        assert dom.returncode == 0 and "</main>" in dom.stdout


def test_html_pages_escape_user_strings(runs_db_file: Path, tmp_path: Path) -> None:
    """A hostile model id reaches the pages as text, never as markup (the .html.j2 templates autoescape)."""
    hostile = '<img src=x onerror="alert(1)">'
    con = db.connect(runs_db_file)
    try:
        con.execute("UPDATE runs SET model = ? WHERE run_id = 'steady'", [hostile])
        ensure_analysed(con, "steady")
        ensure_analysed(con, "first")
        documents = report.summary(con, "steady"), compare.compare_summary(con, ["steady", "first"])
        pages = [report.render_report(documents[0])[0], report.render_comparison(documents[1])[0]]
    finally:
        con.close()
    for html in pages:
        assert hostile not in html
        assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in html
        assert "<style>" in html and "&lt;style" not in html  # the page's own stylesheet stays markup


def test_an_analysis_stored_before_the_tables_the_report_reads_is_redone_once(runs_db_file: Path) -> None:
    """The report and compare read pair_shares and instance_metrics; an analysis stored without them is redone (once,
    with the same numbers), never read as a report without its pairs."""
    con = db.connect(runs_db_file)
    try:
        assert ensure_analysed(con, "steady")
        before = con.execute("SELECT * FROM pair_shares WHERE run_id = 'steady' ORDER BY condition, pair_id").df()
        assert not ensure_analysed(con, "steady")
        con.execute("DELETE FROM pair_shares WHERE run_id = 'steady'")
        con.execute("DELETE FROM instance_metrics WHERE run_id = 'steady'")
        assert ensure_analysed(con, "steady")
        after = con.execute("SELECT * FROM pair_shares WHERE run_id = 'steady' ORDER BY condition, pair_id").df()
        assert not ensure_analysed(con, "steady")
    finally:
        con.close()
    assert len(before) == PAIRS * len(CONDITIONS)
    pd.testing.assert_frame_equal(before, after)
