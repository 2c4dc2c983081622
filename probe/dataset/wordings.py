"""Paraphrase families (prompts/wordings/): a run's two stages asked once per chosen wording.

Each wording is a full replication of the design: its stage-2 items state the attributes its own stage-1 answers
granted, so an instance (condition, pair, name order, occupation, wording) has all four labels in one wording.
The builders (stages.py) render each item in its wording: only the question changes, the context and the answer
options stay. A run in the paper's wording alone builds exactly the items it built before wordings existed (same
ids and prompts, so the same cache keys).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace

from probe.common.vocabulary import PAIR_QUESTIONS, PAPER_WORDING
from probe.dataset.items import Item
from probe.dataset.kway import build_kway
from probe.dataset.stages import build_stage1, build_stage2
from probe.taxonomy.selection import Selection

# (pair_id, name_order, subject, category, attribute, wording) of every stage-1 "yes"
GrantedByWording = Collection[tuple[int, str, str, str, str, str]]


def stage1_items(selection: Selection, prompt_format: str) -> list[Item]:
    """Stage 1's items in every wording, wording by wording (the paper's first when chosen)."""
    pairs, attributes = selection.pairs, selection.attributes
    return _in_every_wording(selection, lambda wording: build_stage1(pairs, attributes, prompt_format, wording))


def stage2_items(
    selection: Selection, prompt_format: str, granted: GrantedByWording, conditions: Sequence[str]
) -> list[Item]:
    """Stage 2's items: in each wording, built from the attributes stage 1 granted in that wording (`granted`), the
    two-person questions where the selection asks them; then the K-way choice over its set members where it asks
    that (the paper's wording alone)."""
    by_wording = _by_wording(granted, selection.wordings)
    items: list[Item] = []
    if PAIR_QUESTIONS in selection.questions:
        pairs, attributes = selection.pairs, selection.attributes
        items = _in_every_wording(
            selection,
            lambda wording: build_stage2(pairs, attributes, by_wording[wording], conditions, prompt_format, wording),
        )
    if selection.set_members is not None:
        paper_granted = by_wording.get(PAPER_WORDING, set())
        items += build_kway(selection.set_members, selection.attributes, paper_granted, conditions, prompt_format)
    return items


def _by_wording(granted: GrantedByWording, wordings: Sequence[str]) -> dict[str, set[tuple[int, str, str, str, str]]]:
    """What stage 1 granted in each chosen wording (pair_id, name_order, subject, category, attribute)."""
    by_wording: dict[str, set[tuple[int, str, str, str, str]]] = {wording: set() for wording in wordings}
    for pair_id, name_order, subject, category, attribute, wording in granted:
        if wording in by_wording:
            by_wording[wording].add((pair_id, name_order, subject, category, attribute))
    return by_wording


def _in_every_wording(selection: Selection, build: Callable[[str], list[Item]]) -> list[Item]:
    """`build(wording)`'s items for each chosen wording, wording by wording (the paper's first when chosen)."""
    return [item for wording in selection.wordings for item in build(wording)]


def check_templates(selection: Selection, conditions: Sequence[str], prompt_format: str) -> None:
    """Render every kind of prompt the run asks (each wording, stage 2 as if stage 1 had granted every attribute) for
    its first pair, first occupation and first name set, before a new run writes anything.

    A template error (say, a customised template naming an undefined variable) is the user's to fix; found
    halfway, it would leave a failed run record and a half-built dataset behind.
    """
    attributes, members = selection.attributes, selection.set_members
    first = replace(
        selection,
        pairs=selection.pairs.head(1),
        attributes=attributes[attributes["occupation"].isin(attributes["occupation"].head(1))],
        set_members=None if members is None else members[members["set_id"] == members["set_id"].min()],
    )
    stage1 = stage1_items(first, prompt_format)
    granted = {
        (item.pair_id, item.name_order, item.subject, item.category, item.attribute, item.wording) for item in stage1
    }
    stage2_items(first, prompt_format, granted, conditions)  # as if stage 1 had granted every attribute it asked
