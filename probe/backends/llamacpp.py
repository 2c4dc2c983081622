"""A GGUF model served by an embedded llama.cpp server (xllamacpp) on 127.0.0.1, in its quantized arithmetic.

Two decodings (`--decoding`):
- `score` (default): every option's exact log-likelihood (llamacpp_score.py); the label is their argmax.
- `generate`: the openai backend drives the server (grammar-constrained generation, parsed), no scores.

The server listens on 127.0.0.1 on a free port, with parallel slots (continuous batching) and threads
sized to the machine (or --concurrency / --threads) and the prompt-prefix cache on; it stops on close() or
when the process exits. The identity names the GGUF by its sha256, not its path or the port, so cached
answers survive moving the file and restarting the server; slots and threads are not part of it, since
scores do not depend on them (BENCHMARKS.md, reproducibility).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from probe.backends.base import BackendDefaults, Query, Reply, default_cache_key_parts
from probe.backends.fingerprint import file_sha256
from probe.backends.llamacpp_score import LlamaCppScorer
from probe.backends.local import check_decoding, default_gguf, idle_cores, machine_cores
from probe.backends.openai_api import ApiSettings, OpenAIBackend
from probe.common.errors import UserError

if TYPE_CHECKING:
    from probe.store.spec import BackendSpec

GGUF_MAGIC = b"GGUF"
SLOT_CONTEXT = 2048  # tokens per parallel slot; prompts here are a few hundred tokens
POLL = 0  # threads sleep instead of spinning between batches: the cores are shared
# Prompts dominate (a few hundred tokens in, one or two out) and neighbouring items share their context,
# which a slot's prompt cache reuses only when the next item lands in the same slot: few slots win
# (BENCHMARKS.md, "One slot per 2 cores").
CORES_PER_SLOT = 2
# ggml's threads meet at barriers: when they outnumber the free cores, one preempted thread stalls the
# others. So the server gets the cores that are idle when it starts (BENCHMARKS.md: threads under load).
# The probe process itself waits while the server computes (one request in flight).


def check_gguf(path: Path) -> None:
    """Fail early, with the path, on what llama.cpp would only report as 'failed to init server'."""
    if not path.is_file():
        raise UserError(f"--model {path}: no such GGUF file")
    with path.open("rb") as file:
        if file.read(4) != GGUF_MAGIC:
            raise UserError(f"--model {path}: not a GGUF file (llama.cpp needs a .gguf model)")


def default_slots() -> int:
    """Parallel slots (and concurrent requests) when --concurrency is not given."""
    return max(1, machine_cores() // CORES_PER_SLOT)


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
        # Flash attention makes a position's numbers depend on its batch's size (3-63 tokens one value, 64
        # another, 65+ a third: up to 0.1 nats apart on SmolLM2); without it every batch of >= 2 tokens
        # computes a position alike, which exact, reproducible scores need (llamacpp_score.py).
        params.flash_attn_type = xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
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


@dataclass(frozen=True)
class LlamaCppSettings:
    """What the llamacpp backend is configured with; slots, threads and the retry knobs change speed only."""

    gguf: Path
    decoding: str = "score"  # score | generate
    api_mode: str = "chat"  # chat (the model's chat template) | completions (the prompt as it is)
    constrain: str = "grammar"  # generate only: grammar | json_schema | none
    max_tokens: int = 16  # generate only
    slots: int = 1  # parallel server slots = concurrent requests
    threads: int | None = None  # None: the cores idle when the server starts
    timeout_s: float = 60.0
    max_retries: int = 5  # generate only (the openai client's retries)
    backoff_s: float = 1.0

    def __post_init__(self) -> None:
        check_decoding(self.decoding)
        if self.slots < 1 or (self.threads is not None and self.threads < 1):
            raise UserError("--concurrency and --threads must be at least 1")


class LlamaCppBackend(BackendDefaults):
    """See the module docstring."""

    def __init__(self, settings: LlamaCppSettings) -> None:
        check_gguf(settings.gguf)
        self.settings = settings
        self._sha256 = file_sha256(settings.gguf)
        self.prompt_format = "chat" if settings.api_mode == "chat" else "completion"
        self.batch_size = settings.slots * 4
        threads = settings.threads or idle_cores()
        if settings.decoding == "score":  # one single-slot server per worker: see llamacpp_score.py
            per_server = max(1, threads // settings.slots)
            self._servers = [EmbeddedServer(settings.gguf, slots=1, threads=per_server) for _ in range(settings.slots)]
        else:
            self._servers = [EmbeddedServer(settings.gguf, slots=settings.slots, threads=threads)]
        addresses = [server.base_url.removesuffix("/v1") for server in self._servers]
        self.server_address = addresses[0]  # http://127.0.0.1:PORT
        self._client = OpenAIBackend(self._client_settings()) if settings.decoding == "generate" else None
        self._scorer = (
            LlamaCppScorer(addresses, self.prompt_format, settings.timeout_s) if settings.decoding == "score" else None
        )

    def _client_settings(self) -> ApiSettings:
        settings = self.settings
        return ApiSettings(
            model=settings.gguf.stem,
            base_url=self._servers[0].base_url,
            api_mode=settings.api_mode,
            constrain=settings.constrain,
            max_tokens=settings.max_tokens,
            concurrency=settings.slots,
            timeout_s=settings.timeout_s,
            max_retries=settings.max_retries,
            backoff_s=settings.backoff_s,
        )

    def identity(self) -> dict[str, object]:
        model = {"backend": "llamacpp", "model": self.settings.gguf.name, "gguf_sha256": self._sha256}
        if self._client is not None:
            request = {key: value for key, value in self._client.identity().items() if key != "base_url"}
            return {**request, **model, "decoding": "generate"}
        return {
            **model,
            "prompt_format": self.prompt_format,
            "decoding": "score",
            "decided_by": "score",
            "scores": "exact: sum of forced option-token log-probabilities, contexts in batches of >= 2 tokens",
        }

    def cache_key_parts(self, query: Query) -> list[object]:
        return default_cache_key_parts(query)

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        if self._scorer is not None:
            return self._scorer.answer(queries)
        return self._client.answer(queries)

    def close(self) -> None:
        for user in (self._client, self._scorer):
            if user is not None:
                user.close()
        for server in self._servers:
            server.stop()


LOCAL_TIMEOUT_S = 60.0


def settings_from(config: BackendSpec) -> LlamaCppSettings:
    return LlamaCppSettings(
        gguf=Path(config.model).expanduser() if config.model else default_gguf(),
        decoding=config.decoding,
        api_mode="completions" if config.api_mode == "completions" else "chat",
        constrain="grammar" if config.constrain == "auto" else config.constrain,
        max_tokens=config.max_tokens,
        slots=config.concurrency or default_slots(),
        threads=config.threads,
        # Our own server, a large GGUF on a CPU: 60 s a request as before `timeout` became 30 s for remote servers.
        timeout_s=max(config.timeout, LOCAL_TIMEOUT_S),
        max_retries=config.max_retries,
        backoff_s=config.backoff,
    )


def create(settings: LlamaCppSettings) -> LlamaCppBackend:
    return LlamaCppBackend(settings)
