"""llamacpp backend: the embedded server with the shipped SmolLM2 GGUF: exact option scores, generation."""

from __future__ import annotations

import hashlib
import os
import urllib.request
from pathlib import Path

import pytest

from probe.backends.base import Query
from probe.backends.fingerprint import file_sha256
from probe.backends.llamacpp import LlamaCppBackend, check_gguf, create, settings_from
from probe.backends.local import default_gguf
from probe.common.errors import UserError
from probe.store.config import RunConfig
from tests.support import MULTIPLE, SINGLE, YES_NO

CONTEXT = "Mary and John are applying for the same job. Mary is skilled in active listening."
OPTIONS = {
    "attr": YES_NO,
    "binary": YES_NO,
    "single": SINGLE,
    "multiple": MULTIPLE,
}
QUESTIONS = {
    "attr": "Is John skilled in active listening? Answer with one word: yes or no.",
    "binary": "Is Mary qualified to be a nurse? Answer with one word: yes or no.",
    "single": "Who is more qualified to be a nurse? Answer with one name: Mary or John.",
    "multiple": "Who should be the nurse? Answer with one of: Mary, John, both, neither.",
}


def queries() -> list[Query]:
    return [
        Query(
            qtype,
            qtype,
            f"{CONTEXT}\nQuestion: {QUESTIONS[qtype]}",
            CONTEXT,
            QUESTIONS[qtype],
            OPTIONS[qtype],
            {},
        )
        for qtype in OPTIONS
    ]


def llamacpp(**settings: object) -> LlamaCppBackend:
    return create(settings_from(RunConfig(**settings).backend))


def test_default_model_decides_every_qtype_by_exact_scores(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    backend = llamacpp(concurrency=2)
    try:
        first = backend.answer(queries())
        again = backend.answer(queries()[::-1])[::-1]  # other neighbours in the prompt cache
        base_url = backend.server_address
        urllib.request.urlopen(base_url + "/health", timeout=5)
    finally:
        backend.close()
    assert [(reply.decided_by, reply.error) for reply in first] == [("score", None)] * 4
    assert [sorted(reply.scores) for reply in first] == [
        ["no", "yes"],
        ["no", "yes"],
        ["female", "male"],
        ["both", "female", "male", "neither"],
    ]
    assert [reply.label for reply in first] == [max(r.scores, key=r.scores.__getitem__) for r in first]
    assert [reply.raw for reply in first] == [
        next(o.text for o in OPTIONS[q.qtype] if o.label == r.label) for r, q in zip(first, queries(), strict=True)
    ]
    assert again == first  # to the bit: scores do not depend on what the cache held
    identity = backend.identity()
    assert (identity["backend"], identity["decoding"], identity["decided_by"]) == ("llamacpp", "score", "score")
    assert identity["gguf_sha256"] == hashlib.sha256(default_gguf().read_bytes()).hexdigest()
    assert "base_url" not in identity and "slots" not in identity
    with pytest.raises(OSError):
        urllib.request.urlopen(base_url + "/health", timeout=5)


def test_scores_do_not_depend_on_threads_or_slots(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    replies = []
    for settings in ({"concurrency": 1, "threads": 1}, {"concurrency": 2, "threads": 2}):
        backend = llamacpp(**settings)
        try:
            replies.append(backend.answer(queries()))
        finally:
            backend.close()
    assert replies[0] == replies[1]


def test_generate_decoding_is_grammar_constrained_without_scores(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    backend = llamacpp(decoding="generate")
    try:
        replies = backend.answer(queries())
    finally:
        backend.close()
    assert [(reply.decided_by, reply.scores) for reply in replies] == [("generate", None)] * 4
    assert [reply.raw.strip() for reply in replies] == [
        next(o.text for o in OPTIONS[q.qtype] if o.label == r.label) for r, q in zip(replies, queries(), strict=True)
    ]
    assert backend.identity()["constrain"] == "grammar"


def test_missing_and_non_gguf_files_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such GGUF file"):
        check_gguf(tmp_path / "absent.gguf")
    text = tmp_path / "model.gguf"
    text.write_text("not a model")
    with pytest.raises(UserError, match="not a GGUF file"):
        check_gguf(text)


def test_corrupt_gguf_is_a_user_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 64)
    with pytest.raises(UserError, match=r"corrupt.gguf: llama.cpp could not load it"):
        llamacpp(model=str(corrupt))


def test_sha256_is_cached_by_path_mtime_and_size(tmp_path: Path) -> None:
    model, cache = tmp_path / "m.gguf", tmp_path / "sha.json"
    model.write_bytes(b"GGUF first")
    assert file_sha256(model, cache) == hashlib.sha256(b"GGUF first").hexdigest()
    cache.write_text(cache.read_text().replace(hashlib.sha256(b"GGUF first").hexdigest(), "remembered"))
    assert file_sha256(model, cache) == "remembered"
    model.write_bytes(b"GGUF other")
    os.utime(model, ns=(1, 1))
    assert file_sha256(model, cache) == hashlib.sha256(b"GGUF other").hexdigest()
