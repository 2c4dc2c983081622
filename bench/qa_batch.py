"""hf-qa: the batched candidate scorer against answering one item at a time, same outputs.

The model has roberta-base's shape (12 layers, hidden 768, 12 heads, feed-forward 3072) with random
weights, built here (no download); its byte-level BPE tokenizer is trained with `tokenizers` on the
prompts themselves, as tests/tiny_models.py does on a smaller corpus. The items are the quick preset's
qa-format items (stage 2 built with a fixed half of the attributes granted), taken evenly spaced so the
mix of stage-1 and stage-2 items (short and long contexts) is the preset's.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import AutoModelForQuestionAnswering, PreTrainedTokenizerFast, RobertaConfig

from bench.calls import preset_items
from probe.backends.base import Query, Reply
from probe.backends.hf_qa import HFQABackend, HFQASettings
from probe.dataset.items import Item

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # RoBERTa's order: bos=0, pad=1, eos=2
VOCAB_SIZE = 8000


def quick_preset_items() -> list[Item]:
    quick = preset_items("quick", "qa")
    return quick.stage1 + quick.stage2


def build_roberta_base_qa(folder: Path, corpus: Sequence[str]) -> Path:
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,  # its progress lines would break the bench's name=value output
    )
    tokenizer.train_from_iterator(corpus, trainer)
    tokenizer.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
        model_max_length=512,
    )
    torch.manual_seed(0)
    config = RobertaConfig(
        vocab_size=len(wrapped),
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        max_position_embeddings=514,
        type_vocab_size=1,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    AutoModelForQuestionAnswering.from_config(config).save_pretrained(folder)
    wrapped.save_pretrained(folder)
    return folder


def _same(batched: Sequence[Reply], single: Sequence[Reply]) -> None:
    for one, other in zip(batched, single, strict=True):
        assert (one.label, one.raw, one.error) == (other.label, other.raw, other.error), (one, other)


def _timed(model: Path, calls: Sequence[Sequence[Query]]) -> tuple[list[Reply], float, int]:
    """Replies, seconds and rows run through the model, on a fresh backend (nothing remembered yet)."""
    backend = HFQABackend(HFQASettings(str(model)))
    rows: list[int] = []
    backend.model.register_forward_pre_hook(
        lambda _model, _args, kwargs: rows.append(len(kwargs["input_ids"])), with_kwargs=True
    )
    warm_up = dataclasses.replace(calls[0][0], context=calls[0][0].context + " ")  # an input not timed
    backend.answer([warm_up])  # first-call allocations are not the scorer's speed
    rows.clear()
    started = time.perf_counter()
    replies = [reply for call in calls for reply in backend.answer(call)]
    seconds = time.perf_counter() - started
    backend.close()
    return replies, seconds, sum(rows)


def measure(items_timed: int) -> dict[str, float]:
    """Batched vs one at a time on items spread over the preset; and one stage-1 block in run order.

    The spread sample has no two items with the same model input, so its speedup is batching alone. The
    stage-1 block (one pair and name order: every attribute asked about each subject, in the runner's
    order and call size) also shows the forward passes saved by reusing the logits of a repeated input.
    """
    items = quick_preset_items()
    step = max(1, len(items) // items_timed)
    queries: list[Query] = [item.query() for item in items[::step][:items_timed]]
    block_key = (items[0].pair_id, items[0].name_order)
    block = [item.query() for item in items if item.stage == 1 and (item.pair_id, item.name_order) == block_key]
    with tempfile.TemporaryDirectory() as folder:
        model = build_roberta_base_qa(Path(folder), [f"{item.question} {item.context}" for item in items])
        single, single_s, _ = _timed(model, [[query] for query in queries])
        batched, batched_s, _ = _timed(model, [queries])
        call_size = HFQABackend(HFQASettings(str(model))).batch_size
        block_calls = [block[start : start + call_size] for start in range(0, len(block), call_size)]
        block_single, block_single_s, _ = _timed(model, [[query] for query in block])
        block_batched, block_batched_s, block_rows = _timed(model, block_calls)
    _same(batched, single)
    _same(block_batched, block_single)
    return {
        "qa_items": len(queries),
        "qa_single_items_per_s": round(len(queries) / single_s, 2),
        "qa_batched_items_per_s": round(len(queries) / batched_s, 2),
        "qa_batch_speedup": round(single_s / batched_s, 2),
        "qa_stage1_block_items": len(block),
        "qa_stage1_block_forward_rows": block_rows,
        "qa_stage1_block_single_items_per_s": round(len(block) / block_single_s, 2),
        "qa_stage1_block_batched_items_per_s": round(len(block) / block_batched_s, 2),
    }
