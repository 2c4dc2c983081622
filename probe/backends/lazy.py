"""A local model loaded only when the run asks it something the answer cache does not hold.

A re-run, a resumed run or a new run of a design asked before needs the backend's identity (it keys the cache
and is checked against the stored run) but often no answer from the model. Loading torch, transformers and the
weights costs about 5 s and starting llama.cpp a server; so the identity a backend reported is remembered under
what determines it - the backend, the model file's sha256 (itself remembered by path, size and mtime:
fingerprint.py), decoding and placement settings - and the next run with those settings gets a `LazyBackend`
that answers identity(), prompt_format and the cache key from memory and builds the real backend on its first
answer(). If the real backend then reports another identity (another machine, another device), the run stops
with one line instead of mixing answers of two identities.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from probe.backends.base import Query, Reply, default_cache_key_parts
from probe.backends.fingerprint import WEIGHT_SUFFIXES, cache_dir, file_sha256
from probe.backends.local import default_gguf
from probe.common.errors import RunFailed

if TYPE_CHECKING:
    import pandas as pd

    from probe.backends.base import Backend
    from probe.store.spec import BackendSpec

# The settings an identity depends on, besides the backend and the model's bytes.
IDENTITY_SETTINGS = ("decoding", "max_tokens", "device", "dtype", "batch_size")


def lookup_key(config: BackendSpec) -> str | None:
    """What determines a local backend's identity, hashed; None where the model is no local file or folder (a
    hub id: its revision is known only once loaded)."""
    model = Path(config.model).expanduser() if config.model else default_gguf()
    if model.is_file():
        files = {model.name: file_sha256(model)}
    elif model.is_dir():
        files = {
            path.name: file_sha256(path)
            for path in sorted(model.iterdir())
            if path.name.endswith(WEIGHT_SUFFIXES) or path.suffix == ".json"
        }
    else:
        return None
    settings = {name: getattr(config, name) for name in IDENTITY_SETTINGS}
    text = json.dumps(
        {"backend": config.kind, "model": str(model.resolve()), "files": files, **settings}, sort_keys=True, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _memory_file() -> Path:
    return cache_dir() / "identities.json"


def recalled(key: str) -> dict[str, object] | None:
    """What a backend built with these settings reported: identity, prompt_format, batch_size."""
    try:
        return json.loads(_memory_file().read_text()).get(key)
    except (OSError, ValueError):
        return None


def remember(key: str, backend: Backend) -> None:
    """Keep a freshly built backend's identity for the next run with the same settings (best effort)."""
    path = _memory_file()
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        known = {}
    known[key] = {
        "identity": backend.identity(),
        "prompt_format": backend.prompt_format,
        "batch_size": backend.batch_size,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(known, indent=1, sort_keys=True, default=str))
    except OSError:
        pass  # a read-only cache only costs a model load next time


def recalled_or_built(config: BackendSpec, build: Callable[[], Backend]) -> Backend:
    """A LazyBackend where a backend built with these settings was remembered, else the backend `build` makes, its
    identity remembered for the next run."""
    key = lookup_key(config)
    known = recalled(key) if key is not None else None
    if known is not None:
        return LazyBackend(key, known, build)
    backend = build()
    if key is not None:
        remember(key, backend)
    return backend


class LazyBackend:
    """A local backend known by its remembered identity, built on its first answer() (module docstring)."""

    cacheable = True
    labels_are_data = False

    def __init__(self, key: str, known: dict[str, object], build: Callable[[], Backend]) -> None:
        self._key, self._known, self._build = key, known, build
        self._real: Backend | None = None
        self.prompt_format = str(known["prompt_format"])
        self.batch_size = int(known["batch_size"])

    @property
    def loaded(self) -> bool:
        return self._real is not None

    def identity(self) -> dict[str, object]:
        return dict(self._known["identity"])

    def cache_key_parts(self, query: Query) -> list[object]:
        return default_cache_key_parts(query)

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        if self._real is None:
            real = self._build()
            reported = json.loads(json.dumps(real.identity(), default=str))
            if reported != json.loads(json.dumps(self._known["identity"], default=str)):
                real.close()
                remember(self._key, real)
                raise RunFailed(
                    "the model reported another identity than the one remembered for these settings (another "
                    "device or library version?); it is remembered now: run the command again"
                )
            self._real = real
        return self._real.answer(queries)

    def check_pairs(self, pairs: pd.DataFrame, set_members: pd.DataFrame | None = None, sets: bool = False) -> None:
        """A local model's answers are the model's, whatever the names: nothing to check (and nothing to load)."""

    def finish(self) -> None:
        if self._real is not None:
            self._real.finish()

    def close(self) -> None:
        if self._real is not None:
            self._real.close()
