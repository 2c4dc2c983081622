"""Backends, imported lazily so that `probe run --backend replay` never loads torch.

Each backend module exposes `settings_from(config: RunConfig)`, which picks the run settings that backend
uses into its own settings object, and `create(settings) -> Backend`. Nothing outside this package asks
which backend it is talking to.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from probe.errors import UserError

if TYPE_CHECKING:
    from types import ModuleType

    from probe.backends.base import Backend
    from probe.config import RunConfig

BACKEND_MODULES = {
    "llamacpp": "probe.backends.llamacpp",
    "openai": "probe.backends.openai_api",
    "hf-qa": "probe.backends.hf_qa",
    "hf-causal": "probe.backends.hf_causal",
    "replay": "probe.backends.replay",
}
# The prompt format a backend's prompts are rendered in when no model is loaded (dataset preview): an
# extractive QA model reads context and question apart, every other backend gets a chat message.
PREVIEW_FORMATS = {"hf-qa": "qa"}


def _check_name(name: str) -> None:
    if name not in BACKEND_MODULES:
        known = ", ".join(BACKEND_MODULES)
        raise UserError(f"--backend {name!r}: unknown backend (choose from {known})")


def backend_module(name: str) -> ModuleType:
    _check_name(name)
    return importlib.import_module(BACKEND_MODULES[name])


def create_backend(config: RunConfig) -> Backend:
    """Build the backend named by `config.backend` from its own settings object."""
    module = backend_module(config.backend)
    return module.create(module.settings_from(config))


def preview_format(name: str) -> str:
    """The prompt format `probe dataset preview` shows for backend `name` (without loading a model)."""
    _check_name(name)
    return PREVIEW_FORMATS.get(name, "chat")
