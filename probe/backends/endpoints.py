"""One run over several OpenAI-compatible endpoints: `--base-url URL1,URL2,...`.

Each endpoint is an ordinary openai backend with its own concurrency. A call's queries are cut into
chunks of one endpoint's concurrency; every endpoint takes the next chunk as soon as it has finished
its last one, so the least busy endpoint gets the work (a slow or loaded server simply takes fewer
chunks). An endpoint that stops answering (connection refused, unknown model: the openai backend's
RunFailed) is dropped for the rest of the run and its chunk goes to the others; the run fails only when
no endpoint is left. The servers must serve the same model with the same settings: answers are then
the same whichever endpoint gave them (temperature 0, the same request body).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Sequence

from probe.backends.base import Backend, BackendDefaults, Query, Reply
from probe.common.errors import RunFailed


def split_urls(base_url: str | None) -> list[str]:
    """`URL1,URL2` -> [URL1, URL2]; one URL or none -> a list of at most one."""
    return [url.strip() for url in (base_url or "").split(",") if url.strip()]


class MultiEndpointBackend(BackendDefaults):
    """Several openai backends behind the one Backend interface; see the module docstring."""

    def __init__(self, endpoints: Sequence[Backend], chunk_size: int) -> None:
        self._endpoints = list(endpoints)
        self._chunk_size = chunk_size  # one endpoint's concurrency
        self._alive = list(endpoints)
        first = self._endpoints[0]
        self.prompt_format = first.prompt_format
        self.batch_size = sum(endpoint.batch_size for endpoint in endpoints)
        self.requests_sent = [0] * len(endpoints)  # queries handed to each endpoint (tests, logs)

    def identity(self) -> dict[str, object]:
        identities = [endpoint.identity() for endpoint in self._endpoints]
        return {**identities[0], "base_url": ",".join(str(identity["base_url"]) for identity in identities)}

    def cache_key_parts(self, query: Query) -> list[object]:
        return self._endpoints[0].cache_key_parts(query)

    def served_models(self) -> set[str]:
        return set().union(*(endpoint.served_models() for endpoint in self._endpoints))

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        chunks: queue.Queue[tuple[int, Sequence[Query]]] = queue.Queue()
        for start in range(0, len(queries), self._chunk_size):
            chunks.put((start, queries[start : start + self._chunk_size]))
        replies: list[Reply | None] = [None] * len(queries)
        failures: list[RunFailed] = []
        lock = threading.Lock()

        def work(endpoint: Backend) -> None:
            while True:
                try:
                    start, chunk = chunks.get_nowait()
                except queue.Empty:
                    return
                try:
                    answered = endpoint.answer(chunk)
                except RunFailed as error:
                    with lock:
                        failures.append(error)
                        self._alive.remove(endpoint)
                    chunks.put((start, chunk))  # another endpoint answers it
                    return
                with lock:
                    self.requests_sent[self._endpoints.index(endpoint)] += len(chunk)
                replies[start : start + len(chunk)] = answered

        while chunks.qsize():
            if not self._alive:
                raise failures[-1] if failures else RunFailed("no endpoint left")
            workers = [threading.Thread(target=work, args=(endpoint,)) for endpoint in list(self._alive)]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
        return [reply for reply in replies if reply is not None]  # every slot is filled by now

    def close(self) -> None:
        for endpoint in self._endpoints:
            endpoint.close()
