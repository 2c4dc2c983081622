"""Extractive QA backend (AutoModelForQuestionAnswering, e.g. deepset/roberta-large-squad2).

transformers 5 has no question-answering pipeline, so spans are decoded here from the start/end logits
and the tokenizer's offsets. Rather than trusting the single best free span, every allowed answer is
scored as a candidate, and the best candidate is the label:

- a name option: the best-scoring occurrence of that name in the context;
- `both`: "A and B" (or "B and A") where the context has it;
- `neither`: the SQuAD 2.0 null answer (the CLS token);
- attr/binary, asked as "Who is qualified ...?" / "Who is skilled in ...?": `yes` = a span of the asked
  subject (Query.item["subject_name"]); `no` = the null answer or a span of the other subject - selecting
  the other person is read as "not this subject", as in the paper's rule that yes means selecting the
  subject.

A span score is start_logit + end_logit. The best free span (any context span up to MAX_ANSWER_TOKENS, or
empty when the null answer beats it) is kept in `raw`. Replies are decided_by `span` and store no scores:
span logits are not the options' log-likelihoods the answers contract means by scores.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from probe.backends.base import BackendDefaults, Option, Query, Reply, default_cache_key_parts
from probe.backends.fingerprint import model_fingerprint
from probe.backends.local import quiet_transformers
from probe.backends.torch_device import Placement, resolve_placement
from probe.common.errors import UserError
from probe.common.vocabulary import KWAY, UNKNOWN

if TYPE_CHECKING:
    from probe.store.spec import BackendSpec

MAX_ANSWER_TOKENS = 30
MAX_SEQUENCE_TOKENS = 512
DEFAULT_BATCH_SIZE = 16
# The runner hands over this many forward batches at once, sorted by length together (see answer()).
BATCHES_PER_CALL = 4
# Logits kept for model inputs already seen (least recently added dropped first): a few KB each.
INPUTS_REMEMBERED = 4096
# Padded tokens per forward pass at most: short stage-1 inputs go in larger batches than long stage-2 ones.
TOKENS_PER_FORWARD = 2048
NULL = None  # the candidate "span" that stands for the null answer

CharSpan = tuple[int, int]
ModelInput = tuple[str, str]  # (question, context): what the model sees; the options only read its logits


@dataclass(frozen=True)
class Encoded:
    """One query's logits and the char offsets of its context tokens (others are (-1, -1))."""

    start: torch.Tensor
    end: torch.Tensor
    offsets: list[CharSpan]


def candidate_spans(query: Query) -> dict[Option, list[CharSpan | None]]:
    """For each option, the context spans (or NULL) that would mean it; see the module docstring."""
    names = {
        option.label: option.text
        for option in query.options
        if option.label in ("female", "male") or query.qtype == KWAY
    }  # the K-way choice: every option a name
    if query.qtype in ("attr", "binary"):
        subject = str(query.item["subject_name"])
        others = [str(query.item[key]) for key in ("first_name", "second_name") if query.item[key] != subject]
        by_label = {"yes": _occurrences(query.context, subject)}
        by_label["no"] = [NULL, *(span for other in others for span in _occurrences(query.context, other))]
    else:
        by_label = {label: _occurrences(query.context, name) for label, name in names.items()}
        if len(names) == 2:
            first, second = names.values()
            pairs = (f"{first} and {second}", f"{second} and {first}")
            by_label["both"] = [span for pair in pairs for span in _occurrences(query.context, pair)]
        by_label["neither"] = [NULL]
    return {option: by_label.get(option.label, []) for option in query.options}


def _occurrences(context: str, phrase: str) -> list[CharSpan]:
    return [match.span() for match in re.finditer(rf"(?<!\w){re.escape(phrase)}(?!\w)", context)]


