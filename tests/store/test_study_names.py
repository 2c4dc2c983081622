"""How a study names its runs (probe/store/study.py): a sortable study id, and each variant's default name from its
backend and model file, made fit for a run id. Whole studies (runs, resume, compare): test_study.py."""

from __future__ import annotations

import re

import pytest

from probe.store.study import new_study_id, variant_name


def test_a_new_study_id_sorts_by_its_start_time() -> None:
    assert re.fullmatch(r"study-\d{8}-\d{6}-[0-9a-f]{4}", new_study_id())


@pytest.mark.parametrize(
    ("backend", "settings", "name"),
    [
        ("hf-causal", {}, "hf-causal"),
        ("llamacpp", {"model": "/models/SmolLM2-135M-Instruct-Q8_0.gguf"}, "llamacpp-SmolLM2-135M-Instruct-Q8_0"),
        ("openai", {"model": "org/model name:v2"}, "openai-model-name-v2"),
        ("openai", {"model": "..."}, "openai"),
    ],
)
def test_a_variant_is_named_by_its_backend_and_model(backend: str, settings: dict, name: str) -> None:
    assert variant_name(backend, settings) == name
