"""Causal LM backend (AutoModelForCausalLM) with two decodings:

- `score` (default): each option's log-likelihood as the continuation of the prompt, summed over its
  tokens; the best option is the label, so every answer is valid and `scores` holds all options.
  Prompt+option sequences of several queries share one forward pass.
- `generate`: greedy generation of up to max_tokens, mapped to an option by parse.py (free text can be
  unknown).

Prompts go through the tokenizer's chat template when it has one (prompt_format 'chat'), else they are
used as they are (prompt_format 'completion', whose templates end with "Answer:"; options then follow a
space).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from probe.backends.base import Query, Reply
from probe.backends.fingerprint import model_fingerprint
from probe.backends.parse import parse_option
from probe.errors import UserError
from probe.labels import UNKNOWN

if TYPE_CHECKING:
    from probe.config import RunConfig

DECODINGS = ("score", "generate")
DEFAULT_BATCH_SIZE = 8


class HFCausalBackend:
    cacheable = True

    def __init__(
        self, model: str, decoding: str = "score", max_tokens: int = 16, batch_size: int = 8
    ) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if decoding not in DECODINGS:
            raise UserError(f"decoding {decoding!r}: choose from {', '.join(DECODINGS)}")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model)
            self.model = AutoModelForCausalLM.from_pretrained(model).eval()
        except (OSError, ValueError) as error:
            raise UserError(f"--model {model}: cannot load a causal language model ({error})") from None
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model_name = model
        self.decoding = decoding
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.prompt_format = "chat" if self.tokenizer.chat_template else "completion"

    def identity(self) -> dict[str, object]:
        revision = getattr(self.model.config, "_commit_hash", None)
        settings = {"decoding": self.decoding, "prompt_format": self.prompt_format}
        if self.decoding == "generate":
            settings["max_tokens"] = self.max_tokens
        return {
            "backend": "hf-causal",
            "model": self.model_name,
            **model_fingerprint(self.model_name, revision),
            **settings,
        }

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        replies: list[Reply] = []
        for start in range(0, len(queries), self.batch_size):
            chunk = queries[start : start + self.batch_size]
            replies.extend(self._score(chunk) if self.decoding == "score" else self._generate(chunk))
        return replies

    def close(self) -> None:
        self.model = None  # the weights are the memory worth releasing

    def _prompt_ids(self, query: Query) -> list[int]:
        if self.prompt_format == "chat":
            text = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": query.prompt}], add_generation_prompt=True, tokenize=False
            )
            return self.tokenizer(text, add_special_tokens=False).input_ids
        return self.tokenizer(query.prompt).input_ids

    def _option_ids(self, text: str) -> list[int]:
        separator = " " if self.prompt_format == "completion" else ""
        return self.tokenizer(separator + text, add_special_tokens=False).input_ids

    @torch.inference_mode()
    def _score(self, queries: Sequence[Query]) -> list[Reply]:
        """Sum of log p(option tokens | prompt) for every (query, option), in one right-padded batch."""
        sequences, option_lengths = [], []
        for query in queries:
            prompt = self._prompt_ids(query)
            for option in query.options:
                continuation = self._option_ids(option.text)
                sequences.append(prompt + continuation)
                option_lengths.append(len(continuation))
        width = max(len(sequence) for sequence in sequences)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([sequence + [pad] * (width - len(sequence)) for sequence in sequences])
        attention = torch.tensor(
            [[1] * len(sequence) + [0] * (width - len(sequence)) for sequence in sequences]
        )
        logprobs = torch.log_softmax(
            self.model(input_ids=input_ids, attention_mask=attention).logits.float(), -1
        )
        totals = []
        for row, (sequence, length) in enumerate(zip(sequences, option_lengths, strict=True)):
            positions = torch.arange(len(sequence) - length, len(sequence))
            totals.append(float(logprobs[row, positions - 1, input_ids[row, positions]].sum()))
        replies, offset = [], 0
        for query in queries:
            scores = {option.text: totals[offset + i] for i, option in enumerate(query.options)}
            offset += len(query.options)
            best = max(query.options, key=lambda option: scores[option.text])
            replies.append(Reply(label=best.label, raw=best.text, scores=scores))
        return replies

    @torch.inference_mode()
    def _generate(self, queries: Sequence[Query]) -> list[Reply]:
        """Greedy continuation of each prompt (left-padded batch), parsed into an option."""
        prompts = [self._prompt_ids(query) for query in queries]
        width = max(len(prompt) for prompt in prompts)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(prompt)) + prompt for prompt in prompts])
        attention = torch.tensor([[0] * (width - len(prompt)) + [1] * len(prompt) for prompt in prompts])
        generated = self.model.generate(
            input_ids=input_ids,
            attention_mask=attention,
            max_new_tokens=self.max_tokens,
            do_sample=False,
            pad_token_id=pad,
        )
        replies = []
        for query, tokens in zip(queries, generated[:, width:], strict=True):
            text = self.tokenizer.decode(tokens, skip_special_tokens=True)
            chosen = parse_option(text, query.options)
            replies.append(Reply(label=chosen.label if chosen else UNKNOWN, raw=text))
        return replies


def create(config: RunConfig) -> HFCausalBackend:
    if not config.model:
        raise UserError(
            "--model: hf-causal needs a hub id or folder (e.g. HuggingFaceTB/SmolLM2-135M-Instruct)"
        )
    return HFCausalBackend(
        config.model,
        decoding=config.decoding,
        max_tokens=config.max_tokens,
        batch_size=config.batch_size or DEFAULT_BATCH_SIZE,
    )
