"""`probe export`: a run's items and answers as Parquet or CSV files."""

from __future__ import annotations

from pathlib import Path

from probe import db
from probe.errors import UserError
from probe.runs import stored_run

EXPORT_FORMATS = ("parquet", "csv")


def export_run(db_path: Path, run_id: str, file_format: str, out_dir: Path) -> list[Path]:
    """Write the run's items and answers as items.<fmt> and answers.<fmt> under `out_dir`."""
    if file_format not in EXPORT_FORMATS:
        raise UserError(f"--format {file_format!r}: choose from {', '.join(EXPORT_FORMATS)}")
    con = db.connect(db_path, read_only=True)
    try:
        if stored_run(con, run_id) is None:
            raise UserError(f"{run_id}: no such run in {db_path}")
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for table in ("items", "answers"):
            path = out_dir / f"{table}.{file_format}"
            order = "seq" if table == "items" else "item_id"
            frame = con.execute(f"SELECT * FROM {table} WHERE run_id = ? ORDER BY {order}", [run_id]).df()
            if file_format == "csv":
                frame.to_csv(path, index=False)
            else:
                frame.to_parquet(path, index=False)
            written.append(path)
        return written
    finally:
        con.close()
