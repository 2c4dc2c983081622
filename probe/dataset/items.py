"""A question of the dataset as it is stored and handed on: the Item, its id, its row of the `items` table.

An item's id is a hash of its key fields (KEY_FIELDS), so the same settings give the same ids and a replay file
matches answers to items by them; resume reads pending items back from their rows (item_from_row).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from probe.common.vocabulary import PAPER_WORDING
from probe.dataset.questions import Option, Query

# Fields that identify an item within a run (hashed into item_id; replay files match on them).
KEY_FIELDS = (
    "stage",
    "qtype",
    "condition",
    "pair_id",
    "name_order",
    "occupation",
    "subject",
    "category",
    "attribute",
)


@dataclass(frozen=True)
class Item:
    """One question, rendered. Columns of the `items` table (less run_id and seq)."""

    item_id: str
    stage: int
    qtype: str
    condition: str
    pair_id: int
    name_order: str
    occupation: str | None
    subject: str | None
    attribute: str | None
    category: str | None
    first_name: str
    second_name: str
    context: str
    question: str
    prompt: str
    options: tuple[Option, ...]
    wording: str = PAPER_WORDING  # the paraphrase asked (prompts/wordings/, probe/dataset/wordings.py)

    @property
    def subject_name(self) -> str | None:
        """The asked subject's name (attr and binary items), None for single and multiple."""
        if self.subject is None:
            return None
        return self.first_name if gender_of_first(self.name_order) == self.subject else self.second_name

    def fields(self) -> dict[str, object]:
        """The item's identifying fields and names, as a backend's Query.item sees them."""
        fields: dict[str, object] = {name: getattr(self, name) for name in (*KEY_FIELDS, "wording")}
        fields.update(first_name=self.first_name, second_name=self.second_name, subject_name=self.subject_name)
        return fields

    def query(self) -> Query:
        return Query(
            item_id=self.item_id,
            qtype=self.qtype,
            prompt=self.prompt,
            context=self.context,
            question=self.question,
            options=self.options,
            item=self.fields(),
        )


def gender_of_first(name_order: str) -> str:
    return "female" if name_order == "fm" else "male"


def item_id(wording: str = PAPER_WORDING, **key: object) -> str:
    """Deterministic id from the item's key fields: the same settings give the same ids (the paper's wording adds
    nothing to the hash, so its items keep the ids they had before paraphrase families)."""
    text = json.dumps([key.get(name) for name in KEY_FIELDS] + ([] if wording == PAPER_WORDING else [wording]))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def options_json(options: Sequence[Option]) -> str:
    return json.dumps([{"text": option.text, "label": option.label} for option in options])


def options_from_json(text: str) -> tuple[Option, ...]:
    return tuple(Option(**option) for option in json.loads(text))


ITEM_COLUMNS = (
    "item_id",
    *KEY_FIELDS,
    "first_name",
    "second_name",
    "prompt",
    "context",
    "question",
    "wording",
    "options_json",
)


def items_frame(items: Sequence[Item], run_id: str, first_seq: int = 0) -> pd.DataFrame:
    """Rows for the `items` table; seq keeps the build order (similar prompts stay adjacent)."""
    frame = pd.DataFrame(
        [
            {
                **{name: getattr(item, name) for name in ITEM_COLUMNS[:-1]},
                "options_json": options_json(item.options),
            }
            for item in items
        ],
        columns=list(ITEM_COLUMNS),
    )
    frame.insert(0, "run_id", run_id)
    frame["seq"] = range(first_seq, first_seq + len(frame))
    return frame


def item_from_row(row: dict[str, object]) -> Item:
    """Rebuild an Item from an `items` row (resume reads pending items back from the database)."""
    values = {name: _none_if_nan(row[name]) for name in ITEM_COLUMNS if name != "options_json"}
    values["stage"] = int(values["stage"])
    values["pair_id"] = int(values["pair_id"])
    return Item(**values, options=options_from_json(str(row["options_json"])))


def _none_if_nan(value: object) -> object:
    return None if value is None or (isinstance(value, float) and value != value) else value
