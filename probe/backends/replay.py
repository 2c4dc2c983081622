"""`replay` backend: labels from a CSV or Parquet file, for answers collected elsewhere (DESIGN section 8).

The file is keyed by the item fields (stage, qtype, condition, pair_id, name_order, occupation, subject,
category, attribute; empty = NULL) and holds a canonical `label`; an optional `wording` column (a paraphrase id of
prompts/wordings/, empty = the paper's) answers runs asked with --wordings; optional `first_name` and `second_name`
columns (as `probe export` writes items) name the item's people, and a matched row must name the same people. A run
over name sets needs them: its pair ids number contests of other people than a pairs run's (a pairs run's file
matched hundreds of a sets run's items, silently answering for other people). Items absent from the file are unknown.
The whole file is checked when the backend is created, before the run writes anything. After the run, a
file that matched no item asked is an error (it was made for other settings), one that matched fewer than
half a warning with the count (`finish`).
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from probe.backends.base import BackendDefaults, Query, Reply, default_cache_key_parts
from probe.common.errors import UserError
from probe.common.escape import terminal_text
from probe.common.vocabulary import KWAY, LABELS_BY_QTYPE, PAPER_WORDING, QTYPES, UNKNOWN, WORDINGS
from probe.dataset.items import KEY_FIELDS, gender_of_first
from probe.dataset.kway import first_shown
from probe.store.spec import BackendSpec

REQUIRED_COLUMNS = (*KEY_FIELDS, "label")
INTEGER_FIELDS = ("stage", "pair_id")
PEOPLE_COLUMNS = ("first_name", "second_name")
WHOLE_NUMBER = re.compile(r"[0-9]+")  # int() would also take '1_0' and full-width or other scripts' digits

ItemKey = tuple[object, ...]


@dataclass(frozen=True)
class Answer:
    """A file row's label, the people it names (None where the file has no name columns) and its row number."""

    label: str
    people: tuple[str | None, str | None] | None
    row: int


def _cell(value: object) -> str | None:
    """A file cell as text; empty, NaN and None are NULL."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    text = str(value).strip()
    if isinstance(value, float) and value.is_integer():
        text = str(int(value))
    return text or None


def _key(fields: dict[str, object]) -> ItemKey:
    return (*(fields[name] for name in KEY_FIELDS), fields.get("wording") or PAPER_WORDING)


def _read_table(path: Path) -> pd.DataFrame:
    try:
        if path.suffix.lower() == ".parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (ValueError, OSError) as exc:
        raise UserError(f"{path}: cannot read answers ({exc})") from None


def _people_required(path: Path) -> UserError:
    return UserError(
        f"{path}: a run over name sets needs the columns first_name and second_name (the people each row answers "
        "for, as `probe export` writes items), so that a file made for other people is not matched by pair_id alone"
    )


def load_answers(path: Path, people_required: bool = False) -> dict[ItemKey, Answer]:
    """Map item key -> its answer; every row is checked (row numbers count data rows from 1). `people_required`
    (a run over name sets): the file must name each item's people."""
    table = _read_table(path)
    missing = [column for column in REQUIRED_COLUMNS if column not in table.columns]
    if missing:
        raise UserError(f"{path}: missing column(s) {', '.join(missing)}")
    has_people = all(column in table.columns for column in PEOPLE_COLUMNS)
    if people_required and not has_people:
        raise _people_required(path)
    columns = [
        *REQUIRED_COLUMNS,
        *(["wording"] if "wording" in table.columns else []),
        *(PEOPLE_COLUMNS if has_people else ()),
    ]
    labels: dict[ItemKey, Answer] = {}
    for row_number, row in enumerate(table[columns].itertuples(index=False), start=1):
        where = f"{path}, row {row_number}"
        fields: dict[str, object] = {name: _cell(value) for name, value in zip(columns, row, strict=True)}
        if fields.get("wording") not in (None, *WORDINGS):
            raise UserError(f"{where}: wording {fields['wording']!r} is not one of {', '.join(WORDINGS)}")
        for name in INTEGER_FIELDS:
            if not WHOLE_NUMBER.fullmatch(str(fields[name])):
                raise UserError(f"{where}: {name} {fields[name]!r} is not an integer")
            fields[name] = int(str(fields[name]))
        qtype = fields["qtype"]
        if qtype not in QTYPES:
            raise UserError(f"{where}: qtype {qtype!r} is not one of {', '.join(QTYPES)}")
        label = fields.pop("label") or UNKNOWN
        # a K-way label is a name: the runner checks it against the item's names (base.contract_error)
        if qtype in LABELS_BY_QTYPE and label not in LABELS_BY_QTYPE[qtype]:
            allowed = ", ".join(LABELS_BY_QTYPE[qtype])
            raise UserError(f"{where}: label {label!r} is not valid for qtype {qtype} ({allowed})")
        people = (fields.pop("first_name", None), fields.pop("second_name", None)) if has_people else None
        key = _key(fields)
        if labels.setdefault(key, Answer(label, people, row_number)).label != label:
            raise UserError(f"{where}: a second, different label for the same item")
    return labels