def span_score(encoded: Encoded, span: CharSpan | None) -> float | None:
    """start + end logit of the tokens covering `span` (NULL: the CLS token); None if truncated away."""
    if span is NULL:
        return float(encoded.start[0] + encoded.end[0])
    begin, finish = span
    covering = [i for i, (a, b) in enumerate(encoded.offsets) if 0 <= a < b and a < finish and b > begin]
    if not covering:
        return None
    return float(encoded.start[covering[0]] + encoded.end[covering[-1]])


def best_free_span(encoded: Encoded, context: str) -> str:
    """The best context span, or "" when the null answer scores higher (SQuAD 2.0 decoding)."""
    inside = torch.tensor([a >= 0 for a, _ in encoded.offsets])
    pair = encoded.start[:, None] + encoded.end[None, :]
    allowed = inside[:, None] & inside[None, :]
    allowed &= torch.triu(torch.ones_like(allowed), 0) & ~torch.triu(torch.ones_like(allowed), MAX_ANSWER_TOKENS)
    if not bool(allowed.any()):
        return ""
    flat = int(torch.where(allowed, pair, torch.finfo(pair.dtype).min).argmax())
    start, end = divmod(flat, pair.shape[1])
    if float(pair[start, end]) < float(encoded.start[0] + encoded.end[0]):
        return ""
    return context[encoded.offsets[start][0] : encoded.offsets[end][1]]


def span_scores(query: Query, encoded: Encoded) -> dict[str, float]:
    """Option text -> its best candidate span's score, for the options with a candidate in the context."""
    scores: dict[str, float] = {}
    for option, spans in candidate_spans(query).items():
        found = [score for span in spans if (score := span_score(encoded, span)) is not None]
        if found:
            scores[option.text] = max(found)
    return scores


def decide(query: Query, encoded: Encoded) -> Reply:
    scores = span_scores(query, encoded)
    raw = best_free_span(encoded, query.context)
    if not scores:
        return Reply(
            label=UNKNOWN, raw=raw, error="no candidate answer is in the (truncated) context", decided_by="span"
        )
    best = max(scores, key=scores.__getitem__)
    label = next(option.label for option in query.options if option.text == best)
    return Reply(label=label, raw=raw, decided_by="span")


@dataclass(frozen=True)
class HFQASettings:
    model: str  # hub id or local folder
    batch_size: int = DEFAULT_BATCH_SIZE  # queries per forward pass
    placement: Placement | None = None  # device and dtype; None: resolve_placement's defaults
    threads: int | None = None  # torch CPU threads (process-wide); None: torch's default


