"""Name sets (DESIGN.md section 11): a names CSV with columns `set_id, name` and one column per attribute (`sex`,
`race_ethnicity`, any other categorical attribute), one name per category in every set; a category is the tuple of
a name's attribute values.

The set is the unit of independence, as the pair is for sex alone. Within a set two of its people meet in the
two-person questions of a name pair (a contest: stage 1, then binary / single / multiple, both orders), so a run
over sets is a run over contests, each stored as a name pair (pair_id, female = the first contestant, male = the
second; items' subject and labels `female` / `male` then name the contest's first and second person) with the
contest's set, both contestants (person ids of `run_people`) and their categories in `run_contests`. The slots are
positions only: every finding by a category reads the people's categories, never a slot. The contests rotate over
sets by the circle method: a set asks one round of a round-robin over its K categories (K/2 contests, every person
once; for odd K, (K-1)/2 and one sits out), so each pair of categories meets once every K-1 sets (K for odd K)
instead of K(K-1)/2 contests per set.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from pathlib import Path

import duckdb
import pandas as pd

from probe.common.errors import UserError
from probe.common.staging import ragged_line, read_header, stage_file
from probe.common.user_text import checked_text
from probe.common.vocabulary import ANSWER_WORDS, SUBJECTS
from probe.store.spec import SET_COLUMNS, Names

# The fewest names a category needs (one per set): an interval over sets needs 6 of them (the sign-flip bound of
# probe/analysis/statistics.py MIN_PAIRS: 6 sets that all agree reach p = 0.031).
MIN_NAMES = 6
JOINT = " x "  # the intersection attribute's name and its categories: 'sex x race_ethnicity', 'female x Black'
CONTEST_COLUMNS = ["pair_id", "set_id", "slot", "attribute", "category", "person_id"]
PEOPLE_COLUMNS = ["person_id", "set_id", "name"]
PERSON_CATEGORY_COLUMNS = ["person_id", "attribute", "category"]
MEMBER_COLUMNS = ["set_id", "name", "category", "pair_id", "slot", "person_id"]  # set_members: the K-way's people
ASCII_DIGITS = re.compile(r"[0-9]+")  # str.isdigit() also takes '²' and other scripts' digits, which int() refuses
MAX_SET_ID = 2**31 - 1  # set_id is an INTEGER column


def is_name_sets_file(path: Path) -> bool:
    """A names CSV with set_id and name columns (name sets), not female and male (name pairs)."""
    return Names(path).sets


def read_name_sets(con: duckdb.DuckDBPyConnection, path: Path) -> pd.DataFrame:
    """The sets of a names CSV: set_id (int), name, one column per attribute, category (the values joined by ' x ').

    Errors name the file and line: an empty or unusable value, a set_id that is no positive whole number, a name an
    answer word or already in the file, a second name for a category in a set; then the file as a whole: a set
    without a name for some category, a category with fewer than MIN_NAMES names.
    """
    header = read_header(path, ",", str(path))
    attributes = [column for column in header if column not in SET_COLUMNS]
    _check_attribute_columns(header, attributes, path)
    ragged_line(path, ",", str(path))  # a short row or a trailing comma: its line, not DuckDB's sniffing failure
    columns = {column: f"c{index}" for index, column in enumerate([*SET_COLUMNS, *attributes])}
    stage_file(con, path, "_staging_sets", columns, delimiter=",", label=str(path))
    try:
        rows = con.execute(f"SELECT line, {', '.join(columns.values())} FROM _staging_sets ORDER BY line").fetchall()
    finally:
        con.execute("DROP TABLE IF EXISTS _staging_sets")
    records, names, categories = [], {}, {}
    for line, set_text, *values in rows:
        where = f"{path} line {line}"
        for column, value in zip([*SET_COLUMNS, *attributes], [set_text, *values], strict=True):
            if value is None or not value.strip():
                raise UserError(f"{where}: empty {column}")
        if not ASCII_DIGITS.fullmatch(set_text.strip()) or int(set_text) < 1:
            raise UserError(f"{where}: set_id {set_text.strip()!r} is not a positive whole number")
        if int(set_text) > MAX_SET_ID:
            raise UserError(f"{where}: set_id {set_text.strip()} is larger than {MAX_SET_ID}")
        name, *levels = (checked_text(value.strip(), where) for value in values)
        for attribute, level in zip(attributes, levels, strict=True):
            if JOINT in level:
                raise UserError(
                    f"{where}: {attribute} {level!r} contains {JOINT!r}, which joins the categories of an "
                    "intersection; use another word"
                )
        if name.casefold() in ANSWER_WORDS:
            raise UserError(
                f"{where}: the name {name!r} is an answer option ({', '.join(ANSWER_WORDS)}); choose another name"
            )
        if name.casefold() in names:
            raise UserError(
                f"{where}: the name {name!r} is already on line {names[name.casefold()]} (a name belongs to one set)"
            )
        names[name.casefold()] = line
        set_id, category = int(set_text), JOINT.join(levels)
        if (set_id, category) in categories:
            raise UserError(
                f"{where}: set {set_id} already has a name for {category!r} (line "
                f"{categories[set_id, category]}); a set has one name per category"
            )
        categories[set_id, category] = line
        records.append(
            {"set_id": set_id, "name": name, **dict(zip(attributes, levels, strict=True)), "category": category}
        )
    sets = pd.DataFrame(records, columns=["set_id", "name", *attributes, "category"])
    _check_complete(sets, path)
    return sets


def _check_attribute_columns(header: Sequence[str], attributes: Sequence[str], path: Path) -> None:
    """An attribute column is a name the reports print (checked as every name is), once in the header, and not
    the name of a column computed from the others: `category` (a name's attribute values joined), or one with ' x '
    (an intersection, `sex x race_ethnicity`, which the impact tables and gates would read in its place)."""
    if not attributes:
        raise UserError(f"{path}: name sets need at least one attribute column besides set_id and name (sex, ...)")
    for index, column in enumerate(header):
        checked_text(column, f"{path} header")
        if column in header[:index]:
            raise UserError(f"{path} header: column {column!r} twice")
    for column in attributes:
        if column == "category" or JOINT in column:
            raise UserError(
                f"{path} header: an attribute column may not be named {column!r} (the name of a column computed "
                "from the others: 'category', or an intersection 'a x b')"
            )


def _check_complete(sets: pd.DataFrame, path: Path) -> None:
    """Every set names every category, and every category has at least MIN_NAMES names."""
    every = sorted(set(sets["category"]))
    for set_id, rows in sets.groupby("set_id", sort=True):
        missing = sorted(set(every) - set(rows["category"]))
        if missing:
            raise UserError(
                f"{path}: set {set_id} has no name for {missing[0]!r} (every set needs one name per "
                f"category: {', '.join(every)})"
            )
    counts = sets["category"].value_counts()
    if len(every) < 2:
        raise UserError(f"{path}: one category ({every[0]!r}); name sets need at least two")
    if counts.min() < MIN_NAMES:
        raise UserError(
            f"{path}: category {counts.idxmin()!r} has {counts.min()} names; every category needs at "
            f"least {MIN_NAMES} (one per set) for an interval over sets"
        )


def select_sets(sets: pd.DataFrame, spec: int | Sequence[int] | None) -> pd.DataFrame:
    """The sets `spec` picks, as `--pairs` picks pairs: N -> the first N set ids (every set where the file has fewer:
    a preset's pair count reads as "up to"), a list -> those ids, None -> all."""
    ids = sorted(set(sets["set_id"]))
    if spec is None:
        chosen = ids
    elif isinstance(spec, int) and not isinstance(spec, bool):
        if spec < 1:
            raise UserError(f"pairs: {spec} is not a number of name sets (1 or more)")
        chosen = ids[:spec]
    else:
        unknown = sorted(set(spec) - set(ids))
        if unknown:
            raise UserError(f"pairs: no name set with id {unknown[0]} (the file's set ids: {ids[0]} to {ids[-1]})")
        chosen = sorted(set(spec))
    if len(chosen) < MIN_NAMES:  # refused as a file with fewer names per category is
        raise UserError(
            f"pairs: {len(chosen)} name sets chosen; a run over name sets needs at least {MIN_NAMES} (one "
            f"name per category in each) for an interval over sets; the file has {len(ids)}"
        )
    return sets[sets["set_id"].isin(chosen)].reset_index(drop=True)


def found_lines(sets: pd.DataFrame, chosen: pd.DataFrame, path: Path) -> list[str]:
    """What a run over name sets found in its file, as `--dry-run` and `probe run` print it before any model call:
    the attributes with their categories, the sets (chosen of all) and the contests the rotation asks."""
    attributes = attributes_of(sets)
    every = sorted(set(sets["category"]))
    pairs = contests(chosen)[0]
    cycle = len(every) - 1 if len(every) % 2 == 0 else len(every)
    described = "; ".join(f"{attribute} ({', '.join(sorted(set(sets[attribute])))})" for attribute in attributes)
    joint = joint_attribute(attributes)
    lines = [
        f"name sets in {path}: attributes {described}" + (f", and their intersection {joint}" if joint else ""),
        f"{len(every)} categories; {chosen['set_id'].nunique()} of the file's {sets['set_id'].nunique()} sets "
        f"asked ({len(chosen)} people)",
        f"{len(pairs)} contests: {len(rotation(every, 0))} per set (the rotation: every two categories meet once "
        f"every {cycle} sets)",
    ]
    return lines


def spelling_warnings(sets: pd.DataFrame, shipped: pd.DataFrame, path: Path) -> list[str]:
    """A warning for each attribute (header) or category of the file that differs from a shipped one only by its
    spelling (case, a typo: `race_ethnicty`, `Female`) or is a usual synonym of a shipped sex (`Woman`, `M`): the
    run reads it as a category of its own, so its findings are not the shipped categories'."""
    warnings = []
    shipped_attributes = attributes_of(shipped)
    for attribute in attributes_of(sets):
        near = _near(attribute, shipped_attributes)
        if near:
            warnings.append(
                f"{path}: column {attribute!r} looks like the shipped attribute {near!r}; it is read as an "
                f"attribute of its own"
            )
        target = attribute if attribute in shipped_attributes else near
        known = sorted(set(shipped[target] if target else shipped[shipped_attributes].stack()))
        for category in sorted(set(sets[attribute])):
            match = _near(category, known, SEX_SYNONYMS)
            if match:
                warnings.append(
                    f"{path}: {attribute} category {category!r} looks like the shipped category {match!r}; "
                    "it is read as a category of its own (spell it as shipped to compare with shipped "
                    "runs)"
                )
    return warnings


# Words a names file may use for the shipped sex categories (a category so spelled is warned about, not changed).
SEX_SYNONYMS = {"woman": "female", "women": "female", "f": "female", "man": "male", "men": "male", "m": "male"}


def _near(word: str, known: Sequence[str], synonyms: dict[str, str] | None = None) -> str | None:
    """The shipped word `word` differs from only in spelling (case, a close typo) or as a synonym; None where `word`
    is one of them exactly or like none."""
    if word in known:
        return None
    folded = {entry.casefold(): entry for entry in known}
    if word.casefold() in folded:
        return folded[word.casefold()]
    synonym = (synonyms or {}).get(word.casefold())
    if synonym in known:
        return synonym
    close = difflib.get_close_matches(word.casefold(), list(folded), n=1, cutoff=0.85)
    return folded[close[0]] if close else None


def rounds(categories: int) -> int:
    """The rounds of the rotation's round-robin over `categories`: each pair of categories meets once in them."""
    return categories - 1 if categories % 2 == 0 else categories


def rotation(categories: Sequence[str], index: int) -> list[tuple[str, str]]:
    """Round `index` (mod the number of rounds) of a round-robin over `categories` by the circle method: K/2
    contests in which every category plays once (odd K: one sits out); over K - 1 rounds (K for odd K) every pair
    of categories meets exactly once."""
    circle: list[str | None] = list(categories) + ([None] if len(categories) % 2 else [])
    turn = index % rounds(len(categories))
    moving = circle[1:]
    arranged = [circle[0], *moving[turn:], *moving[:turn]]
    half = len(arranged) // 2
    contests = [(arranged[i], arranged[-1 - i]) for i in range(half)]
    return [tuple(sorted(contest)) for contest in contests if None not in contest]  # type: ignore[misc]


def attributes_of(sets: pd.DataFrame) -> list[str]:
    """The attribute columns of `read_name_sets`' frame, in the file's order."""
    return [column for column in sets.columns if column not in (*SET_COLUMNS, "category")]


def joint_attribute(attributes: Sequence[str]) -> str | None:
    """The intersection attribute's name ('sex x race_ethnicity'), None for a file with one attribute."""
    return JOINT.join(attributes) if len(attributes) > 1 else None


def people(sets: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The run's people, stored once (DESIGN.md section 11): (person_id, set_id, name), numbered in set and category
    order, and each person's own category per attribute (person_id, attribute, category), the intersection's
    included where the file has more than one attribute."""
    attributes = attributes_of(sets)
    joint = joint_attribute(attributes)
    ordered = sets.sort_values(["set_id", "category"], ignore_index=True)
    ordered.insert(0, "person_id", range(1, len(ordered) + 1))
    categories = [
        (person, attribute, row[attribute])
        for person, row in zip(ordered["person_id"], ordered.to_dict("records"), strict=True)
        for attribute in attributes
    ]
    if joint:
        categories += list(zip(ordered["person_id"], [joint] * len(ordered), ordered["category"], strict=True))
    return (
        ordered[PEOPLE_COLUMNS].copy(),
        pd.DataFrame(categories, columns=PERSON_CATEGORY_COLUMNS).sort_values(
            ["person_id", "attribute"], ignore_index=True
        ),
    )


def contests(sets: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The contests of the chosen sets as name pairs (pair_id, female = first contestant, male = second), and
    their map (pair_id, set_id, slot, attribute, category, person_id): each slot's person and category for every
    attribute and, with more than one attribute, their intersection."""
    attributes = attributes_of(sets)
    joint = joint_attribute(attributes)
    every = sorted(set(sets["category"]))
    person_ids = people(sets)[0].set_index(["set_id", "name"])["person_id"]
    pairs, mapping = [], []
    for index, (set_id, rows) in enumerate(sets.groupby("set_id", sort=True)):
        members = rows.set_index("category")
        for first, second in rotation(every, index):
            pair_id = len(pairs) + 1
            pairs.append((pair_id, members.at[first, "name"], members.at[second, "name"]))
            for slot, category in zip(SUBJECTS, (first, second), strict=True):
                person = members.loc[category]
                person_id = int(person_ids[set_id, person["name"]])
                mapping += [
                    (pair_id, set_id, slot, attribute, person[attribute], person_id) for attribute in attributes
                ]
                if joint:
                    mapping.append((pair_id, set_id, slot, joint, category, person_id))
    return (pd.DataFrame(pairs, columns=["pair_id", "female", "male"]), pd.DataFrame(mapping, columns=CONTEST_COLUMNS))


def set_members(people: pd.DataFrame, person_categories: pd.DataFrame, mapping: pd.DataFrame) -> pd.DataFrame:
    """set_id, name, category, pair_id, slot, person_id: every person of the run (`people`, as `people` gives them or a
    run stored them) with the category that names them whole (the intersection, or the file's one attribute) and the
    contest that asked stage 1 about them (`mapping`; none for the person who sits out a set's round where the
    categories are an odd number), sorted by set and category."""
    if people.empty:
        return pd.DataFrame(columns=MEMBER_COLUMNS)
    counts = person_categories.groupby("attribute")["category"].nunique()
    whole = max(sorted(counts.index), key=lambda attribute: (counts[attribute], JOINT in attribute))
    categories = person_categories.loc[person_categories["attribute"] == whole, ["person_id", "category"]]
    seats = mapping[["person_id", "pair_id", "slot"]].drop_duplicates()
    members = people.merge(categories, on="person_id").merge(seats, on="person_id", how="left")
    return members[MEMBER_COLUMNS].sort_values(["set_id", "category"], kind="stable").reset_index(drop=True)
