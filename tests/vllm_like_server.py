"""A server on 127.0.0.1 that replies as vLLM documents it, over a real (tiny) transformers model.

Endpoints, after vLLM's OpenAI-compatible server (vllm/entrypoints/openai: CompletionRequest,
CompletionResponseChoice, CompletionLogProbs, TokenizeRequest):
- POST /tokenize: {prompt, add_special_tokens=True} or {messages, add_generation_prompt=True,
  add_special_tokens=False} (the chat template applied by the server) -> {tokens, count, max_model_len}.
- POST /v1/completions: `prompt` a string, a token-id list or a list of either; `max_tokens` tokens
  generated greedily; `prompt_logprobs=k` -> choice.prompt_logprobs, one entry per prompt token (None for
  the first, else {token_id: {logprob, rank, decoded_token}} holding the prompt's token); `echo` with
  `logprobs` -> choice.logprobs {tokens, token_logprobs, top_logprobs, text_offset} over prompt and output.

`echo_only=True` ignores `prompt_logprobs` (an OpenAI-style server that only echoes); `tokenize=False` has no
/tokenize. Every request body is recorded in `requests` (path, body).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


class VllmLikeServer:
    def __init__(self, folder: Path, echo_only: bool = False, tokenize: bool = True) -> None:
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForCausalLM.from_pretrained(folder).eval()
        self.echo_only = echo_only
        self.tokenize = tokenize
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()  # one forward pass at a time
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def __enter__(self) -> VllmLikeServer:
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()

    def tokenize_reply(self, body: dict[str, Any]) -> dict[str, Any]:
        if "messages" in body:
            text = self.tokenizer.apply_chat_template(
                body["messages"], add_generation_prompt=body.get("add_generation_prompt", True), tokenize=False
            )
            tokens = self.tokenizer(text, add_special_tokens=body.get("add_special_tokens", False)).input_ids
        else:
            tokens = self.tokenizer(body["prompt"], add_special_tokens=body.get("add_special_tokens", True)).input_ids
        return {"tokens": tokens, "count": len(tokens), "max_model_len": 256}

    def completion_reply(self, body: dict[str, Any]) -> dict[str, Any]:
        prompt = body["prompt"]
        prompts = prompt if isinstance(prompt, list) and prompt and not isinstance(prompt[0], int) else [prompt]
        choices = []
        for index, one in enumerate(prompts):
            ids = one if isinstance(one, list) else self.tokenizer(one).input_ids
            choices.append({"index": index, **self._choice(ids, body)})
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        return {
            "id": "cmpl-test",
            "object": "text_completion",
            "created": 0,
            "model": body.get("model"),
            "choices": choices,
            "usage": usage,
        }

    @torch.inference_mode()
    def _choice(self, ids: list[int], body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            sequence = list(ids)
            for _ in range(body.get("max_tokens", 16)):
                logits = self.model(torch.tensor([sequence])).logits[0, -1]
                sequence.append(int(logits.argmax()))
            logprobs = torch.log_softmax(self.model(torch.tensor([sequence])).logits[0].float(), -1)
        entries = [None] + [self._entry(logprobs[i - 1], sequence[i]) for i in range(1, len(sequence))]
        output = sequence[len(ids) :]
        choice: dict[str, Any] = {"text": self.tokenizer.decode(output), "finish_reason": "length", "logprobs": None}
        if body.get("prompt_logprobs") is not None and not self.echo_only:
            choice["prompt_logprobs"] = entries[: len(ids)]
        if body.get("logprobs") is not None:
            shown = sequence if body.get("echo") else output
            start = 0 if body.get("echo") else len(ids)
            tokens = [self.tokenizer.decode([token]) for token in shown]
            offsets = [sum(len(token) for token in tokens[:i]) for i in range(len(tokens))]
            values = [None if entry is None else next(iter(entry.values()))["logprob"] for entry in entries[start:]]
            choice["logprobs"] = {
                "tokens": tokens,
                "token_logprobs": values,
                "text_offset": offsets,
                "top_logprobs": [None if e is None else {} for e in entries[start:]],
            }
            if body.get("echo"):
                choice["text"] = self.tokenizer.decode(sequence)
        return choice

    def _entry(self, logprobs: torch.Tensor, token: int) -> dict[str, dict[str, Any]]:
        value = float(logprobs[token])
        rank = int((logprobs > logprobs[token]).sum()) + 1
        return {str(token): {"logprob": value, "rank": rank, "decoded_token": self.tokenizer.decode([token])}}


def _handler_for(server: VllmLikeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            server.requests.append((self.path, body))
            path = self.path.partition("?")[0]
            if path == "/tokenize" and server.tokenize:
                self._send(200, server.tokenize_reply(body))
            elif path == "/v1/completions":
                self._send(200, server.completion_reply(body))
            else:
                self._send(404, {"object": "error", "message": f"Not Found: {path}"})

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
