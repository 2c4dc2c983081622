"""Paraphrase families (prompts/wordings/): a run's two stages asked once per chosen wording.

Each wording is a full replication of the design: its stage-2 items state the attributes its own stage-1 answers
granted, so an instance (condition, pair, name order, occupation, wording) has all four labels in one wording.
Items are built in the paper's wording (dataset.py) and reworded here: only the question changes, the context and
the answer options stay. A run in the paper's wording alone builds exactly the items it built before wordings
existed (same ids and prompts, so the same cache keys).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

import pandas as pd

from probe.common.vocabulary import PAIR_QUESTIONS, PAPER_WORDING
from probe.dataset.items import KEY_FIELDS, Item, item_id
from probe.dataset.kway import build_kway
from probe.dataset.prompts import render_prompt
from probe.dataset.stages import build_stage1, build_stage2

# (pair_id, name_order, subject, category, attribute, wording) of every stage-1 "yes"
GrantedByWording = Collection[tuple[int, str, str, str, str, str]]


def reworded(items: Sequence[Item], prompt_format: str, wording: str) -> list[Item]:
    """The same items asked in `wording`: the question rendered from that wording's template, a new id."""
    if wording == PAPER_WORDING:
        return list(items)
    return [_reworded(item, prompt_format, wording) for item in items]


def _reworded(item: Item, prompt_format: str, wording: str) -> Item:
    rendered = render_prompt(
        prompt_format,
        item.qtype,
        context=item.context,
        first=item.first_name,
        second=item.second_name,
        subject_name=item.subject_name,
        occupation=item.occupation,
        category=item.category,
        attribute=item.attribute,
        wording=wording,
    )
    key = {name: getattr(item, name) for name in KEY_FIELDS}
    return replace(
        item, item_id=item_id(wording, **key), question=rendered.question, prompt=rendered.prompt, wording=wording
    )


def stage1_items(
    pairs: pd.DataFrame, attributes: pd.DataFrame, prompt_format: str, wordings: Sequence[str]
) -> list[Item]:
    """Stage 1 in every wording, wording by wording (the paper's first when chosen)."""
    paper = build_stage1(pairs, attributes, prompt_format)
    return [item for wording in wordings for item in reworded(paper, prompt_format, wording)]


def stage2_items(
    pairs: pd.DataFrame,
    attributes: pd.DataFrame,
    granted: GrantedByWording,
    conditions: Sequence[str],
    prompt_format: str,
    wordings: Sequence[str],
    *,
    questions: Sequence[str] = (PAIR_QUESTIONS,),
    people: pd.DataFrame | None = None,
) -> list[Item]:
    """Stage 2 in every wording, each built from the attributes stage 1 granted in that wording: the two-person
    questions where `questions` has them, then the K-way choice over `people` where given (a selection has them
    when it asks the K-way choice: name_sets.set_members; the paper's wording alone)."""
    by_wording: dict[str, set[tuple[int, str, str, str, str]]] = {wording: set() for wording in wordings}
    for *key, wording in granted:
        if wording in by_wording:
            by_wording[wording].add((key[0], key[1], key[2], key[3], key[4]))
    items = (
        []
        if PAIR_QUESTIONS not in questions
        else [
            item
            for wording in wordings
            for item in reworded(
                build_stage2(pairs, attributes, by_wording[wording], conditions, prompt_format), prompt_format, wording
            )
        ]
    )
    if people is not None:
        items += build_kway(people, attributes, by_wording.get(PAPER_WORDING, set()), conditions, prompt_format)
    return items
