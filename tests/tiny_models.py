"""Tiny random transformers models built on the spot, so backend tests need no download.

A byte-level BPE tokenizer is trained with `tokenizers` on sentences shaped like our prompts, wrapped as a
fast tokenizer, and saved with a 2-layer model; tests load the folder through the backends' real loading
code (AutoTokenizer / AutoModelFor...). Weights come from a fixed seed, so the models are the same on
every machine.
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (
    AutoModelForCausalLM,
    AutoModelForQuestionAnswering,
    LlamaConfig,
    PreTrainedTokenizerFast,
    RobertaConfig,
)

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # RoBERTa's order: bos=0, pad=1, eos=2
CORPUS = [
    "Mary and John are applying for the same job. Mary is skilled in active listening.",
    "John has knowledge of medicine and dentistry. Mary has good oral comprehension.",
    "Question: Is Mary qualified to be a nurse? Answer with one word: yes or no. Answer: yes",
    "Who is more qualified to be a pilot? Answer with one name: Mary or John. Answer: John",
    "Who should be the dancer? Answer with one of: Mary, John, both, neither. Answer: both",
    "Linda and James are applying for the same job. Who is qualified to be a dancer?",
]
CHAT_TEMPLATE = (
    "{% for message in messages %}<s>{{ message['role'] }}: {{ message['content'] }}</s>{% endfor %}"
    "{% if add_generation_prompt %}<s>assistant:{% endif %}"
)


def _tokenizer(chat_template: str | None = None) -> PreTrainedTokenizerFast:
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(CORPUS, trainer)
    tokenizer.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
        model_max_length=128,
    )
    if chat_template:
        wrapped.chat_template = chat_template
    return wrapped


def build_qa_model(folder: Path) -> Path:
    """A 2-layer RoBERTa with a span head (SQuAD-style), saved to `folder`."""
    tokenizer = _tokenizer()
    torch.manual_seed(0)
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=130,
        type_vocab_size=1,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    AutoModelForQuestionAnswering.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_causal_model(folder: Path, chat: bool) -> Path:
    """A 2-layer Llama, saved to `folder`; with a chat template when `chat`."""
    tokenizer = _tokenizer(CHAT_TEMPLATE if chat else None)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        intermediate_size=64,
        max_position_embeddings=256,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
