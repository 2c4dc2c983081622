"""Several endpoints behind one backend (probe/backends/endpoints.py), with fake backends: every query answered in
its order whichever endpoint took it, an endpoint that stops is dropped and its chunk goes to the others, the run
fails only when none is left. Over real HTTP servers: test_endpoints.py."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from probe.backends.base import Query, Reply
from probe.backends.endpoints import MultiEndpointBackend, split_urls
from probe.common.errors import RunFailed
from tests.support import SINGLE, FakeBackend


class Endpoint(FakeBackend):
    """A fake server at `url` that raises RunFailed from its `dies_at`-th call on."""

    def __init__(self, url: str, dies_at: int | None = None) -> None:
        super().__init__()
        self.url, self.dies_at, self.calls = url, dies_at, 0

    def identity(self) -> dict[str, object]:
        return {**super().identity(), "base_url": self.url}

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        self.calls += 1
        if self.dies_at is not None and self.calls >= self.dies_at:
            raise RunFailed(f"{self.url}: cannot connect")
        return super().answer(queries)


QUERIES = [
    Query(item_id=str(n), qtype="single", prompt=f"Who is nurse {n}?", context="", question="", options=SINGLE, item={})
    for n in range(10)
]


def test_urls_split_on_commas() -> None:
    assert split_urls(" http://a/v1, http://b/v1 ,") == ["http://a/v1", "http://b/v1"]
    assert (split_urls("http://a/v1"), split_urls(None), split_urls("")) == (["http://a/v1"], [], [])


def test_every_query_is_answered_in_order_by_whichever_endpoint_took_it() -> None:
    backend = MultiEndpointBackend([Endpoint("http://a/v1"), Endpoint("http://b/v1")], chunk_size=3)
    assert backend.answer(QUERIES) == FakeBackend().answer(QUERIES)
    assert sum(backend.requests_sent) == 10 and backend.batch_size == 32
    assert backend.identity()["base_url"] == "http://a/v1,http://b/v1"


def test_an_endpoint_that_stops_is_dropped_and_the_others_answer_its_chunk() -> None:
    dying = Endpoint("http://a/v1", dies_at=1)
    backend = MultiEndpointBackend([dying, Endpoint("http://b/v1")], chunk_size=3)
    assert backend.answer(QUERIES) == FakeBackend().answer(QUERIES)
    assert backend.requests_sent == [0, 10]
    assert backend.answer(QUERIES) == FakeBackend().answer(QUERIES)
    assert dying.calls <= 1  # once it stopped, never asked again (the threads race for the first chunk)


def test_the_run_fails_when_no_endpoint_is_left() -> None:
    backend = MultiEndpointBackend([Endpoint("http://a/v1", dies_at=1), Endpoint("http://b/v1", dies_at=2)], 3)
    with pytest.raises(RunFailed, match=r"^http://[ab]/v1: cannot connect$"):
        backend.answer(QUERIES)
