"""A GGUF conversion patches the gguf package for the whole process (`_parsed_once`): under a lock, one conversion
at a time, and the package's own reader and name table are back after it, however it ends."""

from __future__ import annotations

import gguf
import pytest

from probe.backends import gguf_cache


def test_a_conversion_that_fails_leaves_the_gguf_package_as_it_was() -> None:
    originals = (gguf.GGUFReader, gguf.get_tensor_name_map)
    with pytest.raises(RuntimeError, match="the conversion failed"), gguf_cache._parsed_once():
        patched = (gguf.GGUFReader is originals[0], gguf.get_tensor_name_map is originals[1])
        assert (patched, gguf_cache._CONVERTING.locked()) == ((False, False), True)
        raise RuntimeError("the conversion failed")
    assert ((gguf.GGUFReader, gguf.get_tensor_name_map), gguf_cache._CONVERTING.locked()) == (originals, False)
