"""The HTTP client under the openai backend: every reply body is read with a size cap, after decompression.

A server we do not control may answer with megabytes (a runaway generation, a hostile or broken proxy);
buffered whole, each concurrent request would hold its body in memory. Here a body larger than the cap
(declared by Content-Length or found while streaming) stops being read and raises `ReplyTooLarge`, so
memory stays bounded by concurrency x cap. The cap applies to the decompressed bytes: a gzip or deflate
body is inflated here, never more than the cap at a time (a 10 kB "zip bomb" would otherwise become 10 MB);
a body in an encoding we do not inflate (br, zstd, ...) is refused, not handed on undecoded.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator

import httpx

MAX_REPLY_BYTES = 1_000_000  # a reply is a few tokens plus logprobs: a few kB; 1 MB is generous


class RefusedReply(Exception):
    """A reply body we do not read: recorded as the item's error, not retried (it would come again)."""


class ReplyTooLarge(RefusedReply):
    """A reply body over the cap (declared, received or once decompressed)."""


class UnsupportedEncoding(RefusedReply):
    """A reply compressed in an encoding we do not inflate with a bound."""


class _Inflater:
    """gzip or deflate, inflated chunk by chunk, never more than `limit` bytes in all."""

    def __init__(self, encoding: str, limit: int) -> None:
        self._gzip = encoding in ("gzip", "x-gzip")
        self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS if self._gzip else zlib.MAX_WBITS)
        self._raw_fallback = not self._gzip  # deflate is sometimes sent without its zlib header
        self._limit = limit
        self._produced = 0

    def feed(self, data: bytes) -> bytes:
        try:
            out = self._inflate.decompress(data, self._limit - self._produced + 1)
        except zlib.error:
            if not self._raw_fallback or self._produced:
                raise UnsupportedEncoding("reply body is not valid compressed data") from None
            self._inflate, self._raw_fallback = zlib.decompressobj(-zlib.MAX_WBITS), False
            return self.feed(data)
        self._raw_fallback = False
        return self._count(out, bool(self._inflate.unconsumed_tail))

    def flush(self) -> bytes:
        return self._count(self._inflate.flush(self._limit - self._produced + 1), False)

    def _count(self, out: bytes, more_waiting: bool) -> bytes:
        self._produced += len(out)
        if self._produced > self._limit or more_waiting:
            raise ReplyTooLarge(f"reply larger than {self._limit:,} bytes once decompressed; not read further")
        return out


class _CappedStream(httpx.AsyncByteStream):
    def __init__(self, stream: httpx.AsyncByteStream, limit: int, encodings: list[str]) -> None:
        self._stream = stream
        self._limit = limit
        self._inflaters = [_Inflater(encoding, limit) for encoding in reversed(encodings)]  # last applied first

    async def __aiter__(self) -> AsyncIterator[bytes]:
        received = 0
        async for chunk in self._stream:
            received += len(chunk)
            if received > self._limit:
                raise ReplyTooLarge(f"reply larger than {self._limit:,} bytes; not read further")
            yield self._inflated(chunk, final=False)
        yield self._inflated(b"", final=True)

    def _inflated(self, data: bytes, *, final: bool) -> bytes:
        for inflater in self._inflaters:
            data = inflater.feed(data)
            if final:
                data += inflater.flush()
        return data

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
        encodings = _content_encodings(response.headers)
        unsupported = [encoding for encoding in encodings if encoding not in _INFLATED]
        if unsupported:
            await response.aclose()
            raise UnsupportedEncoding(f"reply compressed as {unsupported[0][:40]!r}, which is not read")
        headers = response.headers.copy()
        if encodings:  # inflated here: httpx must not decode again, and the declared length is the compressed one
            del headers["content-encoding"]
            headers.pop("content-length", None)
        return httpx.Response(
            response.status_code,
            headers=headers,
            stream=_CappedStream(response.stream, self._limit, encodings),
            extensions=response.extensions,
        )


_INFLATED = ("gzip", "x-gzip", "deflate")


def _content_encodings(headers: httpx.Headers) -> list[str]:
    """The Content-Encoding list in the order applied, identity left out."""
    values = ",".join(headers.get_list("content-encoding"))
    return [name for name in (part.strip().lower() for part in values.split(",")) if name and name != "identity"]


def capped_client(timeout_s: float, limit: int = MAX_REPLY_BYTES) -> httpx.AsyncClient:
    """An AsyncClient for openai.AsyncOpenAI(http_client=...) whose reply bodies are read up to `limit` bytes."""
    return httpx.AsyncClient(transport=_CappedTransport(limit), timeout=timeout_s, follow_redirects=True)
