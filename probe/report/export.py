"""`probe export`: a run's items and answers (and its adverse-impact table; a run over name sets' contests, people and
findings per contrast) as Parquet or CSV files (the other formats: probe/integrations/).

CSV cells that a spreadsheet would run as formulas (=, +, -, @, tab, CR first) get a leading `'`; Parquet
keeps the stored values exactly.
"""

from __future__ import annotations

from pathlib import Path

from probe.answering.runs import stored_run
from probe.common.errors import UserError
from probe.common.escape import atomic_path, csv_safe
from probe.store import db

EXPORT_FORMATS = ("parquet", "csv")
# The tables written, each in its order: items and answers always; the adverse-impact table of an analysed run, for
# a run over name sets its contests (each item's pair_id and subject slot -> the set, the person and the categories),
# a run's people once with their categories and (imported decisions) their decisions where it has them, and its
# findings per contrast and per category.
EXPORTED = {
    "items": "seq",
    "answers": "item_id",
    "adverse_impact": "condition, attribute, rate_kind, scope, key, category",
    "run_contests": "pair_id, slot, attribute",
    "run_people": "person_id",
    "run_person_categories": "person_id, attribute",
    "run_decisions": "person_id",
    "contrast_metrics": "condition, attribute, category_a, category_b, metric",
    "category_metrics": "condition, attribute, metric, category",
    "contrast_occupations": "condition, attribute, category_a, category_b, occupation",
    "contrast_robustness": "condition, attribute, category_a, category_b, metric, scope, key",
}


def export_run(db_path: Path, run_id: str, file_format: str, out_dir: Path) -> list[Path]:
    """Write the run's items and answers as items.<fmt> and answers.<fmt> under `out_dir`, and where the run has
    them adverse_impact.<fmt>, run_contests, run_people, run_person_categories and run_decisions.<fmt> where the run
    has them, and for a run over name sets contrast_metrics, category_metrics, contrast_occupations and
    contrast_robustness.<fmt>."""
    if file_format not in EXPORT_FORMATS:
        raise UserError(f"--format {file_format!r}: choose from {', '.join(EXPORT_FORMATS)}")
    con, _ = db.connect_or_snapshot(db_path)  # a run writing it: exported as of now, from a copy (as `probe runs`)
    try:
        if stored_run(con, run_id) is None:
            raise UserError(f"{run_id}: no such run in {db_path}")
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for table, order in EXPORTED.items():
            path = out_dir / f"{table}.{file_format}"
            frame = con.execute(f"SELECT * FROM {table} WHERE run_id = ? ORDER BY {order}", [run_id]).df()
            if frame.empty and table not in ("items", "answers"):
                continue
            with atomic_path(path) as temporary:  # whole or not at all
                if file_format == "csv":  # a cell like =HYPERLINK(...) must not run in a spreadsheet
                    csv_safe(frame).to_csv(temporary, index=False)
                else:
                    frame.to_parquet(temporary, index=False)
            written.append(path)
        return written
    finally:
        con.close()
