"""Helpers shared by the tests (imported as `tests.support`): a fake backend, seeded database copies, queries,
database fingerprints, one-line CLI errors."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from probe import db
from probe.backends.base import BackendDefaults, Option, Query, Reply, default_cache_key_parts

# Tests may read ../shared (the O*NET release and name lists); the product never does.
SHARED = Path(__file__).resolve().parents[2] / "shared"
ONET_RELEASE = SHARED / "data" / "onet" / "db_30_0_text"
# Answer options of hand-made queries about Mary (female) and John (male).
YES_NO = (Option("yes", "yes"), Option("no", "no"))
SINGLE = (Option("Mary", "female"), Option("John", "male"))
MULTIPLE = (*SINGLE, Option("both", "both"), Option("neither", "neither"))
ANSWER_HEADER = "stage,qtype,condition,pair_id,name_order,occupation,subject,category,attribute,label\n"
# A small hand-made selection (no taxonomy store needed): two name pairs, two occupations' attributes.
HAND_MADE_PAIRS = pd.DataFrame({"pair_id": [1, 2], "female": ["Mary", "Linda"], "male": ["James", "Robert"]})
_HAND_MADE_ROWS = [
    # occupation, category, rank, element_name: "Mathematics" is both a skill and a knowledge area
    ("accountant", "knowledge", 1, "Economics and Accounting"),
    ("accountant", "skill", 1, "Mathematics"),
    ("accountant", "skill", 2, "Active Listening"),
    ("accountant", "knowledge", 2, "Mathematics"),
    ("accountant", "ability", 1, "Number Facility"),
    ("pilot", "ability", 1, "Near Vision"),
    ("pilot", "skill", 1, "Operation and Control"),
    ("pilot", "skill", 2, "Active Listening"),
]
HAND_MADE_ATTRIBUTES = pd.DataFrame(
    [(o, "00-0000.00", c, r, e, 4.0, 4.0) for o, c, r, e in _HAND_MADE_ROWS],
    columns=["occupation", "soc_code", "category", "rank", "element_name", "importance", "level"],
)


class FakeBackend(BackendDefaults):
    """Picks an option by a hash of the prompt: deterministic, mixed labels, counts what it is asked."""

    prompt_format = "chat"
    batch_size = 16

    def __init__(self, fail_after_batches: int | None = None):
        self.fail_after_batches = fail_after_batches
        self.batches = 0
        self.asked = 0

    def identity(self) -> dict[str, object]:
        return {"backend": "fake", "model": "hash-picker", "temperature": 0}

    def cache_key_parts(self, asked: Query) -> list[object]:
        return default_cache_key_parts(asked)

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        if self.fail_after_batches is not None and self.batches >= self.fail_after_batches:
            raise RuntimeError("simulated crash")
        self.batches += 1
        self.asked += len(queries)
        replies = []
        for asked in queries:
            digest = int(hashlib.sha256(asked.prompt.encode()).hexdigest(), 16)
            option = asked.options[digest % len(asked.options)]
            replies.append(Reply(label=option.label, raw=option.text))
        return replies

    def close(self) -> None:
        pass


def unknown_answers(path: Path, **settings: object) -> Path:
    """A replay file listing every item `probe run` would ask with these RunConfig settings (db included), each
    with an empty label: a run whose every answer is unknown, without a model."""
    from probe.config import RunConfig
    from probe.dataset import KEY_FIELDS
    from probe.preview import preview

    items = preview(RunConfig(**settings), "chat")
    rows = [{field: getattr(item, field) for field in KEY_FIELDS} | {"label": None} for item in items]
    pd.DataFrame(rows, columns=[*KEY_FIELDS, "label"]).to_csv(path, index=False)
    return path


def seeded_copy(seed: Path, target: Path) -> Path:
    """A fresh copy of a seeded database (seeding once per module keeps the tests fast)."""
    if not seed.exists():
        db.connect(seed).close()
    return Path(shutil.copy(seed, target))


def query(db_file: Path, sql: str, params: Sequence[object] = ()) -> pd.DataFrame:
    con = duckdb.connect(str(db_file), read_only=True)
    try:
        return con.execute(sql, list(params)).df()
    finally:
        con.close()


def fingerprint(db_file: Path) -> dict[str, tuple[int, int]]:
    """(row count, order-independent content hash) of every table: equal before and after = nothing written."""
    con = duckdb.connect(str(db_file), read_only=True)
    try:
        tables = [row[0] for row in con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
        return {
            table: con.execute(f"SELECT count(*), coalesce(sum(hash(t)::HUGEINT), 0) FROM {table} t").fetchone()
            for table in sorted(tables)
        }
    finally:
        con.close()


def labels(db_file: Path, run_id: str) -> dict[str, str]:
    frame = query(db_file, "SELECT item_id, label FROM answers WHERE run_id = ?", [run_id])
    return dict(zip(frame["item_id"], frame["label"], strict=True))


def invoke(*args: str) -> tuple[int, str]:
    """Run the `probe` CLI in-process: exit code and output."""
    from typer.testing import CliRunner

    from probe.cli import app

    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def assert_one_line_error(code: int, output: str, message: str) -> None:
    """Exit 2, exactly one line `error: <message>...`, no traceback."""
    assert (code, output.count("\n"), "Traceback" not in output) == (2, 1, True), output
    assert output.startswith(f"error: {message}"), output


def interval_problems(data: Mapping[str, Any]) -> list[str]:
    """Every interval of a report.json that breaks a rule: zero width, inverted, OR outside, no method."""
    problems = []

    def check(where: str, low: Any, high: Any, estimate: Any = None) -> None:
        if low is None and high is None:
            return
        if low is None or high is None or not high > low:
            problems.append(f"{where}: [{low}, {high}] is not an interval")
        elif estimate is not None and not low <= estimate <= high:
            problems.append(f"{where}: {estimate} outside [{low}, {high}]")

    for finding in data["headline"]:
        check(f"headline {finding['metric']}", finding["ci_low"], finding["ci_high"], finding["estimate"])
        if finding["ci_low"] is not None and not finding["method"]:
            problems.append(f"headline {finding['metric']}: interval without a method")
    for condition, entries in data["overall"].items():
        for metric, entry in entries.items():
            check(f"overall {condition} {metric}", entry["ci_low"], entry["ci_high"])
    for condition, rows in data["regression"].items():
        for row in rows:
            check(f"regression {condition} {row['term']}", row["ci_low"], row["ci_high"], row["odds_ratio"])
    return problems
