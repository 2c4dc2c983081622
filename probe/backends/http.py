"""The HTTP client under the openai backend: every reply body is read with a size cap.

A server we do not control may answer with megabytes (a runaway generation, a hostile or broken proxy);
buffered whole, each concurrent request would hold its body in memory. Here a body larger than the cap
(declared by Content-Length or found while streaming) stops being read and raises `ReplyTooLarge`, so
memory stays bounded by concurrency x cap.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx

MAX_REPLY_BYTES = 1_000_000  # a reply is a few tokens plus logprobs: a few kB; 1 MB is generous


class ReplyTooLarge(Exception):
    """A reply body over the cap: recorded as the item's error, not retried (it would come again)."""


class _CappedStream(httpx.AsyncByteStream):
    def __init__(self, stream: httpx.AsyncByteStream, limit: int) -> None:
        self._stream = stream
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        received = 0
        async for chunk in self._stream:
            received += len(chunk)
            if received > self._limit:
                raise ReplyTooLarge(f"reply larger than {self._limit:,} bytes; not read further")
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


class _CappedTransport(httpx.AsyncHTTPTransport):
    def __init__(self, limit: int) -> None:
        super().__init__()
        self._limit = limit

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await super().handle_async_request(request)
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._limit:
            await response.aclose()
            raise ReplyTooLarge(f"reply of {int(declared):,} bytes is over the {self._limit:,}-byte limit")
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_CappedStream(response.stream, self._limit),
            extensions=response.extensions,
        )


def capped_client(timeout_s: float, limit: int = MAX_REPLY_BYTES) -> httpx.AsyncClient:
    """An AsyncClient for openai.AsyncOpenAI(http_client=...) whose reply bodies are read up to `limit` bytes."""
    return httpx.AsyncClient(transport=_CappedTransport(limit), timeout=timeout_s, follow_redirects=True)