class HFQABackend(BackendDefaults):
    prompt_format = "qa"

    def __init__(self, settings: HFQASettings) -> None:
        from transformers import AutoModelForQuestionAnswering, AutoTokenizer

        quiet_transformers()

        if settings.threads:
            torch.set_num_threads(settings.threads)
        model, batch_size = settings.model, settings.batch_size
        self.placement = settings.placement or resolve_placement(None, None)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model)
            self.model = (
                AutoModelForQuestionAnswering.from_pretrained(model, dtype=self.placement.torch_dtype)
                .to(self.placement.device)
                .eval()
            )
        except (OSError, ValueError) as error:
            raise UserError(f"--model {model}: cannot load a question-answering model ({error})") from None
        if not self.tokenizer.is_fast:
            raise UserError(f"--model {model}: needs a fast tokenizer (for character offsets)")
        self.model_name = model
        self._remembered: OrderedDict[ModelInput, Encoded] = OrderedDict()
        self.forward_batch_size = batch_size
        self.batch_size = batch_size * BATCHES_PER_CALL
        self.max_length = min(
            MAX_SEQUENCE_TOKENS,
            self.tokenizer.model_max_length,
            self.model.config.max_position_embeddings - 2,
        )

    def identity(self) -> dict[str, object]:
        revision = getattr(self.model.config, "_commit_hash", None)
        return {
            "backend": "hf-qa",
            "model": self.model_name,
            **model_fingerprint(self.model_name, revision),
            "max_length": self.max_length,
            "max_answer_tokens": MAX_ANSWER_TOKENS,
            **self.placement.identity(),
            "decided_by": "span",
        }

    def cache_key_parts(self, query: Query) -> list[object]:
        """The asked subject's name too: a qa prompt ("Who is qualified ...?") is the same for both subjects,
        while its yes/no answer is not."""
        return [*default_cache_key_parts(query), query.item.get("subject_name")]

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        """Decide every query from the logits of its (question, context), each input run through the model once.

        Stage 1 asks the same "Who is skilled in ...?" about the same context for both subjects (only the
        reading of the answer differs), |attribute union| items apart, so those logits are kept across
        calls (`INPUTS_REMEMBERED`); that halves stage 1's forward passes.
        """
        inputs = dict.fromkeys((query.question, query.context) for query in queries)
        known = {key: self._remembered[key] for key in inputs if key in self._remembered}
        new = [key for key in inputs if key not in known]
        known.update(zip(new, self._encode(new), strict=True))
        for key in new:
            self._remember(key, known[key])
        return [decide(query, known[(query.question, query.context)]) for query in queries]

    def _remember(self, key: ModelInput, encoded: Encoded) -> None:
        self._remembered[key] = encoded
        if len(self._remembered) > INPUTS_REMEMBERED:
            self._remembered.popitem(last=False)

    @torch.inference_mode()
    def _encode(self, inputs: Sequence[ModelInput]) -> list[Encoded]:
        """Forward passes over inputs of similar token length, so little of a batch is padding.

        A batch is padded to its longest sequence, and stage-1 contexts are a few times shorter than
        stage-2 ones: in input order, a 16-query batch of the quick preset's mix was mostly padding.
        """
        if not inputs:
            return []
        tokens = self.tokenizer(
            [question for question, _ in inputs],
            [context for _, context in inputs],
            truncation="only_second",
            max_length=self.max_length,
            return_offsets_mapping=True,
        )
        by_length = sorted(range(len(inputs)), key=lambda i: len(tokens["input_ids"][i]))
        encoded: list[Encoded | None] = [None] * len(inputs)
        for rows in self._forward_batches(by_length, [len(ids) for ids in tokens["input_ids"]]):
            batch = self.tokenizer.pad(
                {name: [tokens[name][row] for row in rows] for name in ("input_ids", "attention_mask")},
                return_tensors="pt",
            ).to(self.placement.device)
            output = self.model(**batch)
            for position, row in enumerate(rows):
                sequence_ids = tokens.sequence_ids(row)
                offsets = tokens["offset_mapping"][row]
                context_offsets = [span if sequence_ids[i] == 1 else (-1, -1) for i, span in enumerate(offsets)]
                length = len(offsets)  # the row without its padding; a copy, so the batch's logits can go
                start, end = (
                    logits[position, :length].to("cpu", torch.float32, copy=True)
                    for logits in (output.start_logits, output.end_logits)
                )
                encoded[row] = Encoded(start, end, context_offsets)
        return encoded

    def _forward_batches(self, by_length: list[int], lengths: list[int]) -> list[list[int]]:
        """Consecutive rows (shortest first), at most forward_batch_size and TOKENS_PER_FORWARD padded tokens."""
        batches: list[list[int]] = []
        for row in by_length:
            last = batches[-1] if batches else []
            if 0 < len(last) < self.forward_batch_size and (len(last) + 1) * lengths[row] <= TOKENS_PER_FORWARD:
                last.append(row)
            else:
                batches.append([row])
        return batches

    def close(self) -> None:
        self.model = None  # the weights are the memory worth releasing


def settings_from(config: BackendSpec) -> HFQASettings:
    if not config.model:
        raise UserError("--model: hf-qa needs a hub id or folder (e.g. deepset/roberta-large-squad2)")
    return HFQASettings(
        config.model,
        batch_size=config.batch_size or DEFAULT_BATCH_SIZE,
        placement=resolve_placement(config.device, config.dtype),
        threads=config.threads,
    )


def create(settings: HFQASettings) -> HFQABackend:
    return HFQABackend(settings)
