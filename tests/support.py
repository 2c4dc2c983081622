"""Helpers shared by the tests (imported as `tests.support`): a fake backend, seeded database copies, queries,
database fingerprints, one-line CLI errors."""

from __future__ import annotations

import hashlib
import itertools
import math
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

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
    """Every interval of a report.json, gate.json or compare.json that breaks a rule: zero width, inverted, OR
    outside, no method, or a p-value or verdict beside it that its interval contradicts."""
    if "gates" in data:
        return _gate_problems(data)
    if "paired_differences" in data:
        return _compare_problems(data)
    problems = []

    def check(where: str, low: Any, high: Any, estimate: Any = None) -> None:
        if low is None and high is None:
            return
        if low is None or high is None or not high > low:
            problems.append(f"{where}: [{low}, {high}] is not an interval")
        elif estimate is not None and not low <= estimate <= high:
            problems.append(f"{where}: {estimate} outside [{low}, {high}]")

    def disagree(low: Any, high: Any, null: float, p_value: Any) -> bool:
        """One inference per finding: the interval excludes the null exactly when p < 0.05."""
        if low is None or p_value is None or abs(p_value - 0.05) < 1e-9:
            return False
        return (p_value < 0.05) != (null < low or null > high)

    for finding in data["headline"]:
        check(f"headline {finding['metric']}", finding["ci_low"], finding["ci_high"], finding["estimate"])
        if finding["ci_low"] is not None and not finding["method"]:
            problems.append(f"headline {finding['metric']}: interval without a method")
        test = finding.get("test")
        if test and disagree(finding["ci_low"], finding["ci_high"], test["null"], test["p_value"]):
            problems.append(f"headline {finding['metric']}: p = {test['p_value']} disagrees with its interval")
    for row in data["correlations"]:
        if disagree(row["ci_low"], row["ci_high"], 0.0, row["p_adjusted"]):
            problems.append(f"correlation {row['condition']}: p = {row['p_value']} disagrees with its interval")
    for condition, entries in data["overall"].items():
        for metric, entry in entries.items():
            check(f"overall {condition} {metric}", entry["ci_low"], entry["ci_high"])
    for condition, rows in data["regression"].items():
        for row in rows:
            check(f"regression {condition} {row['term']}", row["ci_low"], row["ci_high"], row["odds_ratio"])
    for row in data["occupation_preference"]:
        # the interval sits at the level of the decision beside it: it excludes 0.5 exactly when preferred
        if row["ci_low"] is not None and (row["preferred"] != "none") != (row["ci_low"] > 0.5 or row["ci_high"] < 0.5):
            problems.append(
                f"occupation {row['occupation']}: [{row['ci_low']}, {row['ci_high']}] beside "
                f"preferred {row['preferred']}"
            )
    for condition, entry in ((data.get("workforce") or {}).get("by_condition") or {}).items():
        for name, null in (("slope", 1.0), ("adjusted_slope", 1.0), ("spearman", 0.0), ("pearson", 0.0)):
            fit = entry.get(name)
            if fit is None:  # the adjusted slope of an older run; no verdict below MIN_VERDICT_OCCUPATIONS either
                continue
            check(f"workforce {condition} {name}", fit["ci_low"], fit["ci_high"], fit["estimate"])
            if (
                fit["ci_low"] is not None
                and fit["verdict"] is not None
                and (fit["verdict"] != "inconclusive") != (fit["ci_low"] > null or fit["ci_high"] < null)
            ):
                problems.append(f"workforce {condition} {name}: verdict {fit['verdict']} beside its interval")
    for row in (data.get("adverse_impact") or {}).get("rows", []):  # ratio intervals: null ci_high = unbounded
        high = math.inf if row["ci_high"] is None else row["ci_high"]
        if row["ci_low"] is not None and disagree(row["ci_low"], high, 1.0, row["p_value"]):
            problems.append(
                f"impact ratio {row['condition']} {row['key']} {row['category']} {row['rate_kind']}: "
                f"p = {row['p_value']} disagrees with [{row['ci_low']}, {row['ci_high']}]"
            )
    for finding in data["headline"]:
        for printed in re.findall(r"p = ([0-9.]+)", finding["finding"]):  # a printed p never reads across 0.05
            test = finding.get("test") or {}
            actual = test.get("p_value")
            if actual is not None and printed != "0.05" and (float(printed) < 0.05) != (actual < 0.05):
                problems.append(f"headline {finding['metric']}: prints p = {printed} for p = {actual}")
    return problems


def _interval_rules(where: str, low: Any, high: Any, estimate: Any, null: float | None, p_value: Any) -> list[str]:
    """An interval's own rules: a real interval holding its estimate, and p < 0.05 exactly when it excludes the null."""
    if low is None and high is None:
        return []
    if low is None or high is None or not high > low:
        return [f"{where}: [{low}, {high}] is not an interval"]
    problems = []
    if estimate is not None and not low - 1e-9 <= estimate <= high + 1e-9:
        problems.append(f"{where}: {estimate} outside [{low}, {high}]")
    if null is None or p_value is None or abs(p_value - 0.05) <= 1e-9:
        return problems
    if (p_value < 0.05) != (null < low or null > high):
        problems.append(f"{where}: p = {p_value} disagrees with [{low}, {high}] about {null}")
    return problems


