"""How far two runs agree on which gender an occupation prefers: the share of occupations with the same preferred
gender and Cohen's kappa (compare.json `preference_agreement`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np

from probe.report.data import CONDITIONS, clean, order_index


def cohens_kappa(labels_a: Sequence[str], labels_b: Sequence[str]) -> float | None:
    """Cohen's kappa of two raters' labels; None where chance agreement is already 1 (one shared label)."""
    a, b = np.asarray(labels_a), np.asarray(labels_b)
    if len(a) == 0:
        return None
    observed = float(np.mean(a == b))
    expected = sum(float(np.mean(a == label)) * float(np.mean(b == label)) for label in set(a) | set(b))
    return None if expected >= 1 else (observed - expected) / (1 - expected)


def preference_agreement(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str) -> list[dict[str, Any]]:
    """How often two runs name the same preferred gender (female/male/none) for an occupation."""
    both = con.execute(
        """
        SELECT a.condition, a.occupation, a.preferred AS preferred_a, b.preferred AS preferred_b
        FROM occupation_preference AS a
        JOIN occupation_preference AS b USING (condition, occupation)
        WHERE a.run_id = ? AND b.run_id = ? AND a.n > 0 AND b.n > 0
        """,
        [run_a, run_b],
    ).df()
    rows = []
    for condition in sorted(set(both["condition"]), key=lambda c: order_index(CONDITIONS, c)):
        part = both[both["condition"] == condition]
        rows.append(
            {
                "condition": condition,
                "run_a": run_a,
                "run_b": run_b,
                "occupations": len(part),
                "same_preferred": clean(float(np.mean(part["preferred_a"] == part["preferred_b"]))),
                "kappa": cohens_kappa(part["preferred_a"].tolist(), part["preferred_b"].tolist()),
            }
        )
    return rows
