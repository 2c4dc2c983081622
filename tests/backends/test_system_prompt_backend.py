"""The wrapper that puts a run's `--system-prompt` on every query (probe/backends/system_prompt.py): the backend
answers the same queries with the prompt added, its identity (and so every answer-cache key) names the prompt, and
a run without one keeps the backend itself. What the model reads: test_system_prompt.py."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from probe.backends.base import Query, Reply
from probe.backends.system_prompt import SystemPromptBackend, with_system_prompt
from probe.common.errors import UserError
from tests.support import SINGLE, FakeBackend


class Recording(FakeBackend):
    """Keeps the queries it was asked."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Query] = []

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        self.seen += queries
        return super().answer(queries)


def asked(prompt: str) -> Query:
    return Query(item_id="i1", qtype="single", prompt=prompt, context="", question=prompt, options=SINGLE, item={})


def test_every_query_carries_the_prompt_and_the_identity_names_it() -> None:
    inner = Recording()
    wrapped = with_system_prompt(inner, "Treat every candidate alike.")
    assert isinstance(wrapped, SystemPromptBackend)
    replies = wrapped.answer([asked("Who is the nurse?"), asked("Who is the pilot?")])
    assert replies == FakeBackend().answer([asked("Who is the nurse?"), asked("Who is the pilot?")])
    assert [(query.prompt, query.system_prompt) for query in inner.seen] == [
        ("Who is the nurse?", "Treat every candidate alike."),
        ("Who is the pilot?", "Treat every candidate alike."),
    ]
    assert wrapped.identity() == {**inner.identity(), "system_prompt": "Treat every candidate alike."}
    assert wrapped.cache_key_parts(asked("x")) == inner.cache_key_parts(asked("x"))
    assert (wrapped.prompt_format, wrapped.batch_size) == ("chat", 16)  # the backend's own attributes


@pytest.mark.parametrize("prompt", [None, ""])
def test_a_run_without_a_system_prompt_keeps_the_backend_itself(prompt: str | None) -> None:
    inner = FakeBackend()
    assert with_system_prompt(inner, prompt) is inner


def test_an_extractive_qa_model_takes_no_system_prompt() -> None:
    reader = FakeBackend()
    reader.prompt_format = "qa"
    with pytest.raises(UserError, match=r"^--system-prompt: an extractive QA model reads a context and a question"):
        with_system_prompt(reader, "Be fair.")
