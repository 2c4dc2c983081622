"""The metric registry is the one list: analyze() writes no metric it does not declare, and numbers are
formatted by the registry's kind, not by their names."""

from __future__ import annotations

from pathlib import Path

import pytest

from probe import pipeline
from probe.analysis.metric_registry import KINDS, METRICS
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
    finding = {"metric": "a_name_that_says_nothing", "kind": kind, "estimate": estimate, "ci_low": low,
               "ci_high": high}  # fmt: skip
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
