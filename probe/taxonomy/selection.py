"""What a run asks about, resolved from its settings: the name pairs and the occupations' top-k attributes."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import duckdb
import pandas as pd

from probe.common.errors import UserError
from probe.common.resources import resource_dir
from probe.common.vocabulary import KWAY, PAIR_QUESTIONS, PAPER_WORDING
from probe.store.spec import Design
from probe.taxonomy.name_pairs import select_name_pairs
from probe.taxonomy.name_sets import (
    CONTEST_COLUMNS,
    PEOPLE_COLUMNS,
    PERSON_CATEGORY_COLUMNS,
    contests,
    found_lines,
    people,
    read_name_sets,
    select_sets,
    set_members,
    spelling_warnings,
)
from probe.taxonomy.occupations import resolve_occupations, top_attributes


@dataclass(frozen=True)
class Selection:
    """What a run asks about: name pairs, the occupations' top-k attributes, and the wordings it asks them in."""

    pairs: pd.DataFrame  # pair_id, female, male (with name sets: their contests, probe/taxonomy/name_sets.py)
    attributes: pd.DataFrame  # occupation, soc_code, category, rank, element_name, importance, level
    wordings: tuple[str, ...] = (PAPER_WORDING,)  # paraphrase ids (prompts/wordings/), in the order asked
    # with name sets: each contest's set and its two people's categories (name_sets.CONTEST_COLUMNS); else None
    contests: pd.DataFrame | None = None
    # with name sets: the people, once (name_sets.PEOPLE_COLUMNS), and each one's categories; else None
    people: pd.DataFrame | None = None
    person_categories: pd.DataFrame | None = None
    # with name sets: what the file was found to hold, and its spellings that differ from the shipped list's
    found: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    questions: tuple[str, ...] = (PAIR_QUESTIONS,)  # what stage 2 asks (Design.questions)
    # with the K-way choice: every set's people (name_sets.set_members: the people with their category and contest)
    set_members: pd.DataFrame | None = None


@cache
def shipped_name_sets() -> pd.DataFrame:
    """The shipped taxonomy/name_sets.csv, read once per process (the spellings a names file is checked against)."""
    return read_name_sets(duckdb.connect(), resource_dir("taxonomy") / "name_sets.csv")


def select(con: duckdb.DuckDBPyConnection, design: Design) -> Selection:
    """Resolve the design's pairs, occupations and top-k against the taxonomy store (reads only)."""
    occupations_spec = Path(design.occupations) if isinstance(design.occupations, str) else design.occupations
    occupations = resolve_occupations(con, occupations_spec)
    attributes = top_attributes(con, occupations, k=design.top_k)
    if design.names is not None and design.names.sets:
        path = design.names.path
        every = read_name_sets(con, path)
        sets = select_sets(every, design.pairs)
        pairs, mapping = contests(sets)
        shipped = shipped_name_sets()
        found = tuple(found_lines(every, sets, path)), tuple(spelling_warnings(every, shipped, path))
        selection = Selection(pairs, attributes, design.wordings, mapping, *people(sets), *found)
    else:
        selection = Selection(select_name_pairs(con, design.pairs, design.names), attributes, design.wordings)
    return _with_questions(selection, design)


def _with_questions(selection: Selection, design: Design) -> Selection:
    """The selection with the questions the design asks; the K-way choice with each set's people, or a one-line
    error where the run cannot ask it (no name sets, an odd number of categories, a wording besides the paper's)."""
    questions = design.questions or (PAIR_QUESTIONS,)
    if KWAY not in questions:
        return replace(selection, questions=questions)
    if selection.contests is None:
        raise UserError(
            "--questions kway: the K-way choice asks the people of a name set; give --names a name-sets "
            "file (set_id, name and one column per attribute, e.g. taxonomy/name_sets.csv)"
        )
    if selection.wordings != (PAPER_WORDING,):
        raise UserError("--questions kway: the K-way choice is asked in the paper's wording only; leave --wordings out")
    members = set_members(selection.people, selection.person_categories, selection.contests)
    categories = members["category"].nunique()
    if members["pair_id"].isna().any():  # one person of each set sits out its round
        raise UserError(
            f"--questions kway: {categories} categories are an odd number: one person of each set sits "
            "out its contests and would have no stage-1 answers; add or drop a category"
        )
    return replace(selection, questions=questions, set_members=members)


def stored_selection(con: duckdb.DuckDBPyConnection, design: Design, run_id: str) -> Selection:
    """A resumed run's selection: the name pairs and attributes frozen when it started."""
    attributes = con.execute("SELECT * EXCLUDE (run_id) FROM run_attributes WHERE run_id = ?", [run_id]).df()
    pairs = con.execute(
        "SELECT pair_id, female, male FROM run_name_pairs WHERE run_id = ? ORDER BY pair_id", [run_id]
    ).df()
    if pairs.empty:  # a run recorded before run_name_pairs existed used the shipped pairs
        pairs = select_name_pairs(con, design.pairs)
    mapping = con.execute(
        f"SELECT {', '.join(CONTEST_COLUMNS)} FROM run_contests WHERE run_id = ? ORDER BY pair_id, slot, attribute",
        [run_id],
    ).df()
    if mapping.empty:
        selection = Selection(pairs, attributes, design.wordings)
    else:
        people_rows = _stored(con, run_id, "run_people", PEOPLE_COLUMNS)
        categories = _stored(con, run_id, "run_person_categories", PERSON_CATEGORY_COLUMNS)
        selection = Selection(pairs, attributes, design.wordings, mapping, people_rows, categories)
    return _with_questions(selection, design)


def _stored(con: duckdb.DuckDBPyConnection, run_id: str | None, table: str, columns: list[str]) -> pd.DataFrame:
    """A run's rows of one of its frozen tables, in the columns' order (table and columns are the code's own)."""
    return con.execute(f"SELECT {', '.join(columns)} FROM {table} WHERE run_id = ? ORDER BY ALL", [run_id]).df()
