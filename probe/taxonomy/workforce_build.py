"""`python -m probe.taxonomy.workforce_build CPSAAT11.csv CROSSWALK.csv`: taxonomy/workforce.csv (maintainers only).

Who does each job: the US BLS Current Population Survey annual averages, Table 11 ("Employed persons by detailed
occupation, sex, race, and Hispanic or Latino ethnicity"; a US government work, public domain), mapped to the
shipped O*NET-SOC codes through the Census Bureau's 2018 occupation code list and its SOC 2018 crosswalk. The
sources (repository, commit, year) are in taxonomy/README.md. Nothing here runs at probe time: the database is
seeded from the csv this writes (probe/store/snapshot.py).

Rules:
- a Table 11 row is a Census 2018 occupation when its title is a title of the crosswalk (whitespace and case
  aside; TITLE_ALIASES for the spellings that differ); the other rows (totals, major groups, the note) are left out;
- a Census occupation covers the O*NET-SOC codes its SOC code names: a detailed code (11-1011) its O*NET codes
  (11-1011.00, 11-1011.03); an aggregated code (broad 11-2030, minor 25-1000, or with X: 13-20XX, 15-124X) every
  O*NET code under that prefix (11-203, 25-1, 13-20, 15-124) that no more specific Census occupation claims: the
  longest prefix wins, so "Other physicians" (29-12XX) keeps the physicians that have no row of their own;
- a dash in Table 11 (fewer than 50,000 employed: BLS does not publish the shares) stays empty, never 0.
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import pandas as pd

from probe.common.resources import resource_dir
from probe.store.snapshot import WORKFORCE_COLUMNS

YEAR = 2022
SHARE_COLUMNS = tuple(WORKFORCE_COLUMNS)[5:]
# Table 11 title -> crosswalk title, where the two spell one Census occupation differently.
TITLE_ALIASES = {
    "embalmers, crematory operators, and funeral attendants": "embalmers, crematory operators and funeral attendants",
}
TABLE_HEADER_LINES = 8  # the BLS heading, units, the two-line column heading and blank lines before the data
EN_DASH = "\u2013"  # what BLS prints where it publishes no estimate


def _title_key(title: str) -> str:
    key = re.sub(r"\s+", " ", title).strip().lower()
    return TITLE_ALIASES.get(key, key)


def _number(text: str) -> float | None:
    """A Table 11 cell: thousands separators dropped; a dash (not published) is None."""
    cleaned = text.replace(",", "").strip()
    return None if cleaned in ("", EN_DASH, "-") else float(cleaned)


def read_table11(path: Path) -> pd.DataFrame:
    """source_title, employed_thousands and the five shares of each data row of a Table 11 CSV."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))[TABLE_HEADER_LINES:]
    records = [
        (row[0].strip(), *(_number(cell) for cell in row[1:7]))
        for row in rows
        if row and row[0].strip() and len(row) >= 7 and row[1].strip()
    ]
    return pd.DataFrame(records, columns=["source_title", "employed_thousands", *SHARE_COLUMNS])


def read_crosswalk(path: Path) -> pd.DataFrame:
    """title, census_code, soc_pattern of the Census 2018 code list (rows with a SOC code)."""
    table = pd.read_csv(path, dtype=str)
    table.columns = ["title", "census_code", "soc_pattern"]
    table = table[table["soc_pattern"].str.match(r"^\d\d-[\dX]{4}$")].copy()
    table["title_key"] = table["title"].map(_title_key)
    return table


def soc_prefix(pattern: str) -> str:
    """The O*NET-SOC prefix a SOC code covers: detailed 11-1011 itself, 11-2030 -> 11-203, 13-20XX -> 13-20."""
    if pattern.endswith("X"):
        return pattern.rstrip("X")
    return pattern.rstrip("0")


def map_to_onet(table11: pd.DataFrame, crosswalk: pd.DataFrame, onet_codes: list[str]) -> pd.DataFrame:
    """One row per O*NET-SOC code a Census occupation of Table 11 covers (the longest SOC prefix wins)."""
    joined = table11.assign(title_key=table11["source_title"].map(_title_key)).merge(
        crosswalk[["title_key", "census_code", "soc_pattern"]], on="title_key", how="inner"
    )
    prefixes = {soc_prefix(p): row for p, row in zip(joined["soc_pattern"], joined.index, strict=True)}
    matched = []
    for code in onet_codes:
        candidates = [prefix for prefix in prefixes if code.startswith(prefix)]
        if candidates:
            matched.append((code, prefixes[max(candidates, key=len)]))
    rows = joined.loc[[index for _, index in matched]].reset_index(drop=True)
    rows.insert(0, "soc_code", [code for code, _ in matched])
    rows["year"] = YEAR
    return rows[list(WORKFORCE_COLUMNS)].sort_values("soc_code", kind="stable").reset_index(drop=True)


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        raise SystemExit("usage: python -m probe.taxonomy.workforce_build CPSAAT11.csv CROSSWALK.csv")
    taxonomy = resource_dir("taxonomy")
    onet_codes = sorted(pd.read_parquet(taxonomy / "onet_occupations.parquet")["soc_code"])
    table = map_to_onet(read_table11(Path(argv[0])), read_crosswalk(Path(argv[1])), onet_codes)
    table.to_csv(taxonomy / "workforce.csv", index=False, float_format="%g")
    print(f"{len(table)} O*NET-SOC codes, {table['pct_women'].notna().sum()} with a share of women")


if __name__ == "__main__":
    main(sys.argv[1:])