class ReplayBackend(BackendDefaults):
    prompt_format = "chat"  # prompts are rendered for the record only; labels come from the file
    batch_size = 2048
    cacheable = False  # answers depend on the file, not on the prompt
    labels_are_data = True

    def __init__(self, path: Path):
        self.path = path
        self.labels = load_answers(path)
        self.file_sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
        self.asked = 0
        self.matched = 0

    def identity(self) -> dict[str, object]:
        return {"backend": "replay", "model": str(self.path), "sha256": self.file_sha256, "decided_by": "replay"}

    def cache_key_parts(self, query: Query) -> list[object]:
        return default_cache_key_parts(query)  # never used: replay answers are not cached

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        replies = []
        for query in queries:
            found = self.labels.get(_key(dict(query.item)))
            label = found.label if found is not None else None
            self.matched += label is not None
            replies.append(Reply(label=label or UNKNOWN, raw=label or UNKNOWN, decided_by="replay"))
        self.asked += len(queries)
        return replies

    def check_pairs(self, pairs: pd.DataFrame, set_members: pd.DataFrame | None = None, sets: bool = False) -> None:
        """Every row that names people names the run's own for its pair_id and name order (the same pair_id in
        another run, a pairs run's file on a sets run, names others): checked before the run writes anything. A run
        over name sets (`sets`) needs a file that names each item's people; a K-way row (pair_id = its set, name order
        'k<r>') names the first two people its order shows of `set_members`."""
        if sets and not any(found.people is not None for found in self.labels.values()):
            raise _people_required(self.path)
        people = {int(pair.pair_id): (pair.female, pair.male) for pair in pairs.itertuples()}
        shown: dict[int, list[str]] = {}
        if set_members is not None:
            shown = {int(set_id): list(rows["name"]) for set_id, rows in set_members.groupby("set_id")}
        for key, found in sorted(self.labels.items(), key=lambda entry: entry[1].row):
            pair_id, name_order = key[KEY_FIELDS.index("pair_id")], key[KEY_FIELDS.index("name_order")]
            if found.people is None:
                continue
            if key[KEY_FIELDS.index("qtype")] == KWAY:
                asked = first_shown(shown.get(pair_id), str(name_order))
            elif pair_id in people:
                female, male = people[pair_id]
                asked = (female, male) if gender_of_first(str(name_order)) == "female" else (male, female)
            else:
                asked = None
            if asked is not None and found.people != asked:
                what = "set" if key[KEY_FIELDS.index("qtype")] == KWAY else "pair"
                raise UserError(
                    f"{self.path}, row {found.row}: names {found.people[0]}/{found.people[1]}, but {what} "
                    f"{pair_id} ({name_order}) of this run asks about {asked[0]}/{asked[1]}; a replay "
                    "file answers only for the people it names"
                )

    def finish(self) -> None:
        """Called after the run's items were asked: no match is an error, fewer than half a warning."""
        if self.asked and not self.matched:
            raise UserError(
                f"{self.path}: matches none of the {self.asked} items of this run (check its stage, qtype, "
                "condition, pair_id, name_order, occupation, subject, category and attribute columns against "
                "`probe dataset preview` with the same settings)"
            )
        if self.matched < self.asked / 2:
            print(
                f"warning: {terminal_text(self.path)} matched {self.matched} of {self.asked} items; the other "
                f"{self.asked - self.matched} are unknown",
                file=sys.stderr,
            )

    def close(self) -> None:
        self.labels = {}


@dataclass(frozen=True)
class ReplaySettings:
    answers: Path  # CSV or Parquet of labels


def settings_from(config: BackendSpec) -> ReplaySettings:
    if not config.answers:
        raise UserError("--answers: the replay backend needs a CSV or Parquet file of answers")
    return ReplaySettings(Path(config.answers))


def create(settings: ReplaySettings) -> ReplayBackend:
    return ReplayBackend(settings.answers)
