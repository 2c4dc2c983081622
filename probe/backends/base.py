"""The one model interface: a backend answers a batch of rendered queries with canonical labels.

Every backend (extractive QA, causal LM, OpenAI-compatible API, embedded llama.cpp, replay) implements
`Backend`; the runner knows nothing else about models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


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


@dataclass(frozen=True)
class Reply:
    label: str  # a canonical label, or "unknown" for refusals, nonsense and failures
    raw: str = ""  # raw model output (extractive QA: the best free span)
    scores: Mapping[str, float] | None = None  # per option text, where the backend can score options
    error: str | None = None  # why the item could not be answered, if it could not


class Backend(Protocol):
    prompt_format: str  # "qa", "chat" or "completion": picks the templates in prompts/<format>/
    batch_size: int  # how many queries the runner hands over at once
    cacheable: bool  # False for backends whose answers are not a function of the prompt (replay)

    def identity(self) -> dict[str, object]:
        """Model, its file hash or revision, and decoding settings: keys the cache, recorded with the run."""
        ...

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        """Answer `queries`, one Reply each, in order. Must not raise for a single bad item."""
        ...

    def close(self) -> None:
        """Release the model (stop servers, free memory)."""
        ...
