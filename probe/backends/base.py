"""The one model interface: a backend answers a batch of rendered queries with canonical labels.

Every backend (extractive QA, causal LM, OpenAI-compatible API, embedded llama.cpp, replay) implements
`Backend`; the runner knows nothing else about models. A backend owns its identity (model file hash,
decoding settings, decision rule), what of a query its answer depends on (the cache key parts), whether its
labels are data (replay) and what it checks once the run is asked (`finish`). It answers the dataset's
`Query`s (probe/dataset/questions.py).

The answers contract (DESIGN.md sections 4 and 6): a reply says how its label was decided (`decided_by`).
`score`: `scores` maps every canonical label of the item's answer space to the natural-log likelihood of
that option's exact text as the continuation of the prompt (summed over its tokens), and the label is
`decide_by_score(scores)`. Every other rule (`generate`, `span`, `replay`) stores no scores: a score that
disagrees with its label is worse than none. The runner checks every reply against this (`contract_error`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from probe.common.vocabulary import DECIDED_BY, LABELS_BY_QTYPE, UNKNOWN
from probe.dataset.questions import Option, Query

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Reply:
    label: str  # a canonical label, or "unknown" for refusals, nonsense, exact ties and failures
    raw: str = ""  # raw model output (extractive QA: the best free span; score: the chosen option's text)
    scores: Mapping[str, float] | None = None  # canonical label -> option log-likelihood; only for `score`
    error: str | None = None  # why the item could not be answered, if it could not
    decided_by: str = "generate"  # score | generate | span | replay


def answer_space(qtype: str) -> tuple[str, ...]:
    """The canonical labels an item of `qtype` can be answered with (`unknown` is no answer)."""
    return tuple(label for label in LABELS_BY_QTYPE[qtype] if label != UNKNOWN)


def decide_by_score(scores: Mapping[str, float]) -> str:
    """The label with the highest score. An exact tie for the top is no decision: `unknown`.

    Picking the first of tied labels would hand every tie to one side (female before male in canonical
    order), which is exactly the kind of systematic preference the probe measures.
    """
    best = max(scores.values())
    top = [label for label, score in scores.items() if score == best]
    return top[0] if len(top) == 1 else UNKNOWN


def score_reply(scores: Mapping[str, float], options: Sequence[Option]) -> Reply:
    """A score-decided reply: `scores` by canonical label, the label their argmax, raw the chosen text."""
    label = decide_by_score(scores)
    raw = next((option.text for option in options if option.label == label), "")
    return Reply(label=label, raw=raw, scores=dict(scores), decided_by="score")


def contract_error(options: Sequence[Option], reply: Reply) -> str | None:
    """Why `reply` breaks the answers contract (module docstring) for an item with these `options`, or None when it
    keeps it. The answer space is the options' labels: a question type's canonical labels (answer_space), or the K
    names of the K-way choice."""
    space = [option.label for option in options]
    if reply.label not in (*space, UNKNOWN):
        return f"invalid label {reply.label!r}"
    if reply.decided_by not in DECIDED_BY:
        return f"unknown decision rule {reply.decided_by!r}"
    if reply.error is not None:
        return None if reply.scores is None and reply.label == UNKNOWN else "a failed item with a label or scores"
    if reply.decided_by != "score":
        return None if reply.scores is None else f"scores given with a {reply.decided_by}-decided label"
    scores = reply.scores or {}
    if sorted(scores) != sorted(space):
        return f"scores cover {sorted(scores)}, not the answer space {sorted(space)}"
    if not all(isinstance(score, float | int) and math.isfinite(score) for score in scores.values()):
        return "a score is not a finite number"
    if reply.label != decide_by_score(scores):
        return f"label {reply.label!r} is not the argmax of its scores ({decide_by_score(scores)!r})"
    return None


def default_cache_key_parts(query: Query) -> list[object]:
    """What a generative or scoring model's answer depends on: the prompt and the options."""
    return [query.prompt, [[option.text, option.label] for option in query.options]]


class Backend(Protocol):
    prompt_format: str  # "qa", "chat" or "completion": picks the templates in prompts/<format>/
    batch_size: int  # how many queries the runner hands over at once
    cacheable: bool  # False for backends whose answers are not a function of the prompt (replay)
    # True where labels are data, not a model's replies (replay): an all-unknown stage is then what the data
    # holds, not a model that named no option, so the run is not failed for it.
    labels_are_data: bool

    def identity(self) -> dict[str, object]:
        """Model, its file hash or revision, decoding settings and decision rule: keys the cache, is recorded
        with the run (runs.backend_json)."""
        ...

    def cache_key_parts(self, query: Query) -> list[object]:
        """Everything of `query` the answer depends on (with identity(), the answer cache's key)."""
        ...

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        """Answer `queries`, one Reply each, in order. Must not raise for a single bad item."""
        ...

    def check_pairs(self, pairs: pd.DataFrame, set_members: pd.DataFrame | None = None, sets: bool = False) -> None:
        """Called with the run's name pairs (pair_id, female, male; `sets`: the contests of name sets), and with the
        K-way choice each set's people, before it writes anything: check what they show (replay: a file naming other
        people). Raises UserError."""
        ...

    def finish(self) -> None:
        """Called once every item of the run was asked: check what only the whole run shows (replay: a file
        that matched no item is an error). Raises UserError or RunFailed."""
        ...

    def close(self) -> None:
        """Release the model (stop servers, free memory)."""
        ...


class BackendDefaults:
    """What most backends are: cacheable, answered by a model, nothing to check at the end. Subclass it and
    override what differs."""

    cacheable = True
    labels_are_data = False

    def check_pairs(self, pairs: pd.DataFrame, set_members: pd.DataFrame | None = None, sets: bool = False) -> None:
        """Nothing to check in the run's name pairs."""

    def finish(self) -> None:
        """Nothing to check after the run."""
