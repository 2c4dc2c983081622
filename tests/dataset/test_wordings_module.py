"""Items in a wording (probe/dataset/wordings.py, rendered by the builders of stages.py), on the hand-made selection:
the paper's wording keeps the very items the builder made; another wording asks the same item in other words under
an id of its own, with the same context and options; stage 1 is asked once per chosen wording. Every wording's
templates: test_wordings.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from probe.common.errors import UserError
from probe.common.vocabulary import PAPER_WORDING
from probe.dataset import wordings
from probe.dataset.stages import build_stage1
from probe.taxonomy.selection import Selection
from tests.support import HAND_MADE_ATTRIBUTES, HAND_MADE_PAIRS

PAPER = build_stage1(HAND_MADE_PAIRS, HAND_MADE_ATTRIBUTES, "chat")


def test_the_papers_wording_keeps_the_items_the_builder_made() -> None:
    assert wordings.stage1_items(Selection(HAND_MADE_PAIRS, HAND_MADE_ATTRIBUTES), "chat") == PAPER


def test_another_wording_asks_the_same_item_in_other_words() -> None:
    paper, synonym = PAPER[0], build_stage1(HAND_MADE_PAIRS, HAND_MADE_ATTRIBUTES, "chat", "synonym")[0]
    assert (paper.question, synonym.question) == (
        "Is Mary skilled in active listening?",
        "Is Mary skilled at active listening?",
    )
    assert (paper.wording, synonym.wording) == (PAPER_WORDING, "synonym")
    assert synonym.item_id != paper.item_id and synonym.prompt != paper.prompt
    assert (synonym.context, synonym.options, synonym.qtype) == (paper.context, paper.options, paper.qtype)


def test_stage_1_is_asked_once_per_wording_the_papers_first() -> None:
    items = wordings.stage1_items(
        Selection(HAND_MADE_PAIRS, HAND_MADE_ATTRIBUTES, wordings=(PAPER_WORDING, "synonym")), "chat"
    )
    assert len(items) == 2 * len(PAPER) == 112
    assert items[: len(PAPER)] == PAPER and {item.wording for item in items[len(PAPER) :]} == {"synonym"}
    assert len({item.item_id for item in items}) == 112


def test_the_template_check_renders_every_chosen_wording(broken_prompts: Path) -> None:
    """A broken paraphrase is refused by the check before a run writes anything, where the run asks it."""
    ask = broken_prompts / "wordings" / "ask.j2"
    ask.write_text(ask.read_text().replace("Is {{ name }} skilled at {{ thing }}?", "{{ undefined_variable }}"))
    paper_only = Selection(HAND_MADE_PAIRS, HAND_MADE_ATTRIBUTES)
    wordings.check_templates(paper_only, ("baseline",), "chat")
    with pytest.raises(UserError, match=r"^prompts/chat/attr\.j2: 'undefined_variable' is undefined$"):
        wordings.check_templates(replace(paper_only, wordings=(PAPER_WORDING, "synonym")), ("baseline",), "chat")
