"""Imported decisions (DESIGN.md section 11): decisions someone else made about people in matched sets - a resume
screener's picks, a vendor's scores, a published study's rankings - read into a run of backend 'decisions', so the
adverse-impact table, the report, the gates, compare and the exports treat them as they treat a probed run.

A decisions file (CSV or Parquet) has one row per person and set: `set_id` (a positive whole number), `name`, one
column per attribute (sex, race_ethnicity, ...; every column not named below), and `selected` (0/1) or `rank`
(1 = top: selected = ranked first), with optional `job` (or `occupation`), `score` and `source`. An empty decision
is an unknown; an empty attribute value an unknown category. Columns are found by their names, which are never SQL:
the people go to run_people / run_person_categories (with more than one attribute also their intersection,
'sex x race_ethnicity', as name sets do) and the decisions to run_decisions, all as parameters.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd

from probe.common.errors import UserError
from probe.common.staging import check_utf8
from probe.common.user_text import checked_text
from probe.common.version import __version__
from probe.common.vocabulary import COMPLETE, DECISIONS_BACKEND
from probe.store import db
from probe.taxonomy.name_sets import JOINT

DECISION_OUTCOMES = ("selected", "rank")  # one of them: the decision
JOB_COLUMNS = ("job", "occupation")  # at most one of them
KNOWN_COLUMNS = ("set_id", "name", *DECISION_OUTCOMES, *JOB_COLUMNS, "score", "source")
PEOPLE_COLUMNS = ["person_id", "set_id", "name", "job", "selected", "rank", "score", "source"]
_TRUE, _FALSE = ("1", "true", "yes"), ("0", "false", "no")


@dataclass(frozen=True)
class Decisions:
    """A decisions file read and checked: one row per person (PEOPLE_COLUMNS), their categories (person_id,
    attribute, category; none where the category is unknown), the attributes in file order, and what it is."""

    people: pd.DataFrame
    categories: pd.DataFrame
    attributes: list[str]
    outcome: str  # 'selected' or 'rank'
    source: str  # the file (or folder) it came from, for the run record and the LL144 summary
    period: str | None = None  # when the decisions were made, as the LL144 summary states it


def read_decisions(path: Path) -> Decisions:
    """A decisions CSV or Parquet file, every value checked; errors name the file, the line (Parquet: the row) and
    the column."""
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    header, rows = _parquet_rows(path) if path.suffix.lower() == ".parquet" else _csv_rows(path)
    return decisions_from_rows(header, rows, str(path))


def _csv_rows(path: Path) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The header and (where, cells) per data row; `where` names the file's line."""
    check_utf8(path, str(path))
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if not header or not any(cell.strip() for cell in header):
            raise UserError(f"{path}: empty file, expected a header row")
        rows = []
        for cells in reader:
            if not any(cell.strip() for cell in cells):
                continue
            if len(cells) != len(header):
                raise UserError(f"{path} line {reader.line_num}: {len(cells)} fields, the header has {len(header)}")
            rows.append((f"{path} line {reader.line_num}", cells))
    return [name.strip() for name in header], rows


def _parquet_rows(path: Path) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """A Parquet file's cells as the text a CSV would hold (missing = empty); `where` names the row."""
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow's errors have no common base beyond Exception
        raise UserError(f"{path}: cannot read it as Parquet ({str(exc).splitlines()[0]})") from exc
    return [str(column).strip() for column in frame.columns], [
        (f"{path} row {index + 1}", [_cell_text(value) for value in values])
        for index, values in enumerate(frame.itertuples(index=False, name=None))
    ]


