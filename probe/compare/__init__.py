"""Comparing runs (`probe compare`): which instances and settings they share, a leaderboard of their headline
metrics, paired differences and ranks, and the agreement of their preferred occupations.

- summary.py: shared instances and settings, what makes runs unpaired, the comparison's document (compare.json);
- leaderboard.py: the leaderboard rows, paired differences (the paired cluster t of probe/analysis/statistics.py)
  and rank intervals;
- contrasts.py: runs over name sets per contrast: each contrast's difference to the reference, paired by name set;
- heldout.py: a mitigation's effect on tuning and held-out occupations, names and wordings (--heldout-seed);
- workforce.py: each run's correlations with the BLS workforce and amplification slope, which model amplifies most.

The page is rendered by the report's templates from compare.json alone (probe.report.render_comparison).

Enters: analysed runs (metrics, occupation_preference, items; runs over name sets: their answers by contest).
Leaves: compare.json, and the comparison page and Markdown summary written from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb

from probe.compare.heldout import heldout_section
from probe.compare.summary import compare_summary
from probe.compare.workforce import workforce_comparison
from probe.report.render import ReportFiles, output_files, render_comparison, write_files

__all__ = ["compare_summary", "write_comparison"]


def write_comparison(
    con: duckdb.DuckDBPyConnection,
    run_ids: Sequence[str],
    html_path: Path,
    reference: str | None = None,
    heldout: tuple[int, str, tuple[str, ...] | None] | None = None,
) -> ReportFiles:
    """Write the comparison page with its Markdown and JSON summaries beside it. `heldout`: (seed, metric,
    contrast or None) of the held-out checks of the other run (mitigated) against the reference (base); two runs
    only."""
    files = output_files(html_path)
    document = compare_summary(con, run_ids, reference)
    document["workforce"] = workforce_comparison(con, run_ids)
    if heldout is not None:
        base = reference or run_ids[0]
        document["heldout"] = heldout_section(con, base, next(r for r in run_ids if r != base), *heldout)
    return write_files(files, *render_comparison(document), document)
