"""The name pairs a run asks about: the shipped list (`name_pairs`, taxonomy/name_pairs.csv) or a user's CSV.

A pair is one female and one male first name; its id is its row (1, 2, ...). `pairs` picks the first N or
named ids. A user's names are checked like every user string, and may not be an answer option.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb
import pandas as pd

from probe.common.errors import UserError
from probe.common.staging import ragged_line, stage_file
from probe.common.user_text import checked_text
from probe.common.vocabulary import ANSWER_WORDS
from probe.store.spec import Names


def select_name_pairs(
    con: duckdb.DuckDBPyConnection, spec: int | Sequence[int] | str | None, names: Names | str | Path | None = None
) -> pd.DataFrame:
    """Name pairs (pair_id, female, male) of the shipped list, or of a `names` CSV (pair ids = its rows 1..n).

    `spec`: N -> the first N, a list (or "1,4,9") -> those ids, None -> all.
    """
    if isinstance(spec, str):
        spec = _parse_pairs(spec)
    names = Names(Path(names)) if isinstance(names, str | Path) else names
    if names is None:
        every = con.execute("SELECT pair_id, female, male FROM name_pairs ORDER BY pair_id").df()
    elif names.sets:
        raise UserError(
            f"--names {names}: name sets (set_id, name, ...) are asked by probe run; here give name "
            "pairs (columns female, male)"
        )
    else:
        every = read_names_csv(con, names.path)
    total = len(every)
    if spec is None:
        return every
    if isinstance(spec, int) and not isinstance(spec, bool):
        if not 1 <= spec <= total:
            raise UserError(f"pairs: {spec} is not a number of pairs from 1 to {total}")
        return every.head(spec)
    ids = list(dict.fromkeys(spec))
    if not ids:
        raise UserError("pairs: no pair ids given")
    unknown = sorted(set(ids) - set(every["pair_id"]))
    if unknown:
        raise UserError(f"pairs: no name pair with id {unknown[0]} (ids run from 1 to {total})")
    return every[every["pair_id"].isin(ids)].reset_index(drop=True)


def read_names_csv(con: duckdb.DuckDBPyConnection, path: Path) -> pd.DataFrame:
    """A user's name pairs: columns female and male, one pair a row; pair_id is the row number (1, 2, ...).

    Names are validated like every user string (NFC, no invisible characters); a pair needs two different
    names and may appear once. Errors name the file and line.
    """
    ragged_line(path, ",", str(path))  # a row of one name: its line, not DuckDB's sniffing failure
    stage_file(con, path, "_staging_names", {"female": "female", "male": "male"}, delimiter=",", label=str(path))
    try:
        rows = con.execute("SELECT line, female, male FROM _staging_names ORDER BY line").fetchall()
    finally:
        con.execute("DROP TABLE IF EXISTS _staging_names")
    pairs: list[tuple[int, str, str]] = []
    seen: dict[tuple[str, str], int] = {}
    for line, female, male in rows:
        where = f"{path} line {line}"
        for column, value in (("female", female), ("male", male)):
            if value is None or not value.strip():
                raise UserError(f"{where}: empty {column} name")
        female, male = checked_text(female.strip(), where), checked_text(male.strip(), where)
        for name in (female, male):
            if name.casefold() in ANSWER_WORDS:  # NFC already (checked_text)
                raise UserError(
                    f"{where}: the name {name!r} is an answer option ({', '.join(ANSWER_WORDS)}): a reply "
                    "naming it could not be told from the option; choose another name"
                )
        if female.casefold() == male.casefold():
            raise UserError(f"{where}: the female and male names are the same ({female!r})")
        key = (female.casefold(), male.casefold())
        if key in seen:
            raise UserError(f"{where}: the pair {female}/{male} is already on line {seen[key]}")
        seen[key] = line
        pairs.append((len(pairs) + 1, female, male))
    return pd.DataFrame(pairs, columns=["pair_id", "female", "male"])


def _parse_pairs(text: str) -> int | list[int]:
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts or not all(part.isdigit() for part in parts):
        raise UserError(f"pairs: {text!r} is neither a number N nor a comma list of pair ids like 1,4,9")
    numbers = [int(part) for part in parts]
    return numbers[0] if len(numbers) == 1 and "," not in text else numbers
