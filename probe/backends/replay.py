"""`replay` backend: labels from a CSV or Parquet file, for answers collected elsewhere (DESIGN section 8).

The file is keyed by the item fields (stage, qtype, condition, pair_id, name_order, occupation, subject,
category, attribute; empty = NULL) and holds a canonical `label`; an optional `wording` column (a paraphrase id of
prompts/wordings/, empty = the paper's) answers runs asked with --wordings. Items absent from the file are unknown.
The whole file is checked when the backend is created, before the run writes anything. After the run, a
file that matched no item asked is an error (it was made for other settings), one that matched fewer than
half a warning with the count (`finish`).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from probe.backends.base import BackendDefaults, Query, Reply, default_cache_key_parts
from probe.common.errors import UserError
from probe.common.escape import terminal_text
from probe.common.vocabulary import LABELS_BY_QTYPE, PAPER_WORDING, QTYPES, UNKNOWN, WORDINGS
from probe.dataset.items import KEY_FIELDS
from probe.store.config import RunConfig

REQUIRED_COLUMNS = (*KEY_FIELDS, "label")
INTEGER_FIELDS = ("stage", "pair_id")

ItemKey = tuple[object, ...]


def _cell(value: object) -> str | None:
    """A file cell as text; empty, NaN and None are NULL."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    text = str(value).strip()
    if isinstance(value, float) and value.is_integer():
        text = str(int(value))
    return text or None


def _key(fields: dict[str, object]) -> ItemKey:
    return (*(fields[name] for name in KEY_FIELDS), fields.get("wording") or PAPER_WORDING)


def _read_table(path: Path) -> pd.DataFrame:
    try:
        if path.suffix.lower() == ".parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (ValueError, OSError) as exc:
        raise UserError(f"{path}: cannot read answers ({exc})") from None


def load_answers(path: Path) -> dict[ItemKey, str]:
    """Map item key -> canonical label; every row is checked (row numbers count data rows from 1)."""
    table = _read_table(path)
    missing = [column for column in REQUIRED_COLUMNS if column not in table.columns]
    if missing:
        raise UserError(f"{path}: missing column(s) {', '.join(missing)}")
    columns = [*REQUIRED_COLUMNS, "wording"] if "wording" in table.columns else list(REQUIRED_COLUMNS)
    labels: dict[ItemKey, str] = {}
    for row_number, row in enumerate(table[columns].itertuples(index=False), start=1):
        where = f"{path}, row {row_number}"
        fields: dict[str, object] = {name: _cell(value) for name, value in zip(columns, row, strict=True)}
        if fields.get("wording") not in (None, *WORDINGS):
            raise UserError(f"{where}: wording {fields['wording']!r} is not one of {', '.join(WORDINGS)}")
        for name in INTEGER_FIELDS:
            try:
                fields[name] = int(str(fields[name]))
            except ValueError:
                raise UserError(f"{where}: {name} {fields[name]!r} is not an integer") from None
        qtype = fields["qtype"]
        if qtype not in QTYPES:
            raise UserError(f"{where}: qtype {qtype!r} is not one of {', '.join(QTYPES)}")
        label = fields.pop("label") or UNKNOWN
        # a K-way label is a name: the runner checks it against the item's names (base.contract_error)
        if qtype in LABELS_BY_QTYPE and label not in LABELS_BY_QTYPE[qtype]:
            allowed = ", ".join(LABELS_BY_QTYPE[qtype])
            raise UserError(f"{where}: label {label!r} is not valid for qtype {qtype} ({allowed})")
        key = _key(fields)
        if labels.setdefault(key, label) != label:
            raise UserError(f"{where}: a second, different label for the same item")
    return labels


class ReplayBackend(BackendDefaults):
    prompt_format = "chat"  # prompts are rendered for the record only; labels come from the file
    batch_size = 2048
    cacheable = False  # answers depend on the file, not on the prompt
    labels_are_data = True

    def __init__(self, path: Path):
        self.path = path
        self.labels = load_answers(path)
        self.file_sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
        self.asked = 0
        self.matched = 0

    def identity(self) -> dict[str, object]:
        return {"backend": "replay", "model": str(self.path), "sha256": self.file_sha256, "decided_by": "replay"}

    def cache_key_parts(self, query: Query) -> list[object]:
        return default_cache_key_parts(query)  # never used: replay answers are not cached

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        replies = []
        for query in queries:
            label = self.labels.get(_key(dict(query.item)))
            self.matched += label is not None
            replies.append(Reply(label=label or UNKNOWN, raw=label or UNKNOWN, decided_by="replay"))
        self.asked += len(queries)
        return replies

    def finish(self) -> None:
        """Called after the run's items were asked: no match is an error, fewer than half a warning."""
        if self.asked and not self.matched:
            raise UserError(
                f"{self.path}: matches none of the {self.asked} items of this run (check its stage, qtype, "
                "condition, pair_id, name_order, occupation, subject, category and attribute columns against "
                "`probe dataset preview` with the same settings)"
            )
        if self.matched < self.asked / 2:
            print(
                f"warning: {terminal_text(self.path)} matched {self.matched} of {self.asked} items; the other "
                f"{self.asked - self.matched} are unknown",
                file=sys.stderr,
            )

    def close(self) -> None:
        self.labels = {}


@dataclass(frozen=True)
class ReplaySettings:
    answers: Path  # CSV or Parquet of labels


def settings_from(config: RunConfig) -> ReplaySettings:
    if not config.answers:
        raise UserError("--answers: the replay backend needs a CSV or Parquet file of answers")
    return ReplaySettings(Path(config.answers))


def create(settings: ReplaySettings) -> ReplayBackend:
    return ReplayBackend(settings.answers)
