"""Helpers shared by the tests (imported as `tests.support`): a fake backend, seeded database copies, queries,
database fingerprints, one-line CLI errors."""

from __future__ import annotations

import hashlib
import itertools
import math
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from probe.backends.base import BackendDefaults, Option, Query, Reply, default_cache_key_parts
from probe.store import db

# The repository, tests/data/ and ../shared (O*NET, name lists: tests only), for tests in any folder to reach them by.
ROOT = Path(__file__).resolve().parents[1]
DATA, SHARED = ROOT / "tests" / "data", ROOT.parent / "shared"
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
    """A replay file listing every item `probe run` would ask with these RunConfig settings (db included), with its
    people and an empty label: a run whose every answer is unknown, without a model."""
    from probe.dataset.items import KEY_FIELDS
    from probe.dataset.preview import preview
    from probe.store.config import RunConfig

    spec = RunConfig(**settings)
    items = preview(spec.design, "chat", spec.options.db)
    people = ("first_name", "second_name")  # a run over name sets needs them
    rows = [{field: getattr(item, field) for field in (*KEY_FIELDS, *people)} | {"label": None} for item in items]
    pd.DataFrame(rows, columns=[*KEY_FIELDS, *people, "label"]).to_csv(path, index=False)
    return path


def name_set_run(
    folder: Path,
    db_file: Path,
    relabel: Callable[[pd.DataFrame, Callable[[str], pd.Series]], None],
    sets: int,
    columns: Sequence[str] = ("set_id", "name", "sex", "race_ethnicity"),
    **settings: object,
) -> str:
    """A replay run over `sets` made-up name sets, one name per (sex, race_ethnicity) category (test_name_sets'
    sets_file, its columns in the order `columns` gives; written once per folder), whose answers `relabel(rows,
    category)` writes in place: `rows` lists every item asked with an empty label (unknown_answers), and
    `category(attribute)` gives each contest slot's category of that attribute, indexed by (pair_id, slot).
    `settings` are RunConfig's (occupations among them), over one condition, taxonomy, with top-k 1 unless given."""
    from probe import pipeline
    from probe.store.config import RunConfig
    from probe.taxonomy.name_sets import contests, read_name_sets
    from tests.taxonomy.test_name_sets import sets_file

    names = folder / "sets.csv"
    if not names.exists():
        pd.read_csv(sets_file(names, sets=sets))[list(columns)].to_csv(names, index=False)
    settings = {"top_k": 1, "conditions": ("taxonomy",), **settings}
    settings |= {"backend": "replay", "names": str(names), "db": str(db_file), "quiet": True}
    answers = unknown_answers(folder / f"{settings.get('run_id') or 'answers'}.csv", **settings)
    mapping = contests(read_name_sets(duckdb.connect(), names))[1]

    def category(attribute: str) -> pd.Series:
        return mapping[mapping["attribute"] == attribute].set_index(["pair_id", "slot"])["category"]

    rows = pd.read_csv(answers, dtype={"label": object})
    relabel(rows, category)
    rows.to_csv(answers, index=False)
    return pipeline.run(RunConfig(**settings, answers=str(answers))).run_id


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


# ------------------------------------------------------------------ hand-built runs for the metric tests

Z95 = 1.959963984540054


def wilson(hits: int, n: int) -> tuple[float, float]:
    """The Wilson score interval, written out (independent of the statsmodels call in the code)."""
    share = hits / n
    denominator = 1 + Z95**2 / n
    centre = (share + Z95**2 / (2 * n)) / denominator
    half = Z95 * math.sqrt(share * (1 - share) / n + Z95**2 / (4 * n**2)) / denominator
    return centre - half, centre + half


class RunBuilder:
    """Writes a run's items and answers row by row; a label of None leaves the item unanswered."""

    def __init__(self, con: duckdb.DuckDBPyConnection, run_id: str = "r1") -> None:
        self.con, self.run_id = con, run_id
        self.item_ids = itertools.count()
        con.execute("INSERT INTO runs (run_id, status) VALUES (?, 'done')", [run_id])

    def _item(self, label: str | None, **fields: object) -> None:
        item_id = f"item-{next(self.item_ids)}"
        columns = ", ".join(fields)
        marks = ", ".join("?" for _ in fields)
        self.con.execute(
            f"INSERT INTO items (run_id, item_id, {columns}) VALUES (?, ?, {marks})",
            [self.run_id, item_id, *fields.values()],
        )
        if label is not None:
            self.con.execute(
                "INSERT INTO answers (run_id, item_id, label) VALUES (?, ?, ?)", [self.run_id, item_id, label]
            )

    def instance(self, condition, pair_id, order, occupation, bf, bm, s, m) -> None:
        where = dict(stage=2, condition=condition, pair_id=pair_id, name_order=order, occupation=occupation)
        self._item(bf, qtype="binary", subject="female", **where)
        self._item(bm, qtype="binary", subject="male", **where)
        self._item(s, qtype="single", **where)
        self._item(m, qtype="multiple", **where)

    def attr(self, pair_id, order, subject, category, attribute, label) -> None:
        self._item(
            label,
            stage=1,
            qtype="attr",
            condition="stage1",
            pair_id=pair_id,
            name_order=order,
            subject=subject,
            category=category,
            attribute=attribute,
        )

    def top_k(self, occupation, category, element_name) -> None:
        self.con.execute(
            "INSERT INTO run_attributes (run_id, occupation, category, rank, element_name) VALUES (?, ?, ?, 1, ?)",
            [self.run_id, occupation, category, element_name],
        )


def metric(con, condition, scope, key, name, run_id="r1"):
    """(value, ci_low, ci_high, n) of one metrics row; fails unless exactly one row exists."""
    rows = con.execute(
        "SELECT value, ci_low, ci_high, n FROM metrics "
        "WHERE run_id = ? AND condition = ? AND scope = ? AND key = ? AND metric = ?",
        [run_id, condition, scope, key, name],
    ).fetchall()
    assert len(rows) == 1, rows
    return rows[0]


def metric_values(con, condition, scope, key, names):
    return {name: metric(con, condition, scope, key, name)[0] for name in names}


def score_interval_reference(value: float, variance: float, pairs: int, instances: int) -> tuple[float, float]:
    """The score interval of DESIGN section 5 written out independently of probe.analysis.statistics: every share m on a
    grid of 2,000,001 points with (value - m)^2 <= t^2 * max(phi * (m (1 - m))^1.5, m (1 - m) / instances),
    phi = variance / (value (1 - value))^1.5, t the 97.5% quantile with pairs - 1 df."""
    from scipy import stats

    grid = np.linspace(0.0, 1.0, 2_000_001)
    base = (value * (1 - value)) ** 1.5
    phi = variance / base if base > 0 else 0.0
    binomial = grid * (1 - grid)
    bound = stats.t.ppf(0.975, pairs - 1) ** 2 * np.maximum(phi * binomial**1.5, binomial / instances)
    kept = grid[(value - grid) ** 2 <= bound]
    return float(kept.min()), float(kept.max())
