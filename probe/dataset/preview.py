"""`probe dataset preview`: the prompts a run would ask, without a model.

Stage 2 is built as if stage 1 had granted every attribute, so every pair has the same number of items
(the dataset is a product over pairs): a preview builds pair after pair only until it has `limit` items of
every kind, and counts the whole dataset as that per-pair count times the pairs. So the paper preset
previews in a fraction of a second instead of building its 130,760 items.
"""

from __future__ import annotations

from dataclasses import dataclass

from probe.common.vocabulary import PAIR_QUESTIONS
from probe.dataset.items import Item
from probe.dataset.kway import build_kway
from probe.dataset.stages import build_as_if_all_granted
from probe.store import db
from probe.store.spec import Design
from probe.taxonomy.selection import Selection, select

Kind = tuple[int, str, str]  # stage, qtype, condition


@dataclass(frozen=True)
class Preview:
    total_items: int
    shown: list[Item]  # the first `limit` items of every kind, in dataset order


def preview(design: Design, prompt_format: str, db_path: str) -> list[Item]:
    """Every item of the design's dataset, stage 2 as if stage 1 had granted everything (the K-way choice too, where
    the run asks it); the taxonomy read from the store at `db_path`."""
    selection = _selection(design, db_path)
    items = build_as_if_all_granted(selection.pairs, selection.attributes, design.conditions, prompt_format)
    if selection.set_members is None:
        return items
    stage1 = [item for item in items if item.stage == 1]
    granted = {(item.pair_id, item.name_order, item.subject, item.category, item.attribute) for item in stage1}
    pair_questions = items if PAIR_QUESTIONS in selection.questions else stage1
    return pair_questions + build_kway(
        selection.set_members, selection.attributes, granted, design.conditions, prompt_format
    )


def sample(design: Design, prompt_format: str, limit: int, db_path: str) -> Preview:
    """The first `limit` items of every (stage, qtype, condition) and the dataset's item count."""
    selection = _selection(design, db_path)
    shown: list[Item] = []
    counts: dict[Kind, int] = {}
    per_pair = 0
    for index in range(len(selection.pairs)):
        pair = selection.pairs.iloc[index : index + 1]
        items = build_as_if_all_granted(pair, selection.attributes, design.conditions, prompt_format)
        per_pair = len(items)
        for item in items:
            kind = (item.stage, item.qtype, item.condition)
            if counts.get(kind, 0) < limit:
                counts[kind] = counts.get(kind, 0) + 1
                shown.append(item)
        if all(count >= limit for count in counts.values()):
            break
    return Preview(per_pair * len(selection.pairs), shown)


def _selection(design: Design, db_path: str) -> Selection:
    con = db.connect(db_path)
    try:
        return select(con, design)
    finally:
        con.close()
