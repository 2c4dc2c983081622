"""`probe dataset preview`: the prompts a run would ask, without a model."""

from __future__ import annotations

from probe import db
from probe.config import RunConfig
from probe.dataset import Item, build_as_if_all_granted
from probe.selection import select


def preview(config: RunConfig, prompt_format: str) -> list[Item]:
    """Stage-1 and stage-2 items for `config` without a model; stage 2 as if stage 1 granted everything."""
    con = db.connect(config.db)
    try:
        selection = select(con, config)
    finally:
        con.close()
    return build_as_if_all_granted(selection.pairs, selection.attributes, config.conditions, prompt_format)
