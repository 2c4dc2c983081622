"""Causal LM backend (AutoModelForCausalLM) with two decodings:

- `score` (default): each option's log-likelihood as the continuation of the prompt, summed over its
  tokens; the label is their argmax (base.decide_by_score) and `scores` holds all options by label.
  The prompts and options of a call are packed into one token tree (probe/backends/prefix_tree.py) and
  computed in windows that reuse the keys and values of earlier windows and of the previous call's tree: a
  prefix shared by options, by an instance's questions and by neighbouring items is computed once.
- `generate`: greedy generation of up to max_tokens, mapped to an option by parse.py (free text can be
  unknown); no scores.

`--model` is a hub id, a folder, or a `.gguf` file (dequantized by transformers, so the bundled SmolLM2
runs here as under llama.cpp); without it, the bundled SmolLM2 GGUF. Prompts go through the tokenizer's
chat template when it has one (prompt_format 'chat'), else they are used as they are (prompt_format
'completion', whose templates end with "Answer:"; options then follow a space).
"""

from __future__ import annotations

import inspect
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
    from probe.store.spec import BackendSpec

DEFAULT_BATCH_SIZE = 32  # queries per call: enough neighbours for their shared contexts to meet in a tree
# Nodes per forward pass over a call's token tree. A window attends to itself and its earlier ancestors through
# a dense mask, so attention grows with its size times (its size + context); smaller windows cost more passes.
# On 2 cores (BENCHMARKS.md, issue 33): 512 nodes gave 0.74x main's paper estimate, 256 0.77x (more passes, less
# work per thread), though 256 was ~4% faster with 1 thread; 1024 cost +9% CPU time, 2048 +40%.
WINDOW_NODES = 512


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
        # The forward's name for a KV cache: `cache` in newer transformers (`past_key_values` warns there).
        forward_arguments = inspect.signature(self.model.forward).parameters
        self._cache_argument = "cache" if "cache" in forward_arguments else "past_key_values"
        self._last: _ComputedTree | None = None  # the previous call's tree, for the next call to reuse

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
        self.model = self._last = None  # the weights and keys and values are the memory worth releasing

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
        """Sum of log p(option tokens | prompt) for every (query, option), from one token tree of the call.

        Queries are inserted in prompt order, so items that share a context are neighbours in the tree's
        node order and land in the same forward windows.
        """
        prompts = [self._context_ids(query) for query in queries]
        options = [[self._option_ids(query, option.text) for option in query.options] for query in queries]
        tree, targets = TokenTree(), [[] for _ in queries]
        for index in sorted(range(len(queries)), key=prompts.__getitem__):
            targets[index] = self._insert(tree, prompts[index], options[index])
        predicting = sorted({node for query in targets for option in query for node, _ in option})
        logprobs = self._logprobs(tree, predicting)
        row_of = {node: row for row, node in enumerate(predicting)}
        replies = []
        for query, query_targets in zip(queries, targets, strict=True):
            scores = {
                option.label: float(sum(logprobs[row_of[node], token] for node, token in option_targets))
                for option, option_targets in zip(query.options, query_targets, strict=True)
            }
            replies.append(score_reply(scores, query.options))
        return replies

    def _insert(self, tree: TokenTree, prompt: list[int], options: list[list[int]]) -> list[list[tuple[int, int]]]:
        """Add one query's prompt+option paths; per option, its (node whose logits predict it, token) pairs.

        An option's last token is predicted but predicts nothing, so it gets no node of its own.
        """
        targets = []
        for ids in options:
            # Shared: paths from the common roots; else each (prompt, option) from its own root (bench baseline).
            root = -1 if self.share_prefixes else tree.private_root()
            path = tree.extend(root, prompt + ids[:-1])
            targets.append(list(zip(path[len(prompt) - 1 : len(prompt) - 1 + len(ids)], ids, strict=True)))
        return targets

    @torch.inference_mode()
    def _logprobs(self, tree: TokenTree, predicting: list[int]) -> torch.Tensor:
        """log p(next token) at the `predicting` nodes (rows in that order), from forward passes over windows of
        WINDOW_NODES nodes.

        Nodes whose path the previous call's tree holds take their keys and values from it (neighbouring calls
        share contexts: an occupation's items straddle two calls, every call starts with the system prompt); a
        window reads its other ancestors' keys and values from the windows before it. So each context is
        computed once, and attention spans only what a window can see.
        """
        from transformers import DynamicCache

        device = self.placement.device
        tokens = torch.tensor([tree.tokens], device=device)
        depths = torch.tensor([tree.depths], device=device)
        reused = tree.shared_with(self._last.tree) if self._last else {}
        for node in predicting:
            reused.pop(node, None)  # their logits are needed, so they are computed again
        layers: list[tuple[torch.Tensor, torch.Tensor]] = []  # per layer: keys and values of every node
        if reused:
            layers = _empty_like(self._last.layers, len(tree))
            new, old = torch.tensor(list(reused), device=device), torch.tensor(list(reused.values()), device=device)
            for (keys, values), (last_keys, last_values) in zip(layers, self._last.layers, strict=True):
                keys[:, :, new], values[:, :, new] = last_keys[:, :, old], last_values[:, :, old]
        pending = [node for node in range(len(tree)) if node not in reused]
        wanted = set(predicting)
        rows = []
        for start in range(0, len(pending), WINDOW_NODES):
            stopping.raise_if_requested()  # a stop signal ends the run within one forward pass
            nodes = pending[start : start + WINDOW_NODES]
            context, visible = tree.window_mask(nodes)
            context, own = context.to(device), torch.tensor(nodes, device=device)
            attention = torch.zeros(visible.shape, dtype=self.placement.torch_dtype)
            attention.masked_fill_(~visible, torch.finfo(attention.dtype).min)
            cache = DynamicCache()
            for layer, (keys, values) in enumerate(layers):
                cache.update(keys[:, :, context], values[:, :, context], layer)
            keep = [row for row, node in enumerate(nodes) if node in wanted]
            logits = self.model(
                input_ids=tokens[:, own],
                position_ids=depths[:, own],
                attention_mask=attention[None, None].to(device),
                use_cache=True,
                **{self._cache_argument: cache},
                logits_to_keep=torch.tensor(keep, dtype=torch.long, device=device),
            ).logits
            rows.append(torch.log_softmax(logits[0].float(), -1).cpu())
            computed = [(layer.keys, layer.values) for layer in cache.layers]
            layers = layers or _empty_like(computed, len(tree))
            for (keys, values), (new_keys, new_values) in zip(layers, computed, strict=True):
                keys[:, :, own], values[:, :, own] = new_keys[:, :, len(context) :], new_values[:, :, len(context) :]
        if self.share_prefixes:  # the bench baseline shares nothing, across calls neither
            self._last = _ComputedTree(tree, layers)
        return torch.cat(rows)

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


@dataclass(frozen=True)
class _ComputedTree:
    """A call's token tree and every node's keys and values, per layer: what the next call can reuse."""

    tree: TokenTree
    layers: list[tuple[torch.Tensor, torch.Tensor]]


def _empty_like(layers: list[tuple[torch.Tensor, torch.Tensor]], nodes: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per layer, uninitialised keys and values for `nodes` nodes, shaped as `layers`' (batch, heads, nodes, dim)."""

    def resized(tensor: torch.Tensor) -> torch.Tensor:
        return tensor.new_empty(*tensor.shape[:2], nodes, tensor.shape[3])

    return [(resized(keys), resized(values)) for keys, values in layers]


def settings_from(config: BackendSpec) -> HFCausalSettings:
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
