"""A small OpenAI-compatible server on 127.0.0.1 that misbehaves on a script.

Each request to /v1/chat/completions or /v1/completions takes the next `Step` of the schedule (after
the schedule runs out, every request gets `Step.ok()`); a step can also be tied to one prompt with
`for_prompt`, so concurrent clients can be scripted per item. Successful replies answer with the first
alternative of a GBNF `grammar` in the request (or `default_answer`), without logprobs (the openai
backend asks for none). Every request is recorded (time, path, body, the step served, its Authorization header) for
assertions.

For whole runs: `answer_by_hash=True` picks the grammar alternative by a hash of the prompt (deterministic,
mixed labels, comparable across runs), and `fault_plan(prompt, attempt)` may return a failing `Step` for
the attempt-th request (0-based) carrying that prompt, so faults follow items, not request order.

    with FakeOpenAIServer([Step.rate_limited(retry_after=1), Step.server_error(503)]) as server:
        backend = OpenAIBackend(ApiSettings(model="fake", base_url=server.base_url))
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Step:
    kind: str  # ok | status | slow | broken_json | drop | echo | huge | huge_chunked | trickle | redirect | raw
    status: int = 200
    size: int = 0  # huge: the reply body's length in bytes
    retry_after: float | None = None
    delay_s: float = 0.0
    for_prompt: str | None = None  # only requests whose prompt/last message contains this text take it
    body: bytes = b""  # raw: the body as sent
    headers: tuple[tuple[str, str], ...] = ()  # raw: extra headers

    @classmethod
    def ok(cls, delay_s: float = 0.0) -> Step:
        return cls("ok", delay_s=delay_s)

    @classmethod
    def rate_limited(cls, retry_after: float | None = None) -> Step:
        return cls("status", status=429, retry_after=retry_after)

    @classmethod
    def server_error(cls, status: int = 500) -> Step:
        return cls("status", status=status)

    @classmethod
    def slow(cls, delay_s: float) -> Step:
        """Answers correctly, but only after `delay_s` (beyond the client's timeout, it is a timeout)."""
        return cls("ok", delay_s=delay_s)

    @classmethod
    def broken_json(cls) -> Step:
        return cls("broken_json")

    @classmethod
    def echo_credentials(cls, status: int) -> Step:
        """An error whose body quotes the request's Authorization header, its token and its path with query,
        as careless servers and proxies do."""
        return cls("echo", status=status)

    @classmethod
    def huge(cls, size: int, chunked: bool = False) -> Step:
        """A 200 reply of `size` bytes (JSON padded with spaces); `chunked` sends no Content-Length."""
        return cls("huge_chunked" if chunked else "huge", size=size)

    @classmethod
    def trickle(cls, every_s: float) -> Step:
        """A 200 whose body comes one byte every `every_s` seconds and never ends."""
        return cls("trickle", delay_s=every_s)

    @classmethod
    def redirect_loop(cls) -> Step:
        """307 to the same URL, forever."""
        return cls("redirect", status=307)

    @classmethod
    def raw(cls, body: bytes, status: int = 200, headers: tuple[tuple[str, str], ...] = ()) -> Step:
        """`body` as it is (invalid JSON, lone surrogates, wrong types, a compressed bomb), with `headers`."""
        return cls("raw", status=status, body=body, headers=headers)

    @classmethod
    def drop(cls) -> Step:
        """Closes the connection without a reply."""
        return cls("drop")


@dataclass
class Served:
    at: float
    path: str
    body: dict[str, Any]
    step: Step
    authorization: str | None = None


@dataclass
class FakeOpenAIServer:
    schedule: list[Step] = field(default_factory=list)
    default_answer: str = "yes"
    served: list[Served] = field(default_factory=list)
    answer_by_hash: bool = False
    fault_plan: Callable[[str, int], Step | None] | None = None
    reply_model: str | None = None  # the model name replies carry (default: the one asked for)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._attempts: dict[str, int] = {}

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def script(self, steps: list[Step]) -> None:
        """Replace the remaining schedule."""
        with self._lock:
            self.schedule = list(steps)

    def next_step(self, prompt: str) -> Step:
        with self._lock:
            for index, step in enumerate(self.schedule):
                if step.for_prompt is None or step.for_prompt in prompt:
                    return self.schedule.pop(index)
            attempt = self._attempts.get(prompt, 0)
            self._attempts[prompt] = attempt + 1
        planned = self.fault_plan(prompt, attempt) if self.fault_plan else None
        return planned or Step.ok()

    def record(self, path: str, body: dict[str, Any], step: Step, authorization: str | None = None) -> None:
        with self._lock:
            self.served.append(Served(time.monotonic(), path, body, step, authorization))

    def answer(self, body: dict[str, Any], prompt: str) -> str:
        alternatives = _grammar_alternatives(body)
        if not alternatives:
            return self.default_answer
        if self.answer_by_hash:
            return alternatives[prompt_hash(prompt) % len(alternatives)]
        return alternatives[0]

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def prompt_hash(prompt: str) -> int:
    """A stable number for a prompt (Python's hash() is salted per process)."""
    return int(hashlib.sha256(prompt.encode()).hexdigest()[:12], 16)


def _grammar_alternatives(body: dict[str, Any]) -> list[str]:
    """The option texts of a `root ::= " "? ("a" | "b")` grammar, in order; [] without a grammar."""
    grammar = body.get("grammar")
    if not isinstance(grammar, str):
        return []
    group = re.search(r"\((.*)\)\s*$", grammar.strip())
    if not group:
        return []
    return [json.loads(text) for text in re.findall(r'"(?:[^"\\]|\\.)*"', group.group(1))]


def _reply(path: str, body: dict[str, Any], answer: str, model: str | None = None) -> dict[str, Any]:
    if path.partition("?")[0].endswith("/chat/completions"):
        choice: dict[str, Any] = {"index": 0, "finish_reason": "stop"}
        choice["message"] = {"role": "assistant", "content": answer}
        return {
            "id": "fake",
            "object": "chat.completion",
            "created": 0,
            "model": model or body.get("model", ""),
            "choices": [choice],
        }
    choice = {"index": 0, "finish_reason": "stop", "text": answer, "logprobs": None}
    return {
        "id": "fake",
        "object": "text_completion",
        "created": 0,
        "model": model or body.get("model", ""),
        "choices": [choice],
    }


def _handler_for(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # keep pytest output clean
            pass

        def handle(self) -> None:
            # The client may hang up between requests (it gave up on the run): nothing to answer.
            with contextlib.suppress(ConnectionError):
                super().handle()

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            messages = body.get("messages") or [{}]
            prompt = str(body.get("prompt") or messages[-1].get("content", ""))
            step = server.next_step(prompt)
            server.record(self.path, body, step, self.headers.get("Authorization"))
            if step.kind == "drop":
                self.close_connection = True
                self.connection.close()
                return
            time.sleep(step.delay_s)
            if step.kind == "status":
                payload = json.dumps({"error": {"message": f"scripted {step.status}", "type": "fake"}})
                headers = {"Retry-After": f"{step.retry_after:g}"} if step.retry_after is not None else {}
                self._send(step.status, payload.encode(), headers)
            elif step.kind == "echo":
                authorization = self.headers.get("Authorization") or ""
                message = (
                    f"invalid request {self.path}: Authorization: {authorization}; "
                    f"token={authorization.rpartition(' ')[2]}"
                )
                payload = json.dumps({"error": {"message": message, "type": "fake", "header": authorization}})
                self._send(step.status, payload.encode(), {})
            elif step.kind in ("huge", "huge_chunked"):
                self._send_huge(step)
            elif step.kind == "trickle":
                self._trickle(step.delay_s)
            elif step.kind == "redirect":
                self._send(307, b"", {"Location": self.path})
            elif step.kind == "raw":
                self._send(step.status, step.body, dict(step.headers))
            elif step.kind == "broken_json":
                self._send(200, b'{"id": "fake", "choices": [{"mess', {})
            else:
                self._send(
                    200,
                    json.dumps(_reply(self.path, body, server.answer(body, prompt), server.reply_model)).encode(),
                    {},
                )

        def _send_huge(self, step: Step) -> None:
            head = json.dumps(_reply(self.path, {}, server.default_answer)).encode()
            block = b" " * 65536
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if step.kind == "huge":
                    self.send_header("Content-Length", str(step.size))
                else:
                    self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                remaining = step.size - len(head)
                chunks = [head]
                while remaining > 0:
                    chunks.append(block[: min(remaining, len(block))])
                    remaining -= len(chunks[-1])
                for chunk in chunks:
                    if step.kind == "huge":
                        self.wfile.write(chunk)
                    else:
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                if step.kind != "huge":
                    self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading (size cap)
            self.close_connection = True

        def _trickle(self, every_s: float) -> None:
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "100000")
                self.end_headers()
                for _ in range(100_000):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(every_s)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up
            self.close_connection = True

        def _send(self, status: int, payload: bytes, headers: dict[str, str]) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout) before the slow reply came

    return Handler
