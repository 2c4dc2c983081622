"""Model calls of the paper preset, counted from the real dataset builder (no model is asked).

`stage1_call_ratio`: stage 1 asks each (pair, order, subject, category, attribute) once over the union of
the occupations' top-k lists, and the answer cache asks an identical prompt once; a naive design asks
every occupation's 3k attributes anew for every (pair, order, subject). `total_calls_paper` adds the
distinct stage-2 prompts. Stage 2 depends on what stage 1 granted: it is built here with a fixed,
hash-drawn half of the attributes granted (all granted would make taxonomy prompts equal control ones,
none granted equal to baseline ones, and the cache would ask those once).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from probe.answering.plan import distinct_calls, half_granted
from probe.dataset.items import Item
from probe.dataset.stages import build_stage1, build_stage2
from probe.store import db
from probe.store.config import load_config
from probe.taxonomy.selection import Selection, select

PROMPT_FORMAT = "chat"  # the default llamacpp backend's format


@dataclass(frozen=True)
class PresetItems:
    selection: Selection
    stage1: list[Item]
    stage2: list[Item]


def preset_items(preset: str, prompt_format: str) -> PresetItems:
    """A preset's items as the runner builds them (stage 2 with a fixed half of the attributes granted)."""
    config = load_config({"preset": preset})
    with tempfile.TemporaryDirectory() as folder:
        con = db.connect(Path(folder) / "bench.duckdb")
        try:
            selection = select(con, config.design)
        finally:
            con.close()
    stage1 = build_stage1(selection.pairs, selection.attributes, prompt_format)
    granted = half_granted(stage1)
    stage2 = build_stage2(selection.pairs, selection.attributes, granted, config.design.conditions, prompt_format)
    return PresetItems(selection, stage1, stage2)


@cache
def paper_call_counts() -> dict[str, float]:
    """Call counts of the paper preset: with reuse and cache, and of the naive stage-1 design."""
    paper = preset_items("paper", PROMPT_FORMAT)
    selection, stage1, stage2 = paper.selection, paper.stage1, paper.stage2
    pairs = len(selection.pairs)
    attributes_per_occupation_sum = len(selection.attributes)  # sum over occupations of their 3k rows
    naive_stage1 = pairs * 2 * 2 * attributes_per_occupation_sum
    stage1_calls = distinct_calls(stage1)
    return {
        "stage1_calls_paper": stage1_calls,
        "stage1_calls_naive": naive_stage1,
        "stage1_call_ratio": round(stage1_calls / naive_stage1, 4),
        "stage1_items_paper": len(stage1),
        "stage2_items_paper": len(stage2),
        "total_calls_paper": distinct_calls(stage1 + stage2),
    }