def _gate_problems(data: Mapping[str, Any]) -> list[str]:
    """gate.json: each interval gate's 90% interval inside its 95% one; pass exactly when the 90% interval lies
    inside the passing values; p_fail (the test of the nearer edge) below 0.05 exactly when the 95% interval lies
    beyond it; fail exactly when it lies beyond and Holm's p (where the policy asks for Holm) is below 0.05,
    unconfirmed only beyond; an occupations gate's interval at the decision's level excludes
    50% exactly when it fails on that occupation."""
    problems = []
    for gate in data["gates"]:
        where = f"gate {gate['name']!r}"
        if gate["kind"] == "occupations":
            most = gate["details"].get("most_leaning")
            if most is not None:
                low, high = most["interval"]
                preferred = most["occupation"] in gate["details"]["preferred"]
                if preferred != (low > 0.5 or high < 0.5):
                    problems.append(f"{where}: {most['occupation']} [{low}, {high}] beside preferred = {preferred}")
            if gate["verdict"] == "fail" and not _confirmed(gate):
                problems.append(f"{where}: fails with Holm p = {gate['p_fail_holm']}")
            continue
        if gate["ci95"] is None:
            if gate["verdict"] != "inconclusive":
                problems.append(f"{where}: {gate['verdict']} without an interval")
            continue
        (low90, high90), (low95, high95) = gate["ci90"], gate["ci95"]
        problems += _interval_rules(f"{where} 90%", low90, high90, gate["estimate"], None, None)
        problems += _interval_rules(f"{where} 95%", low95, high95, gate["estimate"], None, None)
        if not (low95 <= low90 and high90 <= high95):
            problems.append(f"{where}: 90% interval {gate['ci90']} not inside the 95% one {gate['ci95']}")
        band_low = -math.inf if gate["passing_band"][0] is None else gate["passing_band"][0]
        band_high = math.inf if gate["passing_band"][1] is None else gate["passing_band"][1]
        inside = band_low < low90 and high90 < band_high
        if (gate["verdict"] == "pass") != inside:
            problems.append(
                f"{where}: {gate['verdict']} beside a 90% interval {gate['ci90']} and passing values "
                f"{gate['passing_band']}"
            )
        beyond = high95 < band_low or low95 > band_high
        if gate["p_fail"] is not None and abs(gate["p_fail"] - 0.05) > 1e-9 and (gate["p_fail"] < 0.05) != beyond:
            problems.append(f"{where}: p_fail = {gate['p_fail']} disagrees with the 95% interval {gate['ci95']}")
        decided = "unconfirmed" if beyond and not _confirmed(gate) else "fail" if beyond else None
        if gate["verdict"] != decided and (decided or gate["verdict"] in ("fail", "unconfirmed")):
            problems.append(
                f"{where}: {gate['verdict']} beside a 95% interval {gate['ci95']}, passing values "
                f"{gate['passing_band']} and Holm p = {gate['p_fail_holm']}"
            )
    return problems


def _confirmed(gate: Mapping[str, Any]) -> bool:
    """A gate's fail stands: decided on its own (no Holm p: the policy asks for no family-wise control), or
    confirmed by Holm."""
    return gate["p_fail_holm"] is None or gate["p_fail_holm"] < 0.05


def _compare_problems(data: Mapping[str, Any]) -> list[str]:
    """compare.json: every run's own intervals, the paired differences (null 0) and the held-out effects (null
    0; generalizes exactly when the interval lies above 0 and the effect is not significantly smaller, undecided
    (null) without an interval or where the tuning part's own interval does not lie above 0)."""
    from probe.analysis.metric_registry import METRICS

    problems = []
    for run, conditions in data["overall"].items():
        for condition, entries in conditions.items():
            for metric, entry in entries.items():
                null = METRICS[metric].null if metric in METRICS else None
                problems += _interval_rules(
                    f"{run} {condition} {metric}",
                    entry["ci_low"],
                    entry["ci_high"],
                    entry["value"],
                    null,
                    entry.get("p_value"),
                )
    for row in data["paired_differences"]:
        problems += _interval_rules(
            f"difference {row['run_b']} - {row['run_a']} {row['condition']} {row['metric']}",
            row["ci_low"],
            row["ci_high"],
            row["difference"],
            0.0,
            row["p_value"],
        )
    heldout = data.get("heldout") or {}
    tuning = next((part for part in heldout.get("parts", []) if part["part"] == "tuning"), {})
    for part in heldout.get("parts", []):
        where = f"held-out {part['part']}"
        problems += _interval_rules(where, part["ci_low"], part["ci_high"], part["effect"], 0.0, part["p_value"])
        if "generalizes" in part:
            smaller = part["smaller_p"] is not None and part["smaller_p"] < 0.05
            expected = (
                None
                if part["ci_low"] is None or not (tuning["ci_low"] or 0) > 0
                else (part["ci_low"] > 0 and not smaller)
            )
            if part["generalizes"] != expected:
                problems.append(
                    f"{where}: generalizes = {part['generalizes']} beside [{part['ci_low']}, "
                    f"{part['ci_high']}], smaller_p = {part['smaller_p']}"
                )
    return problems


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
