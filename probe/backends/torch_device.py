"""Where and in which precision the transformers backends (hf-causal, hf-qa) run: --device and --dtype.

Omitted, they follow the hardware: a CUDA GPU runs bfloat16 (half the memory traffic, tensor cores),
Apple's MPS and the CPU run float32 (exact to the reference scores; CPU bfloat16 matmuls are slow without
AMX/AVX512-BF16). The resolved pair is part of the backend's identity, so answers from another precision
never come out of the cache for this one.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from probe.common.errors import UserError

DEVICES = ("cpu", "cuda", "mps")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class Placement:
    device: str  # cpu | cuda | mps
    dtype: str  # float32 | bfloat16 | float16

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    def identity(self) -> dict[str, str]:
        return {"device": self.device, "dtype": self.dtype}


def available_device() -> str:
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def resolve_placement(device: str | None, dtype: str | None) -> Placement:
    """--device/--dtype as given, or chosen for the hardware; a device that is not there is a UserError."""
    if device is not None and device not in DEVICES:
        raise UserError(f"--device {device!r}: choose from {', '.join(DEVICES)}")
    if dtype is not None and dtype not in DTYPES:
        raise UserError(f"--dtype {dtype!r}: choose from {', '.join(DTYPES)}")
    chosen = device or available_device()
    if chosen != "cpu" and chosen != available_device():
        raise UserError(f"--device {chosen}: no {chosen} device is available on this machine")
    return Placement(chosen, dtype or ("bfloat16" if chosen == "cuda" else "float32"))
