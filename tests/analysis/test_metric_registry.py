"""The metric registry is the one list: analyze() writes no metric it does not declare, and numbers are
formatted by the registry's kind, not by their names."""

from __future__ import annotations

from pathlib import Path

import pytest

from probe import pipeline
from probe.analysis.metric_registry import CONSISTENCY, KINDS, METRICS, POSITION_FIRST, Metric
from probe.report.formatting import fmt_estimate, fmt_p, p_phrase
from probe.store.config import RunConfig
from tests.support import FakeBackend, query


def test_analyze_writes_exactly_the_declared_metrics(db_file: Path, use_backend) -> None:
    """A metric the registry lacks would have no label, definition or kind, and the report would drop it."""
    use_backend(FakeBackend())
    settings = RunConfig(pairs=2, occupations=("nurse", "pilot"), top_k=1, db=str(db_file), quiet=True)
    run_id = pipeline.run(settings).run_id
    written = set(query(db_file, "SELECT DISTINCT metric FROM metrics WHERE run_id = ?", [run_id])["metric"])
    assert written - set(METRICS) == set()
    assert written == set(METRICS)  # and each declared metric is computed


def test_every_metric_has_a_known_kind() -> None:
    assert {metric.kind for metric in METRICS.values()} <= set(KINDS)


@pytest.mark.parametrize(
    ("kind", "estimate", "low", "high", "shown"),
    [
        ("share", 0.5, 0.25, 0.75, "50.0% [25.0, 75.0]"),
        ("difference", 0.032, -0.01, 0.074, "+3.2 pts [\u22121.0, +7.4]"),
        ("correlation", -0.41, -0.8, 0.15, "r = -0.41 [-0.80, 0.15]"),
        ("share", 0.5, None, None, "50.0% (no interval)"),
    ],
)
def test_an_estimate_reads_by_its_kind_whatever_its_name(
    kind: str, estimate: float, low: float | None, high: float | None, shown: str
) -> None:
    finding = {"metric": "a_name_that_says_nothing", "kind": kind, "estimate": estimate, "ci_low": low, "ci_high": high}
    assert fmt_estimate(finding) == shown


@pytest.mark.parametrize(
    ("p", "printed", "phrase"),
    [
        (0.04996, "0.049", "p = 0.049"),  # rounding would print 0.050 beside a significant result
        (0.05, "0.050", "p = 0.050"),
        (0.0004, "<0.001", "p < 0.001"),  # never "p = <0.001"
        (None, "\u2013", "p = \u2013"),  # an en dash where there is none
    ],
)
def test_p_values_never_read_across_the_five_percent_line(p: float | None, printed: str, phrase: str) -> None:
    assert (fmt_p(p), p_phrase(p)) == (printed, phrase)


def test_a_metric_counted_per_instance_is_one_registry_entry(db_file: Path, use_backend, monkeypatch) -> None:
    """DEVELOPERS.md's example: a toy metric declared with its flag alone is counted by analyze() at every scope of
    every stage-2 condition and stored per instance, its hits exactly the instances where both flags it combines
    hold."""
    toy = Metric(
        "first_and_granted",
        "first-named picked and granted",
        "share of valid instances where S names the first-named person and the binary answer about them is yes",
        "higher = more",
        flag="chose_first AND b_chosen = 'yes'",
    )
    monkeypatch.setitem(METRICS, toy.name, toy)
    use_backend(FakeBackend())
    settings = RunConfig(pairs=2, occupations=("nurse", "pilot"), top_k=1, db=str(db_file), quiet=True)
    run_id = pipeline.run(settings).run_id
    stored = query(db_file, "SELECT * FROM metrics WHERE run_id = ? AND metric = ?", [run_id, toy.name])
    consistency = query(db_file, "SELECT * FROM metrics WHERE run_id = ? AND metric = ?", [run_id, CONSISTENCY])
    assert sorted(zip(stored["condition"], stored["scope"], stored["key"], strict=True)) == sorted(
        zip(consistency["condition"], consistency["scope"], consistency["key"], strict=True)
    )
    units = query(
        db_file,
        "SELECT * FROM instance_metrics WHERE run_id = ? AND metric IN (?, ?, ?)",
        [run_id, toy.name, POSITION_FIRST, CONSISTENCY],
    )
    keys = ["condition", "pair_id", "occupation", "wording", "name_order"]
    hits = units.pivot_table(index=keys, columns="metric", values="hits")
    assert hits[toy.name].sum() > 0
    assert (hits[toy.name] == hits[POSITION_FIRST] * hits[CONSISTENCY]).all()
    pairs = units[units["metric"] == toy.name].groupby(["condition", "pair_id"])[["hits", "n"]].sum()
    stored_pairs = stored[stored["scope"] == "pair"].assign(pair_id=lambda frame: frame["key"].astype(int))
    assert (
        stored_pairs.set_index(["condition", "pair_id"])["value"].sort_index().tolist()
        == (pairs["hits"] / pairs["n"]).tolist()
    )
