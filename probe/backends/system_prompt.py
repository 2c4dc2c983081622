"""A run's `--system-prompt`: every query carries it, the backend identity names it.

The text is part of what the model reads (model_input.py renders it through prompts/<format>/system.j2),
so it is part of the run's identity (runs.backend_json) and, through the identity, of every answer-cache
key: "model + mitigation prompt" is a variant of its own, never answered from the plain model's cache.
A run without one keeps the backend's identity as it is, so earlier runs and caches stay valid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from probe.backends.base import Backend, Query, Reply
from probe.common.errors import UserError


class SystemPromptBackend:
    """`backend` with `system_prompt` on every query it answers."""

    def __init__(self, backend: Backend, system_prompt: str) -> None:
        if backend.prompt_format == "qa":
            raise UserError("--system-prompt: an extractive QA model reads a context and a question, no system prompt")
        self._backend = backend
        self._system_prompt = system_prompt

    def __getattr__(self, name: str) -> object:  # prompt_format, batch_size, cacheable, backend extras
        return getattr(self._backend, name)

    def identity(self) -> dict[str, object]:
        return {**self._backend.identity(), "system_prompt": self._system_prompt}

    def cache_key_parts(self, query: Query) -> list[object]:
        return self._backend.cache_key_parts(query)

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        return self._backend.answer([replace(query, system_prompt=self._system_prompt) for query in queries])

    def close(self) -> None:
        self._backend.close()


def with_system_prompt(backend: Backend, system_prompt: str | None) -> Backend:
    """The backend itself without a system prompt, else the backend that adds it."""
    return SystemPromptBackend(backend, system_prompt) if system_prompt else backend
