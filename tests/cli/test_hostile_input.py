"""Hostile strings in every user field come out as text: in the terminal, in CSV exports, and in report.html
as rendered by a real headless Chromium (no script runs, no element is injected).

The occupations come from a custom occupations CSV, the names from --names and the model id from --model,
each carrying HTML
(`<img onerror>`, `<script>`), rich markup (`[bold red]x[/`) and a spreadsheet formula. A payload that ran
would mark the page's <body> with a data-pwned attribute, or add an <img src="x"> or a <script> element.
The run id allows no markup characters (`[A-Za-z0-9][A-Za-z0-9._-]{0,63}`): one with all of its
punctuation is used.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from probe.cli import app
from tests.fake_openai_server import FakeOpenAIServer
from tests.support import query, seeded_copy

CHROMIUM = Path("/usr/bin/chromium")
IMG = "<img src=x onerror=\"document.body.setAttribute('data-pwned','img')\">"
SCRIPT = "<script>document.body.setAttribute('data-pwned','script')</script>"
OCCUPATIONS = {
    f"{IMG} [bold red]x[/": "13-2011.00",  # accountant's O*NET code
    f'=HYPERLINK("http://x")[/] {SCRIPT}': "17-1011.00",  # architect's
}
MODEL = f"{SCRIPT}{IMG}[link=http://x]m[/link]"
NAMES = {"female": [f"Ann{IMG}", "@Zo\u00eb"], "male": [f"Bo{SCRIPT}", "+Li [bold]x[/"]}
RUN_ID = "a.b_c-D9"


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "400"})  # tables wide enough for whole names
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result.output


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("hostile")
    db_file = seeded_copy(tmp / "seed.duckdb", tmp / "probe.duckdb")
    occupations = tmp / "occupations.csv"
    pd.DataFrame({"occupation": list(OCCUPATIONS), "soc_code": list(OCCUPATIONS.values())}).to_csv(
        occupations, index=False
    )
    names = tmp / "names.csv"
    pd.DataFrame(NAMES).to_csv(names, index=False)
    run_toml = tmp / "RUN.toml"
    run_toml.write_text('constrain = "grammar"\n')
    with FakeOpenAIServer(answer_by_hash=True) as server:
        printed = cli(
            "run",
            "--backend",
            "openai",
            "--decoding",
            "generate",
            "--base-url",
            server.base_url,
            "--model",
            MODEL,
            "--names",
            str(names),
            "--occupations",
            str(occupations),
            "--top-k",
            "1",
            "--conditions",
            "taxonomy",
            "--config",
            str(run_toml),
            "--run-id",
            RUN_ID,
            "--db",
            str(db_file),
            "--report",
        )
    printed += cli("runs", "--db", str(db_file))
    printed += cli("analyze", RUN_ID, "--show", "--db", str(db_file))
    printed += cli("export", RUN_ID, "--format", "csv", "-o", str(tmp / "export"), "--db", str(db_file))
    return db_file, printed


def test_markup_in_names_is_printed_as_typed(hostile_run: tuple[Path, str]) -> None:
    db_file, printed = hostile_run
    stored = query(db_file, "SELECT DISTINCT occupation FROM items WHERE occupation IS NOT NULL ORDER BY ALL")
    assert stored["occupation"].tolist() == sorted(OCCUPATIONS)
    pairs = query(db_file, "SELECT female, male FROM run_name_pairs ORDER BY pair_id")
    assert pairs.to_dict("list") == NAMES
    assert "[link=http://x]m[/link]" in printed  # the model id in the `probe runs` table
    searched = cli("taxonomy", "search", "[bold red]x[/ :smile:", "--db", str(db_file))
    assert searched == "no O*NET title or alternate title contains '[bold red]x[/ :smile:'\n"


def test_csv_export_neutralises_formulas(hostile_run: tuple[Path, str]) -> None:
    db_file, _ = hostile_run
    items = pd.read_csv(db_file.parent / "export" / "items.csv", keep_default_na=False)
    formulas = sorted({o for o in items["occupation"] if "HYPERLINK" in o})
    assert formulas == ["'" + next(name for name in OCCUPATIONS if name.startswith("="))]
    assert set(items["first_name"]) == {f"Ann{IMG}", f"Bo{SCRIPT}", "'@Zo\u00eb", "'+Li [bold]x[/"}


def _chromium(page: Path, tmp_path: Path) -> subprocess.CompletedProcess:
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
            "--virtual-time-budget=2000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.skipif(not CHROMIUM.exists(), reason="headless Chromium not installed (apt-get install chromium)")
def test_report_shows_hostile_names_as_text_in_chromium(hostile_run: tuple[Path, str], tmp_path: Path) -> None:
    db_file, _ = hostile_run
    page = db_file.parent / RUN_ID / "report.html"
    source = page.read_text(encoding="utf-8")
    assert "&lt;script&gt;document.body" in source and "&lt;img src=x onerror" in source  # there, as text
    rendered = _chromium(page, tmp_path)
    assert rendered.returncode == 0, rendered.stderr[-2000:]
    dom = rendered.stdout
    assert "</main>" in dom  # the page rendered
    assert re.search(r"<body[^>]*data-pwned", dom) is None  # no payload ran
    assert '<img src="x"' not in dom and "<script>document.body" not in dom  # none was injected
    assert dom.count("<script") == source.count("<script")  # only the page's own scripts
    assert "&lt;script&gt;document.body.setAttribute" in dom  # the model id is shown as text


def test_markdown_summary_renders_hostile_names_as_text(hostile_run: tuple[Path, str]) -> None:
    """CommonMark passes raw HTML through: an unescaped name would become an element."""
    from markdown_it import MarkdownIt

    db_file, _ = hostile_run
    html = MarkdownIt("commonmark").render((db_file.parent / RUN_ID / "report.md").read_text(encoding="utf-8"))
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;document.body.setAttribute('data-pwned','script')&lt;/script&gt;" in html
