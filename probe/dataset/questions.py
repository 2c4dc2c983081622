"""What the dataset hands a backend: one rendered question (`Query`) and its allowed answers (`Option`s).

They belong to the dataset step (it builds them); backends read them, so the import runs one way:
dataset -> backends, never back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Option:
    """One allowed answer: what the model sees or says, and the canonical label it stands for."""

    text: str  # "yes", "no", a subject's name, "both", "neither"
    label: str  # canonical: yes/no, female/male, both/neither


@dataclass(frozen=True)
class Query:
    """One item, rendered for the backend's prompt format."""

    item_id: str
    qtype: str  # attr | binary | single | multiple
    prompt: str  # the full prompt in the backend's format (chat: the user message)
    context: str  # base context + attribute sentences (extractive QA reads context and question apart)
    question: str
    options: tuple[Option, ...]
    # The item's fields (stage, qtype, condition, pair_id, name_order, occupation, subject, category, attribute)
    # plus first_name, second_name and subject_name (the asked subject's name for attr/binary, else None):
    # extractive QA answers attr/binary 'yes' when its span is subject_name.
    item: Mapping[str, object]
