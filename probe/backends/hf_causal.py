"""Causal LM backend (AutoModelForCausalLM) with two decodings:

- `score` (default): each option's log-likelihood as the continuation of the prompt, summed over its
  tokens; the label is their argmax (base.decide_by_score) and `scores` holds all options by label.
  The prompts and options of a call are packed into token trees (probe/backends/prefix_tree.py): a
  prefix shared by options and by neighbouring items is computed once, not once per option.
- `generate`: greedy generation of up to max_tokens, mapped to an option by parse.py (free text can be
  unknown); no scores.

`--model` is a hub id, a folder, or a `.gguf` file (dequantized by transformers, so the bundled SmolLM2
runs here as under llama.cpp); without it, the bundled SmolLM2 GGUF. Prompts go through the tokenizer's
chat template when it has one (prompt_format 'chat'), else they are used as they are (prompt_format
'completion', whose templates end with "Answer:"; options then follow a space).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from probe.backends.base import BackendDefaults, Query, Reply, default_cache_key_parts, score_reply
from probe.backends.fingerprint import file_sha256, model_fingerprint
from probe.backends.gguf_cache import load_gguf
from probe.backends.local import check_decoding, default_gguf, idle_cores, quiet_transformers
from probe.backends.model_input import chat_messages, completion_pair, completion_text
from probe.backends.parse import parse_option
from probe.backends.prefix_tree import TokenTree
from probe.backends.torch_device import Placement, resolve_placement
from probe.common import stopping
from probe.common.errors import UserError
from probe.common.vocabulary import UNKNOWN

if TYPE_CHECKING:
    from probe.store.config import RunConfig

DEFAULT_BATCH_SIZE = 32  # queries per call: enough neighbours for their shared contexts to meet in a tree
# Nodes per token tree (one forward pass). The mask is dense, so attention grows with its square; at 1024
# nodes it is ~1/4 of the FLOPs of the 135M model's matmuls.
TREE_TOKENS = 1024


@dataclass(frozen=True)
class HFCausalSettings:
    model: str  # hub id, folder or .gguf file
    decoding: str = "score"  # score | generate
    max_tokens: int = 16  # generate only
    batch_size: int = DEFAULT_BATCH_SIZE  # queries per call
    placement: Placement | None = None  # device and dtype; None: resolve_placement's defaults
    share_prefixes: bool = True  # False: every (prompt, option) its own sequence (bench baseline)
    threads: int | None = None  # torch CPU threads (process-wide); None: torch's default

    def __post_init__(self) -> None:
        check_decoding(self.decoding)


class HFCausalBackend(BackendDefaults):
    def __init__(self, settings: HFCausalSettings) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        quiet_transformers()

        if settings.threads:
            torch.set_num_threads(settings.threads)
        model, decoding = settings.model, settings.decoding
        max_tokens, batch_size, share_prefixes = settings.max_tokens, settings.batch_size, settings.share_prefixes
        self.placement = settings.placement or resolve_placement(None, None)
        path = Path(model).expanduser()
        self._gguf = path if path.suffix == ".gguf" else None
        if self._gguf is not None and not self._gguf.is_file():
            raise UserError(f"--model {model}: no such GGUF file")
        self._gguf_sha256 = file_sha256(self._gguf) if self._gguf else None
        dtype = self.placement.torch_dtype
        try:
            if self._gguf:  # dequantized by transformers, once (gguf_cache.py)
                self.tokenizer, loaded = load_gguf(self._gguf, self._gguf_sha256, dtype)
            else:
                self.tokenizer = AutoTokenizer.from_pretrained(model)
                loaded = AutoModelForCausalLM.from_pretrained(model, dtype=dtype)
        except (OSError, ValueError) as error:
            raise UserError(f"--model {model}: cannot load a causal language model ({error})") from None
        self.model = loaded.to(self.placement.device).eval()
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model_name = self._gguf.name if self._gguf else model
        self.decoding = decoding
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.share_prefixes = share_prefixes  # False: every (prompt, option) its own sequence (bench baseline)
        self.prompt_format = "chat" if self.tokenizer.chat_template else "completion"

    def identity(self) -> dict[str, object]:
        if self._gguf:
            weights: dict[str, object] = {"gguf_sha256": self._gguf_sha256}
        else:
            weights = model_fingerprint(self.model_name, getattr(self.model.config, "_commit_hash", None))
        settings = {
            "decoding": self.decoding,
            "decided_by": self.decoding,
            "prompt_format": self.prompt_format,
            **self.placement.identity(),
        }
        if self.decoding == "generate":
            settings["max_tokens"] = self.max_tokens
        return {"backend": "hf-causal", "model": self.model_name, **weights, **settings}

    def cache_key_parts(self, query: Query) -> list[object]:
        return default_cache_key_parts(query)

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        if self.decoding == "score":
            return self._score(queries)
        replies: list[Reply] = []
        for start in range(0, len(queries), self.batch_size):
            stopping.raise_if_requested()
            replies.extend(self._generate(queries[start : start + self.batch_size]))
        return replies

    def close(self) -> None:
        self.model = None  # the weights are the memory worth releasing

    def _prompt_ids(self, query: Query) -> list[int]:
        if self.prompt_format == "chat":
            text = self.tokenizer.apply_chat_template(chat_messages(query), add_generation_prompt=True, tokenize=False)
            return self.tokenizer(text, add_special_tokens=False).input_ids
        return self.tokenizer(completion_text(query)).input_ids

    def _context_ids(self, query: Query) -> list[int]:
        """The prompt as the context of scored options (model_input.py)."""
        if self.prompt_format == "chat":
            return self._prompt_ids(query)
        return self.tokenizer(completion_pair(query, "")[0]).input_ids

    def _option_ids(self, query: Query, text: str) -> list[int]:
        continuation = completion_pair(query, text)[1] if self.prompt_format == "completion" else text
        return self.tokenizer(continuation, add_special_tokens=False).input_ids

    def _score(self, queries: Sequence[Query]) -> list[Reply]:
        """Sum of log p(option tokens | prompt) for every (query, option), from token trees.

        Queries are taken in prompt order, so items that share a context land in the same tree.
        """
        prompts = [self._context_ids(query) for query in queries]
        options = [[self._option_ids(query, option.text) for option in query.options] for query in queries]
        totals: list[list[float]] = [[] for _ in queries]
        tree, members = TokenTree(), []
        for index in sorted(range(len(queries)), key=prompts.__getitem__):
            added = sum(len(prompts[index]) + len(ids) for ids in options[index])
            if self.share_prefixes:
                added = tree.new_nodes(-1, prompts[index]) + sum(map(len, options[index]))
            if members and len(tree) + added > TREE_TOKENS:
                stopping.raise_if_requested()  # a stop signal ends the run within one forward pass
                self._score_tree(tree, members, totals)
                tree, members = TokenTree(), []
            members.append((index, self._insert(tree, prompts[index], options[index])))
        self._score_tree(tree, members, totals)
        replies = []
        for query, total in zip(queries, totals, strict=True):
            scores = {option.label: value for option, value in zip(query.options, total, strict=True)}
            replies.append(score_reply(scores, query.options))
        return replies

    def _insert(self, tree: TokenTree, prompt: list[int], options: list[list[int]]) -> list[list[tuple[int, int]]]:
        """Add one query's prompt+option paths; per option, its (node whose logits predict it, token) pairs."""
        targets = []
        for ids in options:
            if self.share_prefixes:
                path = tree.extend(-1, prompt + ids)
            else:  # each (prompt, option) from its own root: separate sequences, packed
                path = tree.extend(tree.private_root(), prompt + ids)
            targets.append(list(zip(path[len(prompt) - 1 : -1], ids, strict=True)))
        return targets

    @torch.inference_mode()
    def _score_tree(
        self, tree: TokenTree, members: list[tuple[int, list[list[tuple[int, int]]]]], totals: list[list[float]]
    ) -> None:
        """One forward pass over the tree, logits only where an option token is predicted; fills `totals`."""
        device = self.placement.device
        predicting = sorted({node for _, targets in members for option in targets for node, _ in option})
        row_of = {node: row for row, node in enumerate(predicting)}
        keep = torch.zeros(1, len(tree), dtype=torch.bool)
        keep[0, predicting] = True
        attention = torch.zeros(len(tree), len(tree), dtype=self.placement.torch_dtype)
        attention.masked_fill_(~tree.ancestor_mask(), torch.finfo(attention.dtype).min)
        logits = self.model(
            input_ids=torch.tensor([tree.tokens], device=device),
            position_ids=torch.tensor([tree.depths], device=device),
            attention_mask=attention[None, None].to(device),
            logits_to_keep=keep.to(device),
        ).logits
        logprobs = torch.log_softmax(logits.float(), -1).cpu()
        for index, targets in members:
            totals[index] = [
                float(sum(logprobs[row_of[node], token] for node, token in option)) for option in targets
            ]

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
            replies.append(Reply(label=chosen.label if chosen else UNKNOWN, raw=text, decided_by="generate"))
        return replies


def settings_from(config: RunConfig) -> HFCausalSettings:
    placement = resolve_placement(config.device, config.dtype)
    # As for llama.cpp: torch's threads meet at barriers, so a busy core stalls them all; idle, more threads
    # are faster (BENCHMARKS.md: hf-causal threads = idle cores at start). --threads overrides it.
    threads = config.threads or (idle_cores() if placement.device == "cpu" else None)
    return HFCausalSettings(
        config.model or str(default_gguf()),
        decoding=config.decoding,
        max_tokens=config.max_tokens,
        batch_size=config.batch_size or DEFAULT_BATCH_SIZE,
        placement=placement,
        threads=threads,
    )


def create(settings: HFCausalSettings) -> HFCausalBackend:
    return HFCausalBackend(settings)
