"""What every export format carries: a run's items (or a design's, without a model) and its answers, as rows.

One row per item, one configuration per stage-1 / stage-2 condition, so the Hub dataset, the lm-evaluation-harness
task and the Inspect AI task read the same columns. `choices` are the option texts a model scores and
`choice_labels` their canonical labels, in the same order; an answer's `option_scores` follow that order too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa

from probe.answering.runs import stored_run
from probe.backends import backend_info
from probe.common.errors import UserError
from probe.common.redact import scrub
from probe.common.vocabulary import CONDITIONS, STAGE1_CONDITION
from probe.dataset.items import Item, item_from_row
from probe.dataset.stages import build_stage1, build_stage2
from probe.store import db
from probe.store.config import RunSpec
from probe.taxonomy.selection import select

CONFIGURATIONS = (STAGE1_CONDITION, *CONDITIONS)  # the item configurations, in dataset order
ANSWERS = "answers"
# Stage-2 conditions whose items depend on no model: stage 1 and these export without a run.
MODEL_FREE_CONDITIONS = ("baseline", "control")

ITEM_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("run_id", pa.string()),
        ("stage", pa.int64()),
        ("qtype", pa.string()),
        ("condition", pa.string()),
        ("pair_id", pa.int64()),
        ("name_order", pa.string()),
        ("occupation", pa.string()),
        ("subject", pa.string()),
        ("category", pa.string()),
        ("attribute", pa.string()),
        ("wording", pa.string()),
        ("first_name", pa.string()),
        ("second_name", pa.string()),
        ("context", pa.string()),
        ("question", pa.string()),
        ("prompt", pa.string()),
        ("choices", pa.list_(pa.string())),
        ("choice_labels", pa.list_(pa.string())),
    ]
)
ANSWER_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("run_id", pa.string()),
        ("qtype", pa.string()),
        ("label", pa.string()),
        ("decided_by", pa.string()),
        ("choice_labels", pa.list_(pa.string())),
        ("option_scores", pa.list_(pa.float64())),
        ("raw", pa.string()),
    ]
)


@dataclass(frozen=True)
class Exported:
    """The items (and answers) of a run, or of a design without a model (run_id None, no answers)."""

    run_id: str | None
    model: str | None
    prompt_format: str  # chat: the prompt is the user's message; completion: the whole text, options after a space
    system_prompt: str | None
    settings: dict[str, object]
    items: list[Item]
    answers: pd.DataFrame | None  # item_id, label, decided_by, scores_json, raw

    def item_rows(self) -> dict[str, pa.Table]:
        """Configuration name -> its items, for the configurations this export has (dataset order)."""
        rows: dict[str, list[dict[str, object]]] = {}
        for item in self.items:
            row = {name: getattr(item, name) for name in ITEM_SCHEMA.names if hasattr(item, name)}
            row |= {
                "run_id": self.run_id,
                "choices": [option.text for option in item.options],
                "choice_labels": [option.label for option in item.options],
            }
            rows.setdefault(item.condition, []).append(row)
        return {name: pa.Table.from_pylist(rows[name], ITEM_SCHEMA) for name in CONFIGURATIONS if name in rows}

    def answer_rows(self) -> pa.Table | None:
        """The run's answers, option scores in each item's choice order (null when the engine gave none)."""
        if self.answers is None:
            return None
        items = {item.item_id: item for item in self.items}
        rows = []
        for answer in self.answers.to_dict("records"):
            item = items[answer["item_id"]]
            labels = [option.label for option in item.options]
            scores = json.loads(answer["scores_json"]) if isinstance(answer["scores_json"], str) else None
            rows.append(
                {
                    "item_id": item.item_id,
                    "run_id": self.run_id,
                    "qtype": item.qtype,
                    "label": answer["label"],
                    "decided_by": answer["decided_by"],
                    "choice_labels": labels,
                    "option_scores": [scores[label] for label in labels] if scores else None,
                    "raw": answer["raw"],
                }
            )
        return pa.Table.from_pylist(rows, ANSWER_SCHEMA)


def from_run(db_path: Path, run_id: str) -> Exported:
    """A stored run: its items of both stages as built so far, and its answers (stored failures left out)."""
    if not Path(db_path).exists():
        raise UserError(f"{db_path}: no such database")
    con, _ = db.connect_or_snapshot(db_path)  # a run writing it: exported as of now, from a copy (as `probe runs`)
    try:
        run = stored_run(con, run_id)
        if run is None:
            raise UserError(f"{run_id}: no such run in {db_path}")
        frame = con.execute("SELECT * FROM items WHERE run_id = ? ORDER BY seq", [run_id]).df()
        answers = con.execute(
            "SELECT item_id, label, decided_by, scores_json, raw FROM answers WHERE run_id = ? AND error IS NULL "
            "ORDER BY item_id",
            [run_id],
        ).df()
    finally:
        con.close()
    settings = json.loads(str(run["config_json"]))
    identity = json.loads(str(run["backend_json"]))
    prompt_format = identity.get("prompt_format") or backend_info(str(run["backend"])).preview_format
    return Exported(
        run_id,
        str(run["model"]) or None,
        str(prompt_format),
        _scrubbed(settings.get("system_prompt")),
        _design_settings(settings),
        [item_from_row(row) for row in frame.to_dict("records")],
        answers,
    )


def from_design(config: RunSpec, prompt_format: str) -> Exported:
    """The items no model's answers shape: stage 1, and stage 2's baseline and control conditions."""
    # a new database is seeded; a busy one copied
    con, _ = db.connect_or_snapshot(config.options.db, read_only=False)
    try:
        selection = select(con, config.design)
    finally:
        con.close()
    conditions = [condition for condition in config.design.conditions if condition in MODEL_FREE_CONDITIONS]
    items = build_stage1(selection.pairs, selection.attributes, prompt_format)
    items += build_stage2(selection.pairs, selection.attributes, (), conditions, prompt_format)
    settings = _design_settings({**config.settings(), "conditions": conditions})
    return Exported(None, None, prompt_format, _scrubbed(config.backend.system_prompt), settings, items, None)


def _scrubbed(system_prompt: str | None) -> str | None:
    """The system prompt as exported: an API key in it (OPENAI_API_KEY) masked, as in the report. The dataset card
    is made for a public upload; a task run elsewhere asks the masked text."""
    return None if system_prompt is None else scrub(system_prompt)


def _design_settings(settings: dict[str, object]) -> dict[str, object]:
    """The settings that shape the items (what a dataset card states)."""
    return {name: settings.get(name) for name in ("preset", "pairs", "occupations", "names", "top_k", "conditions")}
