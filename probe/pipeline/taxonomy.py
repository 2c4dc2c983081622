"""`probe taxonomy import | show | search`: the O*NET store's flows, each returning what the CLI prints."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from probe.store.db import connect
from probe.taxonomy import occupations, onet_import


@dataclass(frozen=True)
class OccupationAttributes:
    """An occupation as `probe taxonomy show` prints it: its curated row, its top attributes, the O*NET release."""

    occupation: pd.Series  # occupation, soc_code, onet_title, note
    attributes: pd.DataFrame  # category, rank, element_name, importance, level
    release: str | None


def import_release(db: Path | str, path: Path) -> dict[str, object]:
    """Replace the O*NET ratings and titles with a release, all or nothing; returns its counts."""
    con = connect(db)
    try:
        return onet_import.import_release(con, path)
    finally:
        con.close()


def show(db: Path | str, occupation: str, top_k: int) -> OccupationAttributes:
    """A curated occupation, O*NET-SOC code or title with its top `top_k` attributes per category."""
    con = connect(db)
    try:
        chosen = occupations.resolve_occupations(con, [occupation])
        attributes = occupations.top_attributes(con, chosen, top_k)
        release = con.execute("SELECT release FROM onet_release").fetchall()
    finally:
        con.close()
    return OccupationAttributes(chosen.iloc[0], attributes, release[0][0] if release else None)


def search(db: Path | str, text: str, limit: int) -> pd.DataFrame:
    """O*NET titles and alternate titles containing `text` (occupations.search)."""
    con = connect(db)
    try:
        return occupations.search(con, text, limit)
    finally:
        con.close()
