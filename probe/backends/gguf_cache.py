"""A GGUF file for transformers, converted once: the dequantized weights are kept as a transformers folder.

transformers reads a GGUF by parsing its metadata (three times: config, tokenizer, weights) and
dequantizing every tensor, ~20 s for the bundled 135M SmolLM2 on 2 cores, on every run. The result is
saved once, in float32 (exactly the dequantized values; another dtype is cast from them on load, as
transformers casts its own float32 dequantization), under the cache folder keyed by the file's sha256, so
later runs load it in about a second with identical weights. The run's identity stays the GGUF's sha256.
The conversion itself parses the file once (`_parsed_once`): transformers' own path parses it three times and
builds gguf's tensor-name table once per submodule, ~20 of its ~36 CPU-seconds for SmolLM2, for the same weights.
A cache that cannot be written (read-only home, full disk) only costs the conversion next time. Models
over MAX_CACHED_BYTES in float32 are not kept: a 7B GGUF would take 28 GB of the user's disk unasked.
"""

from __future__ import annotations

import copy
import functools
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from safetensors.torch import save_model

from probe.backends.fingerprint import cache_dir

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

CONVERTED = "gguf-converted"
MAX_CACHED_BYTES = 2 << 30  # float32 weights: models up to ~500M parameters (SmolLM2-135M: 540 MB)
_CONVERTING = threading.Lock()  # held by `_parsed_once`, which patches the gguf package for the whole process


def load_gguf(path: Path, sha256: str, dtype: torch.dtype) -> tuple[PreTrainedTokenizerBase, PreTrainedModel]:
    """Tokenizer and model of the GGUF at `path` (whose hash is `sha256`), from the cache when converted before."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = cache_dir() / CONVERTED / sha256
    if (folder / "config.json").is_file():
        try:
            return AutoTokenizer.from_pretrained(folder), AutoModelForCausalLM.from_pretrained(folder, dtype=dtype)
        except Exception:  # any damage (a file deleted, cut short, garbled) raises its own type: convert again
            shutil.rmtree(folder, ignore_errors=True)
    with _parsed_once():
        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
    if model.get_memory_footprint() <= MAX_CACHED_BYTES:
        _save(folder, tokenizer, model)
    return tokenizer, model.to(dtype)


@contextmanager
def _parsed_once() -> Iterator[None]:
    """While converting: one gguf.GGUFReader per file and one tensor-name table per architecture and depth.

    transformers imports both from the gguf package inside its functions (config, tokenizer and weights each
    open a reader; the weight map asks for the name table at every submodule). A reader only reads its memory-
    mapped file, and the table is a pure function of its arguments, so sharing them changes no value.
    """
    import gguf

    with _CONVERTING:  # one conversion at a time: two overlapping ones could restore the patch in the wrong order
        read, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
        readers: dict[tuple, gguf.GGUFReader] = {}

        def shared_reader(path: str | os.PathLike[str], *args: object, **kwargs: object) -> gguf.GGUFReader:
            key = (os.fspath(path), args, tuple(sorted(kwargs.items())))
            if key not in readers:
                readers[key] = read(path, *args, **kwargs)
            return readers[key]

        gguf.GGUFReader, gguf.get_tensor_name_map = shared_reader, functools.cache(name_map)
        try:
            yield
        finally:
            gguf.GGUFReader, gguf.get_tensor_name_map = read, name_map


def _save(folder: Path, tokenizer: PreTrainedTokenizerBase, model: PreTrainedModel) -> None:
    """Write the converted model beside `folder` and rename it into place: a reader never sees half of it."""
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".partial-"))
    except OSError:
        return
    # A model loaded from a GGUF refuses save_pretrained (its config names the gguf quantizer); the weights
    # are plain float32 tensors by now, so they are written as such, with the config minus that entry.
    config = copy.deepcopy(model.config)
    del config.quantization_config
    try:
        config.save_pretrained(staging)
        save_model(model, str(staging / "model.safetensors"))  # tied weights stored once
        tokenizer.save_pretrained(staging)
        staging.rename(folder)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)  # another process got there first, or the disk is full
