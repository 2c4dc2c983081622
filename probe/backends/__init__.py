"""Backends, imported lazily so that `probe run --backend replay` never loads torch."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from probe.errors import UserError

if TYPE_CHECKING:
    from probe.backends.base import Backend
    from probe.config import RunConfig

BACKEND_MODULES = {
    "llamacpp": "probe.backends.llamacpp",
    "openai": "probe.backends.openai_api",
    "hf-qa": "probe.backends.hf_qa",
    "hf-causal": "probe.backends.hf_causal",
    "replay": "probe.backends.replay",
}


def create_backend(config: RunConfig) -> Backend:
    """Build the backend named by `config.backend`; each module exposes `create(config) -> Backend`."""
    if config.backend not in BACKEND_MODULES:
        known = ", ".join(BACKEND_MODULES)
        raise UserError(f"--backend {config.backend!r}: unknown backend (choose from {known})")
    return importlib.import_module(BACKEND_MODULES[config.backend]).create(config)