def _cell_text(value: object) -> str:
    if value is None or (pd.api.types.is_scalar(value) and pd.isna(value)):  # None, NaN, pd.NA, NaT
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def decisions_from_rows(header: list[str], rows: list[tuple[str, list[str]]], source: str) -> Decisions:
    """Check a decisions table (header, then per row where it is and its cells) and build its people."""
    _check_header(header, source)
    outcome = next(column for column in DECISION_OUTCOMES if column in header)
    job_column = next((column for column in JOB_COLUMNS if column in header), None)
    attributes = [column for column in header if column not in KNOWN_COLUMNS]
    people, categories, seen, jobs = [], [], {}, {}
    for person_id, (where, cells) in enumerate(rows, start=1):
        values = {column: text.strip() for column, text in zip(header, cells, strict=True)}
        set_text, name = values["set_id"], values["name"]
        if not set_text.isdigit() or int(set_text) < 1:
            raise UserError(f"{where}, column set_id: {set_text!r} is not a positive whole number")
        if not name:
            raise UserError(f"{where}, column name: empty")
        set_id, name = int(set_text), checked_text(name, f"{where}, column name")
        if (set_id, name.casefold()) in seen:
            raise UserError(
                f"{where}, column name: {name!r} is already in set {set_id} ({seen[set_id, name.casefold()]})"
            )
        seen[set_id, name.casefold()] = where
        job = checked_text(values[job_column], f"{where}, column {job_column}") or None if job_column else None
        if jobs.setdefault(set_id, job) != job:
            raise UserError(
                f"{where}, column {job_column}: set {set_id} is already for job {jobs[set_id]!r} (a set is "
                "one decision about one job)"
            )
        levels = [checked_text(values[attribute], f"{where}, column {attribute}") or None for attribute in attributes]
        people.append(
            {
                "person_id": person_id,
                "set_id": set_id,
                "name": name,
                "job": job,
                "selected": _selected(values.get("selected", ""), where),
                "rank": _rank(values.get("rank", ""), where),
                "score": _score(values.get("score", ""), where),
                "source": checked_text(values.get("source", ""), f"{where}, source") or None,
            }
        )
        categories += [
            (person_id, attribute, level)
            for attribute, level in zip(attributes, levels, strict=True)
            if level is not None
        ]
        if len(attributes) > 1 and None not in levels:
            categories.append((person_id, JOINT.join(attributes), JOINT.join(levels)))
    if not people:
        raise UserError(f"{source}: no data rows, only a header")
    frame = pd.DataFrame(people, columns=PEOPLE_COLUMNS)
    if outcome == "rank":
        frame["selected"] = frame["rank"].map(lambda rank: None if pd.isna(rank) else bool(rank == 1))
    return Decisions(
        frame, pd.DataFrame(categories, columns=["person_id", "attribute", "category"]), attributes, outcome, source
    )


def _check_header(header: list[str], source: str) -> None:
    where = f"{source} line 1 (header)"
    for column in header:
        if not column:
            raise UserError(f"{where}: a column without a name")
        checked_text(column, where)
    doubled = sorted({column for column in header if header.count(column) > 1})
    if doubled:
        raise UserError(f"{where}: column {doubled[0]!r} appears twice")
    for needed in ("set_id", "name"):
        if needed not in header:
            raise UserError(
                f"{where}: missing column {needed!r} (a decisions file has set_id, name, one column per "
                "attribute and selected or rank)"
            )
    outcomes = [column for column in DECISION_OUTCOMES if column in header]
    if len(outcomes) != 1:
        raise UserError(
            f"{where}: give exactly one of the columns selected (0/1) or rank (1 = top), found {len(outcomes)}"
        )
    if all(column in header for column in JOB_COLUMNS):
        raise UserError(f"{where}: give job or occupation, not both")
    if not [column for column in header if column not in KNOWN_COLUMNS]:
        raise UserError(
            f"{where}: no attribute column (sex, race_ethnicity, ...) besides "
            f"{', '.join(column for column in KNOWN_COLUMNS if column in header)}"
        )


def _selected(text: str, where: str) -> bool | None:
    if not text:
        return None
    if text.casefold() in _TRUE or text.casefold() in _FALSE:
        return text.casefold() in _TRUE
    raise UserError(f"{where}, column selected: {text!r} is not 0 or 1 (empty: unknown)")


def _rank(text: str, where: str) -> int | None:
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise UserError(f"{where}, column rank: {text!r} is not a whole number from 1 (the top) on (empty: unknown)")
    return int(text)


def _score(text: str, where: str) -> float | None:
    if not text:
        return None
    try:
        score = float(text)
    except ValueError:
        score = math.nan
    if not math.isfinite(score):
        raise UserError(f"{where}, column score: {text!r} is not a finite number (empty: unknown)")
    return score


def store_decisions(con: duckdb.DuckDBPyConnection, run_id: str, decisions: Decisions, model: str) -> None:
    """The run record (backend 'decisions', complete), its people, their categories and decisions, in one
    transaction; a run id already taken is refused before anything is written."""
    if con.execute(
        "SELECT 1 FROM runs WHERE run_id = ? UNION ALL SELECT 1 FROM scans WHERE scan_id = ?", [run_id, run_id]
    ).fetchone():
        raise UserError(f"--run-id {run_id}: a run or scan has this id; choose another")
    settings = {
        "run_id": run_id,
        "backend": DECISIONS_BACKEND,
        "decisions": decisions.source,
        "attributes": decisions.attributes,
        "outcome": decisions.outcome,
        "scored": bool(decisions.people["score"].notna().any()),
        "period": decisions.period,
    }
    people = decisions.people.assign(run_id=run_id)
    with db.transaction(con):
        con.execute(
            "INSERT INTO runs (run_id, created_at, model, backend, config_json, status, package_version, "
            "finished_at) VALUES (?, now(), ?, ?, ?, ?, ?, now())",
            [run_id, model, DECISIONS_BACKEND, json.dumps(settings), COMPLETE, __version__],
        )
        db.insert_frame(con, "run_people", people[["run_id", "person_id", "set_id", "name"]])
        db.insert_frame(con, "run_person_categories", decisions.categories.assign(run_id=run_id))
        db.insert_frame(
            con, "run_decisions", people[["run_id", "person_id", "job", "selected", "rank", "score", "source"]]
        )
