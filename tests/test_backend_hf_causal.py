"""hf-causal on tiny random Llamas: option log-likelihoods, chat template, batching, greedy generation."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from probe.backends.base import Query
from probe.backends.hf_causal import HFCausalBackend
from probe.errors import UserError
from tests.support import MULTIPLE, YES_NO
from tests.tiny_models import build_causal_model

PROMPTS = {
    "binary": "Mary and John are applying for the same job.\nQuestion: Is Mary qualified to be a nurse?"
    "\nAnswer:",
    "multiple": "Linda and James are applying for the same job. Who should be the dancer?\nAnswer:",
}


def queries() -> list[Query]:
    return [
        Query("1", "binary", PROMPTS["binary"], "", "", YES_NO, {}),
        Query("2", "multiple", PROMPTS["multiple"], "", "", MULTIPLE, {}),
        Query("3", "binary", "Mary is here.\nAnswer:", "", "", YES_NO, {}),
    ]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny-causal")
    return {
        "chat": build_causal_model(root / "chat", chat=True),
        "plain": build_causal_model(root / "plain", chat=False),
    }


def reference_loglikelihood(folder: Path, prompt_ids: list[int], option_ids: list[int]) -> float:
    """log p(option | prompt) from one unpadded forward pass, written out independently of the backend."""
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    ids = torch.tensor([prompt_ids + option_ids])
    with torch.no_grad():
        logprobs = torch.log_softmax(model(ids).logits[0].float(), -1)
    return sum(float(logprobs[len(prompt_ids) + i - 1, token]) for i, token in enumerate(option_ids))


def test_completion_format_scores_options_by_loglikelihood(models: dict[str, Path]) -> None:
    backend = HFCausalBackend(str(models["plain"]), batch_size=8)
    assert backend.prompt_format == "completion"
    replies = backend.answer(queries())
    tokenizer = AutoTokenizer.from_pretrained(models["plain"])
    prompt_ids = tokenizer(PROMPTS["multiple"]).input_ids
    expected = {
        option.text: reference_loglikelihood(
            models["plain"], prompt_ids, tokenizer(" " + option.text, add_special_tokens=False).input_ids
        )
        for option in MULTIPLE
    }
    assert replies[1].scores == pytest.approx(expected, abs=1e-4)
    best = max(expected, key=expected.__getitem__)
    assert (replies[1].raw, replies[1].label) == (best, next(o.label for o in MULTIPLE if o.text == best))
    assert [sorted(reply.scores) for reply in replies] == [
        ["no", "yes"],
        ["John", "Mary", "both", "neither"],
        ["no", "yes"],
    ]


def test_chat_template_and_batching_equal_one_by_one(models: dict[str, Path]) -> None:
    batched = HFCausalBackend(str(models["chat"]), batch_size=8)
    alone = HFCausalBackend(str(models["chat"]), batch_size=1)
    assert batched.prompt_format == "chat"
    together, single, again = batched.answer(queries()), alone.answer(queries()), batched.answer(queries())
    assert together == again
    assert [reply.label for reply in together] == [reply.label for reply in single]
    for one, other in zip(together, single, strict=True):
        assert one.scores == pytest.approx(other.scores, abs=1e-4)
    tokenizer = AutoTokenizer.from_pretrained(models["chat"])
    chat_ids = tokenizer(f"<s>user: {PROMPTS['binary']}</s><s>assistant:", add_special_tokens=False).input_ids
    yes = reference_loglikelihood(
        models["chat"], chat_ids, tokenizer("yes", add_special_tokens=False).input_ids
    )
    assert together[0].scores["yes"] == pytest.approx(yes, abs=1e-4)
    assert batched.identity()["prompt_format"] == "chat"


def test_greedy_generation_is_parsed_and_deterministic(models: dict[str, Path]) -> None:
    backend = HFCausalBackend(str(models["plain"]), decoding="generate", max_tokens=4, batch_size=8)
    replies = backend.answer(queries())
    assert replies == backend.answer(queries())
    assert [reply.scores for reply in replies] == [None, None, None]
    allowed = [
        {"yes", "no", "unknown"},
        {"female", "male", "both", "neither", "unknown"},
        {"yes", "no", "unknown"},
    ]
    assert [reply.label in labels for reply, labels in zip(replies, allowed, strict=True)] == [True] * 3
    assert all(reply.raw for reply in replies)
    assert backend.identity()["max_tokens"] == 4


def test_bad_settings_are_user_errors(models: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(UserError, match="decoding 'beam'"):
        HFCausalBackend(str(models["plain"]), decoding="beam")
    with pytest.raises(UserError, match="cannot load a causal language model"):
        HFCausalBackend(str(tmp_path / "absent"))
