"""The occupations a run asks about (curated, O*NET or a CSV), their top-k attributes, and search over titles.

Reads the tables of DESIGN.md section 4: `attribute_ratings` (one row per O*NET-SOC code, category and
element, with importance IM 1-5 and level LV 0-7), `occupations` (the curated occupations of
taxonomy/occupations.csv) and `occupation_attributes` (their top-k per category); the name pairs: name_pairs.py.
`onet_occupations` and `onet_alternate_titles` hold all 1,016 O*NET titles for search. They are filled by
probe.store.snapshot (a new database) and probe.taxonomy.onet_import (another release).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import duckdb
import pandas as pd

from probe.common.errors import UserError
from probe.common.staging import first_row
from probe.common.user_text import checked_text
from probe.common.vocabulary import CATEGORIES
from probe.store.snapshot import (
    DEFAULT_TOP_K,
    OCCUPATIONS_CSV_COLUMNS,
    TOP_ATTRIBUTES_SQL,
    read_occupations_csv,
)

SOC_CODE = re.compile(r"^\d{2}-\d{4}\.\d{2}$")


def top_attributes(con: duckdb.DuckDBPyConnection, occupations: pd.DataFrame, k: int = DEFAULT_TOP_K) -> pd.DataFrame:
    """Top-k skills, knowledge areas and abilities of each occupation (columns occupation, soc_code).

    Ranked by importance, ties by level (higher first), then element name. Rows are ordered by occupation,
    category (skill, knowledge, ability) and rank.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise UserError(f"top-k must be a positive whole number, got {k!r}")
    con.register("_requested_occupations", occupations[["occupation", "soc_code"]])
    try:
        sql = TOP_ATTRIBUTES_SQL.format(occupations="_requested_occupations")
        return con.execute(sql, {"k": k, "categories": list(CATEGORIES)}).df()
    finally:
        con.unregister("_requested_occupations")


def resolve_occupations(con: duckdb.DuckDBPyConnection, spec: str | Path | Sequence[str] | None) -> pd.DataFrame:
    """The occupations to probe (columns occupation, soc_code, onet_title, note).

    None: the curated occupations. A Path, or a string ending in .csv or naming a file: a user's occupations
    CSV. A sequence of names (or a comma-separated string): those curated occupations; an O*NET-SOC code or
    an exact O*NET title with ratings is accepted too and keeps its O*NET title as the occupation name.
    """
    if spec is None:
        return con.execute("SELECT occupation, soc_code, onet_title, note FROM occupations ORDER BY occupation").df()
    if isinstance(spec, Path) or (isinstance(spec, str) and (spec.lower().endswith(".csv") or Path(spec).is_file())):
        return read_occupations_csv(con, Path(spec))
    given = spec.split(",") if isinstance(spec, str) else spec
    names = [checked_text(name.strip(), "--occupations") for name in given if name.strip()]
    if not names:
        raise UserError("no occupations given")
    rows = [_lookup_occupation(con, name) for name in dict.fromkeys(names)]
    return pd.DataFrame(rows, columns=list(OCCUPATIONS_CSV_COLUMNS))


def _lookup_occupation(con: duckdb.DuckDBPyConnection, name: str) -> tuple:
    curated = first_row(
        con,
        "SELECT occupation, soc_code, onet_title, note FROM occupations WHERE lower(occupation) = lower(?)",
        [name],
    )
    if curated:
        return curated
    onet = first_row(
        con,
        """SELECT title, soc_code, title, 'O*NET occupation given directly',
                  EXISTS (SELECT 1 FROM attribute_ratings r WHERE r.soc_code = o.soc_code)
           FROM onet_occupations o WHERE soc_code = ? OR lower(title) = lower(?)""",
        [name, name],
    )
    if onet and onet[4]:
        return onet[:4]
    if onet:
        raise UserError(
            f"occupation {name!r}: {onet[1]} ({onet[2]}) has no skill, knowledge or ability ratings "
            f"in O*NET; `probe taxonomy search` shows related codes that have them"
        )
    kind = "O*NET-SOC code" if SOC_CODE.match(name) else "occupation"
    raise UserError(
        f"unknown {kind} {name!r}: not a curated occupation or O*NET title; "
        f"try `probe taxonomy search {name.split()[0]}` and pass a code or an occupations CSV"
    )


def search(con: duckdb.DuckDBPyConnection, text: str, limit: int = 20) -> pd.DataFrame:
    """O*NET occupations whose title or an alternate title contains every word of `text`.

    One row per code, with the title or alternate title that matched best: exact matches first, then
    prefix matches, then other matches; titles before alternate titles, then curated and rated codes
    first. Columns soc_code, title,
    matched_title, match (exact/prefix/contains/words), has_ratings, curated_as (curated occupations
    mapped to the code).
    """
    words = text.lower().split()
    if not words:
        raise UserError("search text is empty")
    if limit < 1:
        raise UserError(f"search limit must be at least 1, got {limit}")
    query = " ".join(words)
    word_filter = " AND ".join(f"contains(lower(matched_title), $word{i})" for i in range(len(words)))
    return con.execute(
        f"""WITH titles AS (
                SELECT soc_code, title AS matched_title, 0 AS is_alternate FROM onet_occupations
                UNION ALL
                SELECT soc_code, alternate_title, 1 FROM onet_alternate_titles
            ), matches AS (
                SELECT soc_code, matched_title, is_alternate,
                       CASE WHEN lower(matched_title) = $query THEN 0
                            WHEN starts_with(lower(matched_title), $query) THEN 1
                            WHEN contains(lower(matched_title), $query) THEN 2
                            ELSE 3 END AS match_rank
                FROM titles WHERE {word_filter}
                QUALIFY row_number() OVER (
                    PARTITION BY soc_code
                    ORDER BY match_rank, is_alternate, length(matched_title), matched_title
                ) = 1
            )
            , rated AS (SELECT DISTINCT soc_code FROM attribute_ratings)
            , curated AS (
                SELECT soc_code, string_agg(occupation, ', ' ORDER BY occupation) AS curated_as
                FROM occupations GROUP BY soc_code
            )
            SELECT m.soc_code, o.title, m.matched_title,
                   ['exact', 'prefix', 'contains', 'words'][m.match_rank + 1] AS match,
                   r.soc_code IS NOT NULL AS has_ratings, c.curated_as
            FROM matches m
            JOIN onet_occupations o USING (soc_code)
            LEFT JOIN rated r USING (soc_code)
            LEFT JOIN curated c USING (soc_code)
            ORDER BY m.match_rank, m.is_alternate, c.curated_as IS NULL, r.soc_code IS NULL, o.title
            LIMIT $limit""",
        {**{f"word{i}": word for i, word in enumerate(words)}, "query": query, "limit": limit},
    ).df()
