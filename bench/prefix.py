"""hf-causal option scoring: token trees (shared prefixes) against every option as its own sequence.

The bundled SmolLM2 GGUF under hf-causal, on the same items in run order (the paper preset's first
stage-1 items and the stage-2 items of its first occupations, chat format) and in the runner's call
size. Both sides run the same windowed forward code; the baseline starts every (prompt, option) from a
root of its own and keeps nothing from one call to the next, so nothing is shared, while the shared side
reuses prefixes within a call and the previous call's tree. `prefix_max_score_diff` is the largest
difference between the two sides' option log-likelihoods (nats); the labels must be equal. The token
counts are the model positions each side computed: a ratio that does not depend on the machine's load.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from bench.calls import preset_items
from probe.backends.base import Query, Reply
from probe.backends.hf_causal import HFCausalBackend, HFCausalSettings
from probe.backends.local import default_gguf


def _timed(backend: HFCausalBackend, queries: Sequence[Query]) -> tuple[list[Reply], float, int]:
    """Replies, seconds and model positions computed, answering in the runner's call size."""
    positions: list[int] = []
    hook = backend.model.register_forward_pre_hook(
        lambda _model, _args, kwargs: positions.append(kwargs["input_ids"].numel()), with_kwargs=True
    )
    started = time.perf_counter()
    replies = []
    for start in range(0, len(queries), backend.batch_size):
        replies.extend(backend.answer(queries[start : start + backend.batch_size]))
    seconds = time.perf_counter() - started
    hook.remove()
    return replies, seconds, sum(positions)


def sample_queries(stage1_items: int, stage2_occupations: int) -> list[Query]:
    items = preset_items("paper", "chat")
    first_pair = [item for item in items.stage2 if item.pair_id == 1]
    occupations = list(dict.fromkeys(item.occupation for item in first_pair))[:stage2_occupations]
    stage2 = [item for item in first_pair if item.occupation in occupations]
    return [item.query() for item in items.stage1[:stage1_items] + stage2]


def measure(quick: bool) -> dict[str, float]:
    queries = sample_queries(stage1_items=16 if quick else 128, stage2_occupations=1 if quick else 4)
    gguf = str(default_gguf())
    shared = HFCausalBackend(HFCausalSettings(gguf))
    separate = HFCausalBackend(HFCausalSettings(gguf, share_prefixes=False))
    shared.answer(queries[:1])  # first-call allocations are not the scorer's speed
    separate.answer(queries[:1])
    shared_replies, shared_s, shared_positions = _timed(shared, queries)
    separate_replies, separate_s, separate_positions = _timed(separate, queries)
    assert [reply.label for reply in shared_replies] == [reply.label for reply in separate_replies]
    diff = max(
        abs(score - other.scores[text])
        for one, other in zip(shared_replies, separate_replies, strict=True)
        for text, score in one.scores.items()
    )
    return {
        "prefix_items": len(queries),
        "prefix_shared_items_per_s": round(len(queries) / shared_s, 2),
        "prefix_separate_items_per_s": round(len(queries) / separate_s, 2),
        "prefix_speedup": round(separate_s / shared_s, 2),
        "prefix_positions_per_item_shared": round(shared_positions / len(queries), 1),
        "prefix_positions_per_item_separate": round(separate_positions / len(queries), 1),
        "prefix_max_score_diff": float(f"{diff:.2e}"),
    }
