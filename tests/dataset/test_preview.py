"""`probe dataset preview`: samples of every kind of prompt and the dataset's size, built pair by pair."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from probe.dataset.preview import sample
from probe.dataset.stages import build_as_if_all_granted
from probe.store import db
from probe.store.config import load_config
from probe.taxonomy.selection import select


def test_preview_counts_the_whole_dataset_and_shows_the_first_items_of_every_kind(db_file: Path) -> None:
    config = load_config({"pairs": 3, "occupations": "nurse,pilot", "top_k": 2, "db": str(db_file)})
    shown = sample(config.design, "chat", 3, config.options.db)
    con = db.connect(db_file)
    try:
        selection = select(con, config.design)
    finally:
        con.close()
    everything = build_as_if_all_granted(selection.pairs, selection.attributes, config.design.conditions, "chat")
    assert shown.total_items == len(everything)
    kinds = Counter((item.stage, item.qtype, item.condition) for item in everything)
    expected = []
    taken: Counter = Counter()
    for item in everything:  # the first 3 of every kind, in dataset order
        kind = (item.stage, item.qtype, item.condition)
        if taken[kind] < 3:
            taken[kind] += 1
            expected.append(item.item_id)
    assert [item.item_id for item in shown.shown] == expected
    assert len(shown.shown) == 3 * len(kinds)


def test_the_paper_preset_previews_its_130760_items_without_building_them(db_file: Path) -> None:
    shown = sample(load_config({"preset": "paper"}).design, "chat", 1, str(db_file))
    assert shown.total_items == 130_760  # 26,600 stage 1 + 104,160 stage 2 (all granted: no reuse)
    assert {item.pair_id for item in shown.shown} == {1}
