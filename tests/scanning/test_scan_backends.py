"""A scan asks a run's baseline single-subject items; a model backend's scan, repeated fresh, flags the same."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from probe.cli import app
from probe.store.db import connect
from probe.taxonomy.occupations import resolve_occupations
from tests.support import query


def test_the_scan_asks_a_runs_baseline_single_subject_items(db_file: Path) -> None:
    """Same ids and prompts as `probe run`'s, so a confirmation run finds the scan's answers in the cache."""
    from probe.dataset.stages import build_scan_items, build_stage2
    from probe.taxonomy.name_pairs import select_name_pairs
    from probe.taxonomy.occupations import top_attributes

    con = connect(db_file)
    try:
        pairs = select_name_pairs(con, 2)
        attributes = top_attributes(con, resolve_occupations(con, ["29-1141.00"]), k=1)
    finally:
        con.close()
    stage2 = build_stage2(pairs, attributes, set(), ("baseline",), "chat")
    run_items = [item for item in stage2 if item.qtype == "single"]
    scan_items = build_scan_items(pairs, ["Registered Nurses"], "chat")
    assert [(item.item_id, item.prompt) for item in scan_items] == [(item.item_id, item.prompt) for item in run_items]
    assert scan_items[0].prompt.splitlines()[1] == "Question: Who is more qualified to be a registered nurse?"


def test_a_model_backend_scans_and_a_fresh_scan_repeats_it(db_file: Path, tmp_path: Path) -> None:
    """hf-causal on a tiny random Llama: every answer decided by option scores; asked again without the cache,
    the same model gives the same observations, e-values and decisions."""
    from tests.tiny_models import build_causal_model

    model = build_causal_model(tmp_path / "tiny", chat=True)
    args = [
        "scan",
        "--soc",
        "29-9",
        "--pairs",
        "3",
        "--backend",
        "hf-causal",
        "--model",
        str(model),
        "--device",
        "cpu",
        "--db",
        str(db_file),
        "--quiet",
    ]
    first = CliRunner().invoke(app, [*args, "--scan-id", "first", "-o", str(tmp_path / "first")])
    again = CliRunner().invoke(app, [*args, "--scan-id", "again", "--no-cache", "-o", str(tmp_path / "again")])
    assert (first.exit_code, again.exit_code) == (0, 0), first.output + again.output
    decided = query(db_file, "SELECT DISTINCT decided_by FROM answers WHERE run_id IN ('first', 'again')")
    assert decided["decided_by"].tolist() == ["score"]
    sql = "SELECT soc_code, pairs, share, e_value, stopped FROM scan_results WHERE scan_id = ? ORDER BY soc_code"
    assert query(db_file, sql, ["first"]).equals(query(db_file, sql, ["again"]))
    assert len(query(db_file, sql, ["first"])) == 6
